"""LoadStationary's latency (``load_stationary_latency_ns``, [PERF] fig20: 67 ns for 1 element
per partition) is part of its profile duration, and nothing waits on it: a stream of matmuls
that each load a new stationary still issues at the documented average cost
``max(min(64, N_stationary), N_moving)`` cycles, which is shorter than that latency."""

from __future__ import annotations

import pytest
from programs import Builder, acc

from neuroncore_sim.config import TRN1
from neuroncore_sim.timing.engines import simulate_timing

TEN = 2.8 * TRN1.tensor_sustained_fraction  # GHz: documented cycles at the sustained rate


def _stream(n_moving: int, count: int = 8):
    b = Builder()
    sts = [b.tensor(f"st{i}", (128, 128), "bfloat16", "sbuf", site=1) for i in range(count)]
    mv = b.tensor("mv", (128, n_moving), "bfloat16", "sbuf", site=2)
    outs = [b.tensor(f"ps{i}", (128, n_moving), "float32", "psum", site=3) for i in range(count)]
    for i in range(count):
        b.matmul(acc(outs[i]), acc(sts[i]), acc(mv))
    res = simulate_timing(b.program, TRN1)
    return sorted(e.start_ns for e in res.events if e.opcode == "multiply_moving")


@pytest.mark.parametrize("n_moving", [128, 64])
def test_new_stationaries_do_not_slow_the_documented_matmul_stream(n_moving):
    starts = _stream(n_moving)
    ii = max(min(TRN1.mm_init_latency_cycles, 128), n_moving) / TEN
    assert ii < TRN1.load_stationary_latency_ns  # the latency would show if anything waited
    gaps = [b - a for a, b in zip(starts, starts[1:])]
    assert gaps == [pytest.approx(ii)] * len(gaps)


def test_the_profile_duration_of_a_one_column_load_stationary():
    b = Builder()
    st = b.tensor("st", (128, 1), "bfloat16", "sbuf", site=1)
    mv = b.tensor("mv", (128, 128), "bfloat16", "sbuf", site=2)
    ps = b.tensor("ps", (1, 128), "float32", "psum", site=3)
    b.matmul(acc(ps), acc(st), acc(mv))
    ls = [e for e in simulate_timing(b.program, TRN1).events if e.opcode == "load_stationary"]
    occupancy = ls[0].end_ns - ls[0].start_ns
    assert occupancy == pytest.approx(1 / TRN1.load_stationary_speedup / TEN)
    assert occupancy + TRN1.load_stationary_latency_ns == pytest.approx(67.0, abs=0.5)
