"""Partition-aligned broadcasting: how two tile shapes meet (docs/frontend.md, "Broadcasting").

The first axis of a tile is its partition dim, so NKI lines shapes up at the *left*: a shape with
fewer axes gets size-1 *free* axes appended (numpy prepends them). A reduction result of shape
``[128]`` therefore means one value per partition, the same elements as ``[128, 1]``: it fills a
``[128, 1]`` slot and broadcasts along the free axes of a ``[128, F]`` tile. After that, each axis
either matches or is 1; a free axis of size 1 broadcasts with stride 0 (an access pattern the
engines read natively), while a partition dim of 1 against P > 1 needs data movement (compute
engines map partition p to lane p), which the ``nl`` lowering adds (``language.nlmath.partition_broadcast``)
and ``nisa`` instructions reject.

Everything here builds views (no instruction): the recorded operands describe the real access,
e.g. a ``[128]`` per-partition scalar read by ``tensor_scalar`` is a ``[128, 1]`` access, and a
``[128, 1]`` tile broadcast over ``[128, 512]`` is a stride-0 ``[128, 512]`` access.
"""

from __future__ import annotations

import math
from typing import Any

from ..errors import ShapeError
from .operands import fail, require_tile
from .tensors.tensor import NkiTensor


def padded(shape: tuple[int, ...], ndim: int) -> tuple[int, ...]:
    """``shape`` with size-1 free axes appended up to ``ndim`` axes (a 0-d shape is one
    element on one partition: ``[1, 1, ...]``)."""
    return tuple(shape) + (1,) * (ndim - len(shape))


def common_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    """The shape two partition-aligned shapes broadcast to, or None when they do not."""
    n = max(len(a), len(b), 1)
    out = []
    for x, y in zip(padded(a, n), padded(b, n)):
        if x != y and 1 not in (x, y):
            return None
        out.append(max(x, y))
    return tuple(out)


def broadcast_error(what: str, a: tuple[int, ...], b: tuple[int, ...]) -> Exception:
    """The ShapeError for two shapes that do not broadcast (to ``raise``)."""
    hint = ""
    if len(a) != len(b):
        short = a if len(a) < len(b) else b
        hint = (f" (NKI aligns shapes at the partition dim, dim 0: {list(short)} is read as "
                f"{list(padded(short, max(len(a), len(b))))}, {short[0] if short else 1} "
                f"partition(s))")
    return fail(ShapeError, f"{what}: expected shapes that broadcast (each dim equal or 1), "
                f"found {list(a)} and {list(b)}{hint}")


def same_layout(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    """True when two shapes name the same elements in the same order: equal partition dims and
    equal free sizes once size-1 axes are dropped (``[128]``, ``[128, 1]``; ``[128, 4]``,
    ``[128, 1, 4]``)."""
    return (padded(a, 1)[0] == padded(b, 1)[0]
            and [n for n in a[1:] if n != 1] == [n for n in b[1:] if n != 1])


def relabel(t: NkiTensor, shape: tuple[int, ...]) -> NkiTensor:
    """The same elements as ``t`` in ``shape``, which may add or drop size-1 axes only
    (``same_layout(t.shape, shape)``): a size-1 axis is always at index 0, so it adds nothing
    to any address."""
    return t._relabeled(shape)


def expand(t: NkiTensor, shape: tuple[int, ...], what: str) -> NkiTensor:
    """A view of ``t`` broadcast to ``shape`` along free axes (stride 0), partition-aligned.

    The partition dims must already agree: moving data between partitions is not a view.
    """
    shape = tuple(shape)
    if t.shape == shape:
        return t
    n = max(len(shape), len(t.shape))
    mine = padded(t.shape, n)
    if (common_shape(mine, shape) != padded(shape, n)
            or any(m != 1 for m in mine[len(shape):])):
        raise broadcast_error(what, t.shape, shape)
    if mine[0] != padded(shape, 1)[0]:
        raise fail(ShapeError, f"{what}: cannot broadcast {list(t.shape)} along the partition "
                   f"dim to {list(shape)}; compute engines read one partition per lane "
                   f"(use nl.broadcast_to to copy one partition to many)")
    return relabel(t, padded(t.shape, len(shape))[:len(shape)]).with_shape(shape)


def per_partition(x: Any, data: NkiTensor, what: str) -> NkiTensor:
    """A tile holding one value per partition of ``data`` (``[P]`` or ``[P, 1, ...]``), as a
    ``[P, 1, ...]`` view with ``data``'s rank: what tensor_scalar operands, activation biases,
    scan initial values and ``reduce_res`` tiles are."""
    t = require_tile(x, what)
    p = data.shape[0] if data.shape else 1
    if padded(t.shape, 1)[0] != p or math.prod(t.shape[1:]) != 1:
        raise fail(ShapeError, f"{what}: expected shape [{p}, 1], found {list(t.shape)} (one "
                   f"value per partition of the data; [{p}] works too)")
    return relabel(t, (p,) + (1,) * (max(data.ndim, 1) - 1))


def free_broadcast(a: NkiTensor, b: NkiTensor, what: str) -> tuple[NkiTensor, NkiTensor]:
    """Two instruction operands as views of one shape, broadcasting free axes only (stride 0,
    partition-aligned): ``[P, 14]`` with ``[P]`` or ``[P, 1]`` reads the second with a zero
    free stride. The partition sizes must be equal (an instruction moves no data between
    partitions)."""
    if a.shape == b.shape:
        return a, b
    if same_layout(a.shape, b.shape):  # [P] and [P, 1]: the same elements
        return a, relabel(b, a.shape)
    shape = common_shape(a.shape, b.shape)
    if shape is None or padded(a.shape, 1)[0] != padded(b.shape, 1)[0]:
        raise fail(ShapeError, f"{what}: expected operands with the same partition size whose "
                   f"free axes are equal or 1 (broadcast along free axes), found "
                   f"{list(a.shape)} and {list(b.shape)}")
    return expand(a, shape, what), expand(b, shape, what)
