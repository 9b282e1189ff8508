"""``nki.isa``'s DMA instructions: ``dma_copy`` and ``dma_transpose``.

Their names become names of :mod:`neuroncore_sim.frontend.isa` (``nisa.dma_copy``); the moves
themselves are recorded by :mod:`..dma` (direct) and :mod:`..indirect` (indexed by a tile).
"""

from __future__ import annotations

from typing import Any

from ...errors import MemorySpaceError
from ...program.ir import MemSpace
from .selection import v3_error
from ..operands import fail as _fail, op_name, require_tile as _tile
from ..tensors.tensor import NkiTensor



def dma_copy(*, dst: Any, src: Any, mask: Any = None, dst_rmw_op: Any = None,
             oob_mode: Any = None, dge_mode: Any = None) -> None:
    """Copy ``src`` to ``dst`` with a DMA (HBM or SBUF on either side)."""
    from ..transfer import dma_move
    from ..indirect import IndirectView, dma_indirect
    if getattr(dge_mode, "name", dge_mode) == "hwdge":
        raise v3_error("dma_copy dge_mode=hwdge (hardware DGE)")
    rmw = None if dst_rmw_op is None else op_name(dst_rmw_op, "dma_copy dst_rmw_op",
                                                  frozenset({"add"}))
    if isinstance(dst, IndirectView) or isinstance(src, IndirectView):
        dma_indirect("dma_copy", dst, src, mask, rmw, oob_mode)
        return
    if oob_mode is not None:  # checked though a direct copy has no index to leave the tensor
        from .. import tracer as _tracer
        from ..indirect import oob_name
        oob_name(oob_mode, _tracer.current("dma_copy"))
    dma_move("dma_copy", _tile(dst, "dma_copy dst"), _tile(src, "dma_copy src"), mask, rmw)


def dma_transpose(src: Any, *, axes: Any = None, mask: Any = None, dtype: Any = None) -> NkiTensor:
    """Transpose while moving (DMA): [A, B] -> [B, A]; 3-D axes (2, 1, 0); 4-D (3, 1, 2, 0)."""
    from ..dma import _dma_transpose
    s = _tile(src, "dma_transpose src")
    if s.space is MemSpace.PSUM:
        raise _fail(MemorySpaceError, "dma_transpose src: expected a tensor in hbm or sbuf, "
                    "found psum")
    return _dma_transpose("dma_transpose", s, axes, mask, dtype)
