"""Properties across nl / nisa: partition-aligned broadcasting of binary nl functions, and masks
on nisa instructions (masked-out elements of the destination keep their values)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl

from .helpers import apply

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
