"""Model layers whose forward runs NKI kernels, for PyTorch layer mapping with the Hugging Face
``kernels`` package (``use_kernel_forward_from_hub``, ``kernelize``, ``LocalLayerRepository``).

``kernels`` replaces the forward of a model's layers by name with a layer class from a kernel
repository, per device and mode. We use it as it is: :func:`nki_layer` makes a layer class that
``kernels`` accepts (stateless, no members beyond ``has_backward`` / ``can_torch_compile``, the
replaced forward's number of arguments) and whose forward runs NKI kernels through a
``torch.autograd.Function``; :func:`write_layer_repository` lays out a local layer repository
for the CPU device (``build/torch-cpu/``) whose ``layers`` module defines such classes. With
``kernelize(model, device="cpu", mode=Mode.TRAINING)``, ``kernels`` itself keeps the original
forward of a layer whose class has no backward kernel (``has_backward = False``).

torch is imported only inside functions.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Any

from ..errors import KernelError, caller_loc, expected

#: Metadata of a local layer repository, as ``kernels`` reads it (build/<variant>/metadata.json).
_METADATA = {"version": 1, "license": "Apache-2.0", "python-depends": [],
             "backend": {"type": "cpu"}}


def nki_layer(forward_kernel: Any, backward_kernel: Any = None, *, n_inputs: int = 1,
              flatten_rows: bool = True, name: str | None = None) -> type:
    """A ``torch.nn.Module`` class whose ``forward(self, x0, ...)`` runs ``forward_kernel``.

    Args:
        forward_kernel: an NKI kernel taking ``n_inputs`` tensors, returning one or more.
        backward_kernel: an NKI kernel taking the inputs then one gradient per output, and
            returning one gradient per input; None makes a layer without backward
            (``has_backward = False``: ``kernels`` falls back to the original forward in
            training mode).
        n_inputs: number of tensor arguments of the replaced forward.
        flatten_rows: pass each input as a 2-D [rows, last dim] tensor (NKI kernels of row-wise
            layers take [N, F]) and give the outputs the first input's leading dims back.
        name: the class name (default: the forward kernel's name).
    """
    import torch

    if not callable(getattr(forward_kernel, "func", forward_kernel)):
        raise KernelError(expected("nki_layer forward_kernel", "an NKI kernel",
                                   f"{type(forward_kernel).__name__}"), loc=caller_loc())
    if backward_kernel is not None and not callable(getattr(backward_kernel, "func",
                                                            backward_kernel)):
        raise KernelError(expected("nki_layer backward_kernel", "an NKI kernel or None",
                                   f"{type(backward_kernel).__name__}"), loc=caller_loc())

    class _Op(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, *inputs: Any) -> Any:
            ctx.save_for_backward(*inputs)
            return forward_kernel(*(t.contiguous() for t in inputs))

        @staticmethod
        def backward(ctx: Any, *grads: Any) -> Any:
            if backward_kernel is None:
                raise KernelError(f"layer {cls.__name__}: no backward kernel (nki_layer was "
                                  "given backward_kernel=None)", loc=caller_loc())
            grads_in = backward_kernel(*ctx.saved_tensors, *(g.contiguous() for g in grads))
            return grads_in if isinstance(grads_in, tuple) else (grads_in,)

    def forward(self: Any, *inputs: Any) -> Any:
        lead = inputs[0].shape[:-1]
        args = [t.reshape(-1, t.shape[-1]) for t in inputs] if flatten_rows else list(inputs)
        out = _Op.apply(*args)
        if not flatten_rows:
            return out
        outs = out if isinstance(out, tuple) else (out,)
        outs = tuple(o.reshape(*lead, o.shape[-1]) for o in outs)
        return outs if isinstance(out, tuple) else outs[0]

    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)] + [
        inspect.Parameter(f"x{i}" if n_inputs > 1 else "x",
                          inspect.Parameter.POSITIONAL_OR_KEYWORD) for i in range(n_inputs)]
    forward.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    cls_name = name or getattr(forward_kernel, "__name__", "NkiLayer")
    cls = type(cls_name, (torch.nn.Module,), {
        "forward": forward, "has_backward": backward_kernel is not None,
        "can_torch_compile": False, "__doc__": f"NKI kernel layer over {cls_name}."})
    return cls


def write_layer_repository(path: str | Path, layers_source: str | Path,
                           name: str = "nki-layers") -> Path:
    """Lay out a local ``kernels`` layer repository for the CPU device at ``path``: its
    ``build/torch-cpu/layers.py`` is ``layers_source`` (a file, or Python text) defining layer
    classes (made with :func:`nki_layer`). Returns ``path``, for ``LocalLayerRepository``."""
    root = Path(path)
    variant = root / "build" / "torch-cpu"
    variant.mkdir(parents=True, exist_ok=True)
    src = Path(layers_source) if isinstance(layers_source, Path) or (
        isinstance(layers_source, str) and "\n" not in layers_source
        and layers_source.endswith(".py")) else None
    text = src.read_text() if src is not None else str(layers_source)
    (variant / "layers.py").write_text(text)
    (variant / "__init__.py").write_text("from . import layers  # noqa: F401\n")
    meta = dict(_METADATA, name=name, id=name)
    (variant / "metadata.json").write_text(json.dumps(meta, indent=2) + "\n")
    return root


__all__: list[str] = ["nki_layer", "write_layer_repository"]
