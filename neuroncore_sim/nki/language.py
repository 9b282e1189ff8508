"""``nki.language`` (nl): the NKI names of :mod:`neuroncore_sim.frontend.language`, and no others.

The implementation module also holds its own imports and helpers (``np``, ``Engine``,
``assign``, ...); a kernel author's ``dir(nl)``, ``hasattr(nl, "np")`` and tab completion see
only what NKI's ``nki.language`` has. ``neuronxcc.nki.language`` (after the alias) is this
module. A name NKI has that the simulator does not implement, or does not know, raises the
implementation's error (an ``UnsupportedError`` that is also an ``AttributeError``).
"""

from typing import Any as _Any

from ..errors import UnsupportedAttributeError as _UnsupportedAttributeError
from ..errors import UnsupportedError as _UnsupportedError
from ..frontend import language as _impl

#: Names of the implementation module that are not part of NKI's nki.language.
_IMPLEMENTATION = frozenset({
    "Any", "Buffer", "CapacityError", "Engine", "KernelError", "MemSpace", "MemorySpaceError",
    "NkiTensor", "ON_CHIP", "Opcode", "ShapeError", "UnsupportedError", "accumulate",
    "annotations", "assign", "binary", "broadcast_error", "builtins", "checked_access",
    "common_shape", "copy_op", "dma_move", "dropped", "expand", "issue_into", "math", "nisa",
    "np", "operand", "padded", "partition_broadcast", "relabel", "same_layout", "scalar_value",
    "fill", "indirect_view", "dynamic_view", "assign_dynamic",
    # the modules of the frontend/language package (attributes of the package)
    "assignment", "nlmath", "tiles",
    "shape_arg", "start_partition_error",
})

__all__ = sorted(n for n in vars(_impl) if not n.startswith("_") and n not in _IMPLEMENTATION)
globals().update({_n: getattr(_impl, _n) for _n in __all__})


def __getattr__(name: str) -> _Any:
    if name in _IMPLEMENTATION:
        raise AttributeError(f"module 'nki.language' has no attribute {name!r}")
    try:
        return getattr(_impl, name)
    except _UnsupportedError as e:  # not implemented yet / unknown: the implementation's
        if isinstance(e, AttributeError):  # error (at the kernel line), as an AttributeError
            raise
        raise _UnsupportedAttributeError(e.message, e.loc) from None


def __dir__() -> list[str]:
    return list(__all__)
