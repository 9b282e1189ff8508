"""nl.abs / np.abs passed as a binary ALU operator (op0= of tensor_scalar and its reduce form)
is the ALU's abs_max: max(|data|, |operand|), so operand 0.0 gives |data|."""

from __future__ import annotations

import numpy as np

import neuroncore_sim as ncs
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl
from kernel_checks import expect_error
from neuroncore_sim.errors import KernelError

F32 = np.float32


def test_abs_as_op0_takes_the_absolute_value_and_its_row_max():
    def kernel(x):
        out = nl.ndarray((128, 33), dtype=nl.float32, buffer=nl.shared_hbm)
        res = nl.ndarray((128, 33), dtype=nl.float32, buffer=nl.sbuf)
        res[:, 0:32] = nisa.tensor_scalar_reduce(data=nl.load(x), op0=nl.abs, operand0=0.0,
                                                 reduce_op=nl.max, reduce_res=res[:, 32])
        nl.store(out, value=res)
        return out

    x = np.random.default_rng(2).standard_normal((128, 32)).astype(F32)
    out = ncs.simulate(kernel, x, timing=False).outputs[0]
    np.testing.assert_array_equal(out[:, :32], np.abs(x))
    np.testing.assert_array_equal(out[:, 32], np.abs(x).max(axis=1))

    def with_operand(x):
        out = nl.ndarray((128, 32), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, value=nisa.tensor_scalar(nl.load(x), np.abs, 0.5))
        return out

    out = ncs.simulate(with_operand, x, timing=False).outputs[0]
    np.testing.assert_array_equal(out, np.maximum(np.abs(x), 0.5))


def test_abs_is_no_reduction_operator():
    def kernel(x):
        nisa.tensor_reduce(np.abs, nl.load(x), axis=(1,))  # BAD

    expect_error(KernelError, r"tensor_reduce op: expected one of .*found 'abs'", kernel,
                 np.zeros((128, 32), F32))
