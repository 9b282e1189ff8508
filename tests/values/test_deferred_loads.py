"""Loads copied on first use (memory.load_later) and GEMMs that read HBM (hbm_origin.py).

A plain DMA load into a tile is not copied until the tile is viewed, and a PSUM chain whose
operands are untouched loads of one HBM rectangle reads a float32 copy of the HBM tensor. Both
must be invisible: random programs of loads, writes to HBM and to tiles, matmuls and reads give
exactly what an executor that copies every load at once gives.
"""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
from exec_helpers import BF16, F32, ins, rect, tile
from hypothesis import example, given, settings
from hypothesis import strategies as st

from neuroncore_sim.values.fast import executor as execute
from neuroncore_sim.values.fast import psum_chain
from neuroncore_sim.config import TRN1
from neuroncore_sim.errors import AccessError
from neuroncore_sim.values.fast.executor import FastExecutor as Executor
from neuroncore_sim.program.ir import Access, Engine, MemSpace, Opcode
from neuroncore_sim.values.memory import Memory

K, W = 8, 24  # tile partitions, tile / HBM row width
TILE_REGIONS = [(slice(0, 12)), slice(12, 24), slice(6, 18)]  # columns of the tile
HBM_REGIONS = [(slice(0, 8), slice(0, 12)), (slice(8, 16), slice(0, 12)),
               (slice(0, 8), slice(12, 24)), (slice(8, 16), slice(12, 24))]
PSUM_REGIONS = [slice(0, 6), slice(6, 12)]


def _ops():
    load = st.tuples(st.just("load"), st.integers(0, 2), st.integers(0, 3))
    hbm_write = st.tuples(st.just("hbm_write"), st.integers(0, 3), st.integers(-3, 3))
    tile_write = st.tuples(st.just("tile_write"), st.integers(0, 2), st.integers(-3, 3))
    mm = st.tuples(st.just("mm"), st.integers(0, 1), st.booleans(), st.integers(0, 20),
                   st.integers(0, 18))
    read = st.tuples(st.just("read"), st.integers(0, 2))
    read_psum = st.tuples(st.just("read_psum"), st.integers(0, 1))
    return st.lists(st.one_of(load, load, hbm_write, tile_write, mm, mm, read, read_psum),
                    min_size=1, max_size=20)


def _run(ops, dtype, seen: list):
    """Run ``ops`` on a fresh executor; append every read's values to ``seen``; return the
    final contents of every tensor."""
    ex = Executor(TRN1)
    rng = np.random.default_rng(3)
    hbm = tile(ex, rng.integers(-3, 4, (16, W)).astype(dtype), space=MemSpace.HBM, kind="input")
    sb = tile(ex, np.zeros((K, W), dtype))
    psum = tile(ex, np.zeros((4, 12), F32), space=MemSpace.PSUM)
    out = tile(ex, shape=(K, 12), dtype=dtype)
    out_psum = tile(ex, shape=(4, 6))
    for op in ops:
        if op[0] == "load":
            rows, cols = HBM_REGIONS[op[2]]
            ex.execute(ins(Opcode.DMA_COPY, {"out": rect(sb, slice(None), TILE_REGIONS[op[1]])},
                           {"src": rect(hbm, rows, cols)}, Engine.DMA))
        elif op[0] == "hbm_write":
            rows, cols = HBM_REGIONS[op[1]]
            src = tile(ex, np.full((8, 12), op[2], dtype))
            ex.execute(ins(Opcode.DMA_COPY, {"out": rect(hbm, rows, cols)},
                           {"src": rect(src, slice(None), slice(None))}, Engine.DMA))
        elif op[0] == "tile_write":
            src = tile(ex, np.full((K, 12), op[2], dtype))
            ex.execute(ins(Opcode.TENSOR_COPY, {"out": rect(sb, slice(None), TILE_REGIONS[op[1]])},
                           {"src": rect(src, slice(None), slice(None))}))
        elif op[0] == "mm":
            _, r, accumulate, s0, m0 = op
            ex.execute(ins(Opcode.NC_MATMUL, {"out": rect(psum, slice(None), PSUM_REGIONS[r])},
                           {"stationary": rect(sb, slice(None), slice(s0, s0 + 4)),
                            "moving": rect(sb, slice(None), slice(m0, m0 + 6))}, Engine.TENSOR,
                           accumulate=accumulate))
        elif op[0] == "read":
            ex.execute(ins(Opcode.TENSOR_COPY, {"out": rect(out, slice(None), slice(None))},
                           {"src": rect(sb, slice(None), TILE_REGIONS[op[1]])}))
            seen.append(ex.logical(out))
        else:
            ex.execute(ins(Opcode.TENSOR_COPY, {"out": rect(out_psum, slice(None), slice(None))},
                           {"src": rect(psum, slice(None), PSUM_REGIONS[op[1]])}))
            seen.append(ex.logical(out_psum))
    return [ex.logical(t) for t in (hbm, sb, psum)]


@settings(max_examples=200, deadline=None)
@given(_ops(), st.sampled_from([F32, BF16]))
@example([("load", 0, 0), ("mm", 0, False, 0, 6), ("hbm_write", 0, 2), ("read_psum", 0)], F32)
@example([("load", 0, 0), ("hbm_write", 0, 2), ("read", 0)], F32)
@example([("load", 0, 0), ("load", 1, 1), ("mm", 0, False, 8, 12), ("mm", 1, False, 0, 13),
          ("read_psum", 0), ("read_psum", 1)], BF16)
@example([("load", 0, 0), ("load", 2, 3), ("read", 0)], F32)
# An HBM write between a load and the chain that reads the tile through HBM: the chain must see
# the loaded (old) values, before and after the matmuls.
# (Loads 0 and 1 put HBM rows 0:8 and 8:16 side by side in the tile, so the two matmuls' pieces
# stack into one HBM rectangle: the chain's GEMM reads HBM.)
@example([("load", 0, 0), ("load", 1, 1), ("hbm_write", 0, 2), ("mm", 0, False, 0, 4),
          ("mm", 0, True, 12, 16), ("read_psum", 0)], F32)
@example([("load", 0, 0), ("load", 1, 1), ("mm", 0, False, 0, 4), ("mm", 0, True, 12, 16),
          ("hbm_write", 0, 2), ("read_psum", 0)], BF16)
@example([("load", 0, 0), ("load", 1, 1), ("tile_write", 0, 2), ("mm", 0, False, 0, 4),
          ("mm", 0, True, 12, 16), ("read_psum", 0)], F32)
def test_deferred_loads_equal_immediate_copies(ops, dtype):
    lazy_seen, eager_seen = [], []
    lazy = _run(ops, dtype, lazy_seen)
    with mock.patch.object(execute, "_plain_load", lambda ins: False):
        eager = _run(ops, dtype, eager_seen)
    assert len(lazy_seen) == len(eager_seen)
    for a, b in zip(lazy_seen + lazy, eager_seen + eager):
        np.testing.assert_array_equal(a, b)


def test_gemm_reads_hbm_and_never_copies_the_loads(monkeypatch):
    """A K loop of loads from one HBM rectangle feeding one chain: the GEMM reads the HBM
    tensor's float32 copy, and the loaded tiles are never copied."""
    ex = Executor(TRN1)
    rng = np.random.default_rng(0)
    lhs = rng.integers(-3, 4, (32, 4)).astype(BF16)
    rhs = rng.integers(-3, 4, (32, 6)).astype(BF16)
    h_l = tile(ex, lhs, space=MemSpace.HBM, kind="input")
    h_r = tile(ex, rhs, space=MemSpace.HBM, kind="input")
    psum = tile(ex, np.zeros((4, 6), F32), space=MemSpace.PSUM)
    copies = []
    real = Memory._materialize
    monkeypatch.setattr(Memory, "_materialize", lambda self, t: (copies.append(t), real(self, t)))
    stacked = []
    real_concat = psum_chain.PsumChains._concat
    monkeypatch.setattr(psum_chain.PsumChains, "_concat",
                        lambda self, c, s: (stacked.append(s), real_concat(self, c, s))[1])
    for k in range(4):
        s, m = tile(ex, shape=(8, 4), dtype=BF16), tile(ex, shape=(8, 6), dtype=BF16)
        rows = slice(8 * k, 8 * k + 8)
        ex.execute(ins(Opcode.DMA_COPY, {"out": rect(s, slice(None), slice(None))},
                       {"src": rect(h_l, rows, slice(None))}, Engine.DMA))
        ex.execute(ins(Opcode.DMA_COPY, {"out": rect(m, slice(None), slice(None))},
                       {"src": rect(h_r, rows, slice(None))}, Engine.DMA))
        ex.execute(ins(Opcode.NC_MATMUL, {"out": rect(psum, slice(None), slice(None))},
                       {"stationary": rect(s, slice(None), slice(None)),
                        "moving": rect(m, slice(None), slice(None))}, Engine.TENSOR,
                       accumulate=k > 0))
    got = ex.logical(psum)
    np.testing.assert_array_equal(got, lhs.astype(F32).T @ rhs.astype(F32))
    assert copies == [] and stacked == []


def test_deferred_load_out_of_bounds_is_reported_at_once():
    ex = Executor(TRN1)
    hbm = tile(ex, np.zeros((4, 8), F32), space=MemSpace.HBM, kind="input")
    sb = tile(ex, shape=(8, 8))
    with pytest.raises(AccessError, match="offsets"):
        ex.execute(ins(Opcode.DMA_COPY, {"out": rect(sb, slice(None), slice(None))},
                       {"src": Access(hbm, 0, ((8, 8), (1, 8)))}, Engine.DMA))


def test_write_into_hbm_copies_pending_loads_first():
    """``Executor.write`` into an HBM tensor a tile was loaded from (and not copied yet): the
    tile keeps the values of the load's time."""
    ex = Executor(TRN1)
    hbm = tile(ex, np.arange(64, dtype=F32).reshape(8, 8), space=MemSpace.HBM, kind="input")
    sb = tile(ex, shape=(8, 8))
    ex.execute(ins(Opcode.DMA_COPY, {"out": rect(sb, slice(None), slice(None))},
                   {"src": rect(hbm, slice(None), slice(None))}, Engine.DMA))
    ex.write(rect(hbm, slice(None), slice(None)), np.zeros((8, 8), F32))
    np.testing.assert_array_equal(ex.logical(sb), np.arange(64, dtype=F32).reshape(8, 8))


def test_whole_tile_memset_is_filled_when_viewed():
    """A memset of a whole tile is done when the tile is next viewed; a pending load into it is
    dropped (the memset overwrites it); a memset of part of a tile is done at once."""
    ex = Executor(TRN1)
    hbm = tile(ex, np.arange(K * W, dtype=F32).reshape(K, W), space=MemSpace.HBM, kind="input")
    sb = tile(ex, np.zeros((K, W), F32))
    ex.execute(ins(Opcode.DMA_COPY, {"out": rect(sb, slice(None), slice(None))},
                   {"src": rect(hbm, slice(None), slice(None))}, Engine.DMA))
    ex.execute(ins(Opcode.MEMSET, {"out": rect(sb, slice(None), slice(None))}, {}, value=3.0))
    assert ex.memory.pending_fill(sb) == 3.0
    np.testing.assert_array_equal(ex.logical(sb), np.full((K, W), 3.0))
    assert ex.memory.pending_fill(sb) is None
    ex.execute(ins(Opcode.MEMSET, {"out": rect(sb, slice(0, 4), slice(None))}, {}, value=-1.0))
    assert ex.memory.pending_fill(sb) is None
    want = np.full((K, W), 3.0)
    want[:4] = -1.0
    np.testing.assert_array_equal(ex.logical(sb), want)
