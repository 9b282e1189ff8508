"""Layer names of PyTorch launches for profile sessions: the torch modules whose forward is
running (forward launches), and for a launch made in the backward of a
``torch.autograd.Function``, the layer that was open when the same Function's forward made its
launches (backward launches run later, from autograd, outside every module's forward).

The link between the two is the Function's context: autograd passes the same object as ``ctx``
to ``forward`` and ``backward`` (it is the graph node, ``MatMulBackward``). A forward launch
made inside ``forward(ctx, ...)`` records ``ctx -> layer``; a launch inside ``backward(ctx,
...)`` reads it back. Contexts are held weakly: the record goes with the graph.

torch is imported only when the program already did.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import weakref
from typing import Any, Iterator

_TORCH_STACK = threading.local()
#: Autograd node (a Function's ctx) -> the layer its forward launched in.
_NODE_LAYERS: "weakref.WeakKeyDictionary[Any, str]" = weakref.WeakKeyDictionary()
_NODE_LOCK = threading.Lock()


def torch_module_layer() -> str | None:
    """The path of the torch modules whose forward is running on this thread ("Net/act1")."""
    mods = getattr(_TORCH_STACK, "names", None)
    return "/".join(mods) if mods else None


def _autograd_frame() -> tuple[str, Any] | None:
    """``("forward" | "backward", ctx)`` of the innermost ``torch.autograd.Function`` method
    on this thread's stack, or None."""
    if "torch" not in sys.modules:
        return None
    node_type = sys.modules["torch"].autograd.function.BackwardCFunction
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_code.co_name
        if name in ("forward", "backward"):
            ctx = frame.f_locals.get("ctx")
            if isinstance(ctx, node_type):
                return name, ctx
        frame = frame.f_back
    return None


def autograd_origin(layer: str | None) -> tuple[str | None, bool]:
    """For a launch being made now: ``(layer, is_backward)``.

    Inside a Function's forward, ``layer`` (the launch's layer) is recorded for its node and
    returned. Inside its backward, the layer recorded by the forward is returned, else
    ``layer`` (the forward made no launch, or ran outside every layer).
    """
    found = _autograd_frame()
    if found is None:
        return layer, False
    kind, ctx = found
    with _NODE_LOCK:
        if kind == "backward":
            return _NODE_LAYERS.get(ctx) or layer, True
        if layer is not None:
            _NODE_LAYERS.setdefault(ctx, layer)
    return layer, False


@contextlib.contextmanager
def torch_layers(model: Any) -> Iterator[None]:
    """While the block runs, keep the names of the torch modules whose forward is running."""
    if model is None or "torch" not in sys.modules:
        yield
        return
    import torch
    names = {id(m): n or type(m).__name__ for n, m in model.named_modules()}

    def pre(module: Any, args: Any) -> None:
        name = names.get(id(module))
        if name is not None:
            stack = getattr(_TORCH_STACK, "names", [])
            _TORCH_STACK.names = stack + [name.rsplit(".", 1)[-1] if stack else name]

    def post(module: Any, args: Any, out: Any) -> None:
        if id(module) in names and getattr(_TORCH_STACK, "names", None):
            _TORCH_STACK.names = _TORCH_STACK.names[:-1]

    handles = [torch.nn.modules.module.register_module_forward_pre_hook(pre),
               torch.nn.modules.module.register_module_forward_hook(post)]
    try:
        yield
    finally:
        for h in handles:
            h.remove()
        _TORCH_STACK.names = []
