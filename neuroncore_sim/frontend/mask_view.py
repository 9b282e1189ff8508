"""Masks over a shape (:func:`mask_box`, what every ``mask=`` becomes) and ``tile[mask]``, a
tile subscripted with a mask expression.

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

import numpy as np

from ..errors import KernelError, UnsupportedError
from ..program.ir import Affine, Predicate
from . import tracer as _tracer
from .indexing import MaskExpr
from .mask_bool import resolve


def _shift(pred: Predicate, lo: tuple[int, ...]) -> Predicate:
    """Re-base a predicate onto a grid that starts at ``lo``."""
    if pred.expr is not None:
        e = pred.expr
        const = e.const + sum(c * l for c, l in zip(e.coefs, lo))
        return Predicate(pred.op, Affine(const, e.coefs))
    return Predicate(pred.op, None, tuple(_shift(p, lo) for p in pred.parts))


#: What :func:`mask_box` gives for ``mask=None``.
_NO_MASK = (None, None, False)


def mask_box(mask: Any, shape: tuple[int, ...]
             ) -> tuple[tuple[tuple[int, int], ...] | None, Predicate | None, bool]:
    """Evaluate ``mask`` over ``shape``.

    Returns:
        (box, residual predicate, empty): the bounding box of the active elements (None when
        no mask), the predicate still needed inside the box (None when the box is exact), and
        whether nothing at all is active.
    """
    mask = resolve(mask)
    if mask is None or mask is True:
        return None, None, False
    if mask is False:
        return None, None, True
    if not isinstance(mask, MaskExpr):
        raise _tracer.current().fail(
            KernelError, f"mask: expected a comparison of nl.arange / nl.mgrid index "
            f"expressions (combined with &), found {type(mask).__name__}")
    if mask.ndim > len(shape):
        raise _tracer.current().fail(
            KernelError, f"mask: expected at most {len(shape)} axes (the instruction's shape "
            f"{list(shape)}), found {mask.ndim}")
    pred = mask.to_predicate(len(shape))
    active = pred.evaluate(shape)
    if not active.any():
        return None, None, True
    box = []
    for a in range(len(shape)):
        other = tuple(b for b in range(len(shape)) if b != a)
        idx = np.flatnonzero(active.any(axis=other) if other else active)
        box.append((int(idx[0]), int(idx[-1]) + 1))
    sub = active[tuple(slice(lo, hi) for lo, hi in box)]
    residual = None if sub.all() else _shift(pred, tuple(lo for lo, _ in box))
    return tuple(box), residual, False


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
