"""Dependent instructions wait for the producer's result to be committed and for a semaphore
([PERF] optimisation 5a, fig. 16): a chain of dependent [128, 1] ScalarE activations issues one
every ~189 ns, each lasting ~159 ns, although each occupies ScalarE for only MIN_II (64 cycles).
Independent activations still issue one per MIN_II."""

from __future__ import annotations

import numpy as np
import pytest

import neuroncore_sim as ncs
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl
from neuroncore_sim.config import TRN1

CHAIN = 16


def dependent_chain(x, scale, bias):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t, s, b = nl.load(x), nl.load(scale), nl.load(bias)
    for _ in range(CHAIN):
        t = nisa.activation(op=nl.copy, data=t, scale=s, bias=b)
    nl.store(out, value=t)
    return out


def independent(x, scale, bias):
    out = nl.ndarray((x.shape[0], CHAIN), dtype=x.dtype, buffer=nl.shared_hbm)
    t, s, b = nl.load(x), nl.load(scale), nl.load(bias)
    res = nl.ndarray((x.shape[0], CHAIN), dtype=x.dtype)
    for i in range(CHAIN):
        res[:, i:i + 1] = nisa.activation(op=nl.copy, data=t, scale=s, bias=b)
    nl.store(out, value=res)
    return out


def _inputs():
    rng = np.random.default_rng(0)
    return [rng.random((128, 1)).astype(np.float32) for _ in range(3)]


def _starts(res):
    ev = res.events
    return ev[(ev.engine == "scalar") & (ev.opcode == "activation")].start_ns.to_numpy()


def test_dependent_scalar_chain_matches_the_profile() -> None:
    x, s, b = _inputs()
    res = ncs.simulate(dependent_chain, x, s, b)
    want = x.copy()
    for _ in range(CHAIN):
        want = want * s + b
    np.testing.assert_allclose(res.outputs[0], want, rtol=1e-5)
    interval = np.diff(_starts(res))
    # 64 cycles + 160 cycles of pipeline at 1.4 GHz = 160 ns, + 30 ns semaphore
    assert interval == pytest.approx(189, abs=2)
    occupancy = 64 / 1.4
    assert occupancy + TRN1.scalar_pipeline_latency_cycles / 1.4 == pytest.approx(159, abs=2)


def test_independent_scalar_instructions_issue_every_min_ii() -> None:
    x, s, b = _inputs()
    res = ncs.simulate(independent, x, s, b)
    np.testing.assert_allclose(res.outputs[0], np.repeat(x * s + b, CHAIN, axis=1), rtol=1e-5)
    assert np.diff(_starts(res)) == pytest.approx(64 / 1.4, abs=0.01)
