"""``nki.isa`` (nisa): the NKI names of :mod:`neuroncore_sim.frontend.isa`, and no others.

The implementation module also holds its imports and helpers (``np``, ``Engine``, ``issue``,
``op_name``, ...); a kernel author's ``dir(nisa)``, ``hasattr(nisa, "np")`` and tab completion
see only what NKI's ``nki.isa`` has. ``neuronxcc.nki.isa`` (after the alias) is this module. A
name NKI has that the simulator does not implement, or a NeuronCore-v3-only one, raises the
implementation's error (an ``UnsupportedError`` that is also an ``AttributeError``).
"""

from ..frontend import isa as _impl
from ._facade import expose as _expose

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

__all__, __getattr__, __dir__ = _expose(globals(), _impl, "nki.isa", _IMPLEMENTATION)
