"""Issue 19 item 10: ``nki.benchmark`` with a launch grid records its result on the decorated
kernel, and refuses counts the hardware loop cannot run."""

from __future__ import annotations

import numpy as np
import pytest

import neuroncore_sim as ncs
import neuroncore_sim.nki as nki
import neuroncore_sim.nki.language as nl
from neuroncore_sim.errors import KernelError


def copy(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i = nl.program_id(0)
    nl.store(out[i], value=nl.load(a[i]))
    return out


def test_a_gridded_call_sets_the_decorated_kernels_result():
    k = nki.benchmark(warmup=2, iters=5)(copy)
    assert k.benchmark_result is None
    a = np.zeros((2, 128, 64), np.float32)
    k[2](a)
    result = k.benchmark_result
    assert result is not None and result.nc_latency.iterations == 5
    # it is the gridded launch's own estimate: the same timing-only simulation, two instances
    want = ncs.simulate(copy, a, grid=(2,), functional=False).latency_ns / 1000.0
    assert result.nc_latency.get_latency_percentile(50) == want
    assert result.sim_result.program.grid == (2,)
    # a second gridded call replaces it
    k[1](a[:1])
    assert k.benchmark_result is not result
    assert k.benchmark_result.sim_result.program.grid == (1,)


@pytest.mark.parametrize("kw, msg", [
    ({"warmup": -1}, r"warmup expected an integer >= 0, found -1"),
    ({"iters": 0}, r"iters expected an integer >= 1, found 0"),
    ({"iters": 2.5}, r"iters expected an integer >= 1, found 2.5"),
    ({"warmup": True}, r"warmup expected an integer >= 0, found True"),
])
def test_bad_counts_are_refused_at_the_callers_line(kw, msg):
    with pytest.raises(KernelError, match=rf"test_benchmark_calls.py:\d+: nki.benchmark: {msg}"):
        nki.benchmark(**kw)(copy)
