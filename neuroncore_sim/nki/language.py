"""``nki.language`` (nl): the NKI names of :mod:`neuroncore_sim.frontend.language`, and no others.

The implementation module also holds its own imports and helpers (``np``, ``Engine``,
``assign``, ...); a kernel author's ``dir(nl)``, ``hasattr(nl, "np")`` and tab completion see
only what NKI's ``nki.language`` has. ``neuronxcc.nki.language`` (after the alias) is this
module. A name NKI has that the simulator does not implement, or does not know, raises the
implementation's error (an ``UnsupportedError`` that is also an ``AttributeError``).
"""

from ..frontend import language as _impl
from ._facade import expose as _expose

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

__all__, __getattr__, __dir__ = _expose(globals(), _impl, "nki.language", _IMPLEMENTATION)
