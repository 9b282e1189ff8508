"""One DMA between two regions of the same elements: the move under ``nl.load`` / ``nl.store``,
tile assignments that cross HBM, and memsets at a partition engines cannot start at.

It records a ``dma_copy`` instruction and nothing else, so the modules that allocate
(:mod:`.alloc`), assign (:mod:`.language`) and issue DMAs (:mod:`.dma`, :mod:`.isa.transfers`)
all sit above it.
"""

from __future__ import annotations

import math
from typing import Any

from ..errors import MemorySpaceError, ShapeError
from ..program.ir import Engine, MemSpace, Opcode
from . import tracer as _tracer
from .operands import issue_into
from .tensors.tensor import NkiTensor

#: The memories the DMA engines reach.
DMA_SPACES = (MemSpace.HBM, MemSpace.SBUF)
_DMA_SPACES = DMA_SPACES


def _squeezed(shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(n for n in shape if n != 1)


def dma_move(what: str, dst: NkiTensor, src: NkiTensor, mask: Any, rmw: str | None,
             extra: dict[str, NkiTensor] | None = None) -> None:
    """One DMA from ``src`` to ``dst`` (same element count; size-1 axes may differ);
    ``extra`` are further sources it waits for (a runtime offset: hbm_offset.py)."""
    tr = _tracer.current(what)
    for t, role in ((dst, "dst"), (src, "src")):
        if t.space not in _DMA_SPACES:
            raise tr.fail(MemorySpaceError, f"{what} {role}: DMA engines reach hbm and sbuf; "
                          f"found {t.space.value}")
    if dst.shape != src.shape:
        if _squeezed(dst.shape) != _squeezed(src.shape) or math.prod(dst.shape) != math.prod(
                src.shape):
            raise tr.fail(ShapeError, f"{what}: expected src shape {list(dst.shape)} (the dst "
                          f"shape), found {list(src.shape)}")
        if mask is not None:
            raise tr.fail(ShapeError, f"{what}: a mask needs src and dst of the same shape; "
                          f"found {list(src.shape)} and {list(dst.shape)}")
    if dst.decl is not None:
        tr.note_write(dst.decl)
    issue_into(what, Opcode.DMA_COPY, Engine.DMA, dst, {"src": src, **(extra or {})},
               {"dst_rmw_op": rmw}, mask=mask, dst_spaces=_DMA_SPACES, src_spaces=_DMA_SPACES)
