"""nl reductions over free axes that are not adjacent (``nl.sum(x, axis=[2, 4])``, as average
pooling does): one tensor_reduce over an access pattern that lists the reduced axes last.
nisa.tensor_reduce does the same (tests/frontend/test_isa_reduce_axes.py)."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import neuroncore_sim as ncs
from neuroncore_sim.errors import UnsupportedError
from neuroncore_sim.program.ir import Opcode
import neuroncore_sim.nki.language as nl

RNG = np.random.default_rng(5)


def test_pooling_sum_over_axes_2_and_4():
    def k(a):  # a: [C, H, W], 2x2 windows
        c, h, w = a.shape
        out = nl.ndarray((c, h // 2, w // 2), a.dtype, buffer=nl.shared_hbm)
        i0, i1, i2, i3, i4 = nl.mgrid[0:c, 0:h // 2, 0:2, 0:w // 2, 0:2]
        t = nl.load(a)
        nl.store(out, value=nl.sum(t[i0, 2 * i1 + i2, 2 * i3 + i4], axis=[2, 4]) / 4)
        return out

    a = RNG.random((16, 8, 12), dtype=np.float32)
    launch = ncs.trace(k, a)
    want = a.reshape(16, 4, 2, 6, 2).mean(axis=(2, 4))
    np.testing.assert_allclose(launch.outputs[0], want, rtol=1e-6)
    red = [i for i in launch.program.instructions if i.opcode is Opcode.TENSOR_REDUCE]
    assert len(red) == 1 and red[0].attrs["axes"] == (3, 4)
    assert red[0].srcs["data"].shape == (16, 4, 6, 2, 2)  # the same elements, reduced axes last


@settings(max_examples=25, deadline=None)
@given(st.sets(st.integers(1, 3), min_size=1), st.booleans(),
       st.sampled_from(["sum", "max", "min", "mean"]))
def test_any_free_axes_match_numpy(axes, keepdims, fn):
    axes = sorted(axes)

    def k(a):
        t = nl.load(a)
        r = getattr(nl, fn)(t, axis=axes, keepdims=keepdims)
        out = nl.ndarray(r.shape, nl.float32, buffer=nl.shared_hbm)
        nl.store(out, value=r)
        return out

    a = RNG.random((8, 3, 4, 5), dtype=np.float32)
    want = getattr(np, fn)(a, axis=tuple(axes), keepdims=keepdims)
    np.testing.assert_allclose(ncs.trace(k, a).outputs[0], want, rtol=1e-5)


def _masked_apart(a):  # a triangle over the reduced axes: no rectangle to shrink to
    t = nl.load(a)
    i, j = nl.arange(3)[None, :, None, None], nl.arange(5)[None, None, None, :]
    return nl.sum(t, axis=[1, 3], mask=(i < j))  # BAD


@pytest.mark.parametrize("k,cls,message", [
    (_masked_apart, UnsupportedError, r"tensor_reduce: a mask that is not a rectangle over the "
                                      r"input \[8, 4, 3, 5\] is not supported"),
])
def test_errors(k, cls, message):
    with pytest.raises(cls, match=message) as info:
        ncs.trace(k, np.zeros((8, 3, 4, 5), np.float32))
    src, start = inspect.getsourcelines(k)
    bad = start + next(i for i, line in enumerate(src) if "# BAD" in line)
    assert info.value.loc == f"test_reduce_axes.py:{bad}"


def test_masked_reduction_over_non_adjacent_axes():
    """A ragged pooling window: rows < 6 of each partition and columns < 3 of each window."""
    def k(a):  # a: [8, 3, 4, 5]; sum over axes 1 and 3 where p < 6, axis-1 index < 2, j < 3
        t = nl.load(a)
        p, i, _, j = nl.mgrid[0:8, 0:3, 0:4, 0:5]
        s = nl.sum(t, axis=[1, 3], mask=(p < 6) & (i < 2) & (j < 3))
        out = nl.ndarray((6, 4), nl.float32, buffer=nl.shared_hbm)
        nl.store(out, value=s[0:6])
        return out

    a = RNG.random((8, 3, 4, 5), dtype=np.float32)
    want = a[:6, :2, :, :3].sum(axis=(1, 3))
    np.testing.assert_allclose(ncs.trace(k, a).outputs[0], want, rtol=1e-5)
