"""Which SBUF tile regions still hold an untouched copy of an HBM region (a plain DMA load).

A tiled matmul loads each operand tile from HBM and feeds it to ``nc_matmul`` unchanged. When a
PSUM accumulation chain is evaluated as one GEMM (``psum_chain.py``), its K-sequence of loaded
tiles is usually one rectangle of the HBM tensor (``rhs[0:K, cols]``): the GEMM can then read a
float32 copy of the HBM tensor, made once per launch, instead of converting and stacking every
tile again (a matmul that reloads its moving tiles for every output row block would convert
the same HBM data once per block).

An *origin* says "tile region D equals HBM region S". It is recorded after a plain DMA load
(no mask, no read-modify-write, no cast, both sides rectangles of the same shape) and dropped
as soon as either side may change: any other write into the tile region, any write into the HBM
tensor, or the tile's release. The float32 copy of an HBM tensor is dropped on any write to it.
Chains that read through an origin register the HBM tensor as an operand, so a write to it
evaluates them first (``PsumChains.before``), while the values are still those of the
matmuls' time.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ...program.ir import Access, TensorDecl
from ..memory import CopyIndex, Memory
from ...dtypes import float32

#: Largest HBM tensor (float32 bytes) given a float32 copy; larger ones take the stacking path.
MAXfloat32_COPY_BYTES = 512 * 1024 * 1024


class HbmRegion(NamedTuple):
    """``offset`` plus (stride, size) pairs into HBM tensor ``tensor`` (an Access without the
    bounds it computes: made once per matmul operand, so kept cheap)."""

    tensor: TensorDecl
    offset: int
    pattern: tuple[tuple[int, int], ...]


class HbmOrigins:
    """Origins of tile regions, and float32 copies of the HBM tensors they point into.

    Args:
        memory: the launch's memory (HBM storage is read from it).
    """

    def __init__(self, memory: Memory) -> None:
        self._memory = memory
        self._copies = CopyIndex()
        self._f32: dict[TensorDecl, np.ndarray] = {}

    def loaded(self, dst: Access, src: Access) -> None:
        """A plain DMA load copied HBM region ``src`` into tile region ``dst`` (the caller has
        checked the load and reported the write of ``dst`` to :meth:`wrote` first). Only
        two-level regions with a unit free stride in the tile are recorded."""
        if len(dst.pattern) == 2 and len(src.pattern) == 2 and dst.pattern[1][0] == 1:
            self._copies.add(dst, src)

    def wrote(self, dst: Access) -> None:
        """Anything else wrote ``dst``: origins it may change are dropped."""
        t = dst.tensor
        if t in self._copies:
            self._copies.replace(t, [(d, s) for d, s in self._copies.get(t)
                                     if not d.overlaps(dst)])
        for tile in self._copies.tiles_from(t):  # an HBM tensor: its copies in tiles are stale
            self._copies.replace(tile, [(d, s) for d, s in self._copies.get(tile)
                                        if s.tensor is not t])
        self._f32.pop(t, None)

    def forget(self, tile: TensorDecl) -> None:
        """The tile is released: drop its origins."""
        self._copies.replace(tile, [])

    def source(self, a: Access) -> HbmRegion | None:
        """The HBM region holding the same values as tile region ``a`` (a two-level access
        with unit free stride inside one loaded region), or None."""
        entries = self._copies.get(a.tensor)
        if (not entries or len(a.pattern) != 2 or a.pattern[1][0] != 1
                or a.view_dtype is not None):  # (bytes read as another dtype: not the copy)
            return None
        # Newest first: a K loop reads the tile it just loaded (a block tile holds one load
        # per K step).
        for dst, src in reversed(entries):
            if (dst.row_lo <= a.row_lo and a.row_hi <= dst.row_hi and dst.col_lo <= a.col_lo
                    and a.col_hi <= dst.col_hi and a.pattern[0][0] == dst.pattern[0][0]):
                ps, fs = src.pattern[0][0], src.pattern[1][0]
                offset = (src.offset + (a.row_lo - dst.row_lo) * ps
                          + (a.col_lo - dst.col_lo) * fs)
                return HbmRegion(src.tensor, offset,
                                 ((ps, a.pattern[0][1]), (fs, a.pattern[1][1])))
        return None

    def f32_view(self, hbm: TensorDecl, offset: int, pattern: tuple[tuple[int, int], ...]
                 ) -> np.ndarray | None:
        """A float32 view of ``hbm`` elements (``offset`` plus (stride, size) pairs), from a
        copy of the whole tensor made on first use; None when the tensor is too large."""
        arr = self._f32.get(hbm)
        if arr is None:
            if hbm.size * 4 > MAXfloat32_COPY_BYTES:
                return None
            arr = self._f32[hbm] = self._memory.storage(hbm).astype(float32)
        return np.ndarray([n for _, n in pattern], float32, arr, offset * 4,
                          [s * 4 for s, _ in pattern])
