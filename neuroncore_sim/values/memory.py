"""numpy storage for every tensor of a kernel launch: HBM tensors, SBUF and PSUM tiles.

Each :class:`~neuroncore_sim.program.ir.TensorDecl` owns one flat 1-D numpy array of ``decl.size``
elements in the layout ``ir.py`` describes: row-major by partition (the partition axis is the
row axis; the other dims, in declared order, make up a row). An operand
(:class:`~neuroncore_sim.program.ir.Access`) is read and written through a strided *view* of that array,
so an instruction's output lands in place, exactly where the hardware would put it, and two
accesses that alias on the hardware alias here too.

New memory is not zero. Float tensors declared without values start as NaN (like the garbage
of real SBUF/PSUM/HBM, but loud: a kernel that reads memory it never wrote produces NaN instead
of plausible numbers). Integer and bool tensors start as 0, since integers have no NaN.

Plain DMA loads into tiles may be recorded and copied on first use (:meth:`Memory.load_later`):
every view of the tile, and every write of the HBM source, copies the pending loads first.

tfloat32 tensors are stored as plain float32; values written to them are rounded to tfloat32 by
:func:`neuroncore_sim.dtypes.cast`.
"""

from __future__ import annotations

import numpy as np

from ..dtypes import cast, dtype_name, is_float
from ..errors import AccessError, CapacityError, ShapeError, expected
from ..program.ir import Access, TensorDecl


def storage_dtype(dt: np.dtype) -> np.dtype:
    """The numpy dtype that stores a tensor of NKI dtype ``dt`` (tfloat32 -> float32)."""
    return np.dtype(np.float32) if dtype_name(dt) == "tfloat32" else np.dtype(dt)


def reinterpret(flat: np.ndarray, dt: np.dtype) -> np.ndarray:
    """The bytes of a flat contiguous storage array read as NKI dtype ``dt`` (``t.view(dt)``),
    also for a dtype of another size: a trailing part too short for one element of ``dt`` is
    left out (an access through the view never reaches it; the front end checked that)."""
    dt = storage_dtype(dt)
    if dt.itemsize == flat.itemsize:
        return flat.view(dt)
    raw = flat.view(np.uint8)
    return raw[:raw.size - raw.size % dt.itemsize].view(dt)


def to_layout(decl: TensorDecl, values: np.ndarray) -> np.ndarray:
    """Flatten values of the declared logical shape into the partition-major storage order."""
    moved = np.moveaxis(values, decl.partition_axis, 0) if values.ndim else values
    return moved.reshape(-1)


def from_layout(decl: TensorDecl, flat: np.ndarray) -> np.ndarray:
    """Inverse of :func:`to_layout`: the declared logical shape, as a view when possible."""
    if not decl.shape:
        return flat.reshape(())
    pa = decl.partition_axis
    others = tuple(n for d, n in enumerate(decl.shape) if d != pa)
    return np.moveaxis(flat.reshape((decl.shape[pa],) + others), 0, pa)


class CopyIndex:
    """Tile regions that are copies of HBM regions: tile -> [(tile region, HBM region)] in the
    order recorded, and the reverse index HBM tensor -> tiles, kept in step. Used for loads not
    copied yet (:meth:`Memory.load_later`) and for tile regions that still equal their HBM
    source (``hbm_origin.py``)."""

    __slots__ = ("_by_tile", "_tiles_of")

    def __init__(self) -> None:
        self._by_tile: dict[TensorDecl, list[tuple[Access, Access]]] = {}
        self._tiles_of: dict[TensorDecl, set[TensorDecl]] = {}

    def __bool__(self) -> bool:
        return bool(self._by_tile)

    def __contains__(self, tile: TensorDecl) -> bool:
        return tile in self._by_tile

    def get(self, tile: TensorDecl) -> list[tuple[Access, Access]]:
        """The copies in ``tile`` (empty list: none)."""
        return self._by_tile.get(tile, [])

    def add(self, dst: Access, src: Access) -> None:
        """Record that tile region ``dst`` is a copy of HBM region ``src``."""
        self._by_tile.setdefault(dst.tensor, []).append((dst, src))
        self._tiles_of.setdefault(src.tensor, set()).add(dst.tensor)

    def replace(self, tile: TensorDecl, entries: list[tuple[Access, Access]]
                ) -> list[tuple[Access, Access]]:
        """Make ``entries`` the copies in ``tile``; returns the ones it had."""
        old = self._by_tile.pop(tile, [])
        for _, src in old:
            tiles = self._tiles_of.get(src.tensor)
            if tiles is not None:
                tiles.discard(tile)
                if not tiles:
                    del self._tiles_of[src.tensor]
        for dst, src in entries:
            self.add(dst, src)
        return old

    def tiles_from(self, hbm: TensorDecl) -> tuple[TensorDecl, ...]:
        """The tiles holding a copy of some region of ``hbm`` (a snapshot: callers change the
        index while they walk it)."""
        tiles = self._tiles_of.get(hbm)
        return tuple(tiles) if tiles else ()


class Memory:
    """The contents of every declared tensor, keyed by its :class:`TensorDecl` (identity)."""

    __slots__ = ("_arrays", "_free", "_released", "_unfilled", "_lazy")

    def __init__(self) -> None:
        self._arrays: dict[TensorDecl, np.ndarray] = {}
        #: storage of released tiles, as raw bytes keyed by size, for the next declarations
        self._free: dict[int, list[np.ndarray]] = {}
        self._released: set[TensorDecl] = set()
        #: tensors whose storage still has to be filled with NaN / 0 before it is first read
        self._unfilled: dict[TensorDecl, float] = {}
        #: DMA loads not copied yet (see :meth:`load_later`)
        self._lazy = CopyIndex()

    def declare(self, decl: TensorDecl, values: np.ndarray | None = None) -> None:
        """Allocate storage for ``decl``, filled from ``values`` (declared logical shape, or a
        0-d array: every element holds it) or with NaN (float) / 0 (integer) when ``values``
        is None.

        Raises:
            ShapeError: ``values`` does not have the declared shape.
        """
        dt = storage_dtype(decl.dtype)
        if values is not None and np.ndim(values) == 0:  # a fill value, filled when first viewed
            self.declare(decl)
            self._unfilled[decl] = np.asarray(cast(np.asarray(values), decl.dtype))[()]
            return
        if values is None:
            # Filled lazily: most tiles are first written whole (a load, a memset), and then
            # filling them first would only cost time. Reused memory costs no page faults
            # (fresh arrays do, per 4 KiB page).
            pool = self._free.get(decl.size * dt.itemsize)
            try:
                self._arrays[decl] = pool.pop().view(dt) if pool else np.empty(decl.size, dt)
            except MemoryError:  # a shape far beyond any device memory: say which, and where
                raise CapacityError(expected(
                    f"tensor {decl.name!r} {list(decl.shape)} {dtype_name(decl.dtype)}",
                    "a size that fits in memory", f"{decl.size * dt.itemsize:,} bytes"),
                    str(decl.site) if decl.site is not None else None) from None
            self._unfilled[decl] = np.nan if is_float(decl.dtype) else 0
            return
        arr = np.asarray(values)
        if arr.shape != tuple(decl.shape):
            raise ShapeError(expected(f"initial values of tensor {decl.name!r}",
                                      f"shape {tuple(decl.shape)}", f"shape {arr.shape}"))
        flat = to_layout(decl, cast(arr, decl.dtype))
        # Always own a fresh contiguous buffer: the caller's array must never alias device memory.
        self._arrays[decl] = np.array(flat, dtype=dt, copy=True)

    def release(self, decl: TensorDecl) -> None:
        """Take back the storage of a tile the kernel can no longer name; a later declaration of
        the same byte size reuses it (refilled, as a new tile)."""
        arr = self._arrays.pop(decl, None)
        if arr is None:
            return
        self._released.add(decl)
        self._unfilled.pop(decl, None)
        self._lazy.replace(decl, [])
        self._free.setdefault(arr.nbytes, []).append(arr.view(np.uint8))

    # --- loads copied on first use -----------------------------------------------------------

    def load_later(self, dst: Access, src: Access) -> None:
        """Record a plain DMA copy of HBM region ``src`` into tile region ``dst`` (same shape
        and dtype) without copying yet: the copy happens when the tile is next viewed (read or
        written) or before ``src``'s tensor is written (:meth:`before_write`). A tiled matmul
        whose GEMMs read the loaded values straight from HBM (``hbm_origin.py``) never copies
        them."""
        for a in (dst, src):  # what a view would check now, without making one
            size = self.storage_size(a.tensor)
            lo, hi = _extent(a)
            if lo < 0 or hi >= size:
                raise AccessError(self._out_of_bounds(a, size))
        # In issue order: a later load into the same region lands after an earlier one.
        self._lazy.add(dst, src)

    def before_write(self, tensor: TensorDecl) -> None:
        """``tensor`` is about to be written: copy the pending loads from it first."""
        if self._lazy:
            for tile in self._lazy.tiles_from(tensor):
                self._materialize(tile)

    def _materialize(self, tile: TensorDecl) -> None:
        for dst, src in self._lazy.replace(tile, []):
            np.copyto(self.view(dst), self.view(src))

    def declared(self, decl: TensorDecl) -> bool:
        """True once ``decl`` has storage."""
        return decl in self._arrays

    def storage_size(self, decl: TensorDecl) -> int:
        """Elements of ``decl``'s storage, without filling or copying anything.

        Raises:
            AccessError: ``decl`` has no storage (see :meth:`storage`).
        """
        arr = self._arrays.get(decl)
        return arr.size if arr is not None else self.storage(decl).size

    def storage(self, decl: TensorDecl) -> np.ndarray:
        """The flat storage array of ``decl`` (a live reference, not a copy).

        Raises:
            AccessError: ``decl`` was never declared.
        """
        try:
            arr = self._arrays[decl]
        except KeyError:
            found = ("a tile whose storage was released when its last view died"
                     if decl in self._released else "a tensor this executor never allocated")
            raise AccessError(expected(f"tensor {decl.name!r}", "a declared tensor",
                                       found)) from None
        if decl in self._unfilled:
            _fill(arr, self._unfilled.pop(decl))
        if self._lazy and decl in self._lazy:
            self._materialize(decl)
        return arr

    def view(self, access: Access) -> np.ndarray:
        """A writable strided view of the elements ``access`` selects, of shape ``access.shape``.

        Raises:
            AccessError: the tensor is undeclared, or some element lies outside the tensor.
        """
        t = access.tensor
        st = self._arrays.get(t)
        if (st is None or (self._unfilled and t in self._unfilled)
                or (self._lazy and t in self._lazy)):
            st = self.storage(t)  # fills, copies pending loads, or raises the AccessError
        if access.view_dtype is not None:  # t.view(dtype): the same bytes as another dtype
            st = reinterpret(st, access.view_dtype)
        isz = st.itemsize
        pattern = access.pattern
        try:
            # np.ndarray(buffer=...) makes the view ~7x faster than as_strided and checks itself
            # that every addressed byte lies inside the buffer (negative strides included), so an
            # out-of-bounds view can never be created; we only replace numpy's message.
            return np.ndarray([n for _, n in pattern], st.dtype, st, access.offset * isz,
                              [s * isz for s, _ in pattern])
        except (ValueError, TypeError):
            raise AccessError(self._out_of_bounds(access, st.size)) from None

    def view_for_write(self, access: Access) -> np.ndarray:
        """:meth:`view`, for a caller about to overwrite every element it selects: a tensor not
        filled yet stays unfilled when the access covers all of it."""
        decl = access.tensor
        if self._unfilled and decl in self._unfilled and _whole(access):
            del self._unfilled[decl]
        return self.view(access)

    def fill_later(self, access: Access, value: np.ndarray) -> bool:
        """Fill the whole tensor ``access`` covers with ``value`` (a scalar of its dtype) when
        it is next viewed, instead of now: a memset of a PSUM tile that GEMM results then
        overwrite whole (``claim_fill``) is never written. Returns False, doing nothing, when
        ``access`` does not cover its whole tensor (or the tensor has no storage)."""
        decl = access.tensor
        if decl not in self._arrays or not _whole(access):
            return False
        self._unfilled[decl] = value
        if self._lazy and decl in self._lazy:
            self._lazy.replace(decl, [])  # pending loads into it are overwritten
        return True

    def pending_fill(self, decl: TensorDecl) -> object | None:
        """The value ``decl`` will be filled with when next viewed, or None (filled already)."""
        return self._unfilled.get(decl) if self._unfilled else None

    def claim_fill(self, decl: TensorDecl) -> None:
        """Drop ``decl``'s pending fill: the caller writes every element before anything reads
        them (and accounts for the fill value itself)."""
        self._unfilled.pop(decl, None)

    def logical(self, decl: TensorDecl) -> np.ndarray:
        """A copy of the tensor in its declared logical shape."""
        return np.array(from_layout(decl, self.storage(decl)), copy=True)

    def take(self, decl: TensorDecl) -> np.ndarray:
        """The tensor in its declared logical shape, without a copy: its storage leaves this
        memory (a later access of ``decl`` is an error). For results at the end of a launch."""
        arr = from_layout(decl, self.storage(decl))
        del self._arrays[decl]
        self._released.add(decl)
        return arr

    @staticmethod
    def _out_of_bounds(access: Access, size: int) -> str:
        """Message for an access that leaves its tensor."""
        if any(n < 0 for _, n in access.pattern):
            return expected(f"access pattern into {access.tensor.name!r}",
                            "dim sizes >= 0", list(access.pattern))
        lo, hi = _extent(access)
        return expected(f"access into tensor {access.tensor.name!r} "
                        f"(offset {access.offset}, pattern {list(access.pattern)})",
                        f"element offsets in [0, {size})", f"offsets {lo}..{hi}")


def _whole(a: Access) -> bool:
    """True when ``a`` selects every element of its tensor, each once, in storage order."""
    return (a.offset == 0 and a.nbytes == a.tensor.size * a.tensor.itemsize
            and a.contiguous_runs()[0] == 1)


def _extent(a: Access) -> tuple[int, int]:
    """Lowest and highest storage element ``a`` selects."""
    lo = hi = a.offset
    for stride, n in a.pattern:
        ext = stride * (n - 1)
        lo, hi = (lo + ext, hi) if ext < 0 else (lo, hi + ext)
    return lo, hi


def _fill(arr: np.ndarray, value: float) -> None:
    """``arr.fill(value)`` through an unsigned integer view of the value's bit pattern: numpy's
    fill of the extension float dtypes (bfloat16, float8) is several times slower than an
    integer fill of the same bytes (4-5x measured for bfloat16)."""
    if arr.dtype.fields is not None or arr.dtype.itemsize not in (1, 2, 4, 8):
        arr.fill(value)
        return
    bits = np.array(value, arr.dtype).view(f"u{arr.dtype.itemsize}")
    arr.view(bits.dtype).fill(bits)
