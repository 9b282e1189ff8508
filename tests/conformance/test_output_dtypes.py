"""Dtypes against numpy: an instruction's ``dtype=`` that differs from the tile its result is
assigned into (the result rounds to the instruction's dtype, then to the destination's, as the
reference's "data type to cast the output type to" says), dtypes of instructions that write a
given ``dst``, ``.view(dtype)`` across element sizes, byte-integer and fp8 matmul operands, and
``scalar_tensor_tensor`` operands that broadcast along free axes."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import neuroncore_sim as ncs
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl
from kernel_checks import expect_error
from neuroncore_sim.errors import DTypeError, ShapeError

from .helpers import apply, run

BF16, F16, F32 = ml_dtypes.bfloat16, np.float16, np.float32
#: values that bfloat16 and float16 round differently (1 + k/1000: 8 and 11 bits of mantissa)
X = (1 + np.arange(64, dtype=np.float32).reshape(8, 8) * 1e-3).astype(np.float32)
CAUSAL = np.tril(np.ones((8, 8), bool))


def _select_into(instr_dtype, buf_dtype):
    def kernel(a):
        out = nl.ndarray((8, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        buf = nl.ndarray((8, 8), dtype=buf_dtype, buffer=nl.sbuf)
        i_p, i_f = nl.mgrid[0:8, 0:8]
        buf[...] = nisa.affine_select(pred=(i_p >= i_f), on_true_tile=nl.load(a),
                                      on_false_value=-9984.0, dtype=instr_dtype)
        nl.store(out, value=nl.copy(buf, dtype=nl.float32))
        return out
    return kernel


@pytest.mark.api("nki.isa.affine_select")
@pytest.mark.parametrize("instr,buf", [(BF16, F32), (F32, BF16), (F16, BF16), (BF16, F16)],
                         ids=["bf16-into-fp32", "fp32-into-bf16", "fp16-into-bf16",
                              "bf16-into-fp16"])
def test_an_instruction_dtype_rounds_before_the_destination_dtype(instr, buf):
    want = np.where(CAUSAL, X, -9984.0).astype(F32).astype(instr).astype(buf).astype(F32)
    got = run(_select_into(instr, buf), X)
    np.testing.assert_array_equal(got, want)
    if instr != F32:  # rounding to the destination's dtype alone would give other values
        assert not np.array_equal(got, np.where(CAUSAL, X, -9984.0).astype(buf).astype(F32))


@pytest.mark.api("nki.language.exp")
def test_an_nl_dtype_into_a_wider_tile_keeps_its_rounding():
    def kernel(a):
        out = nl.ndarray((8, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        buf = nl.ndarray((8, 8), dtype=nl.float32, buffer=nl.sbuf)
        buf[...] = nl.multiply(nl.load(a), 1.0, dtype=nl.bfloat16)
        nl.store(out, value=buf)
        return out
    np.testing.assert_array_equal(run(kernel, X), X.astype(BF16).astype(F32))


@pytest.mark.api("nki.isa.affine_select")
def test_an_instruction_dtype_equal_to_the_destination_writes_straight_in():
    """No copy is added when the dtypes agree (one GpSimd instruction and the DMAs)."""
    r = ncs.simulate(_select_into(F32, F32), X, timing=False)
    assert sum(i.opcode.value == "tensor_copy" for i in r.program.instructions) == 1  # nl.copy
    r = ncs.simulate(_select_into(BF16, F32), X, timing=False)
    assert sum(i.opcode.value == "tensor_copy" for i in r.program.instructions) == 2


@pytest.mark.api("nki.isa.tensor_copy_predicated")
def test_a_dtype_other_than_a_given_dst_is_an_error():
    def kernel(a):
        t = nl.load(a)
        dst = nl.zeros((8, 8), dtype=nl.float32, buffer=nl.sbuf)
        pred = nl.zeros((8, 8), dtype=nl.uint8, buffer=nl.sbuf)
        nisa.tensor_copy_predicated(src=t, dst=dst, predicate=pred, dtype=nl.bfloat16)  # BAD
    expect_error(DTypeError, r"tensor_copy_predicated dtype: the result is written into dst; "
                 r"expected float32, found bfloat16", kernel, X)


# --- .view(dtype) across element sizes --------------------------------------------------------
@pytest.mark.api("nki.tensor.view")
def test_view_across_element_sizes_reads_and_writes_the_same_bytes():
    """As a quantizing kernel writes its fp32 scale into the bytes of an fp8 / uint8 output:
    a [P, 4F] uint8 HBM output viewed as [P, F] float32, and an fp32 tile viewed as bytes."""
    x = np.random.default_rng(7).normal(size=(8, 4)).astype(F32)

    def kernel(a):
        out = nl.ndarray((2, 8, 16), dtype=nl.uint8, buffer=nl.shared_hbm)
        t = nl.load(a)
        nl.store(out[0].view(nl.float32), value=t)
        nl.store(out[1], value=nl.copy(t).view(nl.uint8))
        return out
    got = run(kernel, x)
    np.testing.assert_array_equal(got[0], x.view(np.uint8))
    np.testing.assert_array_equal(got[1], x.view(np.uint8))


@pytest.mark.api("nki.tensor.view")
def test_view_whose_last_dim_bytes_do_not_divide_is_an_error():
    def kernel(a):
        nl.load(a).view(nl.float32)  # BAD: 6 bytes per row
    expect_error(ShapeError, r"view of bfloat16 \[8, 3\] .* as float32 .*6 bytes, "
                 r"expected a multiple of 4", kernel,
                 np.zeros((8, 3), BF16))


# --- matmul operands of one byte ---------------------------------------------------------------
@pytest.mark.api("nki.isa.nc_matmul", "nki.language.float8_e4m3", "nki.language.uint8",
                 "nki.language.int8", "nki.language.float8_e5m2")
@pytest.mark.parametrize("dt", [np.uint8, np.int8, ml_dtypes.float8_e4m3, ml_dtypes.float8_e5m2])
def test_one_byte_matmul_operands_accumulate_in_float32(dt):
    rng = np.random.default_rng(8)
    a = rng.integers(0 if dt is np.uint8 else -8, 9, (32, 16)).astype(dt)
    b = rng.integers(0 if dt is np.uint8 else -8, 9, (32, 24)).astype(dt)

    def kernel(x, y):
        out = nl.ndarray((16, 24), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, value=nl.copy(nisa.nc_matmul(nl.load(x), nl.load(y))))
        return out
    np.testing.assert_array_equal(run(kernel, a, b), a.astype(F32).T @ b.astype(F32))


@pytest.mark.api("nki.isa.nc_matmul", "nki.language.int32")
def test_a_wider_integer_matmul_operand_is_an_error():
    def kernel(a):
        t = nl.load(a)
        nisa.nc_matmul(t, t)  # BAD
    expect_error(DTypeError, r"nc_matmul stationary: expected a TensorE input dtype .*found int32",
                 kernel, np.ones((32, 16), np.int32))


# --- scalar_tensor_tensor broadcasting along free axes -----------------------------------------
@pytest.mark.api("nki.isa.scalar_tensor_tensor")
@pytest.mark.parametrize("data_shape,op1_shape", [((8, 4, 6), (8, 4)), ((8, 4), (8, 4, 6)),
                                                  ((8, 6), (8,)), ((8, 1), (8, 6))])
def test_scalar_tensor_tensor_broadcasts_free_axes_of_size_one(data_shape, op1_shape):
    rng = np.random.default_rng(9)
    d, o = rng.normal(size=data_shape).astype(F32), rng.normal(size=op1_shape).astype(F32)

    def pad(v, n):  # NKI aligns at the partition dim: size-1 free axes appended
        return v.reshape(v.shape + (1,) * (n - v.ndim))
    n = max(d.ndim, o.ndim)
    want = (pad(d, n) * 2.0) - pad(o, n)
    got = apply(lambda s, t: nisa.scalar_tensor_tensor(data=s, op0=nl.multiply, operand0=2.0,
                                                       op1=nl.subtract, operand1=t), d, o)
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.api("nki.isa.scalar_tensor_tensor")
def test_scalar_tensor_tensor_operands_that_do_not_broadcast_are_an_error():
    def kernel(a, b):
        nisa.scalar_tensor_tensor(data=nl.load(a), op0=nl.multiply, operand0=2.0,  # BAD
                                  op1=nl.add, operand1=nl.load(b))
    expect_error(ShapeError, r"scalar_tensor_tensor.*\[8, 6\].*\[8, 4\]", kernel,
                 np.zeros((8, 6), F32), np.zeros((8, 4), F32))


@pytest.mark.api("nki.language.loop_reduce")
def test_loop_reduce_dtype_must_be_its_destinations():
    """nl.loop_reduce reads its destination, so it cannot round through a dtype of its own."""
    x = np.random.default_rng(10).normal(size=(8, 8)).astype(F32)

    def good(a):
        out = nl.ndarray((8, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        acc = nl.zeros((8, 8), nl.float32, buffer=nl.sbuf)
        for i in nl.affine_range(2):
            acc[...] = nl.loop_reduce(nl.load(a), np.add, loop_indices=[i], dtype=nl.float32)
        nl.store(out, value=acc)
        return out

    def bad(a):
        acc = nl.zeros((8, 8), nl.float32, buffer=nl.sbuf)
        for i in nl.affine_range(2):
            acc[...] = nl.loop_reduce(nl.load(a), np.add, loop_indices=[i],  # BAD
                                      dtype=nl.bfloat16)
    np.testing.assert_allclose(run(good, x), 2 * x, rtol=1e-6)
    expect_error(DTypeError, r"nl.loop_reduce\): dtype= must be the destination's; expected "
                 r"float32, found bfloat16", bad, x)
