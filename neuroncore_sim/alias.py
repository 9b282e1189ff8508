"""Make ``import neuronxcc.nki...`` resolve to neuroncore_sim, on request only.

Kernels written for the AWS Neuron SDK import ``neuronxcc.nki``. After
:func:`install_neuronxcc_alias` those imports give this package's modules, so the kernels run
unmodified. Nothing happens on import of neuroncore_sim itself.
"""

from __future__ import annotations

import importlib.abc
import sys
import types

from .errors import UnsupportedError


class NewerNkiApiError(UnsupportedError, ModuleNotFoundError):
    """``import nki``: the newer NKI API (Neuron 2.27+), which this simulator does not run."""


class _NewerNkiFinder(importlib.abc.MetaPathFinder):
    """Last on ``sys.meta_path``: reached only when no installed package provides ``nki``; says
    what that import is instead of a bare ModuleNotFoundError."""

    def find_spec(self, fullname: str, path: object, target: object = None) -> None:
        if fullname == "nki" or fullname.startswith("nki."):
            err = NewerNkiApiError(
                f"import {fullname}: this is the newer NKI API (`import nki`, Neuron 2.27+, "
                "instructions that take their destination first); neuroncore_sim runs the "
                "neuronxcc.nki API of NeuronCore-v2: `from neuronxcc import nki`, "
                "`import neuronxcc.nki.language as nl`, `import neuronxcc.nki.isa as nisa`")
            err.name = fullname
            raise err
        return None


def install_neuronxcc_alias() -> None:
    """Register ``neuronxcc``, ``neuronxcc.nki`` and its submodules as aliases of ours.

    Idempotent. Afterwards ``from neuronxcc import nki``, ``import neuronxcc.nki.language as
    nl``, ``neuronxcc.nki.isa``, ``neuronxcc.nki.typing`` and ``neuronxcc.nki.compiler``
    resolve to ``neuroncore_sim.nki`` and its modules. ``import nki`` (the newer NKI API),
    when no installed package provides it, raises :class:`NewerNkiApiError` saying so.
    """
    from . import nki
    from .frontend import typing
    from .nki import compiler, isa, language

    if not any(isinstance(f, _NewerNkiFinder) for f in sys.meta_path):
        sys.meta_path.append(_NewerNkiFinder())
    root = sys.modules.get("neuronxcc")
    if root is None or not getattr(root, "__neuroncore_sim_alias__", False):
        root = types.ModuleType("neuronxcc", "Alias of neuroncore_sim (NeuronCore-v2 simulator)")
        root.__neuroncore_sim_alias__ = True  # type: ignore[attr-defined]
        root.__path__ = []  # type: ignore[attr-defined]  (a package, so submodules import)
        sys.modules["neuronxcc"] = root
    root.nki = nki  # type: ignore[attr-defined]
    sys.modules["neuronxcc.nki"] = nki
    for name, module in (("language", language), ("isa", isa), ("typing", typing),
                         ("compiler", compiler)):
        sys.modules[f"neuronxcc.nki.{name}"] = module
        setattr(nki, name, module)
