"""Mistakes seen in kernels written from other kernels (seed-style): each is a KernelError at the
kernel's line whose message says what was expected and what was found, and the correct form
runs against numpy."""

from __future__ import annotations

import numpy as np
import pytest

import neuroncore_sim as ncs
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl
from kernel_checks import expect_error
from neuroncore_sim.errors import KernelError

from .helpers import run

RNG = np.random.default_rng(11)
A = RNG.normal(size=(32, 16)).astype(np.float32)
B = RNG.normal(size=(32, 24)).astype(np.float32)


@pytest.mark.api("nki.isa.nc_matmul")
def test_an_accumulator_as_a_third_positional_argument_of_nc_matmul():
    def bad(a, b):
        acc = nl.zeros((16, 24), nl.float32, buffer=nl.psum)
        nisa.nc_matmul(nl.load(a), nl.load(b), acc)  # BAD

    def good(a, b):
        out = nl.ndarray((16, 24), dtype=nl.float32, buffer=nl.shared_hbm)
        acc = nl.zeros((16, 24), nl.float32, buffer=nl.psum)
        acc += nisa.nc_matmul(nl.load(a), nl.load(b))
        acc += nisa.nc_matmul(nl.load(a), nl.load(b))
        nl.store(out, value=nl.copy(acc))
        return out
    e = expect_error(KernelError, r"nisa.nc_matmul: expected 2 positional arguments "
                     r"\(stationary, moving\), found 3: the last, a psum tile \[16, 24\] "
                     r"float32, looks like an accumulator; .*`acc \+= nisa.nc_matmul\("
                     r"stationary, moving\)`", bad, A, B)
    assert "newer NKI API" not in e.message
    # (trace, not run: the fast and reference executors sum a PSUM accumulation chain in
    # different orders, so they agree to rounding only)
    got = ncs.trace(good, A, B).outputs[0]
    np.testing.assert_allclose(got, 2 * (A.T @ B), rtol=1e-5, atol=1e-5)


@pytest.mark.api("nki.language.affine_range", "nki.language.par_dim")
@pytest.mark.parametrize("loop", ["affine_range", "sequential_range", "static_range"])
def test_a_par_dim_loop_bound_is_an_error(loop):
    rng = getattr(nl, loop)

    def bad(a):
        for i in rng(nl.par_dim(4)):  # BAD
            nl.load(a[i])

    def good(a):
        out = nl.ndarray((4, 16), dtype=nl.float32, buffer=nl.shared_hbm)
        for i in rng(4):
            nl.store(out[i], value=nl.load(a[i]))
        return out
    expect_error(KernelError, rf"nl.{loop}: expected integer bounds, found nl.par_dim\(4\); "
                 rf"nl.par_dim marks the partition dim of a tile's shape .*write "
                 rf"nl.{loop}\(4\)", bad, A)
    np.testing.assert_array_equal(run(good, A), A[:4])


@pytest.mark.api("nki.isa.tensor_reduce")
def test_tensor_reduce_given_op_twice():
    def bad_positional(a):
        nisa.tensor_reduce(np.add, nl.load(a), 1, op=np.add)  # BAD

    def bad_data_first(a):
        nisa.tensor_reduce(nl.load(a), op=np.add, axis=1)  # BAD

    def good(a):
        out = nl.ndarray((32, 1), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, value=nisa.tensor_reduce(np.add, nl.load(a), axis=1, keepdims=True))
        return out
    expect_error(KernelError, r"nisa.tensor_reduce: op given twice: as positional argument 1 "
                 r"\(found add\) and as op=; expected it once \(the positional order is op, "
                 r"data, axis", bad_positional, A)
    expect_error(KernelError, r"nisa.tensor_reduce: op given twice: as positional argument 1 "
                 r"\(found a sbuf tile \[32, 16\] float32\) and as op=", bad_data_first, A)
    np.testing.assert_allclose(run(good, A), A.sum(axis=1, keepdims=True), rtol=1e-5)
