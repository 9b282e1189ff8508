"""GEMMs in background threads (gemm_jobs.py) and the instructions the executor holds back
while they run (execute.py): same values, warnings and first error as running in line."""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import threading
import time

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from threadpoolctl import threadpool_info

from event_listings import load_sample
from exec_helpers import BF16, F32, ins, rect, tile
from neuroncore_sim.values.fast import pipeline
from neuroncore_sim.config import TRN1
from neuroncore_sim.errors import ShapeError, UninitializedReadWarning
from neuroncore_sim.values.fast.executor import FastExecutor as Executor
from neuroncore_sim.values.fast.gemm_jobs import ADD, SET, GemmJob, GemmRunner, _edges, single_threaded_blas
from neuroncore_sim.program.ir import Engine, MemSpace, Opcode
from neuroncore_sim.values.fast.pipeline import PipelinedExecutor


def _program():
    """Random programs over two PSUM tiles: matmuls (accumulating or not; bf16 operands that
    go through float32 copies, or fp32 ones the GEMM reads in place), rewrites of operands,
    PSUM reads into fresh tiles (not read back until the end, so they stay held), and releases
    of PSUM tiles that are then declared again."""
    mm = st.tuples(st.just("mm"), st.integers(0, 1), st.booleans(), st.integers(0, 2))
    write = st.tuples(st.just("write"), st.integers(0, 2), st.integers(-3, 3))
    read = st.tuples(st.just("read"), st.integers(0, 1))
    renew = st.tuples(st.just("renew"), st.integers(0, 1))
    return st.lists(st.one_of(mm, mm, mm, write, read, read, renew), min_size=1, max_size=20)


def _run(ops, threads: int):
    """Run ``ops``; return every tile's values at the end and the float64 model's."""
    ex = Executor(TRN1, gemm_threads=threads)
    rng = np.random.default_rng(len(ops))
    k, m_cols, n_cols = 8, 4, 6
    ops_vals = [rng.integers(-2, 3, (k, c)).astype(np.float64) for c in (m_cols, n_cols, n_cols)]
    dtypes = (BF16, BF16, F32)  # operand 2 is fp32: a one-matmul chain reads it in place
    operands = [tile(ex, v.astype(dt)) for v, dt in zip(ops_vals, dtypes)]
    psum = [tile(ex, np.zeros((m_cols, n_cols), F32), space=MemSpace.PSUM) for _ in range(2)]
    model = [np.zeros((m_cols, n_cols)) for _ in range(2)]
    reads = []  # (tile, expected values)
    for op in ops:
        if op[0] == "mm":
            _, p, accumulate, mi = op
            mi = 1 + (mi % 2)  # moving operand 1 (bf16) or 2 (fp32)
            ex.execute(ins(Opcode.NC_MATMUL, {"out": rect(psum[p], slice(None), slice(None))},
                           {"stationary": rect(operands[0], slice(None), slice(None)),
                            "moving": rect(operands[mi], slice(None), slice(None))},
                           Engine.TENSOR, accumulate=accumulate))
            prod = ops_vals[0].T @ ops_vals[mi]
            model[p] = model[p] + prod if accumulate else prod
        elif op[0] == "write":  # a VectorE copy into an operand
            _, slot, value = op
            ops_vals[slot][:] = value
            src = tile(ex, np.full(ops_vals[slot].shape, value, F32))
            ex.execute(ins(Opcode.TENSOR_COPY, {"out": rect(operands[slot], slice(None),
                                                            slice(None))},
                           {"src": rect(src, slice(None), slice(None))}))
        elif op[0] == "read":
            out = tile(ex, shape=(m_cols, n_cols))
            ex.execute(ins(Opcode.TENSOR_COPY, {"out": rect(out, slice(None), slice(None))},
                           {"src": rect(psum[op[1]], slice(None), slice(None))}))
            reads.append((out, model[op[1]].copy()))
        else:  # the tile dies (pending matmuls into it are dropped); a new one starts at 0
            ex.release(psum[op[1]])
            psum[op[1]] = tile(ex, np.zeros((m_cols, n_cols), F32), space=MemSpace.PSUM)
            model[op[1]] = np.zeros((m_cols, n_cols))
    got = [ex.logical(t) for t, _ in reads] + [ex.logical(p) for p in psum]
    want = [v for _, v in reads] + model
    return got, want, [str(w) for w in ex.checks.warnings]


@settings(max_examples=150, deadline=None)
@given(_program())
@example([("mm", 0, False, 0), ("read", 0), ("mm", 0, True, 1), ("write", 0, 2), ("read", 0),
          ("mm", 1, False, 1), ("renew", 0), ("read", 1), ("mm", 0, True, 0), ("read", 0)])
@example([("mm", 0, False, 1), ("read", 0), ("write", 2, 1), ("mm", 1, False, 1), ("read", 1)])
@example([("mm", 0, False, 0), ("write", 0, 0), ("mm", 0, False, 0)])  # held matmul, then read
def test_gemm_threads_equal_inline(ops):
    """Held-back instructions and GEMMs in flight give exactly the in-line values (small
    integers keep float32 sums exact) and the same warnings."""
    got, want, warned = _run(ops, threads=2)
    got0, _, warned0 = _run(ops, threads=0)
    for g, g0, w in zip(got, got0, want):
        np.testing.assert_array_equal(g, w)
        np.testing.assert_array_equal(g, g0)
    assert warned == warned0


def _psum_chain_and_copy(ex, out_shape=(4, 6)):
    """A matmul into PSUM whose GEMM is submitted (and left in flight) by a copy out of PSUM."""
    s = tile(ex, np.ones((8, 4), BF16))
    m = tile(ex, np.ones((8, 6), BF16))
    psum = tile(ex, np.zeros((4, 6), F32), space=MemSpace.PSUM)
    ex.execute(ins(Opcode.NC_MATMUL, {"out": rect(psum, slice(None), slice(None))},
                   {"stationary": rect(s, slice(None), slice(None)),
                    "moving": rect(m, slice(None), slice(None))}, Engine.TENSOR,
                   accumulate=False))
    out = tile(ex, shape=out_shape)
    ex.execute(ins(Opcode.TENSOR_COPY, {"out": rect(out, slice(None), slice(None))},
                   {"src": rect(psum, slice(None), slice(None))}))
    return psum, out


def test_reader_of_a_gemm_in_flight_is_held_and_others_go_on(monkeypatch):
    """The copy out of PSUM waits for its GEMM; an unrelated copy issued after it runs first;
    both land."""
    ex = Executor(TRN1, gemm_threads=2)
    monkeypatch.setattr(GemmRunner, "retire", _slow_retire(GemmRunner.retire))
    psum, out = _psum_chain_and_copy(ex)
    assert ex._held and ex._held[0].srcs["src"].tensor is psum
    a = tile(ex, np.full((4, 6), 5.0, F32))
    b = tile(ex, shape=(4, 6))
    ex.execute(ins(Opcode.TENSOR_COPY, {"out": rect(b, slice(None), slice(None))},
                   {"src": rect(a, slice(None), slice(None))}))
    assert len(ex._held) == 1  # still waiting; the unrelated copy ran
    np.testing.assert_array_equal(ex.logical(out), np.full((4, 6), 8.0))
    np.testing.assert_array_equal(ex.logical(b), np.full((4, 6), 5.0))
    assert not ex._held


def _slow_retire(real):
    """GemmRunner.retire that keeps the jobs in flight until the executor settles."""
    def retire(self, keep=0):
        return real(self, keep) if keep == 0 else None
    return retire


def test_first_error_is_the_held_instructions(monkeypatch):
    """A held copy whose shapes do not fit, then a later unrelated failing copy: the error
    raised is the held one's (the first in program order)."""
    ex = Executor(TRN1, gemm_threads=2)
    monkeypatch.setattr(GemmRunner, "retire", _slow_retire(GemmRunner.retire))
    _psum_chain_and_copy(ex, out_shape=(5, 7))  # held: fails when it runs
    held_id = ex._held[0].id
    bad = ins(Opcode.TENSOR_COPY, {"out": rect(tile(ex, shape=(3, 3)), slice(None), slice(None))},
              {"src": rect(tile(ex, np.ones((2, 2), F32)), slice(None), slice(None))})
    assert bad.id > held_id
    with pytest.raises(ShapeError) as err:
        ex.execute(bad)
    assert "(5, 7)" in str(err.value)


def test_warnings_are_those_of_program_order(monkeypatch):
    """Two reads of unwritten memory from one kernel line: the held (earlier) one is reported,
    though the later one ran first."""
    ex = Executor(TRN1, gemm_threads=2)
    monkeypatch.setattr(GemmRunner, "retire", _slow_retire(GemmRunner.retire))
    s = tile(ex, np.ones((8, 4), BF16))
    m = tile(ex, np.ones((8, 6), BF16))
    psum = tile(ex, shape=(4, 8), space=MemSpace.PSUM)  # columns 6..7 never written
    ex.execute(ins(Opcode.NC_MATMUL, {"out": rect(psum, slice(None), slice(0, 6))},
                   {"stationary": rect(s, slice(None), slice(None)),
                    "moving": rect(m, slice(None), slice(None))}, Engine.TENSOR,
                   accumulate=False))
    # DMA copies: a read that is not partition by partition warns at once (checks.py)
    first = tile(ex, shape=(4, 8), name="first")
    ex.execute(ins(Opcode.DMA_COPY, {"out": rect(first, slice(None), slice(None))},
                   {"src": rect(psum, slice(None), slice(None))}, Engine.DMA, dst_rmw_op=None))
    assert ex._held
    garbage = tile(ex, shape=(4, 8), name="garbage")
    ex.execute(ins(Opcode.DMA_COPY, {"out": rect(tile(ex, shape=(4, 8)), slice(None),
                                                 slice(None))},
                   {"src": rect(garbage, slice(None), slice(None))}, Engine.DMA,
                   dst_rmw_op=None))
    warned = ex.checks.warnings
    assert len(warned) == 1 and isinstance(warned[0], UninitializedReadWarning)
    assert "reads 8 element(s) of t" in str(warned[0])  # the PSUM tile's 2 x 4, not garbage's


def test_release_of_a_tile_in_flight_waits(monkeypatch):
    """A PSUM tile released while its GEMM is in flight keeps its storage until the GEMM and
    the held copy have run."""
    ex = Executor(TRN1, gemm_threads=2)
    monkeypatch.setattr(GemmRunner, "retire", _slow_retire(GemmRunner.retire))
    psum, out = _psum_chain_and_copy(ex)
    ex.release(psum)
    assert ex._held[-1] is psum and ex.memory.declared(psum)
    np.testing.assert_array_equal(ex.logical(out), np.full((4, 6), 8.0))
    assert not ex.memory.declared(psum)


@pytest.mark.parametrize("ways", [1, 2, 3])
def test_job_split_over_threads_equals_one_gemm(ways):
    rng = np.random.default_rng(ways)
    s = rng.integers(-3, 4, (64, 200)).astype(F32)
    m = rng.integers(-3, 4, (64, 130)).astype(F32)
    out = np.zeros((200, 130), F32)
    job = GemmJob(s, m, [(out, ADD, 0, 200, 0, 130)], set(), set())
    runner = GemmRunner(ways)
    runner.submit(job)
    runner.retire(0)
    np.testing.assert_array_equal(out, s.T @ m)
    assert _edges(200, 3) == [(0, 66), (66, 133), (133, 200)]
    assert _edges(100, 3) == [(0, 100)]  # parts below MIN_PART rows are not worth a thread


def _blas_threads() -> int:
    return max(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")


def test_single_threaded_blas_is_restored():
    before = _blas_threads()
    with single_threaded_blas() as threads:
        assert threads == before
        assert _blas_threads() == 1
    assert _blas_threads() == before
    with pytest.raises(RuntimeError), single_threaded_blas():
        raise RuntimeError("kernel failed")
    assert _blas_threads() == before


class _SlowExecutor:
    """Records calls, slowly (the kernel's thread gets far ahead without back-pressure)."""

    def __init__(self):
        self.calls = []

    def execute(self, ins):
        time.sleep(0.0001)
        self.calls.append(ins)

    def settle(self):
        pass


def test_kernel_thread_waits_when_far_ahead():
    """The queue never holds much more than AHEAD_HIGH calls; every call runs, in order."""
    slow = _SlowExecutor()
    pipe = PipelinedExecutor(slow)
    longest = 0
    try:
        for i in range(3 * pipeline.AHEAD_HIGH):
            pipe.execute(i)
            longest = max(longest, pipe._queue.qsize())
        pipe.drain()
    finally:
        pipe.close()
    assert slow.calls == list(range(3 * pipeline.AHEAD_HIGH))
    assert longest <= pipeline.AHEAD_HIGH + 1
    assert not [t for t in threading.enumerate() if t.name == "neuroncore_sim-values"]


@pytest.mark.filterwarnings(r"ignore:os.fork\(\) was called:RuntimeWarning")  # JAX: unused in child
def test_forked_child_runs_gemms():
    """A child forked after the parent used the pool (as sweep workers are) still runs jobs."""
    import multiprocessing
    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("no fork on this platform")
    test_job_split_over_threads_equals_one_gemm(2)  # the parent's pool exists now
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(1) as pool:
        assert pool.apply_async(_child_gemm).get(timeout=30) == 0.0


def _child_gemm() -> float:
    s = np.ones((64, 128), F32)
    out = np.zeros((128, 128), F32)
    runner = GemmRunner(2)
    runner.submit(GemmJob(s, s, [(out, SET, 0, 128, 0, 128)], set(), set()))
    runner.retire(0)
    return float(np.abs(out - 64.0).max())


def _record_starts(monkeypatch) -> list[tuple[int, int]]:
    """Patch GemmJob.start to record the result shape of every job started."""
    shapes = []
    real = GemmJob.start

    def start(self, pool, ways):
        shapes.append(self.result.shape)
        return real(self, pool, ways)
    monkeypatch.setattr(GemmJob, "start", start)
    return shapes


@pytest.mark.parametrize("along", ["rows", "cols"])
def test_runner_merges_jobs_that_continue_the_staged_one(monkeypatch, along):
    """While a job runs, later jobs sharing one operand view and continuing the other (the
    next columns of the same array) merge into one staged job; every block reaches its own
    PSUM target."""
    shapes = _record_starts(monkeypatch)
    rng = np.random.default_rng(0)
    shared = rng.integers(-3, 4, (64, 96)).astype(F32)
    wide = rng.integers(-3, 4, (64, 5 * 128)).astype(F32)
    outs = [np.zeros((128, 96) if along == "rows" else (96, 128), F32) for _ in range(5)]
    runner = GemmRunner(2, merge_elements=3 * 128 * 96)
    for i, out in enumerate(outs):
        part = wide[:, i * 128:(i + 1) * 128]
        s, m = (part, shared) if along == "rows" else (shared, part)
        runner.submit(GemmJob(s, m, [(out, SET, 0, out.shape[0], 0, out.shape[1])],
                              set(), set()))
    runner.retire(0)
    for i, out in enumerate(outs):
        part = wide[:, i * 128:(i + 1) * 128]
        np.testing.assert_array_equal(out, part.T @ shared if along == "rows"
                                      else shared.T @ part)
    # The first job starts at once; the next three merge until MERGE_ELEMENTS; the last alone.
    merged = [(128, 96), (384, 96), (128, 96)]
    assert shapes == (merged if along == "rows" else [(c, r) for r, c in merged])


def test_runner_does_not_merge_what_does_not_continue(monkeypatch):
    """A gap between the columns, another array, or no shared operand: no merge."""
    shapes = _record_starts(monkeypatch)
    rng = np.random.default_rng(1)
    shared = rng.integers(-3, 4, (64, 96)).astype(F32)
    wide = rng.integers(-3, 4, (64, 512)).astype(F32)
    other = wide.copy()
    parts = [wide[:, 0:128], wide[:, 0:128],  # (the same columns again: not the next ones)
             wide[:, 256:384], other[:, 384:512], wide[:, 128:256]]
    movings = [shared, shared, shared, shared, shared.copy()]
    outs = []
    runner = GemmRunner(2)
    for s, m in zip(parts, movings):
        out = np.zeros((128, 96), F32)
        outs.append((out, s, m))
        runner.submit(GemmJob(s, m, [(out, ADD, 0, 128, 0, 96)], set(), set()))
    runner.retire(0)
    for out, s, m in outs:
        np.testing.assert_array_equal(out, s.T @ m)
    assert shapes == [(128, 96)] * 5


def test_merged_gemms_in_a_kernel_equal_the_reference(monkeypatch):
    """A blocked matmul whose 128-row blocks share the moving operand: its GEMMs merge (the
    operands are float32 views of the HBM inputs) and the output is exact."""
    import ml_dtypes

    import neuroncore_sim as ncs
    sample = load_sample("matmul_blocked")  # by file: `import kernels` may be the HF library
    kernel, reference = sample.kernel, sample.reference
    shapes = _record_starts(monkeypatch)
    monkeypatch.setattr(importlib.import_module("neuroncore_sim.environment"),
                        "single_threaded_blas", _two_blas_threads)
    rng = np.random.default_rng(2)
    lhsT = rng.integers(-3, 4, (256, 768)).astype(ml_dtypes.bfloat16)
    rhs = rng.integers(-3, 4, (256, 2048)).astype(ml_dtypes.bfloat16)
    res = ncs.simulate(kernel, lhsT, rhs, timing=False)
    np.testing.assert_array_equal(res.outputs[0], reference(lhsT, rhs))
    assert shapes == [(128, 2048), (512, 2048), (128, 2048)]  # 6 blocks; 4 merge


@contextlib.contextmanager
def _two_blas_threads():
    """single_threaded_blas as on a 2-core machine, whatever this one has."""
    with single_threaded_blas():
        yield 2


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice is Linux's")
def test_pool_threads_yield_to_the_python_threads():
    """GEMM pool threads run at a lower priority than the launch's Python threads."""
    from neuroncore_sim.values.fast.gemm_jobs import GEMM_NICE, _priority_refused, _shared_pool
    mine = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    theirs = _shared_pool(2).submit(
        lambda: os.getpriority(os.PRIO_PROCESS, threading.get_native_id())).result()
    assert theirs == min(19, mine + GEMM_NICE) or _priority_refused
