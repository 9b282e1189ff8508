"""The documented methods and attributes of NKI tensors (``nki.tensor`` in the 2.2x reference):
``shape``, ``dtype``, ``ndim``, ``itemsize``, ``reshape``, ``view``, ``astype``,
``expand_dims``, ``broadcast_to`` and ``assert_shape``, plus the errors for everything else a
kernel might try on a tile (Python truth values, iteration, unknown attributes).

A reshape is a new view of the same elements in row-major order, as numpy's ``reshape`` without
a copy: it gets its own *frame*, the dims that its ``base`` / ``coefs`` index, given as
``(shape, element strides in storage, storage offset)``. Every access of the reshaped view is
then still one affine access pattern into the declared tensor, so writes through either name
are the same bytes, and the timing model sees the right region. A reshape that would need a copy
(merging axes that are not contiguous in memory) is an error, as is a reshape of an on-chip tile
that changes its partition dim (the partitions are separate memories).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ...dtypes import dtype_name
from ...errors import AccessError, KernelError, ShapeError, UnsupportedError
from ...program.ir import MemSpace
from .. import tracer as _tracer
from .dtype_view import resized_view
from ..index.index_expr import SplitExpr, common
from ..index.indexing import AttributeAccessError, IndexExpr, _is_int, _unsupported

if TYPE_CHECKING:
    from .tensor import NkiTensor

#: The class this mixin is part of (:class:`~.tensor.NkiTensor`) and ``frontend.language`` (nl):
#: bound by tensor.py once both exist, so that this module imports neither (tensor.py imports
#: it while defining NkiTensor; its reach to nl is tensor.py's one allowed cycle edge).
_Tensor: Any = None
_nl: Any = None

#: (shape, element strides in storage, storage offset, partition dim) of the dims of a reshaped
#: view or of a dtype view of another element size (strides and offset then count elements of
#: the view's dtype, in the storage read as a flat array of it).
Frame = tuple[tuple[int, ...], tuple[int, ...], int, int]

#: The names of the documented ``nki.tensor`` surface (for the error on any other name).
DOCUMENTED = ("shape", "dtype", "ndim", "itemsize", "reshape", "view", "astype", "expand_dims",
              "broadcast_to", "assert_shape")


#: A kernel used an attribute NKI tensors do not have (in the 2.2x API): an UnsupportedError and
#: an AttributeError, so ``hasattr`` and ``getattr(t, name, default)`` keep working.
UnsupportedAttributeError = AttributeAccessError


def _fail(cls: type[Exception], msg: str) -> Exception:
    tr = _tracer.active_or_none()
    return tr.fail(cls, msg) if tr is not None else cls(msg)  # type: ignore[arg-type]


def _shape_arg(args: tuple[Any, ...], size: int, what: str) -> tuple[int, ...]:
    """``reshape(a, b)`` or ``reshape((a, b))``, one -1 allowed, as numpy."""
    shape = args[0] if len(args) == 1 and isinstance(args[0], (tuple, list)) else args
    dims = []
    for n in shape:
        if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
            raise _fail(ShapeError, f"{what}: expected integer sizes, found {n!r} "
                        f"({type(n).__name__})")
        dims.append(int(n))
    unknown = [i for i, n in enumerate(dims) if n == -1]
    if len(unknown) > 1 or any(n < -1 or n == 0 for n in dims):
        raise _fail(ShapeError, f"{what}: expected positive sizes (at most one -1), found "
                    f"{list(dims)}")
    known = math.prod(n for n in dims if n != -1)
    if unknown and size % known == 0:
        dims[unknown[0]] = size // known
    if math.prod(dims) != size:
        raise _fail(ShapeError, f"{what}: expected a shape of {size} elements, found "
                    f"{list(shape)}")
    return tuple(dims)


def nocopy_strides(old: list[tuple[int, int]], new: tuple[int, ...]) -> list[int] | None:
    """Strides that walk the elements of a pattern ``old`` ((stride, size) pairs, row-major) in
    the shape ``new``, or None when some merged axes are not contiguous (numpy's rule for a
    reshape without a copy)."""
    dims = [(s, n) for s, n in old if n != 1]
    strides = [0] * len(new)
    oi, ni = 0, 0
    while oi < len(dims) and ni < len(new):
        oj, nj = oi + 1, ni + 1
        op, np_ = dims[oi][1], new[ni]
        while op != np_:  # the smallest groups of old and new axes with equal sizes
            if np_ < op:
                np_ *= new[nj]
                nj += 1
            else:
                op *= dims[oj][1]
                oj += 1
        for k in range(oi, oj - 1):  # the old group must be contiguous to be re-split
            if dims[k][0] != dims[k + 1][0] * dims[k + 1][1]:
                return None
        strides[nj - 1] = dims[oj - 1][0]
        for k in range(nj - 1, ni, -1):
            strides[k - 1] = strides[k] * new[k]
        oi, ni = oj, nj
    return strides  # trailing size-1 axes keep stride 0 (never moved along)


class TensorSurface:
    """Methods of :class:`~neuroncore_sim.frontend.tensors.tensor.NkiTensor` from the NKI reference."""

    __slots__ = ()

    @property
    def itemsize(self: NkiTensor) -> int:
        """Length of one element in bytes."""
        return int(np.dtype(self.dtype).itemsize)

    def assert_shape(self: NkiTensor, shape: Any) -> NkiTensor:
        """The tensor itself, after checking it has shape ``shape``."""
        want = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
        if tuple(self.shape) != tuple(int(n) for n in want):
            raise _fail(ShapeError, f"assert_shape: expected shape {list(want)}, found "
                        f"{list(self.shape)}")
        return self

    def reshape(self: NkiTensor, *shape: Any, **kwargs: Any) -> NkiTensor:
        """A view of the same elements in row-major order with a new shape (no copy):
        ``t.reshape((a, b))``, ``t.reshape(a, b)`` or ``t.reshape(shape=(a, b))``.

        On-chip tiles keep their partition dim: only the free dims are reshaped.
        """
        tr = _tracer.current("reshape")
        if "shape" in kwargs and not shape:
            shape = (kwargs.pop("shape"),)
        if kwargs or not shape:
            raise tr.fail(KernelError, f"reshape: expected the new shape (positional or "
                          f"shape=), found {'keywords ' + ', '.join(kwargs) if kwargs else 'none'}")
        new = _shape_arg(shape, math.prod(self.shape), "reshape")
        if new == self.shape:
            return self
        return self._framed(new)

    def _framed(self: NkiTensor, new: tuple[int, ...]) -> NkiTensor:
        """The view's elements in row-major order as a view of shape ``new`` whose dims are its
        own (a frame): what reshape gives, also for ``new == shape`` (a sub-tensor that indirect
        indexing then treats as a whole tensor)."""
        tr = _tracer.current("reshape")
        view = self
        if self.space is not MemSpace.HBM:
            view = self.partition_first()
            if view is not self:  # the partitions are walked by a later axis, or by none
                raise tr.fail(ShapeError, f"reshape of a {self.space.value} tile whose first "
                              f"axis is not its partition dim ({list(self.shape)}, block dims "
                              f"first): reshape one block, t[b].reshape(...)")
            if not new or new[0] != self.shape[0]:
                raise tr.fail(ShapeError, f"reshape of a {self.space.value} tile: expected the "
                              f"partition dim ({view.shape[0]}) kept as the first dim, found "
                              f"{list(self.shape)} -> {list(new)}")
        problem = view.out_of_bounds() or view.tile_error()
        if problem:
            raise tr.fail(AccessError, f"reshape: {problem}")
        acc = view.access()
        if self.space is MemSpace.HBM:
            strides = nocopy_strides(list(acc.pattern), new)
        else:  # the partition axis stays; the free axes are reshaped within each partition
            free = nocopy_strides(list(acc.pattern[1:]), new[1:])
            strides = None if free is None else [acc.pattern[0][0]] + free
        if strides is None:
            raise tr.fail(UnsupportedError, f"reshape {list(self.shape)} -> {list(new)}: the "
                          f"view's axes are not contiguous in memory, so this reshape would "
                          f"need a copy; copy it first (nl.copy, or a DMA into a new tensor)")
        nd = len(new)
        frame: Frame = (new, tuple(strides), acc.offset, 0)
        coefs = tuple(tuple(1 if a == d else 0 for a in range(nd)) for d in range(nd))
        out = _Tensor(view._resolved(), new, self.dtype, (0,) * nd, coefs, self.space,
                        self.lease, inside=True, frame=frame)
        out._views = {}
        return out

    def view(self: NkiTensor, dtype: Any) -> NkiTensor:
        """The same bytes read as ``dtype`` (no copy), as numpy's ``ndarray.view``: the tensor
        itself when the dtype is its own; with a dtype of another element size the last dim
        scales by old size / new size (frontend/tensors/dtype_view.py)."""
        from ... import dtypes as _dt
        dt = _dt.to_dtype(dtype, "view dtype")
        if dtype_name(dt) == dtype_name(self.dtype):
            return self
        if dt.itemsize != np.dtype(self.dtype).itemsize:
            return resized_view(self, dt)
        decl = self._resolved()
        return _Tensor(decl, self.shape, dt, self.base, self.coefs, self.space, self.lease,
                         frame=self.frame)

    def _as_dtype(self: NkiTensor, decl: Any) -> np.dtype | None:
        """The dtype an access of this view reads its tensor as (None: the tensor's own)."""
        dt = self.dtype
        if dt is decl.dtype or dtype_name(dt) == dtype_name(decl.dtype):
            return None
        return dt

    def astype(self: NkiTensor, dtype: Any) -> NkiTensor:
        """A copy of the tile converted to ``dtype`` (``nl.copy`` with ``dtype=``)."""
        if self.space is MemSpace.HBM:
            raise _fail(UnsupportedError, "astype of an HBM tensor: expected an on-chip tile "
                        "(load it first; a conversion runs on a compute engine), found hbm")
        return _nl.copy(self, dtype=dtype)

    def expand_dims(self: NkiTensor, axis: Any) -> NkiTensor:
        """A view with a new axis of size 1 at position ``axis`` (no copy); a tuple / list of
        axes (``nl.expand_dims`` docs) inserts one per position of the result, as numpy's."""
        if isinstance(axis, (tuple, list)):
            nd_out = self.ndim + len(axis)
            try:
                where = sorted(int(a) + nd_out if a < 0 else int(a) for a in axis)
            except TypeError:
                where = None
            if where is None or len(set(where)) != len(where) or \
                    not all(0 <= a < nd_out for a in where):
                raise _fail(ShapeError, f"expand_dims axis: expected distinct ints in "
                            f"{-nd_out}..{nd_out - 1}, found {axis!r}")
            out = self
            for a in where:
                out = out.expand_dims(a)
            return out
        nd = self.ndim
        if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)) \
                or not -nd - 1 <= axis <= nd:
            raise _fail(ShapeError, f"expand_dims axis: expected an int in {-nd - 1}..{nd}, "
                        f"found {axis!r}")
        axis = int(axis) + nd + 1 if axis < 0 else int(axis)
        return self[(slice(None),) * axis + (None,)]

    def broadcast_to(self: NkiTensor, shape: Any) -> NkiTensor:
        """``tile.broadcast_to(shape)``: see ``nl.broadcast_to``."""
        return _nl.broadcast_to(self, shape)

    def _relabeled(self: NkiTensor, shape: tuple[int, ...]) -> NkiTensor:
        """The same elements in ``shape``, which may add or drop size-1 axes only
        (``broadcast.same_layout``): a size-1 axis is always at index 0, so it adds nothing
        to any address."""
        shape = tuple(shape)
        if shape == self.shape:
            return self
        self._resolved()
        cols = iter([a for a, n in enumerate(self.shape) if n != 1])
        where = [None if n == 1 else next(cols) for n in shape]
        coefs = tuple(tuple(0 if a is None else row[a] for a in where) for row in self.coefs)
        return _Tensor(self.decl, shape, self.dtype, self.base, coefs, self.space, self.lease,
                       frame=self.frame)

    def _split_view(t: NkiTensor, key: tuple[Any, ...]) -> NkiTensor:
        """``t[key]`` where some items are :class:`SplitExpr` (one item per axis of ``t``): an index
        with ``//`` or ``%`` (index_expr.py)."""
        if len(key) != t.ndim or any(not isinstance(k, (IndexExpr, SplitExpr)) and not _is_int(k)
                                     for k in key):
            raise _unsupported(f"advanced indexing: expected one nl.arange/nl.mgrid expression or "
                               f"int per axis ({t.ndim} axes), found {key!r}; mixing slices with "
                               f"index expressions is not supported by NKI")
        exprs = common(list(key))
        radix = exprs[0].radix
        user_shape = tuple(math.prod(r) for r in radix)
        sub_sizes = [n for r in radix for n in r]
        base, coefs = [], []
        for d in range(len(t.base)):
            row = t.coefs[d]
            base.append(t.base[d] + sum(row[a] * e.const for a, e in enumerate(exprs)))
            flat = [tuple(c for cs in e.coefs for c in cs) for e in exprs]
            coefs.append(tuple(sum(row[a] * flat[a][j] for a in range(len(exprs)))
                               for j in range(len(sub_sizes))))
        inner = _Tensor(t._resolved(), tuple(sub_sizes), t.dtype, tuple(base), tuple(coefs),
                          t.space, t.lease, frame=t.frame)
        groups = []  # sub-axis positions of each user axis
        j = 0
        for r in radix:
            groups.append(list(range(j, j + len(r))))
            j += len(r)
        # one coefficient per declared dim and user axis: an ordinary view
        merged = []
        for g in groups:
            ok = all(row[g[i]] == row[g[i + 1]] * sub_sizes[g[i + 1]]
                     for row in coefs for i in range(len(g) - 1))
            merged.append(ok)
        if all(merged):
            new = tuple(tuple(row[g[-1]] for g in groups) for row in coefs)
            return _Tensor(t.decl, user_shape, t.dtype, tuple(base), new, t.space, t.lease,
                             frame=t.frame)
        # one storage stride per user axis: a frame over the storage, checked here
        if t.space is not MemSpace.HBM:  # partitions are separate memories: never merged
            pd = t.pdim
            for a, g in enumerate(groups):
                if len(g) > 1 and any(coefs[pd][j] for j in g):
                    raise _unsupported(f"index with // or %: axis {a} walks the partitions of "
                                       f"{t.tensor.name} and other elements together; expected "
                                       f"the partition axis split only where it maps to the "
                                       f"partition dim alone", AccessError)
        problem = inner.out_of_bounds() or inner.tile_error()
        if problem:
            raise _unsupported(f"index: {problem}", AccessError)
        acc = inner.access()
        steps = [s for s, _ in acc.pattern]
        frame_steps = []
        for g in groups:
            if any(steps[g[i]] != steps[g[i + 1]] * sub_sizes[g[i + 1]] for i in range(len(g) - 1)):
                parts = ", ".join(f"{sub_sizes[i]} x stride {steps[i]}" for i in g)
                raise _unsupported(f"index with // or %: axis {groups.index(g)} of the view walks "
                                   f"memory as {parts}, not with one stride; expected one grid "
                                   f"axis per factor (nl.mgrid with separate axes)")
            frame_steps.append(steps[g[-1]])
        nd = len(user_shape)
        ident = tuple(tuple(1 if a == b else 0 for a in range(nd)) for b in range(nd))
        return _Tensor(t.decl, user_shape, t.dtype, (0,) * nd, ident, t.space, t.lease,
                         inside=True, frame=(user_shape, tuple(frame_steps), acc.offset, 0))

    def _permuted(self: NkiTensor, order: list[int]) -> NkiTensor:
        """The same elements with the view's axes in ``order`` (an access-pattern reordering,
        no copy; internal: NKI 2.2x tensors have no permute)."""
        decl = self._resolved()
        return _Tensor(decl, tuple(self.shape[a] for a in order), self.dtype, self.base,
                         tuple(tuple(r[a] for a in order) for r in self.coefs), self.space,
                         self.lease, frame=self.frame)

    def __getattr__(self, name: str) -> Any:
        # Only called for names the class does not define: unknown methods of newer NKI APIs.
        if name.startswith("__"):  # numpy and copy probe dunders: plain AttributeError
            raise AttributeError(name)
        if name.startswith("_"):  # an unset slot
            raise AttributeError(name)
        raise _fail(UnsupportedAttributeError, f"tensor.{name}: NKI tensors (2.2x reference) "
                    f"have no attribute {name!r}; expected one of {', '.join(DOCUMENTED)}")

    # --- operators the element-wise ones in tensor.py leave out ---------------------------------
    def __lshift__(self, o: Any) -> Any: return _nl.left_shift(self, o)
    def __rlshift__(self, o: Any) -> Any: return _nl.left_shift(o, self)
    def __rshift__(self, o: Any) -> Any: return _nl.right_shift(self, o)
    def __rrshift__(self, o: Any) -> Any: return _nl.right_shift(o, self)
    def __rpow__(self, o: Any) -> Any: return _nl.power(o, self)
    def __rmod__(self, o: Any) -> Any: return _nl.mod(o, self)
    def __rand__(self, o: Any) -> Any: return _nl.bitwise_and(o, self)
    def __ror__(self, o: Any) -> Any: return _nl.bitwise_or(o, self)
    def __rxor__(self, o: Any) -> Any: return _nl.bitwise_xor(o, self)

    def _no_operator(self, *_: Any) -> Any:
        raise _fail(UnsupportedError, "this Python operator has no NKI instruction for tiles "
                    "(//, divmod, @, round); use nl.floor(nl.divide(a, b)), nl.mod, nl.matmul "
                    "or nisa calls")

    __floordiv__ = __rfloordiv__ = __divmod__ = __rdivmod__ = _no_operator
    __matmul__ = __rmatmul__ = __round__ = _no_operator

    def __iter__(self) -> Any:
        raise _fail(UnsupportedError, "iterating over a tile is not supported; index it with "
                    "nl.affine_range loops instead")

    def __len__(self: NkiTensor) -> int:
        return self.shape[0] if self.shape else 0

    # A tile's values exist only on the device: Python control flow cannot depend on them.
    # (`if tile > 0:` would otherwise take one branch for every element, silently.)
    def __bool__(self) -> bool:
        raise host_value("truth value (if / and / or / not on a tile)",
                         "nl.where, a mask=, or nisa.select_reduce")

    def __int__(self) -> int:
        raise host_value("int value", "a runtime offset, t[ix, idx[0, i] + iy] (docs/"
                         "frontend.md, runtime offsets), or an index tile, t[idx_tile, ...]")

    __index__ = __int__

    def __float__(self) -> float:
        raise host_value("float value", "tile arithmetic (nl.multiply etc.)")


def host_value(what: str, instead: str) -> KernelError:
    """The error for using a tile's device values as a Python value."""
    return _fail(KernelError, f"a tile has no Python {what}: its values exist only on the "
                 f"device; use {instead}")  # type: ignore[return-value]
