"""The fast path of the most common indexing: ``t[k, :, a:b]``, ints and slices.

Kernels index tiles and HBM tensors once or more per instruction, almost always with plain
``int`` items and ``slice`` items whose bounds are ``int`` or None. :func:`view_key` recognises
such a key and gives it a hashable form (a view caches the views it hands out under it, so
``acc[i] += ...``, which indexes ``acc[i]`` twice, and loops that take the same slice of a tile
again build it once); :func:`basic_index` computes the view's geometry for it.

Anything unusual (numpy integers, ``None``, ``...``, an index out of range, an empty slice, a
step that is not positive) is left to ``NkiTensor._index_basic``, the general path, which also
words every error. The two must agree wherever this one answers (tests/frontend/test_basic_index.py).
"""

from __future__ import annotations

from typing import Any

from .view_cache import remember

#: How many views one view keeps cached (the oldest is dropped first). Big enough for a
#: stationary block of a blocked matmul ([K tiles x M tiles] slices of one tile).
VIEW_CACHE_SIZE = 1024
#: The same for a view of an HBM tensor: kernels index those with ever new slices (each tile
#: of an input is loaded once), so a thousand cached views of each kernel argument were held
#: to the end of the trace for nothing (about 100 bytes per instruction of a 6,000-instruction
#: element-wise kernel's peak memory).
HBM_VIEW_CACHE_SIZE = 64


def keep_view(views: dict[tuple[Any, ...], Any], key: tuple[Any, ...], view: Any,
              hbm: bool) -> None:
    """Cache ``view`` under ``key`` in a whole view's ``views``, dropping the oldest one when
    the cache is full (:data:`VIEW_CACHE_SIZE`, :data:`HBM_VIEW_CACHE_SIZE` for HBM)."""
    if len(views) >= (HBM_VIEW_CACHE_SIZE if hbm else VIEW_CACHE_SIZE):
        del views[next(iter(views))]
    views[key] = view

Geometry = tuple[tuple[int, ...], tuple[int, ...], tuple[tuple[int, ...], ...], bool]


def view_key(key: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """A hashable form of ``key`` when every item is an ``int`` or a ``slice`` with ``int`` /
    None bounds, else None.

    Exact types on purpose: ``True == 1`` and ``3.0 == 3`` hash alike, but the general path
    rejects a bool index and a float bound, so they must never share a cached view.
    """
    out: list[Any] = []
    for item in key:
        t = type(item)
        if t is int:
            out.append(item)
        elif t is slice:
            start, stop, step = item.start, item.stop, item.step
            if ((start is not None and type(start) is not int)
                    or (stop is not None and type(stop) is not int)
                    or (step is not None and type(step) is not int)):
                return None
            out.append((start, stop, step))
        else:
            return None
    return tuple(out)


def basic_index(shape_in: tuple[int, ...], base: tuple[int, ...],
                coefs: tuple[tuple[int, ...], ...], key: tuple[Any, ...]) -> Geometry | None:
    """(shape, base, coefs, within) of the view ``key`` selects, for a key :func:`view_key`
    accepts, or None when the general path must decide (too many items, an index out of
    range, an empty slice, a step that is not positive). ``within``: every slice stays inside
    its axis, so the view stays inside its parent.

    The view maps its axes onto the declared tensor like its parent (see ``tensor.py``): an
    int item moves the base along its axis and drops the axis; a slice moves the base to its
    start and scales the axis by its step. Slice stops are not clipped (the bounds check at
    use reports them, as for the general path).
    """
    nd = len(shape_in)
    if len(key) > nd:
        return None
    moved: list[tuple[int, int]] = []  # (axis, first index) of the axes the key moves along
    kept: list[tuple[int, int]] = []  # (axis, step) of the axes the view keeps
    shape: list[int] = []
    strided = False  # an axis is dropped or scaled: the coefficients change
    within = True
    axis = 0
    for item in key:
        n = shape_in[axis]
        if type(item) is int:
            v = item + n if item < 0 else item
            if not 0 <= v < n:
                return None
            if v:
                moved.append((axis, v))
            strided = True
        else:
            start, stop, step = item.start, item.stop, item.step
            if step is None:
                step = 1
            elif step <= 0:
                return None
            elif step != 1:
                strided = True
            start = 0 if start is None else start + n if start < 0 else start
            stop = n if stop is None else stop + n if stop < 0 else stop
            size = -(-(stop - start) // step)
            if size <= 0:
                return None
            if start:
                moved.append((axis, start))
            if start < 0 or start + (size - 1) * step >= n:
                within = False
            kept.append((axis, step))
            shape.append(size)
        axis += 1
    for rest in range(axis, nd):
        kept.append((rest, 1))
        shape.append(shape_in[rest])
    # Plain loops, not generator expressions: this runs for nearly every instruction.
    if moved:
        new_base = []
        for b, row in zip(base, coefs):
            for a, v in moved:
                b += row[a] * v
            new_base.append(b)
        base = tuple(new_base)
    if strided:
        coefs = tuple([tuple([row[a] * step for a, step in kept]) for row in coefs])
    return tuple(shape), base, coefs, within


def whole_index(shape: tuple[int, ...], base: tuple[int, ...],
                coefs: tuple[tuple[int, ...], ...], key: tuple[Any, ...],
                cache_key: tuple[Any, ...], memo: dict | None) -> Geometry | None:
    """:func:`basic_index` of a whole view (``NkiTensor.whole``: zero base, identity map, so
    its geometry depends on its shape alone), remembered by (shape, ``cache_key``) in ``memo``
    (the launch's ``ViewCache.whole``; None outside a launch)."""
    geometry = memo.get((shape, cache_key)) if memo is not None else None
    if geometry is None:
        geometry = basic_index(shape, base, coefs, key)
        if geometry is not None and memo is not None:
            remember(memo, (shape, cache_key), geometry)
    return geometry
