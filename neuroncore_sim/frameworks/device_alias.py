"""Stand-ins for the Neuron device packages of PyTorch scripts, for ``neuroncore-sim run``.

Scripts written for Trainium put their tensors on the Neuron device through ``torch_xla``
(``device = xm.xla_device()``; AWS's NKI examples all do) and older ones decorate kernels with
``torch_neuronx.nki_jit``. Neither package exists without the Neuron SDK. When it is missing and
PyTorch is installed, :func:`install_device_aliases` registers a small stand-in so such scripts
run unmodified: the "XLA device" is the CPU, where the simulator takes torch tensors
(docs/frameworks.md), ``mark_step`` / ``wait_device_ops`` have nothing to wait for, and
``nki_jit`` is ``nki.jit``. Anything else of those packages is an
:class:`~neuroncore_sim.errors.UnsupportedError` naming what the stand-in offers. A real
``torch_xla`` / ``torch_neuronx`` is never shadowed.
"""

from __future__ import annotations

import importlib.util
import sys
import types
from typing import Any, Callable

from ..errors import UnsupportedError, caller_loc

#: what each stand-in module offers (named in the error for anything else)
XLA_MODEL_NAMES = ("xla_device", "mark_step", "wait_device_ops", "optimizer_step",
                   "get_ordinal", "xrt_world_size", "is_master_ordinal")
TORCH_XLA_NAMES = ("device", "sync", "core")
TORCH_NEURONX_NAMES = ("nki_jit",)


def install_device_aliases() -> list[str]:
    """Register the ``torch_xla`` and ``torch_neuronx`` stand-ins where the real package is not
    installed and PyTorch is; returns the names registered (idempotent)."""
    if importlib.util.find_spec("torch") is None:
        return []
    done = []
    if _absent("torch_xla"):
        _install_torch_xla()
        done.append("torch_xla")
    if _absent("torch_neuronx"):
        _install_torch_neuronx()
        done.append("torch_neuronx")
    return done


def _absent(name: str) -> bool:
    module = sys.modules.get(name)
    if module is not None:
        return bool(getattr(module, "__neuroncore_sim_alias__", False))
    return importlib.util.find_spec(name) is None


def _cpu(*_: Any, **__: Any) -> Any:
    """The stand-in "XLA device": the CPU, where the simulator takes torch tensors."""
    import torch
    return torch.device("cpu")


def _nothing(*_: Any, **__: Any) -> None:
    """Nothing to wait for: every kernel call has finished when it returns."""
    return None


def _optimizer_step(optimizer: Any, barrier: bool = False, optimizer_args: Any = None) -> Any:
    """``optimizer.step(**optimizer_args)``, as torch_xla's does on one device."""
    return optimizer.step(**(optimizer_args or {}))


def _module(name: str, doc: str, names: tuple[str, ...], **attrs: Any) -> types.ModuleType:
    module = types.ModuleType(name, doc)
    module.__neuroncore_sim_alias__ = True  # type: ignore[attr-defined]
    for key, value in attrs.items():
        setattr(module, key, value)

    def missing(attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        raise UnsupportedError(
            f"{name}.{attr}: not part of neuroncore_sim's stand-in for {name.split('.')[0]} "
            f"(the Neuron SDK package is not installed); it offers {', '.join(names)}",
            caller_loc())
    module.__getattr__ = missing  # type: ignore[attr-defined]
    sys.modules[name] = module
    return module


def _install_torch_xla() -> None:
    xla_model = _module(
        "torch_xla.core.xla_model", "Stand-in: the XLA device is the CPU.", XLA_MODEL_NAMES,
        xla_device=_cpu, mark_step=_nothing, wait_device_ops=_nothing,
        optimizer_step=_optimizer_step, get_ordinal=lambda *a, **k: 0,
        xrt_world_size=lambda *a, **k: 1, is_master_ordinal=lambda *a, **k: True)
    core = _module("torch_xla.core", "Stand-in.", ("xla_model",), xla_model=xla_model)
    core.__path__ = []  # type: ignore[attr-defined]
    root = _module("torch_xla", "Stand-in for torch_xla: the XLA device is the CPU.",
                   TORCH_XLA_NAMES, device=_cpu, sync=_nothing, core=core)
    root.__path__ = []  # type: ignore[attr-defined]


def _install_torch_neuronx() -> None:
    from ..nki import jit

    nki_jit: Callable[..., Any] = jit
    _module("torch_neuronx", "Stand-in for torch_neuronx: nki_jit is nki.jit.",
            TORCH_NEURONX_NAMES, nki_jit=nki_jit).__path__ = []  # type: ignore[attr-defined]
