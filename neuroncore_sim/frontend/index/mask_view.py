"""Masks over a shape (:func:`mask_box`, what every ``mask=`` becomes) and ``tile[mask]``, a
tile subscripted with a mask expression.

Kernels written inside AWS pass an operand as ``t[mask]`` (``nc_matmul(w, t[...][(i < n) &
(j < m)])``, ``square[mask] if mask else square``): the operand restricted to the elements the
mask keeps. The public reference documents masks only as the ``mask=`` of an instruction, which
shrinks the instruction to the active box. So ``t[mask]`` is evaluated over ``t``'s shape (axes
in order, as ``mask=`` over an instruction's shape): a mask that keeps every element (tile
bounds that divide evenly) is ``t`` itself; one that keeps a rectangle gives a view of ``t``
that *carries* that box (:func:`carried_box`): the instruction taking it restricts itself to
it, as if the mask were its own ``mask=`` (an element-wise instruction over the operand's
shape; ``nc_matmul``, whose operands' contraction axis shrinks the contraction and whose free
axes map to the result's axes). A mask that is not a rectangle, or a carried box the taking
instruction cannot map onto its own axes, is an ``UnsupportedError`` asking for ``mask=`` on
the instruction, rather than a result the kernel did not mean.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import KernelError, UnsupportedError
from ...program.ir import Affine, Predicate
from .. import tracer as _tracer
from .indexing import MaskExpr, arange
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
    axes = _intervals(pred, [(0, n) for n in shape])
    if axes is not None:  # comparisons of one axis each: a rectangle, without a grid
        if any(lo >= hi for lo, hi in axes):
            return None, None, True
        return tuple(axes), None, False
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


def _intervals(pred: Predicate, axes: list[tuple[int, int]]) -> list[tuple[int, int]] | None:
    """``axes`` (per axis, the half-open range of active indices) narrowed by ``pred`` when it
    is a comparison over at most one axis, or an ``and`` of such (the usual mask: tile bounds);
    None for any other predicate (the caller evaluates it over the grid)."""
    if pred.op == "and":
        for p in pred.parts:
            if _intervals(p, axes) is None:
                return None
        return axes
    e = pred.expr
    if e is None or pred.op == "!=":
        return None
    used = [a for a, c in enumerate(e.coefs) if c]
    if len(used) > 1:
        return None
    k, op = e.const, pred.op
    if not used:  # a constant: everything or nothing
        if not {"<": k < 0, "<=": k <= 0, ">": k > 0, ">=": k >= 0, "==": k == 0}[op]:
            axes[:] = [(0, 0)] * len(axes)
        return axes
    a = used[0]
    c = e.coefs[a]
    if c < 0:  # c*x + k op 0  <=>  (-c)*x + (-k) flipped-op 0
        c, k = -c, -k
        op = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "=="}[op]
    if op == "<":  # x < -k/c
        lo, hi = 0, -(k // c)
    elif op == "<=":
        lo, hi = 0, (-k) // c + 1
    elif op == ">":
        lo, hi = (-k) // c + 1, axes[a][1]
    elif op == ">=":
        lo, hi = -(k // c), axes[a][1]
    else:
        lo = (-k) // c
        hi = lo + 1 if lo * c == -k else lo
    axes[a] = (max(axes[a][0], lo), min(axes[a][1], hi))
    return axes


def mask_view(tile: Any, mask: MaskExpr | bool) -> Any:
    """``tile[mask]``: ``tile`` when ``mask`` keeps all of it, a view carrying the box it keeps
    when that is a rectangle, else an error at the line.

    Subscripts chain (``t[k < K][n < N]``): the boxes intersect. A condition that folds to a
    Python bool (``t[w < W_f]`` with ``w`` a loop int, as NKI's conv kernels write it) keeps
    all of the tile (True) or nothing (False: an empty box, so the instruction taking the
    view is dropped, as the compiler drops a fully masked one)."""
    tr = _tracer.current("tile[mask]")
    box, residual, empty = mask_box(mask, tile.shape)
    if residual is not None:
        raise _refused(tile.shape, box, residual, empty)
    whole = tuple((0, n) for n in tile.shape)
    prior = carried_box(tr, tile, take=False)
    kept = list(box if box is not None else prior if prior is not None else whole)
    if prior is not None and box is not None:
        kept = [(max(a, c), min(b, d)) for (a, b), (c, d) in zip(box, prior)]
    if empty or any(lo >= hi for lo, hi in kept):
        kept = [(0, 0)] * len(tile.shape)
    if tuple(kept) == (prior if prior is not None else whole):
        return tile
    view = tile.shrink(whole)  # a fresh view of all of it
    _carried(tr)[id(view)] = (view, tuple(kept))
    return view


def is_empty(box: tuple[tuple[int, int], ...]) -> bool:
    """Whether a carried box keeps nothing (``t[False]``, or chained masks that do not meet)."""
    return any(lo >= hi for lo, hi in box)


def _refused(shape: tuple[int, ...], box: Any, residual: Any, empty: bool) -> UnsupportedError:
    kept = "nothing" if empty else (f"the box {[list(b) for b in box]}" if box is not None
                                    else "part")
    return _tracer.current("tile[mask]").fail(
        UnsupportedError, f"tile[mask]: a mask carried by an operand must keep the whole tile "
        f"{list(shape)} or a rectangle the instruction maps onto its own axes (pass mask= to "
        f"the instruction to restrict it); found a mask keeping "
        f"{kept}{' with a non-rectangular predicate' if residual is not None else ''}")


def _carried(tr: Any) -> dict[int, tuple[Any, tuple[tuple[int, int], ...]]]:
    """The views made by ``tile[mask]`` in this launch and the box each carries (id -> (view,
    box); the view is kept so its id is not reused)."""
    return tr.lang_state.setdefault("carried_masks", {})  # type: ignore[return-value]


def carried_box(tr: Any, view: Any, take: bool = True) -> tuple[tuple[int, int], ...] | None:
    """The box ``view`` carries from a ``tile[mask]``, None when it carries none; ``take``: an
    instruction consumes it (False: only look)."""
    table = tr.lang_state.get("carried_masks")
    if not table:
        return None
    entry = table.get(id(view))
    if entry is None or entry[0] is not view:
        return None
    if take:
        del table[id(view)]
    return entry[1]


def refuse_carried(view: Any, box: tuple[tuple[int, int], ...], what: str) -> UnsupportedError:
    """The error for a carried box an instruction cannot map onto its axes."""
    return _tracer.current(what).fail(
        UnsupportedError, f"{what}: an operand restricted by tile[mask] to the box "
        f"{[list(b) for b in box]} of its {list(view.shape)}; expected the instruction's own "
        f"shape (an element-wise operand) or an nc_matmul operand; pass mask= to the "
        f"instruction instead")


def box_mask(box: tuple[tuple[int, int], ...], shape: tuple[int, ...]) -> MaskExpr | bool:
    """A mask over ``shape`` keeping exactly ``box`` (True when it keeps everything)."""
    out: MaskExpr | bool = True
    for a, ((lo, hi), n) in enumerate(zip(box, shape)):
        if lo <= 0 and hi >= n:
            continue
        idx = arange(n)[tuple(slice(None) if b == a else None for b in range(len(shape)))]
        cond = (idx >= lo) & (idx < hi)
        out = cond if out is True else out & cond
    return out
