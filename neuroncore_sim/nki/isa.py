"""``nki.isa`` (nisa): the NKI names of :mod:`neuroncore_sim.frontend.isa`, and no others.

The implementation module also holds its imports and helpers (``np``, ``Engine``, ``issue``,
``op_name``, ...); a kernel author's ``dir(nisa)``, ``hasattr(nisa, "np")`` and tab completion
see only what NKI's ``nki.isa`` has. ``neuronxcc.nki.isa`` (after the alias) is this module. A
name NKI has that the simulator does not implement, or a NeuronCore-v3-only one, raises the
implementation's error (an ``UnsupportedError`` that is also an ``AttributeError``).
"""

from typing import Any as _Any

from ..errors import UnsupportedAttributeError as _UnsupportedAttributeError
from ..errors import UnsupportedError as _UnsupportedError
from ..frontend import isa as _impl

#: Names of the implementation module that are not part of NKI's nki.isa.
_IMPLEMENTATION = frozenset({
    "Any", "DTypeError", "Engine", "IndexExpr", "KernelError", "MaskExpr", "MemSpace",
    "MemorySpaceError", "NkiTensor", "Opcode", "ShapeError", "UnsupportedError", "V3_ONLY",
    "annotations", "dtype_name", "engine_arg", "enum", "float32", "free_broadcast", "is_float",
    "issue", "np",
    "op_name", "ops", "per_partition", "promote", "relabel", "resolve_mask", "same_layout",
    "scalar_value", "shape_arg", "to_dtype", "v3_error",
    # the instruction modules of the frontend/isa package (attributes of the package)
    "compute", "dynamic", "selection", "transfers",
})

__all__ = sorted(n for n in vars(_impl) if not n.startswith("_") and n not in _IMPLEMENTATION)
globals().update({_n: getattr(_impl, _n) for _n in __all__})


def __getattr__(name: str) -> _Any:
    if name in _IMPLEMENTATION:
        raise AttributeError(f"module 'nki.isa' has no attribute {name!r}")
    try:
        return getattr(_impl, name)
    except _UnsupportedError as e:  # not implemented yet / v3-only / unknown: the impl's error
        if isinstance(e, AttributeError):  # (at the kernel line), as an AttributeError so that
            raise  # hasattr(nisa, name) and getattr(nisa, name, default) answer
        raise _UnsupportedAttributeError(e.message, e.loc) from None


def __dir__() -> list[str]:
    return list(__all__)
