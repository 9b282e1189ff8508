"""The index of live accesses hazard detection scans (:mod:`.schedule`, :mod:`.reorder`): per
tensor, its live reads and writes by buckets of rows and columns, so that an access meets only
the live accesses near it (the rule itself is in :mod:`.schedule`'s docstring, "Hazards").
"""

from __future__ import annotations

from ..program.ir import Access, MemSpace
from .tiles import block_elems

RAW, WAW, WAR = 0, 1, 2
#: Edge kind names, indexed by the kind code.
KIND_NAMES = ("RAW", "WAW", "WAR")

#: Live accesses are indexed by buckets of rows and columns of their tensor, so that an access
#: scans only the live accesses near it, whatever the kernel's pattern (an HBM output written
#: tile by tile, a block tensor whose blocks are read thousands of times, a wide accumulator):
#: tensors with more rows than _BUCKET_ABOVE_ROWS have buckets of _BUCKET_ROWS rows; columns
#: go by the tensor's block width (block dims) or _BUCKET_COLS elements, widened so that one
#: tensor row has at most _MAX_COL_BUCKETS buckets (_MAX_BLOCK_BUCKETS for block dims: a kernel
#: may have thousands of blocks per tensor). An access spanning several buckets is listed
#: in each; the edges found are the same as with one list per tensor.
_BUCKET_ABOVE_ROWS = 512
_BUCKET_ROWS = 128
_BUCKET_COLS = 512
_MAX_COL_BUCKETS = 64
#: A block tensor has a bucket per block (up to this many: the key's column bits), whatever
#: their number: an instruction touches one block, and a block reusing a slot scans its own.
_MAX_BLOCK_BUCKETS = 1 << 19
#: Bucket key: (tensor id + _TID_BIAS) << _KEY_TID | row bucket << _KEY_ROW | column bucket.
_TID_BIAS, _KEY_TID, _KEY_ROW = 8, 48, 20


#: Pseudo tensor ids of the physical SBUF and PSUM, where the accesses of directly allocated
#: tiles are tracked (rows are partitions, one bucket; columns are byte addresses).
_PHYSICAL = {MemSpace.SBUF: -1, MemSpace.PSUM: -2}
#: Byte addresses of a partition the column buckets of the physical memories are cut from.
_PHYSICAL_BYTES = 192 * 1024

#: HBM tensors of three or more dims and at most _BUCKET_ABOVE_ROWS rows (their leading dim: a
#: [32, 128, N] output) have a row bucket per few rows, at most this many buckets: such a tensor
#: is written tile by tile, one leading index per DMA, and with its rows in one bucket every
#: store would scan the live stores of all the others (their bounding boxes span the columns:
#: quadratic in stores). (A 2-D one, e.g. a spill's scratch, is read and written all rows at
#: once: row buckets would only list each access many times.)
_HBM_ROW_BUCKETS = 32

#: (tensor id, rows, columns, block width or 0, row_lo, row_hi, col_lo, col_hi); ``rows``
#: chooses the row buckets: above _BUCKET_ABOVE_ROWS, _BUCKET_ROWS rows per bucket, else
#: ``rows`` rows per bucket
Region = tuple[int, int, int, int, int, int, int, int]
#: A tensor's buckets (_LiveAccesses.geometry): rows and columns per bucket, the base of its
#: bucket keys, its bucket keys ever used (an ordered set) and the row buckets of those keys.
_Geometry = tuple[int, int, int, dict[int, None], set[int]]


def regions(a: Access) -> list[Region]:
    """The regions whose overlaps are hazards: the access's bounds in its tensor, or, for a
    directly allocated tile (``TensorDecl.placement``), the physical partitions and byte
    ranges of every logical tile it touches, so tiles placed on the same memory alias."""
    t = a.tensor
    pl = t.placement
    if pl is None:
        rows = t.rows
        if t.space is MemSpace.HBM and rows <= _BUCKET_ABOVE_ROWS and len(t.shape) > 2:
            rows = -(-rows // _HBM_ROW_BUCKETS)  # (rows per bucket)
        return [(t.id, rows, t.row_size, block_elems(t), a.row_lo, a.row_hi, a.col_lo,
                 a.col_hi)]
    per_tile = t.row_size // len(pl.tiles)  # elements of one logical tile per partition
    isz = t.itemsize
    out = []
    if a.col_hi <= a.col_lo:
        return out
    for b in range(a.col_lo // per_tile, (a.col_hi - 1) // per_tile + 1):
        start, addr = pl.tiles[b]
        lo = max(a.col_lo - b * per_tile, 0)
        hi = min(a.col_hi - b * per_tile, per_tile)
        out.append((_PHYSICAL[t.space], _BUCKET_ABOVE_ROWS, _PHYSICAL_BYTES, 0, start + a.row_lo,
                    start + a.row_hi, addr + lo * isz, addr + hi * isz))
    return out


class LiveAccesses:
    """The live reads and writes of every tensor, indexed by (tensor, row bucket, column
    bucket) (see _BUCKET_ROWS): bucket key -> list of (row_lo, row_hi, col_lo, col_hi, id)."""

    def __init__(self) -> None:
        self.writes: dict[int, list[tuple[int, int, int, int, int]]] = {}
        self.reads: dict[int, list[tuple[int, int, int, int, int]]] = {}
        #: tensor id -> (rows per bucket, columns per bucket, its bucket keys' base, and its
        #: entries of keys_of and row_buckets, at hand)
        self.geometry: dict[int, _Geometry] = {}
        #: tensor id -> its bucket keys ever used, in first-use order (dict as ordered set)
        self.keys_of: dict[int, dict[int, None]] = {}
        #: tensor id -> the row buckets of its keys
        self.row_buckets: dict[int, set[int]] = {}

    def _geometry(self, region: Region) -> _Geometry:
        tid, rows, cols, block = region[0], region[1], region[2], region[3]
        rsize = _BUCKET_ROWS if rows > _BUCKET_ABOVE_ROWS else max(1, rows)
        csize = block or _BUCKET_COLS
        while csize * (_MAX_BLOCK_BUCKETS if block else _MAX_COL_BUCKETS) < cols:
            csize *= 2
        used = self.keys_of[tid] = {}
        buckets = self.row_buckets[tid] = set()
        g = self.geometry[tid] = (rsize, csize, (tid + _TID_BIAS) << _KEY_TID, used, buckets)
        return g

    def _keys(self, region: Region) -> list[int]:
        """The bucket keys of a region, recorded as used by its tensor."""
        g = self.geometry.get(region[0])
        if g is None:
            g = self._geometry(region)
        return self._bucket_keys(g, *region[4:])

    def _access_keys(self, a: Access) -> list[int]:
        """:meth:`_keys` of the one region of an access to a tensor that is not directly
        allocated (the common case, without building the region: speed)."""
        g = self.geometry.get(a.tensor.id)
        if g is None:
            g = self._geometry(regions(a)[0])
        r_lo, r_hi, c_lo, c_hi = a.row_lo, a.row_hi, a.col_lo, a.col_hi
        rsize, csize, base, used, buckets = g
        rb, cb = r_lo // rsize, c_lo // csize
        if (r_hi > r_lo and c_hi > c_lo and (r_hi - 1) // rsize == rb
                and (c_hi - 1) // csize == cb):
            # one bucket (the usual access), as _bucket_keys finds it, without the call
            key = base | (rb << _KEY_ROW) | cb
            if key not in used:
                used[key] = None
                buckets.add(rb)
            return [key]
        return self._bucket_keys(g, r_lo, r_hi, c_lo, c_hi)

    @staticmethod
    def _bucket_keys(g: _Geometry, r_lo: int, r_hi: int, c_lo: int, c_hi: int) -> list[int]:
        rsize, csize, base, used, buckets = g
        rb0, cb0 = r_lo // rsize, c_lo // csize
        rb1 = (r_hi - 1) // rsize if r_hi > r_lo else rb0
        cb1 = (c_hi - 1) // csize if c_hi > c_lo else cb0
        if rb0 == rb1 and cb0 == cb1:  # the common case: one bucket
            key = base | (rb0 << _KEY_ROW) | cb0
            if key not in used:
                used[key] = None
                buckets.add(rb0)
            return [key]
        keys = [base | (rb << _KEY_ROW) | cb
                for rb in range(rb0, rb1 + 1) for cb in range(cb0, cb1 + 1)]
        for key in keys:
            if key not in used:
                used[key] = None
        buckets.update(range(rb0, rb1 + 1))
        return keys

    def pop_all(self, tid: int, found: dict[int, int]) -> None:
        """Edges (WAW from writes, WAR from reads) from every live access of tensor ``tid``,
        which stops being tracked (its memory now belongs to another tile)."""
        for key in self.keys_of.pop(tid, ()):
            for *_, j in self.writes.pop(key, ()):
                found[j] = min(found.get(j, WAW), WAW)
            for *_, j in self.reads.pop(key, ()):
                found[j] = min(found.get(j, WAR), WAR)
        self.geometry.pop(tid, None)
        self.row_buckets.pop(tid, None)

    def touching(self, tid: int, c_lo: int, c_hi: int, found: dict[int, int]) -> None:
        """Edges (WAW from writes, WAR from reads) from every live access of tensor ``tid``
        within columns ``[c_lo, c_hi)``, kept live (other blocks of the tensor may need them)."""
        g = self.geometry.get(tid)
        if g is None:
            return
        used = self.keys_of[tid]
        csize = g[1]
        c0, c1 = c_lo // csize, (max(c_hi, c_lo + 1) - 1) // csize
        rbs = self.row_buckets[tid]
        if len(rbs) * (c1 - c0 + 1) < len(used):  # (a block tensor: its block's buckets)
            base = (tid + _TID_BIAS) << _KEY_TID
            keys = [base | (rb << _KEY_ROW) | cb for rb in rbs for cb in range(c0, c1 + 1)]
        else:
            keys = [key for key in used if c0 <= key & ((1 << _KEY_ROW) - 1) <= c1]
        # (an access listed in several buckets is met once per bucket: same edge, same kind)
        for key in keys:
            for entry in self.writes.get(key, ()):
                _, _, lo, hi, j = entry
                if lo < c_hi and c_lo < hi:
                    found[j] = min(found.get(j, WAW), WAW)
            for entry in self.reads.get(key, ()):
                _, _, lo, hi, j = entry
                if lo < c_hi and c_lo < hi:
                    found[j] = min(found.get(j, WAR), WAR)

    def read(self, a: Access, me: int, found: dict[int, int]) -> list[int]:
        """Record a read; RAW edges from the overlapping live writes. Returns their
        producers."""
        hits: list[int] = []
        if a.tensor.placement is not None:
            for region in regions(a):
                self._read(region, me, found, hits)
            return hits
        # its one region, the access's bounds: _read_at's loop, inline (the hazard passes' most
        # frequent call: speed)
        r_lo, r_hi, c_lo, c_hi = a.row_lo, a.row_hi, a.col_lo, a.col_hi
        entry = (r_lo, r_hi, c_lo, c_hi, me)
        writes, reads = self.writes, self.reads
        for key in self._access_keys(a):
            for w_rlo, w_rhi, w_clo, w_chi, j in writes.get(key, ()):
                if w_rlo < r_hi and r_lo < w_rhi and w_clo < c_hi and c_lo < w_chi and j != me:
                    found[j] = RAW
                    hits.append(j)
            live = reads.get(key)
            if live is None:
                reads[key] = [entry]
            else:
                live.append(entry)
        return hits

    def write(self, a: Access, me: int, found: dict[int, int]) -> None:
        """Record a write; WAW/WAR edges from the overlapping live accesses, then drop the
        live accesses it covers."""
        if a.tensor.placement is None:
            self._write_at(self._access_keys(a), (a.row_lo, a.row_hi, a.col_lo, a.col_hi, me),
                           found)
        else:
            for region in regions(a):
                self._write(region, me, found)

    def _read(self, region: Region, me: int, found: dict[int, int], hits: list[int]) -> None:
        self._read_at(self._keys(region), (*region[4:], me), found, hits)

    def _write(self, region: Region, me: int, found: dict[int, int]) -> None:
        self._write_at(self._keys(region), (*region[4:], me), found)

    def _read_at(self, keys: list[int], entry: tuple[int, int, int, int, int],
                 found: dict[int, int], hits: list[int]) -> None:
        """Record a read of ``entry`` (its bounds and instruction) in the buckets ``keys``."""
        r_lo, r_hi, c_lo, c_hi, me = entry
        writes, reads = self.writes, self.reads
        for key in keys:
            for w_rlo, w_rhi, w_clo, w_chi, j in writes.get(key, ()):
                if w_rlo < r_hi and r_lo < w_rhi and w_clo < c_hi and c_lo < w_chi and j != me:
                    found[j] = RAW
                    hits.append(j)
            live = reads.get(key)
            if live is None:
                reads[key] = [entry]
            else:
                live.append(entry)

    def _write_at(self, keys: list[int], entry: tuple[int, int, int, int, int],
                  found: dict[int, int]) -> None:
        """Record a write of ``entry`` in the buckets ``keys``."""
        r_lo, r_hi, c_lo, c_hi, me = entry
        writes, reads = self.writes, self.reads
        for key in keys:
            for kind, table in ((WAW, writes), (WAR, reads)):
                live = table.get(key)
                if not live:
                    continue
                keep = []
                for old in live:
                    e_rlo, e_rhi, e_clo, e_chi, j = old
                    if (j != me and e_rlo < r_hi and r_lo < e_rhi and e_clo < c_hi
                            and c_lo < e_chi and (j not in found or found[j] > kind)):
                        found[j] = kind
                    if not (r_lo <= e_rlo and e_rhi <= r_hi and c_lo <= e_clo
                            and e_chi <= c_hi):
                        keep.append(old)
                table[key] = keep
            mine = writes.get(key)
            if mine is None:
                writes[key] = [entry]
            else:
                mine.append(entry)
