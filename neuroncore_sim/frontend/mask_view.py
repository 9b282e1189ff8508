"""``tile[mask]``: a tile subscripted with a mask expression.

Kernels written inside AWS pass an operand as ``t[mask]`` (``nc_matmul(w, t[...][(i < n) &
(j < m)])``, ``square[mask] if mask else square``): the operand restricted to the elements the
mask keeps. The public reference documents masks only as the ``mask=`` of an instruction, which
shrinks the instruction to the active box; an operand cannot carry one here. So ``t[mask]`` is
evaluated over ``t``'s shape (axes in order, as ``mask=`` over an instruction's shape): a mask
that keeps every element (tile bounds that divide evenly) is ``t`` itself; one that drops
elements is an ``UnsupportedError`` asking for ``mask=`` on the instruction, rather than a
result the kernel did not mean.
"""

from __future__ import annotations

from typing import Any

from ..errors import UnsupportedError
from . import tracer as _tracer
from .indexing import MaskExpr
from .operands import mask_box


def mask_view(tile: Any, mask: MaskExpr) -> Any:
    """``tile[mask]``: ``tile`` when ``mask`` keeps all of it, else an error at the line."""
    box, residual, empty = mask_box(mask, tile.shape)
    full = box is None or all(lo == 0 and hi == n for (lo, hi), n in zip(box, tile.shape))
    if full and residual is None and not empty:
        return tile
    kept = "nothing" if empty else (f"the box {[list(b) for b in box]}" if box is not None
                                    else "part")
    raise _tracer.current("tile[mask]").fail(
        UnsupportedError, f"tile[mask]: a mask carried by an operand must keep the whole tile "
        f"{list(tile.shape)} (pass mask= to the instruction to restrict it); found a mask "
        f"keeping {kept}{' with a non-rectangular predicate' if residual is not None else ''}")
