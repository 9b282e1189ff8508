"""Index expressions: :class:`IndexExpr` (affine, ``nl.arange`` / ``nl.mgrid`` values) and
:class:`SplitExpr`, the result of their ``//`` and ``%`` (one algebra: each builds the other).

An :class:`IndexExpr` is an integer affine expression over the axes of a broadcast grid, like
``i * 128 + nl.arange(128)[:, None]``: a constant plus one coefficient per axis, each axis with a
size (1 for a broadcast axis). Comparing expressions gives a :class:`.index_base.MaskExpr`.

Floor division and modulo by positive integer constants:

``i // k`` and ``i % k`` of an ``nl.arange`` value are not affine in ``i``, but they are affine
over a finer grid: where ``k`` divides the axis size, ``i = k * hi + lo`` with ``hi`` in
``range(n // k)`` and ``lo`` in ``range(k)``, and then ``i // k = hi`` and ``i % k = lo``. A
:class:`SplitExpr` is an index expression over such a grid: each axis of the user's grid is a
mixed-radix number of sub-axes (outer to inner), each sub-axis with its own coefficient.

``e // k`` and ``e % k`` are computed exactly: ``e`` is written as ``k * q + r`` with ``q``
and ``r`` affine over the sub-axes and ``0 <= r < k`` everywhere (splitting a sub-axis of a
term whose coefficient ``k`` does not divide, when its size allows); then ``e // k = q`` and
``e % k = r``. When no such split exists (``(i + 1) // 2``, or ``i // 3`` on an axis of 8) the
operation is an ``UnsupportedError`` at the kernel line.

Indexing a tensor with split expressions gives an ordinary view when each user axis walks
memory with one stride (``t[p, i // K1, i % K1]`` on a contiguous ``[P, K0, K1]`` tensor: the
flattened axis), through a reshape-style frame when the stride is one in storage but not per
declared dim; otherwise (the sub-axes of one axis walk memory with unrelated strides) it is an
``UnsupportedError`` asking for one grid axis per factor. Masks and ``iota`` take affine
expressions only.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...errors import AccessError
from ...program.ir import Affine
from .index_base import AttributeAccessError, MaskExpr, _defers, _is_int, _unsupported


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
        """``e // k`` for a positive int ``k``: exact, over a split grid ."""
        return divmod_expr(self, k, "//")[0]

    def __mod__(self, k: object) -> object:
        """``e % k`` for a positive int ``k``: exact, over a split grid ."""
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


Radix = tuple[int, ...]  # sub-axis sizes of one user axis, outer to inner (product: its size)


def _suffixes(radix: Radix) -> list[int]:
    """Inner products of a radix: [1, s_last, s_last * s_prev, ..., n]."""
    out = [1]
    for s in reversed(radix):
        out.append(out[-1] * s)
    return out


def _refine(a: Radix, b: Radix) -> Radix | None:
    """The coarsest radix finer than both (None when their split points do not nest)."""
    points = sorted(set(_suffixes(a)) | set(_suffixes(b)))
    if any(hi % lo for lo, hi in zip(points, points[1:])):
        return None
    return tuple(hi // lo for lo, hi in zip(points, points[1:]))[::-1] or (1,)


def _recoef(coefs: tuple[int, ...], radix: Radix, finer: Radix) -> tuple[int, ...]:
    """Coefficients over ``radix`` re-expressed over its refinement ``finer``."""
    inner = _suffixes(radix)[:-1][::-1]  # inner product of each sub-axis, outer to inner
    fin_inner = _suffixes(finer)[:-1][::-1]
    out = []
    for q in fin_inner:
        # the coarse sub-axis containing this fine one: the largest inner product <= q
        j = max(j for j, p in enumerate(inner) if p <= q)
        out.append(coefs[j] * (q // inner[j]))
    return tuple(out)


class SplitExpr:
    """``const + sum over axes a, sub-axes j of coefs[a][j] * u_aj`` where user axis ``a``
    counts ``i_a = sum_j u_aj * inner_j`` in the mixed radix ``radix[a]``."""

    __slots__ = ("const", "radix", "coefs")

    def __init__(self, const: int, radix: tuple[Radix, ...],
                 coefs: tuple[tuple[int, ...], ...]) -> None:
        self.const, self.radix, self.coefs = int(const), radix, coefs

    @classmethod
    def of(cls, e: Any) -> SplitExpr:
        if isinstance(e, SplitExpr):
            return e
        if _is_int(e):
            return cls(int(e), (), ())
        return cls(e.const, tuple((n,) for n in e.sizes), tuple((c,) for c in e.coefs))

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(math.prod(r) for r in self.radix)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.sizes

    @property
    def ndim(self) -> int:
        return len(self.radix)

    def aligned(self, ndim: int) -> SplitExpr:
        pad = ndim - self.ndim
        if pad <= 0:
            return self
        return SplitExpr(self.const, ((1,),) * pad + self.radix, ((0,),) * pad + self.coefs)

    def on(self, radix: tuple[Radix, ...]) -> SplitExpr:
        """The same expression over a refinement ``radix`` of its grid (same ndim; size-1 axes
        broadcast)."""
        coefs = []
        for mine, c, want in zip(self.radix, self.coefs, radix):
            if mine == want:
                coefs.append(c)
            elif math.prod(mine) == 1:  # a broadcast axis: no coefficient anywhere
                coefs.append((0,) * len(want))
            else:
                coefs.append(_recoef(c, mine, want))
        return SplitExpr(self.const, radix, tuple(coefs))

    def simplified(self) -> SplitExpr | IndexExpr:
        """Merge sub-axes whose coefficients chain (``c_outer == c_inner * size_inner``); an
        :class:`IndexExpr` when every axis is whole again."""
        radix, coefs = [], []
        for r, c in zip(self.radix, self.coefs):
            rs, cs = [r[-1]], [c[-1]]
            for s, k in zip(r[-2::-1], c[-2::-1]):  # inner to outer
                if k == cs[0] * rs[0]:
                    rs[0] *= s
                else:
                    rs.insert(0, s)
                    cs.insert(0, k)
            radix.append(tuple(rs))
            coefs.append(tuple(cs))
        if all(len(r) == 1 for r in radix):
            return IndexExpr(self.const, tuple(c[0] for c in coefs), tuple(r[0] for r in radix))
        return SplitExpr(self.const, tuple(radix), tuple(coefs))

    # --- arithmetic ------------------------------------------------------------------------------
    def _combine(self, other: Any, sign: int) -> SplitExpr | IndexExpr:
        if not (_is_int(other) or isinstance(other, (IndexExpr, SplitExpr))):
            if type(other).__name__ == "NkiTensor":
                return NotImplemented
            raise _unsupported(f"index expression arithmetic: expected an int or an index "
                               f"expression, found {other!r} ({type(other).__name__})")
        exprs = common([self, other])
        a, b = exprs
        coefs = tuple(tuple(x + sign * y for x, y in zip(ca, cb))
                      for ca, cb in zip(a.coefs, b.coefs))
        return SplitExpr(a.const + sign * b.const, a.radix, coefs).simplified()

    def __add__(self, other: Any) -> SplitExpr | IndexExpr:
        return self._combine(other, 1)

    __radd__ = __add__

    def __sub__(self, other: Any) -> SplitExpr | IndexExpr:
        return self._combine(other, -1)

    def __rsub__(self, other: Any) -> SplitExpr | IndexExpr:
        return (self * -1)._combine(other, 1)

    def __neg__(self) -> SplitExpr | IndexExpr:
        return self * -1

    def __mul__(self, other: Any) -> SplitExpr | IndexExpr:
        if not _is_int(other):
            raise _unsupported(f"index expression: only multiplication by an integer is "
                               f"affine, found {other!r}")
        k = int(other)
        return SplitExpr(self.const * k, self.radix,
                         tuple(tuple(c * k for c in cs) for cs in self.coefs)).simplified()

    __rmul__ = __mul__

    def __floordiv__(self, k: Any) -> SplitExpr | IndexExpr:
        return divmod_expr(self, k, "//")[0]

    def __mod__(self, k: Any) -> SplitExpr | IndexExpr:
        return divmod_expr(self, k, "%")[1]

    def _not_affine(self, *_: Any) -> Any:
        raise _unsupported("index expression: an expression with // or % can be added to, "
                           "multiplied by an int, divided (//, %) by a positive int and used "
                           "as an index; masks, comparisons, / and iota need affine "
                           "expressions")

    __truediv__ = __rfloordiv__ = __rmod__ = __lt__ = __le__ = __gt__ = __ge__ = _not_affine
    __eq__ = __ne__ = _not_affine  # type: ignore[assignment]
    __hash__ = None  # type: ignore[assignment]

    def __getitem__(self, key: Any) -> SplitExpr:
        key = key if isinstance(key, tuple) else (key,)
        radix, coefs, k = [], [], 0
        for item in key:
            if item is None:
                radix.append((1,))
                coefs.append((0,))
            elif isinstance(item, slice) and item == slice(None):
                radix.append(self.radix[k])
                coefs.append(self.coefs[k])
                k += 1
            else:
                raise _unsupported(
                    f"index expression: expected [:, None]-style axis insertion, found {item!r}")
        return SplitExpr(self.const, tuple(radix) + self.radix[k:],
                         tuple(coefs) + self.coefs[k:])

    def values(self) -> np.ndarray:
        """The expression's values over its user grid (for debugging and tests)."""
        out = np.full(self.sizes, self.const, dtype=np.int64)
        for a, (r, cs) in enumerate(zip(self.radix, self.coefs)):
            i = np.arange(math.prod(r))
            part = np.zeros_like(i)
            for n, c, q in zip(r, cs, _suffixes(r)[:-1][::-1]):
                part += c * ((i // q) % n)
            shape = [1] * self.ndim
            shape[a] = len(i)
            out = out + part.reshape(shape)
        return out

    def __repr__(self) -> str:
        return f"SplitExpr({self.const}, radix={self.radix}, coefs={self.coefs})"


def common(items: list[Any]) -> list[SplitExpr]:
    """``items`` (ints, IndexExprs, SplitExprs) over one broadcast grid with a common radix."""
    exprs = [SplitExpr.of(e) for e in items]
    ndim = max(e.ndim for e in exprs)
    exprs = [e.aligned(ndim) for e in exprs]
    radix: list[Radix] = []
    for a in range(ndim):
        r: Radix = (1,)
        for e in exprs:
            mine = e.radix[a]
            if math.prod(mine) == 1:
                continue
            if math.prod(r) == 1:
                r = mine
                continue
            if math.prod(mine) != math.prod(r):
                raise _unsupported(f"index expressions: cannot broadcast axis {a} of sizes "
                                   f"{math.prod(r)} and {math.prod(mine)}", AccessError)
            finer = _refine(r, mine)
            if finer is None:
                raise _unsupported(f"index expressions: the // and % of axis {a} split it "
                                   f"as {list(r)} and {list(mine)}, which do not nest; "
                                   f"expected divisors that divide one another")
            r = finer
        radix.append(r)
    return [e.on(tuple(radix)) for e in exprs]


def divmod_expr(e: Any, k: Any, op: str) -> tuple[SplitExpr | IndexExpr, SplitExpr | IndexExpr]:
    """(e // k, e % k) as exact expressions over a refined grid (see the module docstring)."""
    if not _is_int(k) or int(k) <= 0:
        raise _unsupported(f"index expression {op}: expected a positive integer divisor, found "
                           f"{k!r}")
    k = int(k)
    s = SplitExpr.of(e)
    radix = [list(r) for r in s.radix]
    coefs = [list(c) for c in s.coefs]
    while True:
        cq, cr = divmod(s.const, k)
        lo = hi = cr
        for r, cs in zip(radix, coefs):
            for n, c in zip(r, cs):
                if c % k:
                    ext = c * (n - 1)
                    lo, hi = (lo + ext, hi) if ext < 0 else (lo, hi + ext)
        if lo >= 0 and hi < k:
            break
        # split one sub-axis of a term k does not divide, so that its outer part is divisible
        for r, cs in zip(radix, coefs):
            for j, (n, c) in enumerate(zip(r, cs)):
                m = k // math.gcd(c, k)
                if c % k and m < n and n % m == 0:
                    r[j:j + 1] = [n // m, m]
                    cs[j:j + 1] = [c * m, c]
                    break
            else:
                continue
            break
        else:
            raise _unsupported(f"index expression {op} {k}: not one access pattern (the values "
                               f"repeat or wrap unevenly over the grid); expected an "
                               f"expression whose axes split into multiples of {k}, e.g. "
                               f"nl.arange(n) {op} {k} with n a multiple of {k}")
    rad = tuple(tuple(r) for r in radix)
    q = tuple(tuple(c // k if c % k == 0 else 0 for c in cs) for cs in coefs)
    rm = tuple(tuple(0 if c % k == 0 else c for c in cs) for cs in coefs)
    return SplitExpr(cq, rad, q).simplified(), SplitExpr(cr, rad, rm).simplified()
