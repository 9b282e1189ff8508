"""The critical path (neuroncore_sim.timing.critical_path) on kernels built so the answer is
known: DMA-bound, TensorE-bound, a dependent ScalarE chain, a pipeline with one slow stage; and
on every sample kernel, the path's segments add up to the latency."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import neuroncore_sim as ncs
import neuroncore_sim.nki as nki
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl
from neuroncore_sim.sweep.kernel_file import example_inputs, find_kernel, load_kernel_file
from neuroncore_sim.timing.critical_path import critical_path
from neuroncore_sim.timing.events import is_dma_row

KERNELS = Path(__file__).resolve().parents[2] / "kernels"


@nki.jit
def dma_bound(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(a.shape[0] // 128):
        t = nl.load(a[i * 128:(i + 1) * 128, :])
        nl.store(out[i * 128:(i + 1) * 128, :], value=t)
    return out


@nki.jit
def tensor_bound(lhsT, rhs):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    s = nl.load(lhsT)
    m = nl.load(rhs)
    acc = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.psum)
    for _ in nl.sequential_range(64):
        acc += nisa.nc_matmul(s, m)
    nl.store(out, value=nl.copy(acc, dtype=nl.float32))
    return out


CHAIN = 24


@nki.jit
def scalar_chain(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    for _ in nl.sequential_range(CHAIN):
        t = nisa.activation(op=nl.copy, data=t, scale=1.0)
    nl.store(out, value=t)
    return out


@nki.jit
def slow_middle(a):
    """load -> scalar (fast) -> vector (slow: a long reduction chain) -> store, per tile."""
    out = nl.ndarray((a.shape[0], 1), dtype=a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(a.shape[0] // 128):
        t = nl.load(a[i * 128:(i + 1) * 128, :])
        e = nl.exp(t)
        # four 2N products and a reduction: 16.5 us of VectorE against a 9.4 us load (HBM
        # reads at ~111 B/ns)
        p = nl.multiply(nl.multiply(nl.multiply(nl.multiply(e, e), e), e), e)
        s = nl.sum(p, axis=1, keepdims=True)
        nl.store(out[i * 128:(i + 1) * 128, :], value=s)
    return out


def _path(kernel, *args):
    res = ncs.simulate(kernel, *args, functional=False)
    return res, critical_path(res.timing)


def _share(path, row: str) -> float:
    return path.by_row().get(row, 0.0) / path.latency_ns


def test_dma_bound_path_is_the_dma() -> None:
    res, path = _path(dma_bound, np.zeros((1024, 2048), np.float32))
    assert _share(path, "dma") > 0.99
    assert all(is_dma_row(s.event.engine) for s in path.steps)
    assert res.summary()["critical_path"]["by_engine_ns"].keys() == {"dma"}


def test_tensor_bound_path_is_the_matmuls() -> None:
    res, path = _path(tensor_bound, np.zeros((128, 128), np.float32),
                      np.zeros((128, 512), np.float32))
    matmuls = [s for s in path.steps if s.event.opcode == "multiply_moving"]
    assert len(matmuls) == 64  # every matmul of the chain is on the path, in order
    assert [s.event.instr_id for s in matmuls] == sorted(s.event.instr_id for s in matmuls)
    assert _share(path, "tensor") > 0.5
    tensor_busy = sum(e.end_ns - e.start_ns for e in res.timing.events
                      if e.engine == "tensor")
    # the path holds all of TensorE's busy time
    on_path = sum(s.event.end_ns - s.event.start_ns for s in path.steps
                  if s.event.engine == "tensor")
    assert on_path == pytest.approx(tensor_busy)


def test_dependent_scalar_chain_is_every_activation_and_its_waits() -> None:
    res, path = _path(scalar_chain, np.zeros((128, 1), np.float32))
    acts = [s for s in path.steps if s.event.engine == "scalar"]
    assert len(acts) == CHAIN
    # each activation after the first waited on the one before it (its producer)
    assert all(s.why == f"scalar#{prev.event.instr_id}" for prev, s in zip(acts, acts[1:]))
    by_row = path.by_row()
    scalar_events = [e for e in res.timing.events if e.engine == "scalar"]
    first, last = scalar_events[0], scalar_events[-1]
    # on the path, ScalarE owns exactly the span from its first activation's start to its last
    # one's end (durations plus the waits between them), plus its first activation's wait
    assert by_row["scalar"] == pytest.approx(last.end_ns - first.start_ns + acts[0].wait_ns)


def test_slow_stage_is_the_root_cause_of_the_stores_waits() -> None:
    res, path = _path(slow_middle, np.zeros((1024, 2048), np.float32))
    cp = res.summary()["critical_path"]
    assert cp["top_stalls"], cp
    assert _share(path, "vector") > 0.5
    store_waits = [s for s in cp["top_stalls"] if s["engine"].startswith("dma")]
    assert store_waits and all(s["root_engine"] == "vector" for s in store_waits), cp
    assert cp["top_stalls"][0]["root_engine"] == "vector"  # the largest wait: the slow stage


def test_root_cause_goes_past_the_last_producer_to_the_late_dma() -> None:
    """ScalarE waits on VectorE, which waited on a big load: the root cause is the DMA."""
    @nki.jit
    def chain(a):
        out = nl.ndarray((128, 1), dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.load(a)
        r = nl.max(t, axis=1, keepdims=True)  # VectorE
        e = nl.exp(r)  # ScalarE, waits on VectorE
        nl.store(out, value=e)
        return out

    res, path = _path(chain, np.zeros((128, 16384), np.float32))
    scalar_step = next(s for s in path.steps if s.event.engine == "scalar")
    assert scalar_step.why.startswith("vector#")
    assert scalar_step.root is not None and is_dma_row(scalar_step.root.engine)


@nki.jit
def transposes_then_matmuls(x, st, rhs):
    """TensorE busy throughout: each matmul's stationary was loaded long before, so its
    LoadStationary waits only for the transpose before it to free the PE array (no producer to
    wait on, no earlier event on its own row)."""
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    tout = nl.ndarray((16, 128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    s0 = nl.load(st[0])
    s1 = nl.load(st[1])
    m = nl.load(rhs)
    acc = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.psum)
    for i in range(16):
        tt = nisa.nc_transpose(t[:, i * 128:(i + 1) * 128])
        acc += nisa.nc_matmul(s0 if i % 2 == 0 else s1, m)
        nl.store(tout[i], value=nl.copy(tt, dtype=nl.float32))
    nl.store(out, value=nl.copy(acc, dtype=nl.float32))
    return out, tout


def test_a_load_stationary_after_a_transpose_continues_the_path() -> None:
    res, path = _path(transposes_then_matmuls, np.zeros((128, 2048), np.float32),
                      np.zeros((2, 128, 128), np.float32), np.zeros((128, 512), np.float32))
    assert [s.why for s in path.steps[1:]].count("start") == 0  # the walk never breaks
    first = path.steps[0]  # the walk reaches the launch's first load
    assert is_dma_row(first.event.engine) and first.event.instr_id == 0
    assert sum(s.wait_ns + s.event.end_ns - s.event.start_ns for s in path.steps) == \
        pytest.approx(res.latency_ns, rel=1e-6)
    ls = [s for s in path.steps if s.event.engine == "tensor_ls"]
    assert ls and all(s.why in ("engine", "") or "#" in s.why for s in ls)


def _sample_launches():
    for path in sorted(KERNELS.glob("*.py")):
        if "def example_inputs" not in path.read_text():
            continue
        module = load_kernel_file(path)
        for name in list(getattr(module, "KERNELS", {}) or {}) or ["kernel"]:
            yield pytest.param(path, name, id=f"{path.stem}.{name}")


@pytest.mark.parametrize("path, name", list(_sample_launches()))
def test_path_adds_up_to_the_latency(path: Path, name: str) -> None:
    module = load_kernel_file(path)
    _, kernel = find_kernel(module, name)
    args, kwargs = example_inputs(module, path)
    res = ncs.simulate(kernel, *args, grid=getattr(module, "GRID", ()), functional=False,
                       **kwargs)
    cp = res.summary()["critical_path"]
    assert cp["length_ns"] == pytest.approx(res.latency_ns, abs=1e-3)
    # (each entry is rounded to 1e-3 ns)
    assert sum(cp["by_engine_ns"].values()) == pytest.approx(res.latency_ns, abs=0.01)
    assert cp["busy_ns"] + cp["wait_ns"] == pytest.approx(res.latency_ns, abs=0.01)
