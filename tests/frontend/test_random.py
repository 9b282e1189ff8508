"""Randomness: nl.random_seed / nl.rand / nl.dropout / nisa.dropout are deterministic per
launch, follow the documented distributions, and cost what arch.md section 2 says."""

from __future__ import annotations


import numpy as np
import pytest

import neuroncore_sim as ncs
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl
from kernel_checks import expect_error
from neuroncore_sim.config import TRN1
from neuroncore_sim.errors import KernelError, ShapeError
from neuroncore_sim.values.semantics.rng import uniform

F32 = np.float32


def draws(seed, n_draws=2, shape=(128, 64)):
    """Kernel: optional seed, then ``n_draws`` nl.rand tiles stored side by side."""
    def kernel():
        out = nl.ndarray((n_draws, shape[0], shape[1]), dtype=nl.float32, buffer=nl.shared_hbm)
        if seed is not None:
            nl.random_seed(seed)
        for i in range(n_draws):
            nl.store(out[i], value=nl.rand(shape))
        return out
    return ncs.simulate(kernel, timing=False).outputs[0]


def test_rand_is_uniform_in_unit_interval_and_deterministic():
    a = draws(42)
    assert a.min() >= 0.0 and a.max() < 1.0
    assert abs(a.mean() - 0.5) < 0.01 and abs(a.var() - 1 / 12) < 0.005
    np.testing.assert_array_equal(a, draws(42))  # same kernel + seed: same values
    assert not np.array_equal(a[0], a[1])  # consecutive draws differ
    assert not np.array_equal(a, draws(7))  # another seed, other values
    np.testing.assert_array_equal(draws(None), draws(0))  # unseeded = seed 0
    np.testing.assert_array_equal(a[0], uniform(42, 0, (128, 64)))  # the documented generator


def test_reseeding_repeats_the_sequence_and_tile_seed_equals_int_seed():
    def kernel():
        out = nl.ndarray((3, 16, 32), dtype=nl.float32, buffer=nl.shared_hbm)
        seed = nl.full((1, 1), 42, dtype=nl.int32)
        nl.random_seed(seed)
        nl.store(out[0], value=nl.rand((16, 32)))
        nl.random_seed(42)
        nl.store(out[1], value=nl.rand((16, 32)))
        nl.store(out[2], value=nl.rand((16, 32)))
        return out
    out = ncs.simulate(kernel, timing=False).outputs[0]
    np.testing.assert_array_equal(out[0], out[1])
    assert not np.array_equal(out[1], out[2])


def test_dropout_zeroes_with_the_given_rate_and_keeps_the_rest():
    def kernel(x, p):
        out = nl.ndarray((2, 128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.load(x)
        nl.store(out[0], value=nl.dropout(t, rate=0.25))
        nl.store(out[1], value=nisa.dropout(t, nl.load(p)))  # per-partition probabilities
        return out
    x = np.random.default_rng(0).uniform(1, 2, (128, 512)).astype(F32)
    p = np.where(np.arange(128) < 64, 0.0, 1.0).astype(F32)[:, None]
    out = ncs.simulate(kernel, x, p, timing=False).outputs[0]
    zero = out[0] == 0
    assert abs(zero.mean() - 0.25) < 0.01
    np.testing.assert_array_equal(out[0][~zero], x[~zero])  # no rescaling
    np.testing.assert_array_equal(out[1][:64], x[:64])  # prob 0: all kept
    assert not out[1][64:].any()  # prob 1: all dropped
    u = uniform(0, 0, (128, 512))
    np.testing.assert_array_equal(zero, u < F32(0.25))


def test_dropout_keeps_integer_values_exactly():
    def kernel(x):
        out = nl.ndarray((16, 8), dtype=nl.int32, buffer=nl.shared_hbm)
        nl.store(out, value=nisa.dropout(nl.load(x), 0.5))
        return out
    x = np.arange(1, 129, dtype=np.int32).reshape(16, 8) + 2 ** 24 + 1  # not exact in fp32
    out = ncs.simulate(kernel, x, timing=False).outputs[0]
    kept = out != 0
    assert kept.any() and (~kept).any()
    np.testing.assert_array_equal(out[kept], x[kept])


def test_random_costs_and_dependencies():
    def kernel(x):
        out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.random_seed(3)
        small = nl.rand((128, 8))
        t = nl.load(x)
        d = nisa.dropout(t, 0.5)
        nl.store(out, value=nl.add(d, small[:, 0:1]))
        return out
    res = ncs.simulate(kernel, np.ones((128, 512), F32))
    ev = res.events.set_index("opcode")
    ns = 1 / TRN1.vector_clock_hz * 1e9
    assert ev.loc["dropout", "duration_ns"] == pytest.approx(512 * ns)  # max(MIN_II, N)
    # N = 8: MIN_II, plus the static overhead of depending on the previous VectorE instruction
    assert ev.loc["rand", "duration_ns"] == pytest.approx(
        (TRN1.min_ii_cycles + TRN1.vector_dependent_overhead_cycles) * ns)
    assert ev.loc["random_seed", "duration_ns"] == pytest.approx(TRN1.min_ii_cycles * ns)
    assert ev.loc["rand", "start_ns"] >= ev.loc["random_seed", "end_ns"]  # reads the state


def test_random_rules():
    def bad_prob(x):
        nisa.dropout(nl.load(x), 1.5)  # BAD

    def bad_prob_tile(x):
        nisa.dropout(nl.load(x), nl.load(x))  # BAD

    def bad_seed(x):
        nl.random_seed(nl.load(x))  # BAD

    def bad_shape():
        nl.rand((512,))  # BAD

    def bad_seed_value():
        nl.random_seed(1.5)  # BAD

    x = np.zeros((4, 4), F32)
    expect_error(KernelError, r"dropout prob: expected a probability in \[0, 1\], found 1.5",
                 bad_prob, x)
    expect_error(ShapeError, r"dropout prob: expected a scalar or a tile of shape \[4, 1\], "
                 r"found \[4, 4\]", bad_prob_tile, x)
    expect_error(ShapeError, r"random_seed seed: expected a \[1, 1\] tile", bad_seed, x)
    expect_error(ShapeError, r"rand: expected a tile shape", bad_shape)
    expect_error(KernelError, r"random_seed seed: expected a 32-bit integer, found 1.5",
                 bad_seed_value)


def test_timing_only_runs_record_random_instructions():
    def kernel():
        out = nl.ndarray((4, 4), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.random_seed(1)
        nl.store(out, value=nl.rand((4, 4)))
        return out
    res = ncs.simulate(kernel, functional=False)
    assert [e for e in res.events.opcode if e != "dma_copy"] == ["random_seed", "rand"]
