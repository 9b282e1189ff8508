"""Index expressions and masks: ``nl.arange``, ``nl.mgrid``, ``nl.ds`` and comparisons of them.

An :class:`IndexExpr` is an integer affine expression over the axes of a broadcast grid, like
``i * 128 + nl.arange(128)[:, None]``: a constant plus one coefficient per axis, each axis with a
size (1 for a broadcast axis). Indexing a tensor with such expressions gives an affine access
pattern, which is exactly what the hardware's access patterns can express. Comparing
expressions gives a :class:`MaskExpr`, the compile-time predicate that ``mask=`` takes.

The expressions themselves are in :mod:`.index_expr` (with ``//`` and ``%``) and the masks in
:mod:`.index_base`; this module adds runtime indices and the ``nl`` constructors, and re-exports
both, so the rest of the front end imports index expressions from here.
"""

from __future__ import annotations

from typing import Any

from ...errors import AccessError
from .. import once_traced as _once_traced
# The index expression algebra and masks, re-exported: the front end imports them from here.
from .index_base import (AttributeAccessError, MaskExpr, _defers, _is_int,  # noqa: F401
                         _unsupported)
from .index_expr import IndexExpr, SplitExpr  # noqa: F401


class DynamicIndex:
    """A runtime index: the value of a one-element integer SBUF tile (``idx[0, i]``), plus an
    optional static part (``idx[0, i] + iy``). Indexing an on-chip tile with it gives a view
    whose offset is read at run time (``nisa.tensor_copy_dynamic_src`` / ``_dst``)."""

    __slots__ = ("tile", "expr")

    def __init__(self, tile: object, expr: IndexExpr | int = 0) -> None:
        self.tile = tile
        self.expr = expr

    def __add__(self, other: object) -> DynamicIndex:
        if _is_int(other) or isinstance(other, IndexExpr):
            return DynamicIndex(self.tile, self.expr + other)  # type: ignore[operator]
        return NotImplemented

    __radd__ = __add__

    def __sub__(self, other: object) -> DynamicIndex:
        if _is_int(other) or isinstance(other, IndexExpr):
            return DynamicIndex(self.tile, self.expr - other)  # type: ignore[operator]
        return NotImplemented

    def __repr__(self) -> str:
        return f"DynamicIndex({self.tile!r} + {self.expr!r})"


def arange(*args: int) -> IndexExpr:
    """``nl.arange(stop)`` / ``nl.arange(start, stop[, step])``: a 1-D index expression."""
    if not args or not all(_is_int(a) for a in args):
        raise _unsupported(f"nl.arange: expected 1 to 3 integers, found {args!r}", AccessError)
    ints = [int(a) for a in args]
    if len(ints) == 1:
        start, stop, step = 0, ints[0], 1
    elif len(ints) in (2, 3):
        start, stop, step = ints[0], ints[1], ints[2] if len(ints) == 3 else 1
    else:
        raise _unsupported(f"nl.arange: expected 1 to 3 integers, found {len(args)}")
    if step == 0:
        raise _unsupported("nl.arange: expected a nonzero step, found 0", AccessError)
    n = max(0, -(-(stop - start) // step))
    return IndexExpr(start, (step,), (n,))


class Grid(tuple):
    """The index expressions of ``nl.mgrid[...]``: unpack it (``i_p, i_f = nl.mgrid[...]``) or
    use ``grid.p`` (partition axis) and ``grid.x``, ``.y``, ``.z`` (free axes 1, 2, 3), as the
    NKI docs and examples do."""

    def _axis(self, a: int, name: str) -> IndexExpr:
        if a >= len(self):
            raise _unsupported(f"nl.mgrid .{name}: expected a grid of at least {a + 1} axes, "
                               f"found {len(self)}", AccessError)
        return self[a]

    @property
    def p(self) -> IndexExpr:
        return self._axis(0, "p")

    @property
    def x(self) -> IndexExpr:
        return self._axis(1, "x")

    @property
    def y(self) -> IndexExpr:
        return self._axis(2, "y")

    @property
    def z(self) -> IndexExpr:
        return self._axis(3, "z")


class _MGrid:
    """``nl.mgrid[0:128, 0:512]``: one index expression per axis, like ``numpy.mgrid``."""

    def __getitem__(self, key: object) -> Grid | IndexExpr:
        slices = key if isinstance(key, tuple) else (key,)
        ndim = len(slices)
        out = []
        for axis, s in enumerate(slices):
            if not isinstance(s, slice):
                raise _unsupported(f"nl.mgrid: expected slices, found {s!r}")
            start, stop, step = (0 if s.start is None else s.start), s.stop, \
                (1 if s.step is None else s.step)
            if not all(_is_int(v) for v in (start, stop, step)) or step == 0:
                raise _unsupported(f"nl.mgrid: expected integer bounds and a nonzero step, "
                                   f"found {s!r}", AccessError)
            n = max(0, -(-(stop - start) // step))
            coefs = tuple(step if a == axis else 0 for a in range(ndim))
            sizes = tuple(n if a == axis else 1 for a in range(ndim))
            out.append(IndexExpr(start, coefs, sizes))
        return Grid(out) if ndim > 1 else out[0]


mgrid = _MGrid()


def ds(start: int, size: int) -> slice:
    """``nl.ds(start, size)``: the slice ``start:start+size``."""
    if not (_is_int(start) and _is_int(size) and start >= 0 and size >= 1):
        raise _unsupported(f"nl.ds: expected an integer start >= 0 and size >= 1, found start "
                           f"{start!r}, size {size!r}", AccessError)
    return slice(int(start), int(start) + int(size))


def permuted_mask(mask: object, order: list[int], ndim: int) -> object:
    """``mask`` over an ``ndim``-axis grid with its axes reordered (axis k of the result is
    axis ``order[k]``): the mask of an operand whose access pattern was reordered."""
    if not isinstance(mask, MaskExpr):
        return mask  # True / False / None
    if mask.ndim > ndim:
        return mask  # too many axes: mask_box reports it
    if mask.expr is not None:
        e = mask.expr.aligned(ndim)
        return MaskExpr(mask.kind, mask.op, IndexExpr(e.const, tuple(e.coefs[a] for a in order),
                                                      tuple(e.sizes[a] for a in order)), ())
    return MaskExpr(mask.kind, mask.op, None,
                    tuple(permuted_mask(p, order, ndim) for p in mask.parts))

def trailing_unit_indices(ndim: int, key: tuple[Any, ...]) -> bool:
    """True when ``key`` has more indices than ``ndim`` and every extra one selects the single
    element of a size-1 axis (0, -1, ``:``, ``0:1``)."""
    if len(key) <= ndim or any(k is None or k is Ellipsis for k in key):
        return False
    for k in key[ndim:]:
        if _is_int(k):
            if int(k) not in (0, -1):
                return False
        elif not (isinstance(k, slice) and k.step in (None, 1)
                  and all(b is None or _is_int(b) for b in (k.start, k.stop))
                  and range(1)[slice(*(None if b is None else int(b)
                                       for b in (k.start, k.stop)))] == range(1)):
            return False
    return True


# loops NKI traces once restore these bindings per iteration (once_traced.py)
_once_traced.INDEX_TYPES[:] = [IndexExpr, MaskExpr]
