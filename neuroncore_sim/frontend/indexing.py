"""Index expressions and masks: ``nl.arange``, ``nl.mgrid``, ``nl.ds`` and comparisons of them.

An :class:`IndexExpr` is an integer affine expression over the axes of a broadcast grid, like
``i * 128 + nl.arange(128)[:, None]``: a constant plus one coefficient per axis, each axis with a
size (1 for a broadcast axis). Indexing a tensor with such expressions gives an affine access
pattern, which is exactly what the hardware's access patterns can express. Comparing
expressions gives a :class:`MaskExpr`, the compile-time predicate that ``mask=`` takes.
"""

from __future__ import annotations

import numpy as np

from ..errors import AccessError, SimulatorError, UnsupportedError
from ..program.ir import Affine, Predicate
from . import once_traced as _once_traced


class AttributeAccessError(UnsupportedError, AttributeError):
    """An attribute NKI does not define (on a tensor or an index expression); also an
    AttributeError, so ``hasattr`` and ``getattr(x, name, default)`` keep working."""


def _defers(other: object) -> bool:
    """True for operands whose own reflected operator handles an index expression (tiles make
    runtime indices, split expressions their own arithmetic)."""
    return type(other).__name__ in ("NkiTensor", "SplitExpr", "DynamicIndex")


def _unsupported(message: str, cls: type[SimulatorError] = UnsupportedError) -> SimulatorError:
    """An error (UnsupportedError unless ``cls``) located at the kernel line when a kernel is
    being traced."""
    from . import tracer as _tracer
    tr = _tracer.active_or_none()
    return tr.fail(cls, message) if tr is not None else cls(message)


def _is_int(x: object) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


class IndexExpr:
    """``const + sum(coefs[a] * i_a)`` where ``i_a`` runs over ``range(sizes[a])``.

    Axes broadcast like numpy (aligned to the right); an axis of size 1 has coefficient 0.
    """

    __slots__ = ("const", "coefs", "sizes")

    def __init__(self, const: int, coefs: tuple[int, ...], sizes: tuple[int, ...]) -> None:
        self.const = int(const)
        self.coefs = coefs
        self.sizes = sizes

    @property
    def shape(self) -> tuple[int, ...]:
        """Broadcast shape of the expression."""
        return self.sizes

    @property
    def ndim(self) -> int:
        return len(self.sizes)

    def bounds(self) -> tuple[int, int]:
        """(min, max) value over the grid (inclusive)."""
        lo = hi = self.const
        for c, n in zip(self.coefs, self.sizes):
            ext = c * (n - 1)
            if ext < 0:
                lo += ext
            else:
                hi += ext
        return lo, hi

    def aligned(self, ndim: int) -> IndexExpr:
        """The same expression with leading broadcast axes added up to ``ndim``."""
        pad = ndim - len(self.sizes)
        if pad <= 0:
            return self
        return IndexExpr(self.const, (0,) * pad + self.coefs, (1,) * pad + self.sizes)

    def __getitem__(self, key: object) -> IndexExpr:
        # Only axis insertion (``[:, None]``, ``[None, :]``) is meaningful on an index.
        key = key if isinstance(key, tuple) else (key,)
        coefs, sizes, k = [], [], 0
        for item in key:
            if item is None:
                coefs.append(0)
                sizes.append(1)
            elif isinstance(item, slice) and item == slice(None):
                coefs.append(self.coefs[k])
                sizes.append(self.sizes[k])
                k += 1
            else:
                raise _unsupported(
                    f"index expression: expected [:, None]-style axis insertion, found {item!r}")
        coefs.extend(self.coefs[k:])
        sizes.extend(self.sizes[k:])
        return IndexExpr(self.const, tuple(coefs), tuple(sizes))

    def _combine(self, other: object, sign: int) -> IndexExpr:
        if _is_int(other):
            return IndexExpr(self.const + sign * int(other), self.coefs,  # type: ignore[arg-type]
                             self.sizes)
        if not isinstance(other, IndexExpr):
            if _defers(other):
                return NotImplemented  # a tile or a split expression handles it
            raise _unsupported(f"index expression arithmetic: expected an int or an index "
                               f"expression, found {other!r} ({type(other).__name__})")
        ndim = max(self.ndim, other.ndim)
        a, b = self.aligned(ndim), other.aligned(ndim)
        sizes = []
        for sa, sb in zip(a.sizes, b.sizes):
            if sa != sb and 1 not in (sa, sb):
                raise _unsupported(
                    f"index expressions: cannot broadcast shapes {a.sizes} and {b.sizes}")
            sizes.append(max(sa, sb))
        coefs = tuple(ca + sign * cb for ca, cb in zip(a.coefs, b.coefs))
        return IndexExpr(a.const + sign * b.const, coefs, tuple(sizes))

    def __add__(self, other: object) -> IndexExpr:
        return self._combine(other, 1)

    __radd__ = __add__

    def __sub__(self, other: object) -> IndexExpr:
        return self._combine(other, -1)

    def __rsub__(self, other: object) -> IndexExpr:
        return (-self)._combine(other, 1)

    def __neg__(self) -> IndexExpr:
        return IndexExpr(-self.const, tuple(-c for c in self.coefs), self.sizes)

    def __mul__(self, other: object) -> IndexExpr:
        if not _is_int(other):
            raise _unsupported(
                f"index expression: only multiplication by an integer is affine, found {other!r}")
        k = int(other)  # type: ignore[arg-type]
        return IndexExpr(self.const * k, tuple(c * k for c in self.coefs), self.sizes)

    __rmul__ = __mul__

    def __floordiv__(self, k: object) -> object:
        """``e // k`` for a positive int ``k``: exact, over a split grid (index_split.py)."""
        from .index_split import divmod_expr
        return divmod_expr(self, k, "//")[0]

    def __mod__(self, k: object) -> object:
        """``e % k`` for a positive int ``k``: exact, over a split grid (index_split.py)."""
        from .index_split import divmod_expr
        return divmod_expr(self, k, "%")[1]

    def _nonaffine(self, *_: object) -> IndexExpr:
        raise _unsupported("index expression: only +, -, * by an integer, and // and % by a "
                           "positive integer are supported; / and an index expression as "
                           "divisor are not")

    __truediv__ = __rtruediv__ = __rfloordiv__ = __rmod__ = _nonaffine
    __pow__ = __rpow__ = __abs__ = __invert__ = __lshift__ = __rshift__ = _nonaffine
    __and__ = __rand__ = __or__ = __ror__ = __xor__ = __rxor__ = __matmul__ = _nonaffine

    def __getattr__(self, name: str) -> object:
        if name.startswith("_"):
            raise AttributeError(name)
        raise _unsupported(f"index expression .{name}: expected shape or ndim (an index "
                           f"expression is an nl.arange / nl.mgrid value)", AttributeAccessError)

    def _cmp(self, other: object, op: str) -> MaskExpr:
        if isinstance(other, (float, np.floating)) and np.isfinite(other):
            # i < 2.5 is i < 3 for integer i (e.g. a bound written n / 2)
            if other != int(other):
                if op in ("==", "!="):
                    raise _unsupported(f"index comparison {op} {other}: expected an integer "
                                       f"bound, found a fraction")
                other = int(np.ceil(other)) if op in ("<", ">=") else int(np.floor(other))
            else:
                other = int(other)
        if isinstance(other, IndexExpr) or _is_int(other):
            return MaskExpr("cmp", op, self - other, ())
        if _defers(other):
            return NotImplemented  # type: ignore[return-value]
        raise _unsupported(f"index comparison {op}: expected an int or an index expression, "
                           f"found {other!r} ({type(other).__name__})")

    def __lt__(self, other: object) -> MaskExpr:
        return self._cmp(other, "<")

    def __le__(self, other: object) -> MaskExpr:
        return self._cmp(other, "<=")

    def __gt__(self, other: object) -> MaskExpr:
        return self._cmp(other, ">")

    def __ge__(self, other: object) -> MaskExpr:
        return self._cmp(other, ">=")

    def __eq__(self, other: object) -> MaskExpr:  # type: ignore[override]
        return self._cmp(other, "==")

    def __ne__(self, other: object) -> MaskExpr:  # type: ignore[override]
        return self._cmp(other, "!=")

    __hash__ = None  # type: ignore[assignment]

    def values(self) -> np.ndarray:
        """The expression's values over its grid (for iota and debugging)."""
        return Affine(self.const, self.coefs).evaluate(self.sizes)

    def to_affine(self, ndim: int) -> Affine:
        """As an :class:`ir.Affine` over an ``ndim``-axis grid."""
        a = self.aligned(ndim)
        return Affine(a.const, a.coefs)

    def __repr__(self) -> str:
        terms = " + ".join(f"{c}*i{k}[{n}]" for k, (c, n) in enumerate(zip(self.coefs, self.sizes))
                           if c)
        return f"IndexExpr({self.const}{' + ' + terms if terms else ''})"


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


def _is_bool(x: object) -> bool:
    return isinstance(x, (bool, np.bool_))


def _mask_operand(x: object, op: str) -> MaskExpr:
    if not isinstance(x, MaskExpr):
        raise _unsupported(f"mask {op}: expected a comparison of index expressions or a bool, "
                           f"found {type(x).__name__}", AccessError)
    return x


class MaskExpr:
    """A predicate over index expressions: ``expr op 0`` or a combination with ``&``, ``|``,
    ``~``. Used as the ``mask=`` argument of instructions."""

    __slots__ = ("kind", "op", "expr", "parts")

    def __init__(self, kind: str, op: str, expr: IndexExpr | None,
                 parts: tuple[MaskExpr, ...]) -> None:
        self.kind, self.op, self.expr, self.parts = kind, op, expr, parts

    def __and__(self, other: object) -> MaskExpr | bool:
        # a Python bool is a condition on loop indices, known here because loops are unrolled
        # (`(i_f < n) & (i * 128 < rows)`): it keeps or drops the whole mask
        if _is_bool(other):
            return self if other else False
        return MaskExpr("bool", "and", None, (self, _mask_operand(other, "&")))

    def __or__(self, other: object) -> MaskExpr | bool:
        if _is_bool(other):
            return True if other else self
        return MaskExpr("bool", "or", None, (self, _mask_operand(other, "|")))

    __rand__ = __and__
    __ror__ = __or__

    def __invert__(self) -> MaskExpr:
        return MaskExpr("bool", "not", None, (self,))

    def __bool__(self) -> bool:
        # `a and b` / `a or b` as the reference examples write masks (mask_bool.py)
        from .mask_bool import ask_bool
        return ask_bool(self)

    @property
    def ndim(self) -> int:
        if self.expr is not None:
            return self.expr.ndim
        return max(p.ndim for p in self.parts)

    def to_predicate(self, ndim: int) -> Predicate:
        """As an :class:`ir.Predicate` over an ``ndim``-axis grid (aligned to the right)."""
        if self.expr is not None:
            return Predicate(self.op, self.expr.to_affine(ndim))
        return Predicate(self.op, None, tuple(p.to_predicate(ndim) for p in self.parts))


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
