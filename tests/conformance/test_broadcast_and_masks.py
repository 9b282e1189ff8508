"""Properties across nl / nisa: partition-aligned broadcasting of binary nl functions, and masks
on nisa instructions (masked-out elements of the destination keep their values)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import neuroncore_sim as ncs
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl

from kernel_checks import expect_error
from neuroncore_sim.errors import AccessError, UnsupportedError

from .helpers import apply, run

OPS = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "maximum": np.maximum,
       "minimum": np.minimum}


@pytest.mark.api("nki.language.add", "nki.language.subtract", "nki.language.multiply",
                 "nki.language.maximum", "nki.language.minimum")
@settings(max_examples=25, deadline=None)
@given(op=st.sampled_from(sorted(OPS)), p=st.integers(1, 16), f=st.integers(1, 12),
       form=st.sampled_from(["same", "column", "row", "one", "vector"]), swap=st.booleans(),
       seed=st.integers(0, 2 ** 16))
def test_binary_broadcasting_is_partition_aligned(op, p, f, form, swap, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(p, f)).astype(np.float32)
    yshape = {"same": (p, f), "column": (p, 1), "row": (1, f), "one": (1, 1), "vector": (p,)}[form]
    y = rng.normal(size=yshape).astype(np.float32)
    # NKI aligns shapes at the partition dim: a [P] operand is [P, 1], not numpy's [1, P].
    yn = y.reshape(p, 1) if form == "vector" else y
    a, b = (y, x) if swap else (x, y)
    an, bn = (yn, x) if swap else (x, yn)
    got = apply(getattr(nl, op), a, b)
    np.testing.assert_allclose(got, OPS[op](an, bn), rtol=1e-6)


def _masked(fn, x, rows, cols):
    def k(t):
        dst = nl.full(t.shape, -7.0, dtype=nl.float32, buffer=nl.sbuf)
        i_p, i_f = nl.mgrid[0:t.shape[0], 0:t.shape[1]]
        dst[i_p, i_f] = fn(t[i_p, i_f], (i_p < rows) & (i_f < cols))
        return dst
    return apply(k, x)


MASKED = {
    "tensor_scalar": (lambda t, m: nisa.tensor_scalar(t, op0=nl.add, operand0=1.0, mask=m),
                      lambda x: x + 1),
    "activation": (lambda t, m: nisa.activation(op=nl.exp, data=t, mask=m), np.exp),
    "tensor_copy": (lambda t, m: nisa.tensor_copy(t, mask=m), lambda x: x),
    "reciprocal": (lambda t, m: nisa.reciprocal(t, mask=m), lambda x: 1 / x),
    "tensor_tensor": (lambda t, m: nisa.tensor_tensor(t, t, op=nl.multiply, mask=m),
                      lambda x: x * x),
}


@pytest.mark.parametrize("name", sorted(MASKED))
def test_nisa_mask_writes_only_the_masked_in_elements(name, request):
    request.node.add_marker(pytest.mark.api(f"nki.isa.{name}"))
    fn, ref = MASKED[name]
    x = np.random.default_rng(1).uniform(0.5, 2, (16, 12)).astype(np.float32)
    got = _masked(fn, x, 5, 7)
    want = np.full_like(x, -7.0)
    want[:5, :7] = ref(x[:5, :7])
    np.testing.assert_allclose(got, want, rtol=1e-6)


# --- masks by subscript, chained, and conditions that fold to a Python bool -----------------------
def _conv_like(w_f: int, n_keep: int):
    """A conv-style accumulation over filter columns ``wf``, the moving operand restricted as
    NKI's conv kernels write it: ``img[k < K][n < N][wf < W_f]`` (the last a Python bool)."""
    def kernel(w, x):
        out = nl.ndarray((32, 4, 16), dtype=nl.float32, buffer=nl.shared_hbm)
        acc = nl.zeros((32, 4, 16), nl.float32, buffer=nl.psum)
        i_c, i_k, i_n = nl.mgrid[0:32, 0:4, 0:16]
        for wf in nl.affine_range(4):
            img = nl.load(x[wf])
            acc[...] += nisa.nc_matmul(nl.load(w[wf]), img[i_k < 3][i_n < n_keep][wf < w_f])
        nl.store(out, value=nl.copy(acc))
        return out
    return kernel


@pytest.mark.api("nki.isa.nc_matmul")
def test_a_subscript_that_folds_to_a_bool_keeps_all_or_drops_the_instruction():
    rng = np.random.default_rng(5)
    w = rng.normal(size=(4, 32, 32)).astype(np.float32)
    x = rng.normal(size=(4, 32, 4, 16)).astype(np.float32)
    # (simulate, not run: the fast and reference executors sum a PSUM accumulation chain in
    # different orders, so they agree to rounding only)
    got = ncs.simulate(_conv_like(3, 10), w, x, timing=False).outputs[0]
    want = np.zeros((32, 4, 16), np.float32)  # the zeros acc held where nothing was kept
    want[:, :3, :10] = np.einsum("wcm,wckn->mkn", w[:3], x[:3])[:, :3, :10]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.api("nki.language.exp")
def test_true_and_false_subscripts_of_an_element_wise_operand():
    x = np.random.default_rng(6).normal(size=(8, 6)).astype(np.float32)

    def k(a):
        out = nl.ndarray((8, 6), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.load(a)
        i_f = nl.arange(6)[None, :]
        n = 2
        keep = nl.full((8, 6), -1.0, dtype=nl.float32, buffer=nl.sbuf)
        keep[...] = nl.exp(t[n < 3][i_f < 4][i_f >= 1])  # True, then a box [1, 4)
        keep[...] = nl.exp(t[n > 3])  # False: dropped, keep is unchanged
        nl.store(out, value=keep)
        return out
    want = np.full((8, 6), -1.0, np.float32)
    want[:, 1:4] = np.exp(x[:, 1:4])
    np.testing.assert_allclose(run(k, x), want, rtol=1e-6)


@pytest.mark.api("nki.language.exp")
def test_a_chained_subscript_that_is_not_a_rectangle_or_not_a_mask_is_an_error():
    x = np.zeros((8, 6), np.float32)

    def triangle(a):
        i_p, i_f = nl.arange(8)[:, None], nl.arange(6)[None, :]
        nl.exp(nl.load(a)[True][i_f < i_p])  # BAD

    def bool_array(a):
        nl.exp(nl.load(a)[np.array([True, False])])  # BAD
    expect_error(UnsupportedError, r"tile\[mask\]: .* \[8, 6\] .*non-rectangular predicate",
                 triangle, x)
    expect_error(AccessError, r"index: expected an int, slice, nl.ds, nl.arange or nl.mgrid "
                 r"expression, found ndarray", bool_array, x)
