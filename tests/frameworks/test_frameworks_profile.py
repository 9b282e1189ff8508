"""Per-model profile sessions (neuroncore_sim.frameworks.profile): every launch inside
``ncs.profile_session()`` is recorded with its layer, call site, shapes and estimated device
time, with totals per kernel and per layer; launches inside ``jax.jit`` keep the call site and
layer of the traced call."""

from __future__ import annotations

import numpy as np
import pytest

import neuroncore_sim as ncs
import neuroncore_sim.nki.language as nl
from neuroncore_sim import nki


@nki.jit
def double(x):
    y = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(y, value=nl.multiply(nl.load(x), 2.0))
    return y


@nki.jit
def plus_one(x):
    y = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(y, value=nl.add(nl.load(x), 1.0))
    return y


def model(x):
    with ncs.layer("block0"):
        x = double(x)
        x = plus_one(x)
    with ncs.layer("block1"):
        x = double(x)
    return x


def test_numpy_model_launches_layers_and_totals():
    x = np.ones((128, 64), np.float32)
    with ncs.profile_session() as s:
        out = model(x)
    np.testing.assert_array_equal(out, np.full((128, 64), 6.0, np.float32))
    recs = s.launches
    assert [r.kernel for r in recs] == ["double", "plus_one", "double"]
    assert [r.layer for r in recs] == ["block0", "block0", "block1"]
    assert all(r.site and r.site.startswith("test_frameworks_profile.py:") for r in recs)
    assert recs[0].shapes == [(128, 64)] and all(r.device_ns > 0 for r in recs)
    kernels = {k: (n, ns) for k, n, ns in s.by_kernel()}
    assert kernels["double"][0] == 2
    assert kernels["double"][1] == pytest.approx(recs[0].device_ns + recs[2].device_ns)
    layers = {k: n for k, n, _ in s.by_layer()}
    assert layers == {"block0": 2, "block1": 1}
    assert s.device_ns == pytest.approx(sum(r.device_ns for r in recs)) and s.host_ns > 0
    table = s.table()
    assert "per kernel" in table and "per layer" in table and "block1" in table


def test_launches_outside_the_session_are_not_recorded():
    x = np.ones((128, 8), np.float32)
    with ncs.profile_session() as s:
        double(x)
    double(x)
    assert len(s.launches) == 1


def test_jax_jit_launches_keep_their_traced_call_site_and_scope():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy

    @jax.jit
    def step(x):
        with jax.named_scope("mlp"):
            y = double(x)
        return plus_one(y) * 2

    x = jnp.ones((128, 32), jnp.float32)
    with ncs.profile_session() as s:
        out = step(x)
        out.block_until_ready()
    np.testing.assert_array_equal(np.asarray(out), np.full((128, 32), 6.0, np.float32))
    recs = s.launches
    assert [r.kernel for r in recs] == ["double", "plus_one"]
    assert recs[0].layer == "mlp" and recs[1].layer == "step"
    assert all(r.site.startswith("test_frameworks_profile.py:") for r in recs)
