"""Deferred PSUM accumulation chains (psum_chain.py): batches, grids, hazards, early flushes.

Instructions are built by hand (exec_helpers.py). Integer-valued data keeps float32 sums exact,
so deferred evaluation must give exactly what evaluating each matmul at once gives.
"""

from __future__ import annotations

import numpy as np
import pytest
from exec_helpers import BF16, F32, ins, rect, tile
from hypothesis import example, given, settings
from hypothesis import strategies as st

from neuroncore_sim.values.fast import psum_chain
from neuroncore_sim.config import TRN1
from neuroncore_sim.values.fast.executor import FastExecutor as Executor
from neuroncore_sim.program.ir import Engine, MemSpace, Opcode

RNG = np.random.default_rng(7)


@pytest.fixture
def ex() -> Executor:
    return Executor(TRN1)


@pytest.fixture
def gemms(monkeypatch) -> list[tuple[int, int, int]]:
    """Records (M, K, N) of every GEMM the chains evaluate."""
    calls: list[tuple[int, int, int]] = []
    real = psum_chain.PsumChains._gemm

    def spy(self, rows, cols, cells, *rest):
        calls.append((sum(r.stationary[0].shape[1] for r in rows),
                      sum(p.shape[0] for p in rows[0].stationary),
                      sum(c.moving[0].shape[1] for c in cols)))
        return real(self, rows, cols, cells, *rest)
    monkeypatch.setattr(psum_chain.PsumChains, "_gemm", spy)
    return calls


def _matmul(ex, psum, s, m, accumulate, dst=None, stationary=None, moving=None):
    ex.execute(ins(Opcode.NC_MATMUL, {"out": dst or rect(psum, slice(None), slice(None))},
                   {"stationary": stationary or rect(s, slice(None), slice(None)),
                    "moving": moving or rect(m, slice(None), slice(None))}, Engine.TENSOR,
                   accumulate=accumulate))


def _ints(shape):
    return RNG.integers(-3, 4, shape).astype(np.float64)


def test_chain_read_midway_then_continued(ex):
    """Reading PSUM in the middle of an accumulation group sees the partial sum; the group then
    goes on accumulating on top of it."""
    psum = tile(ex, shape=(8, 16), space=MemSpace.PSUM)
    out = tile(ex, shape=(8, 16))
    ss = [RNG.standard_normal((32, 8)).astype(BF16) for _ in range(4)]
    ms = [RNG.standard_normal((32, 16)).astype(BF16) for _ in range(4)]
    whole = rect(psum, slice(None), slice(None))
    for k in range(4):
        _matmul(ex, psum, tile(ex, ss[k]), tile(ex, ms[k]), accumulate=k > 0)
        if k == 1:  # a VectorE copy out of PSUM between the second and third matmul
            ex.execute(ins(Opcode.TENSOR_COPY, {"out": rect(out, slice(None), slice(None))},
                           {"src": whole}))
    prods = [s.astype(F32).T @ m.astype(F32) for s, m in zip(ss, ms)]
    np.testing.assert_allclose(ex.logical(out), prods[0] + prods[1], rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(ex.logical(psum), sum(prods), rtol=1e-5, atol=1e-4)


def test_chain_sees_operand_rewritten_between_matmuls(ex):
    """An accumulating matmul reads its operands' values of its own time, even when a later
    instruction overwrites the SBUF tile before the group is evaluated."""
    s = tile(ex, np.ones((8, 4), BF16))
    m = tile(ex, np.ones((8, 6), BF16))
    psum = tile(ex, shape=(4, 6), space=MemSpace.PSUM)
    _matmul(ex, psum, s, m, accumulate=False)  # 8
    twos = tile(ex, np.full((8, 4), 2.0, F32))
    ex.execute(ins(Opcode.TENSOR_COPY, {"out": rect(s, slice(None), slice(None))},
                   {"src": rect(twos, slice(None), slice(None))}))
    _matmul(ex, psum, s, m, accumulate=True)  # + 16
    ex.write(rect(m, slice(0, 4), slice(None)), np.zeros((4, 6)))
    _matmul(ex, psum, s, m, accumulate=True)  # + 8
    assert (ex.logical(psum) == 32).all()


@pytest.mark.parametrize("separate", [False, True], ids=["one-psum-tile", "tile-per-acc"])
def test_blocked_grid_is_one_gemm(ex, gemms, separate):
    """A 2 x 3 block of accumulators filled in one K loop (two stationary column blocks, three
    512-style moving slices of one wide tile) is evaluated as one [2M x K] x [K x 3N] GEMM when
    the first accumulator is read, whether the accumulators share a PSUM tile or not."""
    k_steps, k, m, n = 4, 8, 4, 6
    stat = [_ints((k, 2 * m)) for _ in range(k_steps)]
    mov = [_ints((k, 3 * n)) for _ in range(k_steps)]
    if separate:
        tiles = [tile(ex, shape=(m, n), space=MemSpace.PSUM) for _ in range(6)]
        accs = [rect(t, slice(None), slice(None)) for t in tiles]
    else:
        shared = tile(ex, shape=(m, 6 * n), space=MemSpace.PSUM)
        accs = [rect(shared, slice(None), slice(a * n, (a + 1) * n)) for a in range(6)]
    out = tile(ex, shape=(m, n))
    for step in range(k_steps):
        s, w = tile(ex, stat[step].astype(BF16)), tile(ex, mov[step].astype(BF16))
        for i in range(2):
            for j in range(3):
                _matmul(ex, None, None, None, accumulate=step > 0, dst=accs[i * 3 + j],
                        stationary=rect(s, slice(None), slice(i * m, (i + 1) * m)),
                        moving=rect(w, slice(None), slice(j * n, (j + 1) * n)))
    assert gemms == []
    ex.execute(ins(Opcode.TENSOR_COPY, {"out": rect(out, slice(None), slice(None))},
                   {"src": accs[0]}))
    assert gemms == [(2 * m, k_steps * k, 3 * n)]
    full = np.concatenate(stat).T @ np.concatenate(mov)  # [2m, 3n]
    for i in range(2):
        for j in range(3):
            got = ex.memory.view(accs[i * 3 + j])
            np.testing.assert_array_equal(got, full[i * m:(i + 1) * m, j * n:(j + 1) * n])


def test_unrelated_chains_stay_pending(ex, gemms):
    """Reading one accumulator evaluates only the chains that share an operand sequence with
    it: a chain with other operands keeps accumulating and is evaluated once."""
    psum_a = tile(ex, shape=(4, 6), space=MemSpace.PSUM)
    psum_b = tile(ex, shape=(4, 6), space=MemSpace.PSUM)
    out = tile(ex, shape=(4, 6))
    sa, ma, sb, mb = (_ints((8, 4)), _ints((8, 6)), _ints((8, 4)), _ints((8, 6)))
    ta, tma, tb, tmb = (tile(ex, v.astype(BF16)) for v in (sa, ma, sb, mb))
    for step in range(3):
        _matmul(ex, psum_a, ta, tma, accumulate=step > 0)
        _matmul(ex, psum_b, tb, tmb, accumulate=step > 0)
        if step == 1:
            ex.execute(ins(Opcode.TENSOR_COPY, {"out": rect(out, slice(None), slice(None))},
                           {"src": rect(psum_a, slice(None), slice(None))}))
    ex.execute(ins(Opcode.TENSOR_COPY, {"out": rect(out, slice(None), slice(None))},
                   {"src": rect(psum_b, slice(None), slice(None))}))
    assert [g[1] for g in gemms] == [16, 24]  # a's first two steps, then b's three
    np.testing.assert_array_equal(ex.logical(psum_a), 3 * sa.T @ ma)
    assert [g[1] for g in gemms] == [16, 24, 8]
    np.testing.assert_array_equal(ex.logical(psum_b), 3 * sb.T @ mb)


def test_pending_bytes_bound_flushes_early(ex, gemms, monkeypatch):
    """Past MAX_PENDING_BYTES the pending chains are evaluated early; values are unchanged."""
    monkeypatch.setattr(psum_chain, "MAX_PENDING_BYTES", 4 * (8 * 4 + 8 * 6) * 2)
    psum = tile(ex, shape=(4, 6), space=MemSpace.PSUM)
    s, m = _ints((8, 4)), _ints((8, 6))
    ts, tm = tile(ex, s.astype(BF16)), tile(ex, m.astype(BF16))
    for step in range(5):
        _matmul(ex, psum, ts, tm, accumulate=step > 0)
    assert [g[1] for g in gemms] == [24]  # three steps held past the bound: evaluated early
    np.testing.assert_array_equal(ex.logical(psum), 5 * s.T @ m)
    assert [g[1] for g in gemms] == [24, 16]


def _chain_ops():
    """Random programs: matmuls (accumulating or not) into four PSUM regions (0 and 1 disjoint
    in one tensor, 2 overlapping both, 3 in a second tensor) from two stationary tiles and two
    moving operands that are side-by-side slices of one wide tile; rewrites of an operand; PSUM
    reads; and memsets of a whole PSUM tensor (+0.0 ones are done only if a GEMM does not
    overwrite the whole tensor, ``PsumChains._claim_zeroed``)."""
    mm = st.tuples(st.just("mm"), st.integers(0, 3), st.booleans(), st.integers(0, 1),
                   st.integers(0, 1))
    write = st.tuples(st.just("write"), st.integers(0, 2), st.integers(-3, 3))
    read = st.tuples(st.just("read"), st.integers(0, 3))
    fill = st.tuples(st.just("fill"), st.integers(0, 1), st.sampled_from([0.0, -0.0, 2.0]))
    return st.lists(st.one_of(mm, mm, mm, write, read, fill), min_size=1, max_size=16)


@settings(max_examples=200, deadline=None)
@given(_chain_ops())
@example([("mm", 0, False, 0, 0), ("mm", 2, False, 1, 1), ("mm", 0, True, 1, 0), ("read", 2)])
@example([("mm", 0, False, 0, 0), ("mm", 1, False, 0, 1), ("mm", 3, False, 1, 0),
          ("mm", 0, True, 0, 0), ("mm", 1, True, 0, 1), ("write", 2, 1), ("read", 3)])
@example([("fill", 1, 2.0), ("mm", 3, True, 0, 0), ("read", 3)])  # a fill that is not +0.0
@example([("mm", 1, False, 0, 1), ("fill", 0, 0.0), ("mm", 0, True, 0, 0), ("read", 0)])
@example([("fill", 0, 0.0), ("mm", 0, True, 0, 0), ("mm", 1, True, 1, 1), ("read", 1)])
def test_deferred_chains_equal_eager_evaluation(ops):
    """Whatever the interleaving, deferred chains (batched, fused into grids) give what
    evaluating every matmul at once gives (float64 reference; small integers keep float32 sums
    exact)."""
    ex = Executor(TRN1)
    rng = np.random.default_rng(len(ops))
    k, m_cols, n_cols = 8, 4, 6
    stat = [rng.integers(-2, 3, (k, m_cols)).astype(np.float64) for _ in range(2)]
    wide = rng.integers(-2, 3, (k, 2 * n_cols)).astype(np.float64)
    st_t = [tile(ex, s.astype(BF16)) for s in stat]
    wide_t = tile(ex, wide.astype(BF16))
    mov_cols = [slice(0, n_cols), slice(n_cols, 2 * n_cols)]
    psum = [tile(ex, np.zeros((m_cols, 2 * n_cols), F32), space=MemSpace.PSUM),
            tile(ex, np.zeros((m_cols, n_cols), F32), space=MemSpace.PSUM)]
    regions = [(0, slice(0, n_cols)), (0, slice(n_cols, 2 * n_cols)),
               (0, slice(n_cols // 2, n_cols * 3 // 2)), (1, slice(0, n_cols))]
    model = [np.zeros((m_cols, 2 * n_cols)), np.zeros((m_cols, n_cols))]
    out = tile(ex, shape=(m_cols, n_cols))
    for op in ops:
        if op[0] == "mm":
            _, r, accumulate, si, mi = op
            p, cols = regions[r]
            _matmul(ex, None, None, None, accumulate, dst=rect(psum[p], slice(None), cols),
                    stationary=rect(st_t[si], slice(None), slice(None)),
                    moving=rect(wide_t, slice(None), mov_cols[mi]))
            prod = stat[si].T @ wide[:, mov_cols[mi]]
            model[p][:, cols] = model[p][:, cols] + prod if accumulate else prod
        elif op[0] == "write":  # a VectorE copy into an operand (not ex.write)
            _, slot, value = op
            if slot < 2:
                stat[slot][:] = value
                target, shape = st_t[slot], stat[slot].shape
            else:
                wide[:, :n_cols] = value
                target, shape = wide_t, (k, n_cols)
            ex.execute(ins(Opcode.TENSOR_COPY, {"out": rect(target, slice(None),
                                                            slice(0, shape[1]))},
                           {"src": rect(tile(ex, np.full(shape, value, F32)), slice(None),
                                        slice(None))}))
        elif op[0] == "fill":
            _, p, value = op
            ex.execute(ins(Opcode.MEMSET, {"out": rect(psum[p], slice(None), slice(None))}, {},
                           value=value))
            model[p][:] = value
        else:
            p, cols = regions[op[1]]
            ex.execute(ins(Opcode.TENSOR_COPY, {"out": rect(out, slice(None), slice(None))},
                           {"src": rect(psum[p], slice(None), cols)}))
            np.testing.assert_array_equal(ex.logical(out), model[p][:, cols])
    for p in range(2):
        got = ex.logical(psum[p])
        np.testing.assert_array_equal(got, model[p])
        # -0.0 stays -0.0 only where no matmul added into it (x + -0.0 is x, -0.0 + +0.0 +0.0)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(model[p].astype(F32)))


def test_zeroed_psum_tile_is_never_filled(ex, monkeypatch):
    """``acc = zeros`` then ``acc += matmul`` over the whole tile: the GEMM result is written
    onto the zeros the memset would have left, and the memset itself never writes memory."""
    from neuroncore_sim.values import memory
    fills = []
    monkeypatch.setattr(memory, "_fill", lambda arr, value: fills.append(value))
    psum = tile(ex, shape=(4, 12), space=MemSpace.PSUM)
    s, m = _ints((8, 4)), _ints((8, 12))
    ex.execute(ins(Opcode.MEMSET, {"out": rect(psum, slice(None), slice(None))}, {}, value=0.0))
    assert ex.memory.pending_fill(psum) == 0
    for half in (slice(0, 6), slice(6, 12)):
        _matmul(ex, None, None, None, True, dst=rect(psum, slice(None), half),
                stationary=rect(tile(ex, s.astype(BF16)), slice(None), slice(None)),
                moving=rect(tile(ex, m[:, half].astype(BF16)), slice(None), slice(None)))
    np.testing.assert_array_equal(ex.logical(psum), s.T @ m)
    assert fills == [] and ex.memory.pending_fill(psum) is None


def test_only_plain_rectangles_count_as_covering():
    """A chain's PSUM region counts towards covering its tensor only when it selects whole
    rows x columns, each element once."""
    from neuroncore_sim.program.ir import Access
    from neuroncore_sim.values.fast.psum_chain import _rectangle
    ex = Executor(TRN1)
    psum = tile(ex, shape=(4, 12), space=MemSpace.PSUM)
    assert _rectangle(rect(psum, slice(0, 4), slice(6, 12)))
    assert not _rectangle(Access(psum, 6, ((12, 4), (0, 6))))  # one column, six times
    assert not _rectangle(Access(psum, 0, ((24, 2), (1, 6))))  # every other row
    assert not _rectangle(Access(psum, 0, ((12, 4), (2, 6))))  # every other column


def test_result_onto_zero_is_the_sum_with_plus_zero():
    """ONTO_ZERO writes block + 0.0 (what adding onto the memset's zeros gives: -0.0 becomes
    +0.0); SET copies the block as it is."""
    from neuroncore_sim.values.fast.gemm_jobs import ONTO_ZERO, SET, GemmJob
    s = np.zeros((8, 2), F32)
    outs = {how: np.ones((2, 2), F32) for how in (ONTO_ZERO, SET)}
    job = GemmJob(s, s, [(out, how, 0, 2, 0, 2) for how, out in outs.items()], set(), set())
    job.start(None, 1)
    job.result[:] = -0.0
    job.finish()
    assert not np.signbit(outs[ONTO_ZERO]).any() and np.signbit(outs[SET]).all()
