"""Functional runs hand the storage of dead tiles back for reuse (frontend/tracer.py leases,
memory.py pool) and fill new tiles lazily; values must be exactly as without either."""

from __future__ import annotations

import numpy as np
import pytest

import neuroncore_sim as ncs
import neuroncore_sim.nki as nki
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl
from neuroncore_sim.errors import UninitializedReadWarning
from neuroncore_sim.values.memory import Memory

RNG = np.random.default_rng(5)


@pytest.fixture
def live_arrays(monkeypatch):
    """The number of tensors with storage, recorded after every declaration."""
    counts: list[int] = []
    declare = Memory.declare

    def spy(self, decl, values=None):
        declare(self, decl, values)
        counts.append(len(self._arrays))

    monkeypatch.setattr(Memory, "declare", spy)
    return counts


@nki.jit
def exp_rows(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(x.shape[0] // 128):
        tile = nl.load(x[i * 128:(i + 1) * 128, :])
        nl.store(out[i * 128:(i + 1) * 128, :], value=nl.exp(tile))
    return out


def test_tiles_of_finished_iterations_are_recycled(live_arrays):
    x = RNG.standard_normal((64 * 128, 8)).astype(np.float32)
    res = ncs.simulate(exp_rows, x, timing=False)
    np.testing.assert_allclose(res.outputs[0], np.exp(x), rtol=1e-6)
    # 64 iterations allocate 128 tiles; only the current iteration's are ever held (plus x, out)
    assert len(live_arrays) == 2 + 128
    assert max(live_arrays) <= 5


@nki.jit
def sum_of_kept_tiles(x):
    """Keeps every loaded tile alive in a Python list and sums them at the end."""
    out = nl.ndarray((128, x.shape[1]), dtype=x.dtype, buffer=nl.shared_hbm)
    tiles = [nl.load(x[i * 128:(i + 1) * 128, :]) for i in range(x.shape[0] // 128)]
    total = nl.zeros((128, x.shape[1]), dtype=nl.float32)
    for t in tiles:
        total[...] = nl.add(total, t)
    nl.store(out, value=total)
    return out


def test_tiles_kept_by_the_kernel_keep_their_values(live_arrays):
    x = RNG.standard_normal((8 * 128, 16)).astype(np.float32)
    res = ncs.simulate(sum_of_kept_tiles, x, timing=False)
    np.testing.assert_allclose(res.outputs[0], x.reshape(8, 128, 16).sum(0), rtol=1e-5,
                               atol=1e-5)
    assert max(live_arrays) >= 8  # all eight loads were live together


@nki.jit
def matmul_chain_then_reload(lhsT, rhs):
    """The operands of an accumulation group die (the loop rebinds them) before PSUM is read:
    the pending group must still see their values, not a recycled tile's."""
    out = nl.ndarray((128, rhs.shape[1]), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.zeros((128, rhs.shape[1]), nl.float32, buffer=nl.psum)
    for k in nl.affine_range(lhsT.shape[0] // 128):
        s = nl.load(lhsT[k * 128:(k + 1) * 128, :])
        m = nl.load(rhs[k * 128:(k + 1) * 128, :])
        acc += nisa.nc_matmul(s, m)
    for k in nl.affine_range(lhsT.shape[0] // 128):  # reuse the freed storage with other data
        junk = nl.load(lhsT[k * 128:(k + 1) * 128, :])
        junk2 = nl.load(rhs[k * 128:(k + 1) * 128, :])
        nl.store(out[:, 0:1], value=nl.copy(junk[:, 0:1]))
        nl.store(out[:, 1:2], value=nl.copy(junk2[:, 1:2]))
    nl.store(out, value=nl.copy(acc))
    return out


def test_pending_matmul_operands_outlive_their_names():
    lhsT = RNG.standard_normal((512, 128)).astype(np.float32)
    rhs = RNG.standard_normal((512, 256)).astype(np.float32)
    res = ncs.simulate(matmul_chain_then_reload, lhsT, rhs, timing=False)
    np.testing.assert_allclose(res.outputs[0], lhsT.T @ rhs, rtol=1e-4, atol=1e-4)


@nki.jit
def read_unwritten(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(4):
        t = nl.ndarray((128, x.shape[1]), dtype=x.dtype, buffer=nl.sbuf)
        t[:, 0:2] = nl.load(x[:, 0:2])  # half written: the rest must read as NaN, every time
        nl.store(out, value=nl.copy(t))
    return out


def test_recycled_tiles_start_as_nan_again():
    x = np.ones((128, 4), np.float32)
    with pytest.warns(UninitializedReadWarning, match="nothing wrote"):
        res = ncs.simulate(read_unwritten, x, timing=False)
    assert (res.outputs[0][:, :2] == 1).all()
    assert np.isnan(res.outputs[0][:, 2:]).all()
