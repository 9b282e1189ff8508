"""Storage-layout arithmetic behind the IR's tensors and accesses, and its caches.

:class:`~neuroncore_sim.program.ir.TensorDecl` takes its ``rows`` / ``row_size`` / ``strides`` from
:func:`layout` and :class:`~neuroncore_sim.program.ir.Access` its bounds and size from :func:`measure`.
Both remember what they computed during a launch: a kernel's loops allocate tiles of the same few
shapes and access them the same few ways, and the front end builds about one Access per recorded
instruction (tracing is the critical path of a functional run). The memo (:class:`GeometryMemo`)
belongs to the launch: the tracer enters :func:`geometry_memo` for the time it records, so each
launch starts with an empty one and nothing is kept between launches or shared between threads
(the one piece of module state is the ``ContextVar`` naming the active memo, always reset).
Outside a launch (tests, host-side use) the geometry is computed every time. The memo only saves
recomputation; ``tests/program/test_layout_caches.py`` checks it gives what the plain
computation gives.

Why the hottest IR classes (TensorDecl, Access, Instruction) have hand-written ``__init__``\\ s:
a frozen dataclass's generated ``__init__`` sets every field through ``object.__setattr__``,
about twice what the slot's own setter (:func:`slot_setters`) costs. The classes stay frozen
dataclasses with the same fields; only their construction is faster.
"""

from __future__ import annotations

import contextlib
import math
from contextvars import ContextVar
from typing import Iterator

import numpy as np

#: Bound of each memo table (cleared when full: it only saves recomputation).
CACHE_SIZE = 4096


class GeometryMemo:
    """The layout and access-bounds memos of one launch.

    Attributes:
        layouts: (shape, partition_axis) -> (rows, row_size, strides, shape): tiles of one
            shape repeat in every loop. The shape is the first equal one seen: later tensors
            share it.
        bounds: (row_size, offset, pattern) -> (row_lo, row_hi, col_lo, col_hi, size, pattern) of
            an Access: most accesses repeat the geometry of an earlier one (the same slice of
            each new tile). The pattern is the first equal one seen: later accesses share it
            (fewer live objects).
        attrs: the attrs dicts of the launch's instructions by content (:func:`shared_attrs`).
    """

    __slots__ = ("layouts", "bounds", "attrs")

    def __init__(self) -> None:
        self.layouts: dict[tuple[tuple[int, ...], int],
                           tuple[int, int, tuple[int, ...], tuple[int, ...]]] = {}
        self.bounds: dict[tuple[int, int, tuple[tuple[int, int], ...]], tuple[object, ...]] = {}
        self.attrs: dict[tuple[tuple[object, ...], ...], dict[str, object]] = {}


#: The memo of the launch being recorded (None outside a launch: nothing is remembered).
ACTIVE_MEMO: ContextVar[GeometryMemo | None] = ContextVar("neuroncore_sim_geometry", default=None)


@contextlib.contextmanager
def geometry_memo() -> Iterator[GeometryMemo]:
    """Remember layouts and access bounds in a fresh :class:`GeometryMemo` until the block ends
    (entered by the tracer for one launch)."""
    memo = GeometryMemo()
    token = ACTIVE_MEMO.set(memo)
    try:
        yield memo
    finally:
        ACTIVE_MEMO.reset(token)


def slot_setters(cls: type, names: str) -> tuple:
    """The slot setters of fields ``names`` of a frozen slots dataclass (they bypass its frozen
    ``__setattr__``; for use in its own ``__init__`` only)."""
    return tuple(cls.__dict__[n].__set__ for n in names.split())


def layout(shape: tuple[int, ...], partition_axis: int
           ) -> tuple[int, int, tuple[int, ...], tuple[int, ...]]:
    """(rows, row_size, strides, shape) of a tensor of ``shape`` stored partition-major
    (remembered in the launch's memo for a tuple of plain ints; the shape returned is then the
    first equal one, for the tensor to keep instead of its own)."""
    memo = ACTIVE_MEMO.get()
    if memo is None:
        return compute_layout(shape, partition_axis) + (shape,)
    layouts = memo.layouts
    if type(shape) is tuple:
        found = layouts.get((shape, partition_axis))
        if found is not None:
            return found
    result = compute_layout(shape, partition_axis) + (shape,)
    if type(shape) is tuple and all(type(v) is int for v in (*shape, partition_axis)):
        if len(layouts) >= CACHE_SIZE:
            layouts.clear()
        layouts[(shape, partition_axis)] = result
    return result


def shared_attrs(attrs: dict[str, object]) -> dict[str, object]:
    """An equal attrs dict the launch's memo already holds (the first one seen), else
    ``attrs``, remembered. A kernel's instructions carry a few distinct attrs (one per opcode
    and operator, about), and a dict is 184 bytes even with one key: an element-wise kernel's
    Program kept 1,150 bytes per instruction with one attrs dict each, 970 with them shared.
    Attrs are read-only once recorded (the IR's contract), so sharing them changes nothing a
    reader sees.

    Only dicts of plain ``str``, ``int``, ``bool``, ``float`` and ``None`` values are shared,
    matched by type too (``1``, ``1.0`` and ``True`` are equal in Python but not the same attr)
    and by the sign of a float (``-0.0 == 0.0``); any other value keeps the dict its own."""
    memo = ACTIVE_MEMO.get()
    if memo is None:
        return attrs
    key = []
    for k, v in attrs.items():
        t = type(v)
        if t is str or t is bool or t is int or v is None:
            key.append((k, t, v))
        elif t is float:
            key.append((k, t, v, math.copysign(1.0, v)))
        else:
            return attrs
    table = memo.attrs
    found = table.setdefault(tuple(key), attrs)
    if found is attrs and len(table) > CACHE_SIZE:  # (a NaN never matches: bounded)
        table.clear()
    return found


def compute_layout(shape: tuple[int, ...], partition_axis: int
                   ) -> tuple[int, int, tuple[int, ...]]:
    """(rows, row_size, strides) of a tensor of ``shape`` stored partition-major, computed."""
    rows = shape[partition_axis] if shape else 1
    row_size = math.prod(shape) // rows if rows else 0
    # Strides in the partition-major layout: the partition dim steps whole rows; the other
    # dims keep their C order inside a row.
    strides = [0] * len(shape)
    step = 1
    for d in reversed(range(len(shape))):
        if d == partition_axis:
            continue
        strides[d] = step
        step *= shape[d]
    if shape:
        strides[partition_axis] = row_size
    return rows, row_size, tuple(strides)


def measure(row_size: int, offset: int, pattern: tuple[tuple[int, int], ...],
            memo: GeometryMemo | None = None) -> tuple[object, ...]:
    """(row_lo, row_hi, col_lo, col_hi, size, pattern) of an access, remembered in ``memo``
    when given, the pattern is a tuple of tuples (hashable) and all are plain ints (so a numpy
    integer never leaks into a later access from the memo)."""
    found = bounds(row_size, offset, pattern) + (math.prod(n for _, n in pattern), pattern)
    if (memo is not None and type(pattern) is tuple and all(type(d) is tuple for d in pattern)
            and all(type(v) is int for v in (*found[:5], offset, *sum(pattern, ())))):
        if len(memo.bounds) >= CACHE_SIZE:
            memo.bounds.clear()
        memo.bounds[(row_size, offset, pattern)] = found
    return found


def bounds(row_size: int, offset: int, pattern: tuple[tuple[int, int], ...]) -> tuple[int, ...]:
    """Bounding (row_lo, row_hi, col_lo, col_hi) of an access pattern in a row-major tensor."""
    lo = hi = offset
    for s, n in pattern:
        if n == 0:
            return (0, 0, 0, 0)
        ext = s * (n - 1)
        lo, hi = (lo + ext, hi) if ext < 0 else (lo, hi + ext)
    if row_size <= 0:
        return (0, 0, 0, 0)
    row_lo, row_hi = lo // row_size, hi // row_size + 1
    if row_hi - row_lo == 1:
        return (row_lo, row_hi, lo % row_size, hi % row_size + 1)
    # Several rows: split the pattern into dims that step whole rows and dims inside a row.
    c_lo = c_hi = offset % row_size
    for s, n in pattern:
        if s % row_size == 0:
            continue
        ext = s * (n - 1)
        c_lo, c_hi = (c_lo + ext, c_hi) if ext < 0 else (c_lo, c_hi + ext)
    if c_lo < 0 or c_hi >= row_size:  # a dim wraps across rows: be conservative
        return (row_lo, row_hi, 0, row_size)
    return (row_lo, row_hi, c_lo, c_hi + 1)


def resized_bounds(row_size: int, itemsize: int, view_itemsize: int, offset: int,
                   pattern: tuple[tuple[int, int], ...]) -> tuple[object, ...]:
    """:func:`measure` of an access that reads a tensor (``row_size`` elements of ``itemsize``
    bytes per row) as a dtype of ``view_itemsize`` bytes, ``offset`` and ``pattern`` counting
    elements of that dtype: the bounds are worked out over the bytes (each element one run of
    ``view_itemsize`` bytes) and given in the tensor's own elements, widened to whole ones."""
    size = math.prod(n for _, n in pattern)
    in_bytes = tuple((s * view_itemsize, n) for s, n in pattern) + ((1, view_itemsize),)
    row_lo, row_hi, col_lo, col_hi = bounds(row_size * itemsize, offset * view_itemsize,
                                            in_bytes)
    if col_hi > col_lo:
        col_lo, col_hi = col_lo // itemsize, -(-col_hi // itemsize)
    return (row_lo, row_hi, col_lo, col_hi, size, pattern)


def tensor_elements(offset: int, pattern: tuple[tuple[int, int], ...], itemsize: int,
                    view_itemsize: int) -> np.ndarray:
    """Flat storage indices, in elements of ``itemsize`` bytes, of every tensor element an
    access touches that counts elements of ``view_itemsize`` bytes (``offset``, ``pattern``):
    an int64 array of the access's shape plus a last axis of the tensor elements each of its
    elements overlaps (one when the view's elements are no larger)."""
    index = np.asarray(offset, dtype=np.int64)
    for k, (stride, count) in enumerate(pattern):
        shape = [1] * len(pattern)
        shape[k] = count
        index = index + stride * np.arange(count, dtype=np.int64).reshape(shape)
    first = (index * view_itemsize) // itemsize
    per = max(1, view_itemsize // itemsize)
    return first[..., None] + np.arange(per, dtype=np.int64)
