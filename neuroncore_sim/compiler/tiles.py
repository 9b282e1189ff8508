"""Tiles as the compiler allocates them: one per logical block of an on-chip tensor.

A tensor declared with block dims (``nl.ndarray((B0, B1, nl.par_dim(P), F), ...)``) is
``B0 * B1`` tiles of ``(P, F)``; the NKI docs call the block dims *logical*: the compiler
decides how many physical tiles back them. Block dims lead each row (C order), so block ``b``
is the columns ``[b * block_elems, (b + 1) * block_elems)`` of the tensor's rows. A tensor
without block dims is one tile.

Tile keys are ints: the tensor id for block 0 (and for a tensor without block dims),
``id + (block << BLOCK_SHIFT)`` for the others.
"""

from __future__ import annotations

import math

from ..program.ir import Access, TensorDecl

#: Block index shift of a tile key (:func:`tile_key`).
BLOCK_SHIFT = 32
_TID_MASK = (1 << BLOCK_SHIFT) - 1


def block_elems(t: TensorDecl) -> int:
    """Elements per partition of one block tile of ``t``; 0 when ``t`` is a single tile (no
    block dims, or all of size 1). Block dims lead each row (C order), so block ``b`` is the
    columns ``[b * block_elems, (b + 1) * block_elems)``."""
    pa = t.partition_axis
    if pa <= 0:
        return 0
    n = math.prod(t.shape[:pa])
    return t.row_size // n if n > 1 else 0


def tile_key(tid: int, block: int) -> int:
    """The key of block ``block`` of tensor ``tid`` (the tensor id itself for block 0)."""
    return tid + (block << BLOCK_SHIFT)


def key_tensor(key: int) -> int:
    """The tensor id of a tile key."""
    return key & _TID_MASK


def key_block(key: int) -> int:
    """The block index of a tile key."""
    return key >> BLOCK_SHIFT


def access_keys(a: Access, per: int) -> range | tuple[int]:
    """Tile keys an access touches, given its tensor's :func:`block_elems` ``per``."""
    tid = a.tensor.id
    if per == 0:
        return (tid,)
    lo, hi = a.col_lo // per, (max(a.col_hi, a.col_lo + 1) - 1) // per + 1
    return range(tid + (lo << BLOCK_SHIFT), tid + (hi << BLOCK_SHIFT), 1 << BLOCK_SHIFT)


def tile_bytes(t: TensorDecl) -> int:
    """Bytes per partition of one tile (one block) of ``t``."""
    per = block_elems(t)
    return per * t.itemsize if per else t.row_bytes


def tile_cols(key: int, t: TensorDecl) -> tuple[int, int]:
    """The columns (elements of each row) of tile ``key`` of ``t``."""
    per = block_elems(t)
    if per == 0:
        return 0, t.row_size
    b = key_block(key)
    return b * per, (b + 1) * per


def site_key(t: TensorDecl) -> tuple[object, ...]:
    """The allocation site whose ring the tiles of ``t`` share: its kernel line in its memory
    (a line's PSUM and SBUF tiles are two rings), or ``t`` alone without a line."""
    return (t.space, t.site) if t.site is not None else (t.space, "#", t.id)
