"""``nki.compiler`` (ncc): the NKI names of :mod:`neuroncore_sim.frontend.compiler`, and no
others (``dir(ncc)`` shows ``sbuf``, ``psum`` and the directives, not the implementation's
imports and helpers). ``neuronxcc.nki.compiler`` (after the alias) is this module."""

from ..frontend import compiler as _impl
from ._facade import expose as _expose

#: Names of the implementation module that are not part of NKI's nki.compiler.
_IMPLEMENTATION = frozenset({
    "Any", "CapacityError", "Callable", "DirectBuffer", "KernelError", "MemSpace", "Placement",
    "annotations", "caller_loc", "inspect", "math", "nl", "np", "placement",
})

__all__, __getattr__, __dir__ = _expose(globals(), _impl, "nki.compiler", _IMPLEMENTATION)
