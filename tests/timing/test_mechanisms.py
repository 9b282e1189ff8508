"""``summary()["trust"]``: the modelled mechanisms behind each segment of the critical path,
with what each rests on (documented, measured, fitted, assumption), on kernels built so the
answer is known."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import neuroncore_sim as ncs
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl
from neuroncore_sim import report
from neuroncore_sim.timing import mechanisms as M

F32, BF16 = np.float32, nl.bfloat16


def copy_exp(a):
    """DMA-bound: load, one activation, store."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(a.shape[0] // 128):
        nl.store(out[i * 128:(i + 1) * 128], value=nl.exp(nl.load(a[i * 128:(i + 1) * 128])))
    return out


def scalar_chain(a):
    """One small load, then a long chain of dependent [128, 1] ScalarE activations (each waits
    for the previous one's result: [PERF] fig16)."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a)
    for _ in range(200):
        t = nisa.activation(op=nl.copy, data=t, scale=1.0001)
    nl.store(out, value=t)
    return out


def matmuls(x, y):
    """TensorE-bound: one stationary and moving pair loaded once, many matmuls."""
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    st, mv = nl.load(x), nl.load(y)
    acc = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.psum)
    for _ in nl.affine_range(2000):
        acc += nisa.nc_matmul(st, mv)
    nl.store(out, value=nl.copy(acc))
    return out


def _trust(kernel, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = ncs.simulate(kernel, *args, functional=False)
    return res, res.summary()["trust"]


def _names(rows):
    return [r["mechanism"] for r in rows]


def test_a_dma_bound_kernel_rests_on_the_documented_hbm_rates():
    res, trust = _trust(copy_exp, np.zeros((2048, 4096), F32))
    assert trust["dominant"][0]["mechanism"] in (M.DMA_READ.name, M.DMA_WRITE.name)
    assert trust["dominant"][0]["basis"] == "documented"  # [DMABW] 17 B/ns per engine
    assert M.DMA_READ.name not in _names(trust["approximated"])
    assert M.DMA_WRITE.name not in _names(trust["approximated"])
    assert trust["approximated_percent"] == pytest.approx(
        sum(r["percent"] for r in trust["approximated"]))
    # every segment of the critical path is charged once: the shares add up to it
    found = M.shares(ncs.timing.critical_path.critical_path(res._timing()),
                     res.program.instructions)
    assert sum(found.values()) == pytest.approx(res.latency_ns, rel=1e-6)


def test_a_dependent_scalar_chain_rests_on_the_fitted_dependency_latency():
    _, trust = _trust(scalar_chain, np.ones((128, 1), F32))
    assert _names(trust["dominant"][:2]) == [M.DEPENDENCY.name, M.ENGINE_COST.name]
    assert _names(trust["approximated"])[0] == M.DEPENDENCY.name


def test_a_matmul_loop_rests_on_the_documented_tensor_cost():
    _, trust = _trust(matmuls, np.zeros((128, 128), BF16), np.zeros((128, 512), BF16))
    assert trust["dominant"][0]["mechanism"] == M.TENSOR_COST.name
    assert trust["dominant"][0]["basis"] == "documented"
    assert trust["dominant"][0]["percent"] > 80
    assert trust["approximated_percent"] < 20


def spilling(a, out):
    """Five computed 48 KiB tiles live at once: the compiler spills."""
    tiles = [nl.multiply(nl.load(a[k * 128:(k + 1) * 128, :]), 2.0) for k in range(5)]
    acc = tiles[0]
    for t in tiles[1:]:
        acc = nl.add(acc, t)
    nl.store(out, value=acc)


def test_spills_show_as_an_assumption():
    a = np.zeros((640, 12288), F32)
    res, trust = _trust(spilling, a, np.zeros((128, 12288), F32))
    assert M.SPILL.name in _names(trust["approximated"])
    text = report.summary_text(res)
    assert "trust      : " in text and "compiler spills and reloads" in text
