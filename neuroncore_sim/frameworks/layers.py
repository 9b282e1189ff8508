"""Model layers whose forward runs NKI kernels, for PyTorch layer mapping with the Hugging Face
``kernels`` package (``use_kernel_forward_from_hub``, ``kernelize``, ``LocalLayerRepository``).

``kernels`` replaces the forward of a model's layers by name with a layer class from a kernel
repository, per device and mode. We use it as it is: :func:`nki_layer` makes a layer class that
``kernels`` accepts (stateless, no members beyond ``has_backward`` / ``can_torch_compile``, the
replaced forward's number of arguments) and whose forward runs NKI kernels through a
``torch.autograd.Function``; :func:`write_layer_repository` lays out a local layer repository
whose ``layers`` module defines such classes. With ``kernelize(model, device="cpu",
mode=Mode.TRAINING)``, ``kernels`` itself keeps the original forward of a layer whose class has
no backward kernel (``has_backward = False``).

Which build variant ``kernels`` loads does not depend on ``kernelize``'s device: it is the
*system backend*, read from the torch build (``torch.version.cuda`` set: "cuda", even on a
machine without a GPU; ROCm, XPU, ... likewise; else "cpu"). A repository holding only
``build/torch-cpu`` is refused by a CUDA build of torch (``backend (cpu) does not match system
backend (cuda)``), which is what ``pip install torch`` gives on Linux. The layers are Python
and run on CPU tensors whatever the build, so the repository publishes them as the *noarch*
variant of every backend ``kernels`` knows (``build/torch-cpu``, ``build/torch-cuda``, ...):
the form its documentation gives for Python-only kernels ("Build variants"). The older
``torch-universal`` variant would also be accepted everywhere, but ``kernels`` replaced it with
the noarch variants (release 0.11.2) and means to drop it.

torch is imported only inside functions.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import re
from pathlib import Path
from typing import Any

from ..errors import KernelError, caller_loc, expected

#: Metadata of a local layer repository, as ``kernels`` reads it (build/<variant>/metadata.json).
_METADATA = {"version": 1, "license": "Apache-2.0", "python-depends": []}

#: The noarch build variants written, ``torch-<name>`` -> the metadata's backend type. The
#: names are the system backends of ``kernels`` (0.17: cpu, cuda, rocm, xpu, metal, tpu,
#: neuron, and "npu" for Ascend's CANN builds of torch); a backend missing here would make
#: ``kernels`` refuse the repository on that torch build, with the list of variants it saw.
NOARCH_BACKENDS: dict[str, str] = {"cpu": "cpu", "cuda": "cuda", "rocm": "rocm", "xpu": "xpu",
                                   "metal": "metal", "tpu": "tpu", "neuron": "neuron",
                                   "npu": "cann"}


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
    """Lay out a local ``kernels`` layer repository at ``path`` and return ``path`` (for
    ``LocalLayerRepository(repo_path=...)``).

    ``layers_source`` (a ``.py`` file, or Python text) becomes the ``layers`` module of the
    repository; it defines layer classes made with :func:`nki_layer`. It is written as the
    noarch variant ``build/torch-<backend>/`` of every backend in :data:`NOARCH_BACKENDS`, so
    that ``kernels`` loads it whichever torch build is installed (CPU or CUDA, with or without
    a GPU): see the module's docstring.
    """
    if isinstance(layers_source, Path) or (isinstance(layers_source, str) and "\n" not in
                                           layers_source and layers_source.endswith(".py")):
        src = Path(layers_source)
        if not src.is_file():
            raise KernelError(expected("write_layer_repository layers_source",
                                       "a .py file of layer classes, or Python text",
                                       f"'{src}', which is not a file"), loc=caller_loc())
        text = src.read_text()
    elif isinstance(layers_source, str):
        text = layers_source
    else:
        raise KernelError(expected("write_layer_repository layers_source",
                                   "a .py file of layer classes, or Python text",
                                   type(layers_source).__name__), loc=caller_loc())
    root = Path(path)
    # kernels imports a variant as the module named by its metadata id, and its layers as
    # "<id>.layers", once per process: two repositories sharing an id would share the first's
    # layers. The id is unique per layers text and backend, as kernels asks of it.
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    python_name = re.sub(r"\W", "_", name)
    for backend, backend_type in NOARCH_BACKENDS.items():
        variant = root / "build" / f"torch-{backend}"
        variant.mkdir(parents=True, exist_ok=True)
        (variant / "layers.py").write_text(text)
        (variant / "__init__.py").write_text("from . import layers  # noqa: F401\n")
        kernel_id = f"{python_name}_{digest}_{backend}"
        meta = dict(_METADATA, name=name, id=kernel_id, backend={"type": backend_type})
        (variant / "metadata.json").write_text(json.dumps(meta, indent=2) + "\n")
    return root


__all__: list[str] = ["NOARCH_BACKENDS", "nki_layer", "write_layer_repository"]
