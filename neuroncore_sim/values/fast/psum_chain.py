"""Deferred PSUM accumulation chains: many ``nc_matmul`` into PSUM, few large GEMMs.

A tiled matmul accumulates K/128 products into each PSUM tile: ``psum[M, N] += s_k.T @ m_k``.
Computed one at a time these are small GEMMs (at most 128 x 128 x 512) that numpy's BLAS runs at
a fraction of its large-GEMM rate. The PSUM result is the same sum, so the executor holds each
chain back and evaluates it when its value is first needed, as one tall GEMM
``concat_k(s_k).T @ concat_k(m_k)``.

Chains are evaluated in *batches*: when one chain is needed, every pending chain that shares its
stationary sequence or its moving sequence (the other accumulators of a blocked matmul, which
the kernel fills in the same K loop) is evaluated with it. A batch whose chains form a grid
(stationary sequences S_1..S_a, moving sequences M_1..M_b, a chain for each pair) is one GEMM
``concat(S_i).T @ concat(M_j)`` whose blocks go to the chains' PSUM regions: a [512 x 1024]
output block of a blocked matmul is one GEMM, not eight, and each operand tile is converted to
float32 once, not once per chain that reads it.

Holding the operands (their access patterns; values are read at evaluation) is safe because the
executor shows every
other instruction to :meth:`PsumChains.before` first: an instruction that touches a chain's PSUM
tensor, or writes a tensor a chain reads, makes that chain evaluate first, so evaluation happens
with the operands' values of the matmuls' time. Two operand views with the same access pattern
therefore hold the same values while chains are pending, which is what lets a batch share them.
Pending chains into one tensor never overlap (starting a chain first evaluates every pending
chain whose region it overlaps), so evaluating a chain early, or chains in any order, gives the
same PSUM contents. Results equal the one-at-a-time evaluation up to float32 summation order:
the hardware adds the K products into PSUM in issue order, BLAS sums the concatenated K in its
own blocked order; both accumulate in float32 (docs/model.md, "Functional values").

"Evaluated" means submitted: the GEMM runs on the executor's :class:`~.gemm_jobs.GemmRunner`
(in line, or in a thread pool), and its results reach PSUM when the job is retired; the executor
holds back whatever needs them until then.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from .gemm_jobs import ADD, ONTO_ZERO, SET, GemmJob, GemmRunner
from .hbm_origin import HbmOrigins, HbmRegion
from ...program.ir import Access, TensorDecl
from ..memory import Memory
from ...dtypes import float32

#: Bytes of float32 operands all pending chains may hold before they are evaluated early (bounds
#: the concatenation buffers; 64 MiB is a 16384-deep chain of 512-wide moving tiles).
MAX_PENDING_BYTES = 64 * 1024 * 1024


class _Chain:
    """The pending matmuls into one PSUM region, in issue order, with the operand access
    patterns that identify their sequences (``skeys`` / ``mkeys``)."""

    __slots__ = ("dst", "accumulate", "stationary", "moving", "shash", "mhash", "nbytes",
                 "ssrcs", "msrcs")

    def __init__(self, dst: Access, accumulate: bool) -> None:
        self.dst = dst
        self.accumulate = accumulate  # the first matmul adds into PSUM (True) or overwrites it
        self.stationary: list[Access] = []  # [K_i, M] regions of SBUF tiles
        self.moving: list[Access] = []  # [K_i, N] regions of SBUF tiles
        self.shash = self.mhash = 0  # running hashes of the key sequences (cheap grouping)
        self.nbytes = 0
        #: the HBM region each operand is an untouched copy of (hbm_origin.py), or None
        self.ssrcs: list[HbmRegion | None] = []
        self.msrcs: list[HbmRegion | None] = []


class PsumChains:
    """The chains an executor holds back, indexed by PSUM tensor and by operand tensor.

    Args:
        memory: the launch's memory (operand views are taken from it, results written to it).
        origins: where loaded tiles came from; a grid whose operands are one HBM rectangle
            reads a float32 copy of the HBM tensor instead of stacking the tiles.
        runner: runs the GEMMs (default: in line, at evaluation).
    """

    def __init__(self, memory: Memory, origins: HbmOrigins | None = None,
                 runner: GemmRunner | None = None) -> None:
        self._memory = memory
        self._origins = origins
        #: PSUM tensor -> {(offset, pattern): chain}
        self._by_dst: dict[TensorDecl, dict[tuple, _Chain]] = {}
        #: operand tensor -> PSUM tensors whose chains read it
        self._readers: dict[TensorDecl, set[TensorDecl]] = {}
        #: runs the GEMMs (gemm_jobs.py): in line, or in background threads
        self.runner = runner if runner is not None else GemmRunner()
        self._nbytes = 0  # float32 bytes the pending chains' operands would take
        #: counts evaluations and drops: operands can stop being read only when it changes
        self.generation = 0

    def __bool__(self) -> bool:
        return bool(self._by_dst)

    def add(self, dst: Access, accumulate: bool, stationary: Access, moving: Access) -> None:
        """Hold ``dst (+)= stationary.T @ moving`` back. The caller has checked that the
        operands are 2-D-able ``[K, M]`` / ``[K, N]`` with equal K and ``dst`` has M x N
        float32 elements, without a mask."""
        for src in (stationary, moving):
            if src.tensor in self._by_dst:  # a PSUM operand: its pending value is needed now
                self.flush_tensor(src.tensor)
        key = (dst.offset, dst.pattern)
        chains = self._by_dst.get(dst.tensor)
        chain = chains.get(key) if chains else None
        if chain is None or not accumulate:
            if chains:  # overlapping pending writes to the same tensor must land first
                overlapping = [c for c in chains.values() if c.dst.overlaps(dst)]
                if overlapping:
                    self._evaluate(overlapping)
            chain = _Chain(dst, accumulate)
            self._by_dst.setdefault(dst.tensor, {})[key] = chain
        # No views yet: a tile whose DMA load is still pending (memory.load_later) stays
        # uncopied when the GEMM reads its values from HBM (_from_hbm).
        chain.stationary.append(stationary)
        chain.moving.append(moving)
        chain.shash = hash((chain.shash, _region(stationary)))
        chain.mhash = hash((chain.mhash, _region(moving)))
        for t in (stationary.tensor, moving.tensor):
            self._readers.setdefault(t, set()).add(dst.tensor)
        if self._origins is not None:
            for src, srcs in ((stationary, chain.ssrcs), (moving, chain.msrcs)):
                hbm = self._origins.source(src)
                srcs.append(hbm)
                if hbm is not None:  # a write to the HBM tensor must evaluate the chain first
                    self._readers.setdefault(hbm.tensor, set()).add(dst.tensor)
        nbytes = 4 * (stationary.size + moving.size)
        chain.nbytes += nbytes
        self._nbytes += nbytes
        if self._nbytes > MAX_PENDING_BYTES:
            self.flush()

    def before(self, reads: list[Access], writes: list[Access]) -> None:
        """Evaluate the chains an instruction with these operands depends on or would clobber."""
        for acc in reads:
            if acc.tensor in self._by_dst:
                self.flush_tensor(acc.tensor)
        for acc in writes:
            t = acc.tensor
            if t in self._by_dst:
                self.flush_tensor(t)
            readers = self._readers.get(t)
            if readers:
                for psum in list(readers):
                    self.flush_tensor(psum)

    def drop(self, psum: TensorDecl) -> None:
        """Discard the pending chains into ``psum``: the kernel can no longer name the tile, so
        nothing will ever read what they would write."""
        chains = self._by_dst.pop(psum, None)
        if chains is not None:
            self.generation += 1
            self._nbytes -= sum(c.nbytes for c in chains.values())
            self._forget_readers(psum)

    def reads(self, decl: TensorDecl) -> bool:
        """True while a pending chain may still read ``decl`` (its storage must stay put)."""
        return bool(self._readers.get(decl))

    def flush_tensor(self, psum: TensorDecl) -> None:
        """Evaluate every pending chain into ``psum`` (and the chains that batch with them)."""
        chains = self._by_dst.get(psum)
        if chains:
            self._evaluate(list(chains.values()))

    def flush(self) -> None:
        """Evaluate every pending chain."""
        pending = [c for chains in self._by_dst.values() for c in chains.values()]
        if pending:
            self._evaluate(pending)

    # --- evaluation ------------------------------------------------------------------------------

    def _evaluate(self, needed: list[_Chain]) -> None:
        """Evaluate ``needed`` and every pending chain sharing an operand sequence with them,
        one GEMM per grid, and write the results into PSUM."""
        batch = self._batch(needed)
        self.generation += 1
        for chain in batch:
            self._unlink(chain)
        onto_zero = self._claim_zeroed(batch)
        for rows, cols, cells in _grids(batch):
            self._gemm(rows, cols, cells, onto_zero)

    def _claim_zeroed(self, batch: list[_Chain]) -> set[TensorDecl]:
        """The PSUM tensors of ``batch`` that a pending memset of +0.0 fills (not written yet,
        ``Memory.fill_later``) and whose chains in ``batch`` cover every element: their GEMM
        results are written onto zero without the memset ever being done (the usual
        ``acc = nl.zeros(..., buffer=nl.psum)`` then ``acc += nc_matmul(...)``)."""
        by_tensor: dict[TensorDecl, list[_Chain]] = {}
        for c in batch:
            by_tensor.setdefault(c.dst.tensor, []).append(c)
        claimed = set()
        for t, chains in by_tensor.items():
            fill = self._memory.pending_fill(t)
            if (fill is None or np.asarray(fill).dtype != float32 or fill != 0
                    or np.signbit(fill)):
                continue
            # Pending chains into one tensor have disjoint bounding boxes; rectangles whose
            # sizes add up to the tensor's therefore cover it.
            if (all(_rectangle(c.dst) for c in chains)
                    and sum(c.dst.size for c in chains) == t.size):
                self._memory.claim_fill(t)
                claimed.add(t)
        return claimed

    def _batch(self, needed: list[_Chain]) -> list[_Chain]:
        """``needed`` plus the pending chains linked to it by a shared stationary or moving
        sequence (transitively), in creation order of the PSUM index."""
        pending = [c for chains in self._by_dst.values() for c in chains.values()]
        if len(pending) == len(needed):
            return needed
        shashes = {c.shash for c in needed}
        mhashes = {c.mhash for c in needed}
        chosen = {id(c) for c in needed}
        grew = True
        while grew:
            grew = False
            for c in pending:
                if id(c) not in chosen and (c.shash in shashes or c.mhash in mhashes):
                    chosen.add(id(c))
                    shashes.add(c.shash)
                    mhashes.add(c.mhash)
                    grew = True
        return [c for c in pending if id(c) in chosen]

    def _unlink(self, chain: _Chain) -> None:
        """Remove ``chain`` from the pending indexes."""
        dst = chain.dst
        chains = self._by_dst[dst.tensor]
        del chains[(dst.offset, dst.pattern)]
        self._nbytes -= chain.nbytes
        if not chains:
            del self._by_dst[dst.tensor]
            self._forget_readers(dst.tensor)

    def _gemm(self, rows: list[_Chain], cols: list[_Chain],
              cells: list[tuple[_Chain, int, int]], onto_zero: set[TensorDecl]) -> None:
        """Submit one GEMM for a grid: ``rows`` carry the stationary sequences, ``cols`` the
        moving ones; ``cells`` are (chain, row, col). The job owns its float32 operands (or
        names the tiles it reads in place) and gets its PSUM views now, in the values thread."""
        reads: set[TensorDecl] = set()
        if len(rows) == 1 and len(cols) == 1 and len(rows[0].stationary) == 1:
            sa, ma = rows[0].stationary[0], cols[0].moving[0]
            s = self._view2d(sa).astype(float32, copy=False)
            m = self._view2d(ma).astype(float32, copy=False)
            reads = {a.tensor for a, arr in ((sa, s), (ma, m)) if arr.base is not None}
            m_offsets, n_offsets = [0, s.shape[1]], [0, m.shape[1]]
        else:
            s, m_offsets = self._from_hbm(rows, 0) or self._concat(rows, 0)
            m, n_offsets = self._from_hbm(cols, 1) or self._concat(cols, 1)
        targets = []
        for chain, i, j in cells:
            if not chain.accumulate:
                out, how = self._memory.view_for_write(chain.dst), SET
            elif chain.dst.tensor in onto_zero:
                out, how = self._memory.view(chain.dst), ONTO_ZERO
            else:
                out, how = self._memory.view(chain.dst), ADD
            targets.append((out, how, m_offsets[i], m_offsets[i + 1],
                            n_offsets[j], n_offsets[j + 1]))
        self.runner.submit(GemmJob(s, m, targets, reads, {c.dst.tensor for c, _, _ in cells}))

    def _from_hbm(self, chains: list[_Chain], slot: int
                  ) -> tuple[np.ndarray, list[int]] | None:
        """The stacked stationary (slot 0) or moving (slot 1) operand of a grid as a float32
        view of one HBM tensor, when every piece is an untouched copy of the HBM region at the
        place stacking would put it (``rhs[0:K, cols]`` loaded tile by tile); else None."""
        if self._origins is None:
            return None
        srcs = [c.ssrcs if slot == 0 else c.msrcs for c in chains]
        first = srcs[0][0]
        if first is None:
            return None
        (ps, _), (fs, _) = first.pattern
        f_offsets = [0]
        for seq in srcs:
            if seq[0] is None:
                return None
            f_offsets.append(f_offsets[-1] + seq[0].pattern[1][1])
        k = 0
        for step, piece in enumerate(srcs[0]):
            if piece is None:
                return None
            rows = piece.pattern[0][1]
            for j, seq in enumerate(srcs):
                a = seq[step]
                if (a is None or a.tensor is not first.tensor or a.pattern[0] != (ps, rows)
                        or a.pattern[1][0] != fs
                        or a.offset != first.offset + k * ps + f_offsets[j] * fs):
                    return None
            k += rows
        view = self._origins.f32_view(first.tensor, first.offset,
                                      ((ps, k), (fs, f_offsets[-1])))
        return None if view is None else (view, f_offsets)

    def _concat(self, chains: list[_Chain], slot: int) -> tuple[np.ndarray, list[int]]:
        """Stack each chain's stationary (slot 0) or moving (slot 1) sequence of ``[K_i, F]``
        operands along K, and the sequences side by side along F, into a new float32 array
        (converting on the way: bf16 / fp8 tiles become float32 in the same pass). Returns the
        buffer and the F offsets of the sequences.

        Pieces of one K step that lie side by side in one tile (``moving[:, 0:512]``,
        ``moving[:, 512:1024]``, ...) are copied as one wider piece."""
        keys = [c.stationary if slot == 0 else c.moving for c in chains]
        seqs = [[self._view2d(a) for a in seq] for seq in keys]
        offsets = [0]
        for seq in seqs:
            offsets.append(offsets[-1] + seq[0].shape[1])
        buf = np.empty((sum(p.shape[0] for p in seqs[0]), offsets[-1]), float32)
        k = 0
        for step, first in enumerate(seqs[0]):
            rows = first.shape[0]
            j = 0
            while j < len(seqs):
                piece, end = seqs[j][step], j + 1
                while end < len(seqs) and _adjacent(keys[end - 1][step], keys[end][step]):
                    end += 1
                if end > j + 1:  # one strided view over the run of pieces
                    piece = as_strided(piece, (rows, offsets[end] - offsets[j]), piece.strides)
                np.copyto(buf[k:k + rows, offsets[j]:offsets[end]], piece, casting="unsafe")
                j = end
            k += rows
        return buf, offsets

    def _view2d(self, a: Access) -> np.ndarray:
        """The values of operand ``a`` as ``[K, F]`` (free dims flattened)."""
        v = self._memory.view(a)
        return v.reshape(v.shape[0], -1) if v.ndim != 2 else v

    def _forget_readers(self, psum: TensorDecl) -> None:
        """Drop ``psum`` from the operand index once it has no pending chain."""
        for t in [t for t, readers in self._readers.items() if psum in readers]:
            readers = self._readers[t]
            readers.discard(psum)
            if not readers:
                del self._readers[t]


def _region(a: Access) -> tuple:
    """What identifies an operand: two accesses to the same region of the same tensor hold
    the same values while chains are pending (Access objects compare by identity)."""
    return (a.tensor, a.offset, a.pattern)


def _regions(seq: list[Access]) -> tuple:
    """The regions of a sequence of operands (a grouping key)."""
    return tuple([_region(a) for a in seq])


def _grids(batch: list[_Chain]) -> list[tuple[list[_Chain], list[_Chain], list]]:
    """Split a batch into grids: chains grouped by stationary sequence, and stationary groups
    with the same list of moving sequences form one grid. Returns (row representatives, column
    representatives, cells (chain, row, col)) per grid."""
    by_s: dict[tuple, list[_Chain]] = {}
    for c in batch:
        by_s.setdefault(_regions(c.stationary), []).append(c)
    grids: dict[tuple, tuple[list, list, list]] = {}
    for group in by_s.values():
        col_of: dict[tuple, int] = {}  # moving sequence -> column
        col_reps: list[_Chain] = []  # the first chain of each column
        placed = []
        for c in group:
            j = col_of.setdefault(_regions(c.moving), len(col_reps))
            if j == len(col_reps):
                col_reps.append(c)
            placed.append((c, j))
        rows, cols, cells = grids.setdefault(tuple(col_of), ([], [], []))
        if not cols:
            cols.extend(col_reps)
        cells.extend((c, len(rows), j) for c, j in placed)
        rows.append(group[0])
    return list(grids.values())


def _rectangle(a: Access) -> bool:
    """True when ``a`` selects a plain rectangle of rows x columns of its tensor, each element
    once (what ``nl.zeros`` tiles and their block slices are)."""
    p = a.pattern
    return (len(p) == 2 and p[0][0] == a.tensor.row_size and p[1][0] == 1
            and a.col_hi - a.col_lo == p[1][1] and a.row_hi - a.row_lo == p[0][1])


def _adjacent(left: Access, right: Access) -> bool:
    """True when operand ``right`` continues ``left`` along the free dim of the same tile: both
    ``[K, F]`` with unit free stride, same partitions, ``right`` starting where ``left`` ends.
    The run of both is then one ``[K, F_left + F_right]`` view of the tile."""
    lp, rp = left.pattern, right.pattern
    return (left.tensor is right.tensor and len(lp) == 2 and len(rp) == 2 and lp[0] == rp[0]
            and lp[1][0] == 1 and rp[1][0] == 1 and right.offset == left.offset + lp[1][1])
