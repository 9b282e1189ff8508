"""nisa.tensor_reduce over free axes that are not adjacent (``axis=(1, 3)``, ``[2, 4]``), as
max-pooling kernels pass it: the compiler lists the reduced axes last in the access pattern
(AWS, aws-neuron-sdk issue 1257), so it is one instruction; the partition axis stays out."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import neuroncore_sim as ncs
from neuroncore_sim.errors import KernelError
from neuroncore_sim.program.ir import Opcode
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl

RNG = np.random.default_rng(11)


def _maxpool(a):  # a: [C, H, W] -> 2x2 max-pool through a 4-D view of a tile
    c, h, w = a.shape
    out = nl.ndarray((c, h // 2, w // 2), a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a)
    v = t.reshape((c, h // 2, 2, w // 2, 2))
    nl.store(out, value=nisa.tensor_reduce(nl.max, v, axis=(2, 4)))
    return out


def test_maxpool_axes_2_and_4():
    a = RNG.random((16, 6, 8), dtype=np.float32)
    launch = ncs.trace(_maxpool, a)
    np.testing.assert_array_equal(launch.outputs[0], a.reshape(16, 3, 2, 4, 2).max(axis=(2, 4)))
    red = [i for i in launch.program.instructions if i.opcode is Opcode.TENSOR_REDUCE]
    assert len(red) == 1 and red[0].attrs["axes"] == (3, 4)


@settings(max_examples=20, deadline=None)
@given(axes=st.sampled_from([(1, 3), (2,), (1, 2), (1, 2, 3), (2, 3), [3, 1]]),
       keepdims=st.booleans(), op=st.sampled_from(["add", "max", "min"]))
def test_any_free_axes_match_numpy(axes, keepdims, op):
    nl_op = {"add": nl.add, "max": nl.maximum, "min": nl.minimum}[op]

    def k(a):
        t = nl.load(a)
        r = nisa.tensor_reduce(nl_op, t, axis=axes, keepdims=keepdims)
        out = nl.ndarray(r.shape, a.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=r)
        return out

    a = RNG.random((8, 3, 4, 5), dtype=np.float32)
    want = {"add": np.sum, "max": np.max, "min": np.min}[op](a, axis=tuple(axes),
                                                             keepdims=keepdims)
    np.testing.assert_allclose(ncs.trace(k, a).outputs[0], want, rtol=1e-5)


def _partition_axis(a):
    t = nl.load(a)
    return nisa.tensor_reduce(nl.add, t, axis=(0, 2))  # BAD: the partition axis


def test_partition_axis_is_an_error():
    with pytest.raises(KernelError, match=r"tensor_reduce axis: expected free axes \(>= 1\), "
                                          r"found \[0, 2\]") as info:
        ncs.trace(_partition_axis, np.zeros((8, 3, 4), np.float32))
    src, start = inspect.getsourcelines(_partition_axis)
    bad = start + next(i for i, line in enumerate(src) if "# BAD" in line)
    assert info.value.loc == f"test_isa_reduce_axes.py:{bad}"
