"""Advice rules (neuroncore_sim.report.advice): each fires on a kernel built to show its pattern
and stays silent on one built without it."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import neuroncore_sim as ncs
import neuroncore_sim.nki as nki
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl
from neuroncore_sim import report
from neuroncore_sim.report.advice import MAX_ADVICE, advice

from neuroncore_sim.config import override
from loop_kernels import affine_loop, load_line, python_loop
from programs import AS_WRITTEN

F32 = np.float32


@nki.jit
def narrow_copy(a):
    """128 B per partition per DMA: overhead-bound transfers."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for j in nl.affine_range(a.shape[1] // 32):
        nl.store(out[:, j * 32:(j + 1) * 32], value=nl.load(a[:, j * 32:(j + 1) * 32]))
    return out


@nki.jit
def wide_copy(a):
    """8 KiB per partition per DMA."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for j in nl.affine_range(a.shape[1] // 2048):
        nl.store(out[:, j * 2048:(j + 1) * 2048], value=nl.load(a[:, j * 2048:(j + 1) * 2048]))
    return out


@nki.jit
def reload_same(a, b):
    """Loads the same block of ``a`` once per block of ``b``."""
    out = nl.ndarray(b.shape, dtype=b.dtype, buffer=nl.shared_hbm)
    for j in nl.affine_range(b.shape[1] // 2048):
        x = nl.load(a[:, 0:2048])
        y = nl.load(b[:, j * 2048:(j + 1) * 2048])
        nl.store(out[:, j * 2048:(j + 1) * 2048], value=nl.add(x, y))
    return out


@nki.jit
def load_once(a, b):
    out = nl.ndarray(b.shape, dtype=b.dtype, buffer=nl.shared_hbm)
    x = nl.load(a[:, 0:2048])
    for j in nl.affine_range(b.shape[1] // 2048):
        y = nl.load(b[:, j * 2048:(j + 1) * 2048])
        nl.store(out[:, j * 2048:(j + 1) * 2048], value=nl.add(x, y))
    return out


@nki.jit
def scalar_chain(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    for _ in nl.sequential_range(64):
        t = nisa.activation(op=nl.copy, data=t, scale=1.0)
    nl.store(out, value=t)
    return out


@nki.jit
def scalar_independent(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    u = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    for _ in nl.sequential_range(64):
        u[...] = nisa.activation(op=nl.copy, data=t, scale=1.0)
    nl.store(out, value=u)
    return out


@nki.jit
def one_buffer_stationary(lhsT, rhs):
    """The stationary tile is one buffer reloaded each iteration: load, matmuls, load, ..."""
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    m = nl.load(rhs)
    st = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    acc = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.psum)
    for k in nl.sequential_range(lhsT.shape[1] // 512):
        st[...] = nl.load(lhsT[:, k * 512:(k + 1) * 512])
        for j in nl.static_range(4):
            acc += nisa.nc_matmul(st[:, j * 128:(j + 1) * 128], m)
    nl.store(out, value=nl.copy(acc, dtype=nl.float32))
    return out


@nki.jit
def hoisted_stationary(lhsT, rhs):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    m = nl.load(rhs)
    st = nl.load(lhsT[:, 0:128])
    acc = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.psum)
    for _ in nl.sequential_range(64):
        acc += nisa.nc_matmul(st, m)
    nl.store(out, value=nl.copy(acc, dtype=nl.float32))
    return out


@nki.jit
def many_transposes(a):
    out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(a)
    p = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum)
    for _ in nl.sequential_range(256):
        p[...] = nisa.nc_transpose(t)
    nl.store(out, value=nl.copy(p, dtype=nl.float32))
    return out


def _rules(kernel, *args) -> dict[str, str]:
    res = ncs.simulate(kernel, *args, functional=False, config=AS_WRITTEN)
    tips = advice(res)
    assert len(tips) <= MAX_ADVICE
    assert [t.saving_ns for t in tips] == sorted((t.saving_ns for t in tips), reverse=True)
    return {t.rule: t.text for t in tips}


def _line(kernel, text: str) -> str:
    """"test_advice.py:LINE" of the line of ``kernel`` holding ``text``."""
    import inspect

    lines, first = inspect.getsourcelines(kernel.func)
    offset = next(i for i, line in enumerate(lines) if text in line)
    return f"test_advice.py:{first + offset}"


A_WIDE = np.zeros((128, 8192), F32)


def test_small_dma_fires_on_narrow_transfers_only() -> None:
    rules = _rules(narrow_copy, np.zeros((128, 1024), F32))
    assert "small_dma" in rules
    assert "128 B per partition" in rules["small_dma"]
    assert _line(narrow_copy, "nl.store(out[:, j * 32") in rules["small_dma"]
    assert "small_dma" not in _rules(wide_copy, A_WIDE)


@nki.jit
def reload_twice_per_iteration(a, b):
    """Loads ``a``'s block twice in each iteration (the compiler merges the second load) and
    once more in every iteration (a reload the compiler keeps)."""
    out = nl.ndarray(b.shape, dtype=b.dtype, buffer=nl.shared_hbm)
    for j in nl.affine_range(b.shape[1] // 2048):
        x = nl.load(a[:, 0:2048])
        y = nl.load(b[:, j * 2048:(j + 1) * 2048])
        x2 = nl.load(a[:, 0:2048])
        nl.store(out[:, j * 2048:(j + 1) * 2048], value=nl.add(nl.add(x, y), x2))
    return out


def test_reloads_count_only_the_loads_the_compiler_keeps() -> None:
    args = A_WIDE, np.zeros((128, 16384), F32)
    res = ncs.simulate(reload_twice_per_iteration, *args, functional=False,
                       config=override(AS_WRITTEN, {"compiler": {"merge_repeated_loads": True}},
                                       "tests"))
    tips = {t.rule: t.text for t in advice(res)}
    assert "reloads" in tips and "the same region of a 8 times" in tips["reloads"]
    assert _line(reload_twice_per_iteration, "x2 = nl.load") not in tips["reloads"]
    merged_off = {t.rule: t.text for t in advice(ncs.simulate(
        reload_twice_per_iteration, *args, functional=False, config=AS_WRITTEN))}
    assert "the same region of a 16 times" in merged_off["reloads"]


def test_reloads_fire_on_the_same_region_loaded_again_only() -> None:
    rules = _rules(reload_same, A_WIDE, np.zeros((128, 16384), F32))
    assert "reloads" in rules and "the same region of a 8 times" in rules["reloads"]
    assert _line(reload_same, "x = nl.load") in rules["reloads"]
    assert "reloads" not in _rules(load_once, A_WIDE, np.zeros((128, 16384), F32))


def test_dependent_chain_fires_on_a_chain_only() -> None:
    rules = _rules(scalar_chain, np.zeros((128, 1), F32))
    assert "dependent_chain" in rules and "scalar runs a chain of 64" in rules["dependent_chain"]
    assert "dependent_chain" not in _rules(scalar_independent, np.zeros((128, 1), F32))


def test_serialized_engines_fire_when_overlap_would_help_only() -> None:
    rules = _rules(one_buffer_stationary, np.zeros((128, 8192), F32), np.zeros((128, 512), F32))
    assert "serialized_engines" in rules and "tensor bound" in rules["serialized_engines"]
    assert "serialized_engines" not in _rules(wide_copy, A_WIDE)


def test_stationary_waits_fire_on_a_reloaded_stationary_only() -> None:
    rules = _rules(one_buffer_stationary, np.zeros((128, 8192), F32), np.zeros((128, 512), F32))
    assert "stationary_waits" in rules
    assert "waits 16 times" in rules["stationary_waits"]
    assert _line(one_buffer_stationary, "st[...] = nl.load") in rules["stationary_waits"]
    assert "stationary_waits" not in _rules(hoisted_stationary, np.zeros((128, 128), F32),
                                             np.zeros((128, 512), F32))


def test_transposes_fire_when_they_are_most_of_tensore_only() -> None:
    rules = _rules(many_transposes, np.zeros((128, 128), F32))
    assert "transposes" in rules and "100% of TensorE's FLOPs" in rules["transposes"]
    assert "256 of them move fp32 data at four TensorE passes each" in rules["transposes"]
    bf16 = _rules(many_transposes, np.zeros((128, 128), ml_dtypes.bfloat16))
    assert "transposes" in bf16 and "fp32" not in bf16["transposes"]
    assert "transposes" not in _rules(hoisted_stationary, np.zeros((128, 128), F32),
                                       np.zeros((128, 512), F32))


def test_ordered_triggers_fire_on_a_python_loops_loads_only() -> None:
    x = np.random.default_rng(0).standard_normal((8, 128, 2048)).astype(F32)
    held = ncs.simulate(python_loop, x, functional=False, config=AS_WRITTEN)
    tips = {t.rule: t for t in advice(held)}
    assert "ordered_triggers" in tips
    tip = tips["ordered_triggers"]
    assert load_line(python_loop) in tip.lines
    assert "make the loop an nl.affine_range" in tip.text
    # the time at stake: about what the affine loop saves (an upper bound, within 1.5x)
    free = ncs.simulate(affine_loop, x, functional=False, config=AS_WRITTEN)
    saved = held.latency_ns - free.latency_ns
    assert saved > 0 and saved <= tip.saving_ns <= 1.5 * saved
    assert free.timing.trigger_held_ns == {} and "ordered_triggers" not in {
        t.rule for t in advice(free)}
    unordered = override(AS_WRITTEN, {"compiler": {"order_dma_triggers": False}}, "tests")
    assert "ordered_triggers" not in {t.rule for t in advice(
        ncs.simulate(python_loop, x, functional=False, config=unordered))}


def test_advice_is_in_the_text_summary() -> None:
    res = ncs.simulate(narrow_copy, np.zeros((128, 1024), F32), functional=False, config=AS_WRITTEN)
    text = report.summary_text(res)
    # (with trn1's DMA costs the engines' serialisation on the fixed DMA latency comes first)
    assert "advice     : " in text and "the DMAs at" in text
    quiet = ncs.simulate(wide_copy, np.zeros((128, 4096), F32), functional=False, config=AS_WRITTEN)
    assert advice(quiet) == [] and "advice     :" not in report.summary_text(quiet)
