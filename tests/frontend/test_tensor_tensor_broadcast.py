"""nisa.tensor_tensor broadcasts along free axes (stride-0 reads): the reference points to
tensor_scalar as the faster way to broadcast along the free dimension, so tensor_tensor does it
too, as conv kernels use it to add a per-channel bias ``b[:, 0]`` to a PSUM row. The partition
sizes must still be equal."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import neuroncore_sim as ncs
from neuroncore_sim.errors import ShapeError
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl

RNG = np.random.default_rng(7)


def _bias_rows(x, b):  # x: [P, F], b: [P, 1]: x + b per partition, both operand orders
    out = nl.ndarray(x.shape, nl.float32, buffer=nl.shared_hbm)
    out2 = nl.ndarray(x.shape, nl.float32, buffer=nl.shared_hbm)
    xs, bs = nl.load(x), nl.load(b)
    nl.store(out, value=nisa.tensor_tensor(xs, bs[:, 0], op=nl.add))  # [P, F] with [P]
    nl.store(out2, value=nisa.tensor_tensor(bs, xs, op=nl.subtract))  # [P, 1] with [P, F]
    return out, out2


def test_per_partition_operand_broadcasts():
    x = RNG.random((128, 14), dtype=np.float32)
    b = RNG.random((128, 1), dtype=np.float32)
    got, got2 = ncs.trace(_bias_rows, x, b).outputs
    np.testing.assert_array_equal(got, x + b)
    np.testing.assert_array_equal(got2, b - x)


def _middle_axis(x, y):  # x: [P, 4, 8], y: [P, 4]: y broadcast along the innermost axis
    out = nl.ndarray(x.shape, nl.float32, buffer=nl.shared_hbm)
    nl.store(out, value=nisa.tensor_tensor(nl.load(x), nl.load(y), op=nl.multiply))
    return out


def test_broadcast_along_an_inner_free_axis():
    x = RNG.random((32, 4, 8), dtype=np.float32)
    y = RNG.random((32, 4), dtype=np.float32)
    np.testing.assert_array_equal(ncs.trace(_middle_axis, x, y).outputs[0], x * y[:, :, None])


def _partitions_differ(x, b):
    return nisa.tensor_tensor(nl.load(x), nl.load(b), op=nl.add)  # BAD: 128 vs 1 partitions


def _free_sizes_differ(x, b):
    return nisa.tensor_tensor(nl.load(x), nl.load(b[:, 0:3]), op=nl.add)  # BAD: 8 vs 3


@pytest.mark.parametrize("k,bshape,found", [
    (_partitions_differ, (1, 8), r"\[128, 8\] and \[1, 8\]"),
    (_free_sizes_differ, (128, 8), r"\[128, 8\] and \[128, 3\]"),
])
def test_errors(k, bshape, found):
    with pytest.raises(ShapeError, match=r"tensor_tensor: expected operands with the same "
                                         r"partition size whose free axes are equal or 1 "
                                         r"\(broadcast along free axes\), found " + found) as info:
        ncs.trace(k, np.zeros((128, 8), np.float32), np.zeros(bshape, np.float32))
    src, start = inspect.getsourcelines(k)
    bad = start + next(i for i, line in enumerate(src) if "# BAD" in line)
    assert info.value.loc == f"test_tensor_tensor_broadcast.py:{bad}"


@settings(max_examples=25, deadline=None)
@given(p=st.sampled_from([1, 5, 128]), a=st.integers(1, 4), b=st.integers(1, 6),
       ones=st.sampled_from([(1,), (2,), (1, 2)]), drop=st.booleans(), first=st.booleans())
def test_free_broadcast_matches_numpy(p, a, b, ones, drop, first):
    """Any free axes of one operand set to 1 (or a per-partition [P] operand) broadcast like
    numpy with the partition dim aligned, whichever operand is data1."""
    small = tuple(1 if i in ones else n for i, n in enumerate((p, a, b)))
    if drop:
        small = (p,)

    def k(x, y):
        out = nl.ndarray((p, a, b), nl.float32, buffer=nl.shared_hbm)
        xs, ys = nl.load(x), nl.load(y)
        r = nisa.tensor_tensor(xs, ys, op=nl.subtract) if first else \
            nisa.tensor_tensor(ys, xs, op=nl.subtract)
        nl.store(out, value=r)
        return out

    x = RNG.random((p, a, b), dtype=np.float32)
    y = RNG.random(small, dtype=np.float32)
    y3 = y.reshape(small + (1,) * (3 - len(small)))
    want = x - y3 if first else y3 - x
    np.testing.assert_array_equal(ncs.trace(k, x, y).outputs[0], want)
