"""TensorE's sustained rate (docs/model.md, "TensorE sustained rate"): a stream of TensorE
instructions runs its documented cycles at ``tensor_sustained_fraction`` (0.8524, AWS's HFU of
the fully optimized matmul) of the 2.8 GHz clock. A TensorE-bound kernel slows by 1 / 0.8524,
its MFU is 85.24 % of TensorE's busy share, and the other engines keep their documented rates."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from programs import AS_WRITTEN

import neuroncore_sim as ncs
import neuroncore_sim.nki as nki
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl
from neuroncore_sim.config import override

FRACTION = 0.8524
#: the same config at the documented peak rate: the mechanism switched off
AT_PEAK = override(AS_WRITTEN, {"tensor_sustained_fraction": 1.0}, "tests")
COUNT = 32


@nki.jit
def matmul_stream(lhsT, rhs):
    """TensorE-bound: COUNT [128, 128] x [128, 512] matmuls into one accumulation group, each
    with its own stationary (a new LoadStationary in the background of every matmul)."""
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    st = nl.load(lhsT)
    mv = nl.load(rhs)
    acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
    for i in nl.affine_range(COUNT):
        acc += nisa.nc_matmul(st[:, i * 128:(i + 1) * 128], mv)
    nl.store(out, value=nl.copy(acc))
    return out


@nki.jit
def no_tensor_engine(a, b):
    """ScalarE and VectorE only: an exp and an add of [128, 512] fp32 tiles."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.add(nl.exp(nl.load(a)), nl.load(b)))
    return out


def _inputs(dtype):
    rng = np.random.default_rng(0)
    return (rng.standard_normal((128, COUNT * 128)).astype(dtype),
            rng.standard_normal((128, 512)).astype(dtype))


@pytest.mark.parametrize("dtype, factor", [(ml_dtypes.bfloat16, 1), (np.float32, 4)])
def test_a_matmul_stream_runs_at_the_sustained_fraction_of_the_documented_rate(dtype, factor):
    sustained = ncs.simulate(matmul_stream, *_inputs(dtype), functional=False, config=AS_WRITTEN)
    peak = ncs.simulate(matmul_stream, *_inputs(dtype), functional=False, config=AT_PEAK)
    documented_ns = COUNT * factor * 512 / 2.8  # max(N_moving, 64) cycles, x4 for fp32
    assert peak.summary()["busy_ns"]["tensor"] == pytest.approx(documented_ns)
    assert sustained.summary()["busy_ns"]["tensor"] == pytest.approx(documented_ns / FRACTION)
    # TensorE-bound: the latency grows by exactly the matmuls' extra time (the first
    # LoadStationary runs while the moving tile still loads, the others in the background)
    extra = documented_ns / FRACTION - documented_ns
    assert sustained.latency_ns - peak.latency_ns == pytest.approx(extra, rel=1e-6)
    s = sustained.summary()
    assert s["mfu_percent"] == pytest.approx(FRACTION * s["busy_percent"]["tensor"])


def test_the_other_engines_keep_their_documented_rates():
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal((128, 512)).astype(np.float32) for _ in range(2))
    sustained = ncs.simulate(no_tensor_engine, a, b, functional=False, config=AS_WRITTEN)
    peak = ncs.simulate(no_tensor_engine, a, b, functional=False, config=AT_PEAK)
    assert sustained.latency_ns == peak.latency_ns
    busy = sustained.summary()["busy_ns"]
    assert busy["scalar"] == pytest.approx(512 / 1.4)  # activation: max(MIN_II, N)
    assert busy["vector"] == pytest.approx(2 * 512 / 1.12)  # fp32 tensor_tensor: 2N
