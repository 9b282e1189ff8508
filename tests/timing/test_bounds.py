"""Neuron Explorer's bounds (neuroncore_sim.timing.bounds) on kernels whose values are computed by
hand here from the definitions (performance-bounds.md of aws-neuron/neuron-agentic-development)."""

from __future__ import annotations

import numpy as np
import pytest

import neuroncore_sim as ncs
import neuroncore_sim.nki as nki
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl
from neuroncore_sim.config import TRN1, override
from neuroncore_sim.timing.bounds import union_ns

NAMES = ("memory_bound", "memory_bound_ideal", "memory_bound_ideal_no_reloads", "compute_bound",
         "compute_bound_ideal_flops", "compute_bound_ideal_useful_flops", "perfect_pipeline")
DMA_PEAK = TRN1.dma_engines * TRN1.dma_engine_bytes_per_ns
REPEATS_KEPT = override(TRN1, {"compiler": {"merge_repeated_loads": False}}, "tests")
TE_PEAK = TRN1.num_partitions * TRN1.gemm_stationary_fmax * 2 * TRN1.tensor_clock_hz / 1e9


@nki.jit
def copy_twice(a):
    """Loads every row block twice: the reloads show as memory_bound_ideal > no_reloads (run
    with the compile stage's merging of repeated loads off: it would load each block once)."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(a.shape[0] // 128):
        t = nl.load(a[i * 128:(i + 1) * 128, :])
        u = nl.load(a[i * 128:(i + 1) * 128, :])
        nl.store(out[i * 128:(i + 1) * 128, :], value=nl.add(t, u))
    return out


@nki.jit
def matmuls_and_transpose(lhsT, rhs):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    s = nl.load(lhsT)
    m = nl.load(rhs)
    acc = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.psum)
    for _ in nl.sequential_range(8):
        acc += nisa.nc_matmul(s, m)
    t = nisa.nc_transpose(s)  # TensorE transpose of a [128, 128] tile
    nl.store(out, value=nl.add(nl.copy(acc, dtype=nl.float32), nl.copy(t, dtype=nl.float32)[:, 0:1]))
    return out


def _summary(kernel, *args, config=None):
    res = ncs.simulate(kernel, *args, functional=False, config=config)
    return res, res.summary()


def test_memory_family_by_hand() -> None:
    a = np.zeros((512, 1024), np.float32)
    res, s = _summary(copy_twice, a, config=REPEATS_KEPT)
    dma = [(e.start_ns, e.end_ns) for e in res.timing.events if e.engine.startswith("dma")]
    assert s["memory_bound"] == pytest.approx(union_ns(dma), abs=1e-3)
    moved = 2 * a.nbytes + a.nbytes  # two loads of every block and one store
    assert s["memory_bound_ideal"] == pytest.approx(moved / DMA_PEAK, abs=1e-3)
    assert s["memory_bound_ideal_no_reloads"] == pytest.approx(2 * a.nbytes / DMA_PEAK, abs=1e-3)
    assert s["compute_bound"] == 0.0 and s["compute_bound_ideal_flops"] == 0.0
    assert s["pipeline_bottleneck"] == "dma"
    assert s["perfect_pipeline"] == s["memory_bound"]
    # memory bounds are capped by the slowest compute engine (VectorE's adds here)
    vector = s["engine_active_ns"]["vector"]
    assert s["bn_speedup"]["memory_bound_ideal"] == pytest.approx(
        s["latency_ns"] / max(s["memory_bound_ideal"], vector), abs=1e-3)
    assert s["bn_speedup"]["perfect_pipeline"] == pytest.approx(
        s["latency_ns"] / s["perfect_pipeline"], abs=1e-3)


def test_compute_family_by_hand() -> None:
    res, s = _summary(matmuls_and_transpose, np.zeros((128, 128), np.float32),
                      np.zeros((128, 512), np.float32))
    useful = 8 * 2 * 128 * 128 * 512
    transpose = 2 * 128 * 128 * 128
    assert s["hardware_flops"] == useful + transpose and s["transpose_flops"] == transpose
    assert s["compute_bound_ideal_flops"] == pytest.approx((useful + transpose) / TE_PEAK,
                                                          abs=1e-3)
    assert s["compute_bound_ideal_useful_flops"] == pytest.approx(useful / TE_PEAK, abs=1e-3)
    te = [(e.start_ns, e.end_ns) for e in res.timing.events
          if e.engine in ("tensor", "tensor_ls")]
    assert s["compute_bound"] == pytest.approx(union_ns(te), abs=1e-3)
    others = max(s["engine_active_ns"][r] for r in ("vector", "scalar", "gpsimd", "dma"))
    assert s["bn_speedup"]["compute_bound"] == pytest.approx(
        s["latency_ns"] / max(s["compute_bound"], others), abs=1e-3)


def test_every_name_is_in_the_summary_json() -> None:
    _, s = _summary(copy_twice, np.zeros((128, 512), np.float32))
    assert set(NAMES) <= set(s) and set(NAMES) == set(s["bn_speedup"])
    assert all(s[n] <= s["latency_ns"] + 1e-6 for n in NAMES)  # each is a lower bound here


def test_union_of_intervals() -> None:
    assert union_ns([]) == 0.0
    assert union_ns([(0, 2), (1, 3), (5, 6), (5.5, 5.7)]) == 4.0
