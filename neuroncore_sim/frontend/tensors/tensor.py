"""Tensors as kernels see them: views into a declared tensor (HBM tensor or SBUF/PSUM tile).

A view maps its own axes affinely onto the declared tensor's dims: declared index
``d = base[d] + sum(coefs[d][a] * i_a)``. Slicing, integer indices, ``nl.arange`` /
``nl.mgrid`` expressions and ``nl.ds`` all compose into that map, so every view turns into an
:class:`ir.Access` (offset plus stride/size pairs) without copying anything. Bounds are checked
when a view is used by an instruction (after masks have shrunk it), per declared dim, so an index
that runs past the end of a row is caught instead of silently reading the next row.

Python operators on views (``a + b``, ``-a``, ``t[...] = x``, ``psum += nc_matmul(...)``) are
forwarded to ``nl`` functions (:mod:`.tensor_operators`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...dtypes import dtype_name
from ...errors import AccessError, SimulatorError, UnsupportedError
from ...program.ir import Access, MemSpace, TensorDecl
from .. import tracer as _tracer
from .buffers import Buffer, buffer_of
from ..index.affine_index import affine_view, pattern_of, reach
from ..index.basic_index import basic_index, keep_view, view_key, whole_index
from ..index.indexing import DynamicIndex, IndexExpr, MaskExpr, _is_int, trailing_unit_indices
from ..index.index_expr import SplitExpr
from .tensor_operators import TileOperators
from .tensor_surface import Frame, TensorSurface


#: rank -> (base, coefs) of a whole tensor's view (the identity map): a constant table, built
#: at import for the ranks kernels use (a view of higher rank builds its own map)
_IDENTITY: dict[int, tuple[tuple[int, ...], tuple[tuple[int, ...], ...]]] = {
    nd: ((0,) * nd, tuple(tuple(1 if a == d else 0 for a in range(nd)) for d in range(nd)))
    for nd in range(9)}


def _affine_memo() -> dict | None:
    """The running launch's memo of index-expression views (None outside a launch)."""
    tr = _tracer.active_or_none()
    return tr.view_cache.affine if tr is not None else None


def _is_identity(coefs: tuple[tuple[int, ...], ...]) -> bool:
    """True for the identity map that :meth:`NkiTensor.whole` gives (and plain slices keep)."""
    known = _IDENTITY.get(len(coefs))
    return known is not None and known[1] is coefs


class NkiTensor(TensorSurface, TileOperators):
    """A view of an HBM tensor or an on-chip tile (what ``nl.load``, ``nl.ndarray`` and every
    ``nisa`` call return, and what kernel arguments are).

    Attributes:
        shape: the view's shape.
        dtype: the element dtype.
    """

    __slots__ = ("decl", "shape", "dtype", "base", "coefs", "space", "lease", "frame", "_access",
                 "_checked", "_views", "_inside")

    def __init__(self, decl: TensorDecl | None, shape: tuple[int, ...], dtype: np.dtype,
                 base: tuple[int, ...], coefs: tuple[tuple[int, ...], ...],
                 space: MemSpace, lease: object = None, *, inside: bool = False,
                 frame: Frame | None = None) -> None:
        self.decl = decl
        # The dims base/coefs index: None for the declared tensor's own dims, else the dims of
        # a reshape or a dtype view (tensor_surface.py): (shape, element strides in storage,
        # storage offset, partition dim).
        self.frame = frame
        self.lease = lease  # keeps an on-chip tile's storage while any view of it lives
        self.shape = shape
        self.dtype = dtype
        self.base = base
        self.coefs = coefs
        self.space = space
        self._access: Access | None = None  # computed once: views never change
        self._checked = False  # bounds and layout already validated
        # The views indexing hands out, by key (basic_index.py). Only whole views keep one: a
        # view of a view is not cached, which bounds the cache to VIEW_CACHE_SIZE per tensor.
        self._views: dict[tuple[Any, ...], NkiTensor] | None = None
        self._inside = inside  # known to lie inside its tensor: out_of_bounds() is None

    @classmethod
    def whole(cls, decl: TensorDecl) -> NkiTensor:
        """A view of all of ``decl`` in its declared shape."""
        nd = len(decl.shape)
        base_coefs = _IDENTITY.get(nd)
        if base_coefs is None:  # (rank > 8: not in the table, so never taken for the identity)
            base_coefs = ((0,) * nd, tuple(
                tuple(1 if a == d else 0 for a in range(nd)) for d in range(nd)))
        tr = _tracer.active_or_none()
        view = cls(decl, decl.shape, decl.dtype, base_coefs[0], base_coefs[1], decl.space,
                   tr.lease(decl) if tr is not None else None, inside=True)
        view._views = {}
        return view

    @classmethod
    def pending(cls, shape: tuple[int, ...], dtype: np.dtype, space: MemSpace) -> NkiTensor:
        """The result of an instruction whose destination is decided later."""
        return cls(None, tuple(shape), dtype, (), (), space)

    # --- pending results -------------------------------------------------------------------------
    def materialize(self, tr: _tracer.Tracer, op: _tracer.PendingOp) -> None:
        """Give a pending result its own fresh tile and record its instruction there."""
        decl = tr.new_tensor(self.space, self.shape, self.dtype, site=op.loc)
        self.retarget(NkiTensor.whole(decl))
        if op.fresh is not None:  # reads its destination: a fresh tile has nothing to read
            op.fresh.loops = op.loops
            op = op.fresh
        tr.complete(op, self.shrink(op.box).access())

    def retarget(self, view: NkiTensor) -> None:
        """Make this (pending) result refer to ``view``'s region."""
        self.decl, self.base, self.coefs, self.space = view.decl, view.base, view.coefs, view.space
        self.dtype, self.lease, self.frame = view.dtype, view.lease, view.frame
        self._access, self._checked = view._access, view._checked
        self._views = {} if view._views is not None else None
        self._inside = view._inside

    def _resolved(self) -> TensorDecl:
        if self.decl is None:
            _tracer.current().flush()
            if self.decl is None:
                raise SimulatorError("internal: a pending result was used after its kernel ended")
        return self.decl

    # --- geometry ------------------------------------------------------------------------------
    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def dims(self) -> tuple[int, ...]:
        """The sizes of the dims ``base`` / ``coefs`` index (the declared shape, or a reshape's)."""
        return self._resolved().shape if self.frame is None else self.frame[0]

    @property
    def pdim(self) -> int:
        """Which of :attr:`dims` is the partition dim (0 for HBM and for reshaped tiles; a
        dtype view of a tile keeps its own)."""
        return self._resolved().partition_axis if self.frame is None else self.frame[3]

    def _dims_name(self) -> str:
        decl = self._resolved()
        if self.frame is None:
            return f"{decl.name} {list(decl.shape)}"
        return f"{decl.name} reshaped to {list(self.frame[0])}"

    @property
    def buffer(self) -> Buffer:
        """The memory the tensor lives in: ``nl.sbuf``, ``nl.psum``, ``nl.shared_hbm`` (a kernel
        output) or ``nl.hbm`` (kernel inputs and other HBM tensors), so ``t.buffer is nl.psum``
        works as in NKI; it also compares equal to its MemSpace."""
        return buffer_of(self.space, self._resolved().kind)

    @property
    def tensor(self) -> TensorDecl:
        """The declared tensor this view belongs to."""
        return self._resolved()

    def access(self) -> Access:
        """The view as an access pattern (offset plus (stride, size) pairs)."""
        if self._access is not None:
            return self._access
        decl = self._resolved()
        shape = self.shape
        frame = self.frame
        if frame is None:
            offset, strides = 0, decl.strides
        else:
            offset, strides = frame[2], frame[1]
        if _is_identity(self.coefs):  # a whole tensor or a plain slice of one (the usual case)
            for s, b in zip(strides, self.base):
                offset += s * b
            self._access = Access(decl, offset, tuple(zip(strides, shape)), self._as_dtype(decl))
            return self._access
        for s, b in zip(strides, self.base):
            offset += s * b
        self._access = Access(decl, offset, pattern_of(strides, self.coefs, shape),
                              self._as_dtype(decl))
        return self._access

    def out_of_bounds(self) -> str | None:
        """Describe the first declared dim this view indexes out of range, or None."""
        decl = self._resolved()
        ext = reach(self.coefs, self.shape)
        if ext is None:
            return None
        dims = decl.shape if self.frame is None else self.frame[0]
        for d, (b, lo, hi, size) in enumerate(zip(self.base, *ext, dims)):
            if b + lo < 0 or b + hi >= size:
                return (f"index of dim {d} of {self._dims_name()}: expected "
                        f"0..{size - 1}, found {b + lo}..{b + hi}")
        return None

    def tile_error(self) -> str | None:
        """Why this view is not a valid on-chip operand (partition dim first, contiguous)."""
        decl = self._resolved()
        if decl.space is MemSpace.HBM:
            return None
        pa = decl.partition_axis if self.frame is None else self.frame[3]
        shape = self.shape
        if not shape:
            return "a tile operand needs a partition dim"
        if pa == 0 and _is_identity(self.coefs):  # view axis d is dim d: the partitions first
            return None
        for d, row in enumerate(self.coefs):
            a = 0
            for c, n in zip(row, shape):
                if c and n != 1 and ((d == pa) != (a == 0) or (d == pa and c != 1)):
                    return (f"the first axis of a tile operand must be its partition dim, with "
                            f"contiguous partitions; {decl.name} is indexed so that its "
                            f"partition dim is not the view's first axis")
                a += 1
        return None

    def shrink(self, box: tuple[tuple[int, int], ...] | None,
               full: tuple[int, ...] | None = None) -> NkiTensor:
        """The sub-view ``[lo:hi]`` along each axis of ``box``.

        ``box`` is relative to an iteration space of shape ``full`` (default: this view's
        shape); only axes whose size equals the iteration space's are shrunk, so a [P, 1]
        operand of a [P, F] instruction is shrunk along partitions only.
        """
        if box is None:
            return self
        self._resolved()
        full = self.shape if full is None else full
        base = list(self.base)
        shape = list(self.shape)
        within = True  # every shrunk axis stays inside the view's own range
        for a, (lo, hi) in enumerate(box):
            if a >= len(shape) or a >= len(full) or shape[a] != full[a] or shape[a] <= 1:
                continue
            within = within and 0 <= lo <= hi <= shape[a]
            for d in range(len(base)):
                base[d] += self.coefs[d][a] * lo
            shape[a] = hi - lo
        view = NkiTensor(self.decl, tuple(shape), self.dtype, tuple(base), self.coefs,
                         self.space, self.lease, inside=self._inside and within, frame=self.frame)
        # a part of a checked view passes the checks (a size-1 axis adds no layout violation)
        view._checked = self._checked and within
        return view

    def partition_first(self) -> NkiTensor:
        """The same elements with the axis that walks the partitions moved to the front.

        A whole tensor with block dims, ``(B, par_dim(P), F)``, becomes ``(P, B, F)``: on the
        hardware the blocks are just more free-dim elements of each partition. A view on one
        partition picked by an int (``t[i, j]``) gets a leading axis of size 1.
        """
        decl = self._resolved()
        if decl.space is MemSpace.HBM:
            return self
        row = self.coefs[decl.partition_axis if self.frame is None else self.frame[3]]
        axis = next((a for a, (c, n) in enumerate(zip(row, self.shape)) if c and n > 1), None)
        if axis is None:
            if self.shape and (self.shape[0] == 1 or row[0]):
                return self
            # An int picked the partition (t[i, j], t[i, :]): the view lies on one partition,
            # so it gets a leading partition axis of size 1
            return NkiTensor(decl, (1,) + self.shape, self.dtype, self.base,
                             tuple((0,) + r for r in self.coefs), self.space, self.lease,
                             frame=self.frame)
        if axis == 0:
            return self
        order = (axis,) + tuple(a for a in range(self.ndim) if a != axis)
        return NkiTensor(decl, tuple(self.shape[a] for a in order), self.dtype, self.base,
                         tuple(tuple(r[a] for a in order) for r in self.coefs), self.space,
                         self.lease, frame=self.frame)

    def with_shape(self, shape: tuple[int, ...]) -> NkiTensor:
        """Broadcast size-1 free axes to ``shape`` (stride 0), like the hardware's APs can."""
        if shape == self.shape:
            return self
        self._resolved()
        if len(shape) != len(self.shape):
            raise UnsupportedError(f"cannot broadcast {list(self.shape)} to {list(shape)}")
        coefs = tuple(tuple(0 if (n == 1 and m != 1) else c
                            for c, n, m in zip(row, self.shape, shape)) for row in self.coefs)
        return NkiTensor(self.decl, tuple(shape), self.dtype, self.base, coefs, self.space,
                         self.lease, frame=self.frame)

    # --- indexing ------------------------------------------------------------------------------
    def __getitem__(self, key: Any) -> NkiTensor:
        if self.decl is None:
            self._resolved()
        if type(key) is int:  # t[i]: its own cache key (what view_key gives for it)
            key = cache_key = (key,)
        elif key is Ellipsis and self.shape:  # t[...]: every axis whole, as t[:, ..., :]
            key = (slice(None),) * len(self.shape)
            cache_key = view_key(key)
        else:
            key = key if isinstance(key, tuple) else (key,)
            cache_key = view_key(key)
            if len(key) == 1 and isinstance(key[0], (MaskExpr, bool, np.bool_)):  # t[mask]
                from ..index.mask_view import mask_view
                return mask_view(self, key[0])
        if cache_key is not None:  # ints and slices: the fast path, cached (views never change)
            views = self._views
            if views is not None:  # a whole view (only those cache)
                view = views.get(cache_key)
                if view is not None:
                    return view
                tr = _tracer.active_or_none()
                geometry = whole_index(self.shape, self.base, self.coefs, key, cache_key,
                                       tr.view_cache.whole if tr is not None else None)
            else:
                geometry = basic_index(self.shape, self.base, self.coefs, key)
            if geometry is not None:
                shape, base, coefs, within = geometry
                view = NkiTensor(self.decl, shape, self.dtype, base, coefs, self.space,
                                 self.lease, inside=within and self._inside, frame=self.frame)
                if views is not None:
                    keep_view(views, cache_key, view, self.space is MemSpace.HBM)
                return view
        elif (view := affine_view(self, key, IndexExpr, _affine_memo())) is not None:
            return view  # nl.mgrid exprs and ints
        if self.space is not MemSpace.HBM and trailing_unit_indices(self.ndim, key):
            # a [P] tile (a reduction result, or t[:, i] of a [P, F] one) is NKI's [P, 1]:
            # t[:, 0] and t[:, 0:1] index its implicit size-1 free axis (docs/frontend.md)
            return self._relabeled(self.shape + (1,) * (len(key) - self.ndim))[key]
        if any(isinstance(k, (NkiTensor, DynamicIndex)) for k in key):
            if self.space is MemSpace.HBM:  # an index tile: indirect DMA operand
                k = next(i for i, x in enumerate(key) if isinstance(x, (NkiTensor, DynamicIndex)))
                if k and all(_is_int(x) for x in key[:k]):  # t[b, idx_tile, ...]: rows of t[b]
                    return _nl.indirect_view(self[key[:k]]._framed(self.shape[k:]), key[k:])
                return _nl.indirect_view(self, key)  # type: ignore[return-value]
            return _nl.dynamic_view(self, key)  # a runtime (SBUF-held) offset on chip  # type: ignore[return-value]
        if any(isinstance(k, SplitExpr) for k in key):  # // or % in an index
            return self._split_view(key)
        if any(isinstance(k, IndexExpr) for k in key):
            return self._index_affine(key)
        return self._index_basic(key)

    def _expand(self, key: tuple[Any, ...]) -> list[Any]:
        items = list(key)
        # by identity: `in`, .index() and .count() would call == on tiles and numpy arrays
        dots = [i for i, k in enumerate(items) if k is Ellipsis]
        nones = sum(k is None for k in items)
        if len(dots) > 1:
            raise _tracer.current().fail(AccessError, "indexing: expected at most one '...', "
                                         f"found {len(dots)}")
        if dots:
            fill = self.ndim - (len(items) - 1 - nones)
            items[dots[0]:dots[0] + 1] = [slice(None)] * fill
        real = len(items) - nones
        if real > self.ndim:
            raise _tracer.current().fail(
                AccessError, f"indexing: expected at most {self.ndim} indices for shape "
                f"{list(self.shape)}, found {real}")
        return items + [slice(None)] * (self.ndim - real)

    def _index_basic(self, key: tuple[Any, ...]) -> NkiTensor:
        base = list(self.base)
        nd = len(base)
        new_coefs: list[list[int]] = [[] for _ in range(nd)]
        shape: list[int] = []
        axis = 0
        for item in self._expand(key):
            if item is None:
                shape.append(1)
                for d in range(nd):
                    new_coefs[d].append(0)
                continue
            n = self.shape[axis]
            if _is_int(item):
                v = int(item)
                v = v + n if v < 0 else v
                if not 0 <= v < n:
                    raise _tracer.current().fail(
                        AccessError, f"index {int(item)} of axis {axis}: expected 0..{n - 1}, "
                        f"found {int(item)} (shape {list(self.shape)})")
                for d in range(nd):
                    base[d] += self.coefs[d][axis] * v
            elif isinstance(item, slice):
                bad = [b for b in (item.start, item.stop, item.step)
                       if b is not None and not _is_int(b)]
                if bad:
                    raise _tracer.current().fail(
                        AccessError, f"slice of axis {axis}: expected integer bounds, found "
                        f"{bad[0]!r} ({type(bad[0]).__name__})")
                step = 1 if item.step is None else int(item.step)
                if step <= 0:
                    raise _tracer.current().fail(
                        UnsupportedError, f"slice step must be positive, found {step}")
                start = 0 if item.start is None else int(item.start)
                stop = n if item.stop is None else int(item.stop)
                start, stop = (start + n if start < 0 else start), (stop + n if stop < 0 else stop)
                size = max(0, -(-(stop - start) // step))
                if size == 0:  # an empty tile is no NKI shape; it would fail far from here
                    raise _tracer.current().fail(
                        AccessError, f"slice of axis {axis}: expected at least one element, "
                        f"found {item.start}:{item.stop} on an axis of size {n}")
                shape.append(size)
                for d in range(nd):
                    base[d] += self.coefs[d][axis] * start
                    new_coefs[d].append(self.coefs[d][axis] * step)
            else:
                raise _tracer.current().fail(
                    AccessError, f"index: expected an int, slice, nl.ds, nl.arange or nl.mgrid "
                    f"expression, found {type(item).__name__}")
            axis += 1
        return NkiTensor(self.decl, tuple(shape), self.dtype, tuple(base),
                         tuple(tuple(r) for r in new_coefs), self.space, self.lease,
                         frame=self.frame)

    def _index_affine(self, key: tuple[Any, ...]) -> NkiTensor:
        if len(key) != self.ndim or any(not (isinstance(k, IndexExpr) or _is_int(k)) for k in key):
            raise _tracer.current().fail(
                UnsupportedError, f"advanced indexing: expected one nl.arange/nl.mgrid expression "
                f"or int per axis ({self.ndim} axes), found {key!r}; mixing slices with index "
                f"expressions is not supported by NKI")
        exprs = [k if isinstance(k, IndexExpr) else IndexExpr(int(k), (), ()) for k in key]
        ndim = max(e.ndim for e in exprs)
        exprs = [e.aligned(ndim) for e in exprs]
        shape = [1] * ndim
        for e in exprs:
            for b, n in enumerate(e.sizes):
                if n != 1:
                    if shape[b] not in (1, n):
                        raise _tracer.current().fail(
                            AccessError, f"index expressions do not broadcast: axis {b} has "
                            f"sizes {shape[b]} and {n}")
                    shape[b] = n
        base, coefs = [], []
        for d in range(len(self.base)):
            # (the view's axes this dim depends on: usually one, often none)
            terms = [(c, exprs[a]) for a, c in enumerate(self.coefs[d]) if c]
            base.append(self.base[d] + sum(c * e.const for c, e in terms))
            if len(terms) == 1:
                c, e = terms[0]
                coefs.append(tuple(c * x for x in e.coefs))
            else:
                coefs.append(tuple(sum(c * e.coefs[b] for c, e in terms) for b in range(ndim)))
        return NkiTensor(self.decl, tuple(shape), self.dtype, tuple(base), tuple(coefs),
                         self.space, self.lease, frame=self.frame)

    def __setitem__(self, key: Any, value: Any) -> None:
        target = self[key]
        if target is value and _tracer.active_or_none() is not None:
            # `t[i] += x` stores back the view its in-place operator wrote: assign() would find
            # the same region and do nothing (a cached view is never a pending result)
            return
        if not isinstance(target, NkiTensor):
            if self.space is MemSpace.HBM:  # t[idx_tile, ...] = tile: an indirect store
                _nl.store(target, value)
            else:  # a runtime-offset view (frontend/isa/dynamic.py)
                _nl.assign_dynamic(target, value)
            return
        _nl.assign(target, value)

    # --- values (debugging) --------------------------------------------------------------------
    def values(self) -> np.ndarray | None:
        """Current values of the view (None in a timing-only run)."""
        tr = _tracer.current("reading tile values")
        return tr.read(self.access())

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        vals = self.values()
        if vals is None:
            raise UnsupportedError("tile values are not available in a timing-only run")
        return vals.astype(dtype) if dtype is not None else vals

    def __repr__(self) -> str:
        where = self.decl.name if self.decl is not None else "pending"
        head = f"NkiTensor({where}, {self.space.value}, {list(self.shape)}, {dtype_name(self.dtype)})"
        tr = _tracer.active_or_none()
        if tr is None or tr.backend is None or self.decl is None:
            return head
        return f"{head}\n{tr.read(self.access())}"


# The one allowed cycle edge (tests/test_layering.py): what a tile cannot do alone it forwards
# to nl, which takes tiles: operators (t + u), assignment (t[...] = x, t += x), and the views
# only instructions and DMAs take (t[idx_tile, ...], runtime offsets t[ix, idx[0, i] + iy]).
from .. import language as _nl  # noqa: E402
from . import tensor_operators as _operators  # noqa: E402
from . import tensor_surface as _surface  # noqa: E402

_operators._nl = _surface._nl = _nl  # the operators and methods forward to nl too
_surface._Tensor = NkiTensor  # the mixin's views are NkiTensors
