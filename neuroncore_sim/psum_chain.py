"""Deferred PSUM accumulation chains: many ``nc_matmul`` into one PSUM region, one GEMM.

A tiled matmul accumulates K/128 products into each PSUM tile: ``psum[M, N] += s_k.T @ m_k``.
Computed one at a time these are small GEMMs (at most 128 x 128 x 512) that numpy's BLAS runs at
a fraction of its large-GEMM rate. The PSUM result is the same sum, so the executor holds a chain
back and evaluates it when its value is first needed, as one tall GEMM:
``concat_k(s_k).T @ concat_k(m_k)``.

Holding the operands (live views of their SBUF tiles) is safe because the executor shows every
other instruction to :meth:`PsumChains.before` first: an instruction that touches a chain's PSUM
tensor, or writes a tensor a chain reads, makes that chain evaluate first, so evaluation happens
in program order with the operands' values of that time. Pending chains into one tensor never
overlap: starting a chain first evaluates every pending chain whose region it overlaps, so the
order chains are evaluated in never matters. Results equal the one-at-a-time
evaluation up to float32 summation order: the hardware adds the K products into PSUM in issue
order, BLAS sums the concatenated K in its own blocked order; both accumulate in float32
(docs/model.md, "Functional values").
"""

from __future__ import annotations

import numpy as np

from .ir import Access, TensorDecl
from .memory import Memory

_F32 = np.dtype(np.float32)
#: Bytes of float32 operands one chain may hold before it is evaluated early (bounds the
#: concatenation buffers; 64 MiB is a 16384-deep chain of 512-wide moving tiles).
MAX_CHAIN_BYTES = 64 * 1024 * 1024


class _Chain:
    """The pending matmuls into one PSUM region, in issue order."""

    __slots__ = ("dst", "accumulate", "stationary", "moving", "nbytes")

    def __init__(self, dst: Access, accumulate: bool) -> None:
        self.dst = dst
        self.accumulate = accumulate  # the first matmul adds into PSUM (True) or overwrites it
        self.stationary: list[np.ndarray] = []  # [K_i, M] views of SBUF tiles
        self.moving: list[np.ndarray] = []  # [K_i, N] views of SBUF tiles
        self.nbytes = 0


class PsumChains:
    """The chains an executor holds back, indexed by PSUM tensor and by operand tensor.

    Args:
        memory: the launch's memory (operand views are taken from it, results written to it).
    """

    def __init__(self, memory: Memory) -> None:
        self._memory = memory
        #: PSUM tensor -> {(offset, pattern): chain}
        self._by_dst: dict[TensorDecl, dict[tuple, _Chain]] = {}
        #: operand tensor -> PSUM tensors whose chains read it
        self._readers: dict[TensorDecl, set[TensorDecl]] = {}
        #: reused float32 buffers by shape (fresh multi-MiB arrays cost page faults every time)
        self._buffers: dict[tuple[int, int, int], np.ndarray] = {}

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
                for other in [c for c in chains.values() if c.dst.overlaps(dst)]:
                    self._evaluate(other)
            chain = _Chain(dst, accumulate)
            self._by_dst.setdefault(dst.tensor, {})[key] = chain
        view = self._memory.view
        s, m = view(stationary), view(moving)
        chain.stationary.append(s.reshape(s.shape[0], -1) if s.ndim != 2 else s)
        chain.moving.append(m.reshape(m.shape[0], -1) if m.ndim != 2 else m)
        for t in (stationary.tensor, moving.tensor):
            self._readers.setdefault(t, set()).add(dst.tensor)
        chain.nbytes += 4 * (s.size + m.size)
        if chain.nbytes > MAX_CHAIN_BYTES:
            self._evaluate(chain)

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
        if self._by_dst.pop(psum, None) is not None:
            self._forget_readers(psum)

    def reads(self, decl: TensorDecl) -> bool:
        """True while a pending chain may still read ``decl`` (its storage must stay put)."""
        return bool(self._readers.get(decl))

    def flush_tensor(self, psum: TensorDecl) -> None:
        """Evaluate every pending chain into ``psum``, in the order they were started."""
        for chain in list(self._by_dst.get(psum, {}).values()):
            self._evaluate(chain)

    def flush(self) -> None:
        """Evaluate every pending chain."""
        for psum in list(self._by_dst):
            self.flush_tensor(psum)

    def _evaluate(self, chain: _Chain) -> None:
        """Compute one chain as a single GEMM and write it into its PSUM region."""
        dst = chain.dst
        chains = self._by_dst[dst.tensor]
        del chains[(dst.offset, dst.pattern)]
        if not chains:
            del self._by_dst[dst.tensor]
            self._forget_readers(dst.tensor)
        if len(chain.stationary) == 1:
            s, m = chain.stationary[0], chain.moving[0]
        else:
            s = self._concat(chain.stationary, 0)
            m = self._concat(chain.moving, 1)
        s = s.astype(_F32, copy=False)
        m = m.astype(_F32, copy=False)
        out = self._memory.view(dst) if chain.accumulate else self._memory.view_for_write(dst)
        result = np.matmul(s.T, m, out=self._buffer(2, (s.shape[1], m.shape[1])))
        if chain.accumulate:
            np.add(out, result.reshape(out.shape), out=out)
        else:
            np.copyto(out, result.reshape(out.shape))

    def _concat(self, parts: list[np.ndarray], slot: int) -> np.ndarray:
        """Stack ``[K_i, F]`` operands along K into a reused float32 buffer (converting on the
        way: bf16 / fp8 tiles become float32 in the same pass)."""
        buf = self._buffer(slot, (sum(p.shape[0] for p in parts), parts[0].shape[1]))
        k = 0
        for p in parts:
            np.copyto(buf[k:k + p.shape[0]], p, casting="unsafe")
            k += p.shape[0]
        return buf

    def _buffer(self, slot: int, shape: tuple[int, int]) -> np.ndarray:
        """A reused float32 scratch array: slot 0 stationary, 1 moving, 2 result."""
        buf = self._buffers.get((slot,) + shape)
        if buf is None:
            buf = self._buffers[(slot,) + shape] = np.empty(shape, _F32)
        return buf

    def _forget_readers(self, psum: TensorDecl) -> None:
        """Drop ``psum`` from the operand index once it has no pending chain."""
        for t in [t for t, readers in self._readers.items() if psum in readers]:
            readers = self._readers[t]
            readers.discard(psum)
            if not readers:
                del self._readers[t]
