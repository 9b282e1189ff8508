"""nisa.scalar_tensor_tensor with operands that broadcast along free axes.

The instruction is a tensor_scalar step (operand0: a scalar or one value per partition,
``[P]`` / ``[P, 1]``, also a column of a block tile, ``s[g, :, 0]``) followed by a tensor_tensor
step with operand1; operand1 broadcasts with data along free axes of size 1 (stride-0 reads)
as tensor_tensor's operands do (docs/frontend.md "Broadcasting"). Partition sizes must match.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import neuroncore_sim as ncs
from neuroncore_sim.errors import ShapeError
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl

HERE = "test_scalar_tensor_tensor_broadcast.py"
RNG = np.random.default_rng(3)
F32 = np.float32


def store(t):
    out = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=t)
    return out


def bad_line(kernel) -> int:
    src, start = inspect.getsourcelines(kernel)
    return start + next(i for i, s in enumerate(src) if "# BAD" in s)


def test_operands_broadcast_along_free_axes():
    def kernel(a, b):
        x = nl.load(a)  # [128, 64]
        col = nl.load(b)  # [128, 1]
        sums = nl.ndarray((2, nl.par_dim(128), 1), dtype=nl.float32)
        sums[1] = nl.sum(x, axis=1, keepdims=True)
        r1 = nisa.scalar_tensor_tensor(data=x, op0=np.subtract, operand0=sums[1, :, 0],
                                       op1=np.multiply, operand1=col)  # [P, F] with [P, 1]
        r2 = nisa.scalar_tensor_tensor(data=x, op0=np.multiply, operand0=2.0, op1=np.add,
                                       operand1=col[:, 0], reverse1=True)  # with [P]
        x3 = x.reshape((128, 4, 16))
        r3 = nisa.scalar_tensor_tensor(data=x3, op0=np.add, operand0=col, op1=np.maximum,
                                       operand1=x3[:, :, 0:1])  # [P, 4, 16] with [P, 4, 1]
        r4 = nisa.scalar_tensor_tensor(data=col, op0=np.multiply, operand0=3.0, op1=np.subtract,
                                       operand1=x)  # data [P, 1] with operand1 [P, F]
        return store(r1), store(r2), store(r3), store(r4)

    a, b = RNG.random((128, 64), dtype=F32), RNG.random((128, 1), dtype=F32)
    out = ncs.trace(kernel, a, b).outputs
    s = a.sum(1, keepdims=True)
    np.testing.assert_allclose(out[0], (a - s) * b, rtol=1e-5)
    np.testing.assert_allclose(out[1], b + a * 2.0, rtol=1e-6)
    a3 = a.reshape(128, 4, 16)
    np.testing.assert_allclose(out[2], np.maximum(a3 + b[:, :, None], a3[:, :, 0:1]), rtol=1e-6)
    np.testing.assert_allclose(out[3], b * 3.0 - a, rtol=1e-6)
    assert out[3].shape == (128, 64)


def _free_sizes_differ(a):
    x = nl.load(a)
    nisa.scalar_tensor_tensor(data=x[:, 0:4], op0=np.add, operand0=1.0,  # BAD
                              op1=np.add, operand1=x)


def _one_partition_operand1(a):
    x = nl.load(a)
    nisa.scalar_tensor_tensor(data=x, op0=np.add, operand0=1.0,  # BAD
                              op1=np.add, operand1=x[0:1, :])


def _operand0_not_per_partition(a):
    x = nl.load(a)
    nisa.scalar_tensor_tensor(data=x, op0=np.add, operand0=x[:, 0:2],  # BAD
                              op1=np.add, operand1=x)


@pytest.mark.parametrize("kernel,message", [
    (_free_sizes_differ, r"scalar_tensor_tensor data and operand1: expected operands with the "
                         r"same partition size whose free axes are equal or 1 .* found "
                         r"\[128, 4\] and \[128, 8\]"),
    (_one_partition_operand1, r"found \[128, 8\] and \[1, 8\]"),
    (_operand0_not_per_partition, r"operand0: expected shape \[128, 1\], found \[128, 2\]"),
])
def test_shapes_that_do_not_broadcast_are_an_error(kernel, message):
    with pytest.raises(ShapeError, match=message) as info:
        ncs.trace(kernel, RNG.random((128, 8), dtype=F32))
    assert info.value.loc == f"{HERE}:{bad_line(kernel)}"
