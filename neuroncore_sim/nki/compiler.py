"""``nki.compiler`` (ncc): the NKI names of :mod:`neuroncore_sim.frontend.compiler`, and no
others (``dir(ncc)`` shows ``sbuf``, ``psum`` and the directives, not the implementation's
imports and helpers). ``neuronxcc.nki.compiler`` (after the alias) is this module."""

from typing import Any as _Any

from ..frontend import compiler as _impl

#: Names of the implementation module that are not part of NKI's nki.compiler.
_IMPLEMENTATION = frozenset({
    "Any", "CapacityError", "Callable", "DirectBuffer", "KernelError", "MemSpace", "Placement",
    "annotations", "caller_loc", "inspect", "math", "nl", "np", "placement",
})

__all__ = sorted(n for n in vars(_impl) if not n.startswith("_") and n not in _IMPLEMENTATION)
globals().update({_n: getattr(_impl, _n) for _n in __all__})


def __getattr__(name: str) -> _Any:
    if name in _IMPLEMENTATION:
        raise AttributeError(f"module 'nki.compiler' has no attribute {name!r}")
    return getattr(_impl, name)


def __dir__() -> list[str]:
    return list(__all__)
