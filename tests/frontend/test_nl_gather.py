"""nl.gather_flattened and nl.loop_reduce against numpy, their error paths and costs."""

from __future__ import annotations


import numpy as np
import pytest

import neuroncore_sim as ncs
import neuroncore_sim.nki.language as nl
from kernel_checks import expect_error
from neuroncore_sim.config import TRN1
from neuroncore_sim.errors import DTypeError, KernelError, ShapeError

F32 = np.float32
RNG = np.random.default_rng(3)


def gather(data, idx):
    out = nl.ndarray(idx.shape, dtype=data.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.gather_flattened(nl.load(data), nl.load(idx)))
    return out


def test_gather_flattened_docs_example():
    data = np.array([[[1., 2.], [3., 4.]], [[5., 6.], [7., 8.]]], F32)
    idx = np.array([[[0, 1], [1, 3]], [[3, 3], [1, 0]]], np.uint32)
    out = ncs.simulate(gather, data, idx).outputs[0]
    np.testing.assert_array_equal(out, [[[1., 2.], [2., 4.]], [[8., 8.], [6., 5.]]])


def test_gather_flattened_matches_take_along_axis_and_cost():
    data = RNG.standard_normal((128, 4, 64)).astype(F32)
    idx = RNG.integers(0, 256, (128, 300)).astype(np.uint32)
    res = ncs.simulate(gather, data, idx)
    ref = np.take_along_axis(data.reshape(128, -1), idx.astype(np.int64), axis=1)
    np.testing.assert_array_equal(res.outputs[0], ref)
    ev = res.events.set_index("opcode").loc["gather_flattened"]
    assert ev.engine == "gpsimd"
    assert ev.duration_ns == pytest.approx((TRN1.gpsimd_start_cycles + 300) / TRN1.gpsimd_clock_hz
                                           * 1e9)


def test_gather_flattened_out_of_range_is_loud_garbage():
    data = np.ones((2, 4), F32)
    out = ncs.simulate(gather, data, np.array([[0, 4], [3, 9]], np.uint32)).outputs[0]
    assert out[0, 0] == 1 and out[1, 0] == 1 and np.isnan(out[0, 1]) and np.isnan(out[1, 1])


def test_gather_flattened_rules():
    def bad_dtype(data, idx):
        nl.gather_flattened(nl.load(data), nl.load(idx))  # BAD

    def bad_parts(data, idx):
        nl.gather_flattened(nl.load(data), nl.load(idx[0:2]))  # BAD

    expect_error(DTypeError, r"gather_flattened indices: expected uint32, found int32", bad_dtype,
                 np.zeros((4, 4), F32), np.zeros((4, 4), np.int32))
    expect_error(ShapeError, r"same partitions; found 4 and 2", bad_parts, np.zeros((4, 4), F32),
                 np.zeros((4, 4), np.uint32))


def test_loop_reduce_matches_the_documented_tensor_tensor_loop():
    def kernel(a):
        out = nl.ndarray((2, 128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
        for i in nl.affine_range(2):
            for k in nl.affine_range(4):
                t = nl.load(a[i, k])
                b = nl.loop_reduce(t, op=np.maximum, loop_indices=[k], dtype=nl.float32)
                c = nl.loop_reduce(t, op=np.add, loop_indices=[k])
            nl.store(out[i], value=nl.add(b, c))
        return out
    a = RNG.standard_normal((2, 4, 128, 64)).astype(F32)
    res = ncs.simulate(kernel, a)
    ref = a.max(axis=1) + a.sum(axis=1, dtype=F32)
    np.testing.assert_allclose(res.outputs[0], ref, rtol=1e-5, atol=1e-5)
    ops = list(res.events[res.events.engine == "vector"].opcode)
    # per outer iteration: 2 copies (k = 0), 6 tensor_tensor (k = 1..3), 1 add
    assert ops.count("tensor_copy") == 4 and ops.count("tensor_tensor") == 14


def test_loop_reduce_rules():
    def bad_op(a):
        nl.loop_reduce(nl.load(a), op=np.divide, loop_indices=[0])  # BAD

    def bad_index(a):
        nl.loop_reduce(nl.load(a), op=np.add, loop_indices=["k"])  # BAD

    expect_error(KernelError, r"loop_reduce op: expected one of .*found 'divide'", bad_op,
                 np.zeros((4, 4), F32))
    expect_error(KernelError, r"loop_reduce loop_indices: expected loop indices", bad_index,
                 np.zeros((4, 4), F32))
