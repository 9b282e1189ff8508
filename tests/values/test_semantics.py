"""Differential tests of ``semantics.py``: every opcode's numpy meaning against a plain reference.

Most tests run one hand-built instruction through the :class:`Executor` (so views, casts and
masks are exercised too) and compare with numpy written independently here; a few call the
semantics functions directly. Hypothesis drives the elementwise operators over random shapes
and dtypes.
"""

from __future__ import annotations

import itertools
import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neuroncore_sim import dtypes as D
from neuroncore_sim.values.semantics import core as S
from neuroncore_sim.config import TRN1
from neuroncore_sim.errors import DTypeError, KernelError, ShapeError, UnsupportedError
from neuroncore_sim.values.execute import Executor
from neuroncore_sim.program.ir import (Access, Affine, Engine, Instruction, MemSpace, Opcode, Predicate,
                               TensorDecl)

_ids = itertools.count()
F32 = np.float32
RNG = np.random.default_rng(1234)


# --- helpers -----------------------------------------------------------------------------------

def decl(shape, dtype=D.float32, space=MemSpace.SBUF, pa=0, name="t") -> TensorDecl:
    """A tensor declaration with a fresh id."""
    return TensorDecl(next(_ids), name, space, tuple(shape), np.dtype(dtype), pa)


def whole(t: TensorDecl) -> Access:
    """An access to all of ``t``, partition dim first, the other dims in declared order."""
    order = [t.partition_axis] + [d for d in range(len(t.shape)) if d != t.partition_axis]
    return Access(t, 0, tuple((t.strides[d], t.shape[d]) for d in order))


def run(opcode, srcs: dict, out_shape, out_dtype=D.float32, *, engine=Engine.VECTOR,
        extra: dict | None = None, mask=None, **attrs):
    """Execute one instruction on fresh tiles holding ``srcs``; return all destination values."""
    ex = Executor(TRN1)
    src_acc = {}
    for role, values in srcs.items():
        values = np.asarray(values)
        t = decl(values.shape, values.dtype, name=role)
        ex.declare(t, values)
        src_acc[role] = whole(t)
    dsts = {"out": (out_shape, out_dtype)} | (extra or {})
    dst_acc = {}
    for role, (shape, dt) in dsts.items():
        t = decl(shape, dt, name=role)
        ex.declare(t, None)
        dst_acc[role] = whole(t)
    ex.execute(Instruction(0, opcode, engine, dst_acc, src_acc, attrs, None, mask))
    got = {role: ex.read(a) for role, a in dst_acc.items()}
    return got if extra else got["out"]


def rand(shape, dtype=F32, lo=-3.0, hi=3.0) -> np.ndarray:
    """Uniform random values of a dtype."""
    return RNG.uniform(lo, hi, size=shape).astype(dtype)


# --- ALU operators -----------------------------------------------------------------------------

REF_BINARY = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
    "maximum": np.maximum, "minimum": np.minimum, "power": np.power, "mod": np.mod,
    "fmod": np.fmod, "abs_max": lambda a, b: np.maximum(abs(a), abs(b)),
    "equal": lambda a, b: (a == b) * 1.0, "not_equal": lambda a, b: (a != b) * 1.0,
    "greater": lambda a, b: (a > b) * 1.0, "greater_equal": lambda a, b: (a >= b) * 1.0,
    "less": lambda a, b: (a < b) * 1.0, "less_equal": lambda a, b: (a <= b) * 1.0,
    "logical_and": lambda a, b: ((a != 0) & (b != 0)) * 1.0,
    "logical_or": lambda a, b: ((a != 0) | (b != 0)) * 1.0,
    "logical_xor": lambda a, b: ((a != 0) ^ (b != 0)) * 1.0,
}


@pytest.mark.parametrize("op", sorted(REF_BINARY))
def test_tensor_tensor_every_arith_op(op):
    a, b = rand((8, 16)), rand((8, 16), lo=0.5, hi=2.0)  # b > 0: power, mod and divide defined
    a[0, :4] = b[0, :4]  # some equal pairs for the comparisons
    a[1, :4] = 0.0  # some zeros for the logical ops
    with np.errstate(all="ignore"):
        want = REF_BINARY[op](a, b).astype(F32)
    np.testing.assert_allclose(run(Opcode.TENSOR_TENSOR, {"data1": a, "data2": b}, (8, 16), op=op),
                               want, rtol=1e-6)


def test_aliases_and_unknown_operator():
    a, b = rand((4, 4)), rand((4, 4))
    np.testing.assert_array_equal(
        run(Opcode.TENSOR_TENSOR, {"data1": a, "data2": b}, (4, 4), op="max"), np.maximum(a, b))
    with pytest.raises(KernelError, match="ALU operator"):
        run(Opcode.TENSOR_TENSOR, {"data1": a, "data2": b}, (4, 4), op="hypot")


@pytest.mark.parametrize("op,ref", [("rsqrt", lambda x: 1 / np.sqrt(x)), ("abs", np.abs),
                                    ("reciprocal", lambda x: 1 / x)])
def test_unary_alu_ops_ignore_operand(op, ref):
    x = rand((4, 8), lo=0.25, hi=4.0)
    got = run(Opcode.TENSOR_SCALAR, {"data": x}, (4, 8), op0=op, operand0=0.0, op1=None)
    np.testing.assert_allclose(got, ref(x), rtol=1e-6)


def test_bitvec_ops_work_on_bit_patterns():
    a = np.array([[-8, 5, 0x7FFFFFFF, -1]], dtype=np.int32)
    b = np.array([[1, 3, 4, 31]], dtype=np.int32)

    def tt(op):
        return run(Opcode.TENSOR_TENSOR, {"data1": a, "data2": b}, a.shape, D.int32, op=op)

    np.testing.assert_array_equal(tt("bitwise_and"), a & b)
    np.testing.assert_array_equal(tt("bitwise_or"), a | b)
    np.testing.assert_array_equal(tt("bitwise_xor"), a ^ b)
    np.testing.assert_array_equal(tt("left_shift"), a << b)  # wraps in 32 bits
    # right_shift is logical: zeros come in even for negative numbers.
    want = (a.view(np.uint32) >> b.view(np.uint32)).view(np.int32)
    np.testing.assert_array_equal(tt("right_shift"), want)
    assert tt("right_shift")[0, 0] == 0x7FFFFFFC
    got = run(Opcode.TENSOR_SCALAR, {"data": a}, a.shape, D.int32, op0="invert", operand0=0)
    np.testing.assert_array_equal(got, ~a)


def test_bitvec_rejects_float_data():
    with pytest.raises(DTypeError, match="integer"):
        run(Opcode.TENSOR_TENSOR, {"data1": rand((2, 2)), "data2": rand((2, 2))}, (2, 2),
            D.int32, op="bitwise_and")


def test_gpsimd_int32_arithmetic_is_exact_vector_is_fp32():
    a = np.array([[2**24 + 1, -(2**30)]], dtype=np.int32)
    b = np.array([[2, 5]], dtype=np.int32)
    exact = run(Opcode.TENSOR_TENSOR, {"data1": a, "data2": b}, a.shape, D.int32,
                engine=Engine.GPSIMD, op="add")
    np.testing.assert_array_equal(exact, a + b)
    vector = run(Opcode.TENSOR_TENSOR, {"data1": a, "data2": b}, a.shape, D.int32, op="add")
    np.testing.assert_array_equal(vector, (a.astype(F32) + b.astype(F32)).astype(np.int64))
    assert vector[0, 0] != a[0, 0] + b[0, 0]  # 2^24 + 3 is not a float32


# --- tensor_scalar family ----------------------------------------------------------------------

@pytest.mark.parametrize("reverse0,reverse1", [(False, False), (True, False), (False, True),
                                               (True, True)])
def test_tensor_scalar_reverse_flags(reverse0, reverse1):
    x = rand((4, 6))
    got = run(Opcode.TENSOR_SCALAR, {"data": x}, x.shape, op0="subtract", operand0=2.0,
              reverse0=reverse0, op1="divide", operand1=3.0, reverse1=reverse1)
    tmp = (F32(2.0) - x) if reverse0 else (x - F32(2.0))
    want = (F32(3.0) / tmp) if reverse1 else (tmp / F32(3.0))
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_tensor_scalar_vector_operands_broadcast_over_free_dims():
    x, o0, o1 = rand((4, 3, 5)), rand((4, 1)), rand((4, 1))
    got = run(Opcode.TENSOR_SCALAR, {"data": x, "operand0": o0, "operand1": o1}, x.shape,
              op0="multiply", op1="add")
    np.testing.assert_allclose(got, x * o0[:, :, None] + o1[:, :, None], rtol=1e-6)


def test_scalar_tensor_tensor():
    x, y = rand((4, 8)), rand((4, 8))
    got = run(Opcode.SCALAR_TENSOR_TENSOR, {"data": x, "operand1": y}, x.shape,
              op0="subtract", operand0=1.5, reverse0=True, op1="multiply", reverse1=False)
    np.testing.assert_allclose(got, (F32(1.5) - x) * y, rtol=1e-6)


@pytest.mark.parametrize("reduce_op,ref", [("add", np.sum), ("maximum", np.max),
                                           ("minimum", np.min), ("multiply", np.prod)])
def test_tensor_scalar_reduce(reduce_op, ref):
    x, o = rand((4, 2, 5), lo=0.5, hi=1.5), rand((4, 1))
    got = run(Opcode.TENSOR_SCALAR_REDUCE, {"data": x, "operand0": o}, x.shape,
              extra={"reduce_res": ((4, 1), D.float32)}, op0="add", reduce_op=reduce_op)
    y = x + o[:, :, None]
    np.testing.assert_allclose(got["out"], y, rtol=1e-6)
    np.testing.assert_allclose(got["reduce_res"][:, 0], ref(y.reshape(4, -1), axis=1), rtol=1e-5)


# --- scans and reductions ----------------------------------------------------------------------

@pytest.mark.parametrize("reverse0,reverse1", [(False, False), (True, True)])
@pytest.mark.parametrize("initial_tile", [False, True])
def test_tensor_tensor_scan(reverse0, reverse1, initial_tile):
    d0, d1, init = rand((3, 7)), rand((3, 7)), rand((3, 1))
    srcs = {"data0": d0, "data1": d1} | ({"initial": init} if initial_tile else {})
    got = run(Opcode.TENSOR_TENSOR_SCAN, srcs, d0.shape, op0="subtract", op1="multiply",
              reverse0=reverse0, reverse1=reverse1, initial=0.5)
    prev = init[:, 0] if initial_tile else np.full(3, 0.5, F32)
    want = np.empty_like(d0)
    for i in range(d0.shape[1]):
        t = (prev - d0[:, i]) if reverse0 else (d0[:, i] - prev)
        prev = d1[:, i] * t  # multiply commutes: reverse1 only swaps the operands
        want[:, i] = prev
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_scan_cumulative_sum():
    x = rand((2, 50))
    got = run(Opcode.TENSOR_TENSOR_SCAN, {"data0": np.ones_like(x), "data1": x}, x.shape,
              op0="multiply", op1="add", initial=0.0)
    np.testing.assert_allclose(got, np.cumsum(x, axis=1), rtol=1e-5, atol=1e-5)


REF_REDUCE = {"add": np.sum, "multiply": np.prod, "maximum": np.max, "minimum": np.min,
              "subtract": lambda x, axis: x[..., 0] - x[..., 1:].sum(axis=axis)}


@pytest.mark.parametrize("op", sorted(REF_REDUCE))
@pytest.mark.parametrize("axes", [(2,), (1, 2)])
def test_tensor_reduce_arith(op, axes):
    x = rand((4, 3, 5), lo=0.5, hi=1.5)
    flat = x.reshape(4, 3, 5) if axes == (2,) else x.reshape(4, 15)
    want = REF_REDUCE[op](flat, axis=-1)
    out_shape = (4, 3) if axes == (2,) else (4,)
    got = run(Opcode.TENSOR_REDUCE, {"data": x}, out_shape, op=op, axes=axes)
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_tensor_reduce_negate_keepdims_and_logical():
    x = rand((4, 6))
    got = run(Opcode.TENSOR_REDUCE, {"data": x}, (4, 1), op="max", axes=(1,), negate=True,
              keepdims=True)
    np.testing.assert_array_equal(got, -x.max(axis=1, keepdims=True))
    x[0] = 0.0
    got = run(Opcode.TENSOR_REDUCE, {"data": x}, (4,), op="logical_or", axes=(1,))
    np.testing.assert_array_equal(got, [0.0, 1.0, 1.0, 1.0])


def test_tensor_reduce_bitwise_on_ints():
    x = RNG.integers(-2**31, 2**31 - 1, size=(4, 6), dtype=np.int32)
    got = run(Opcode.TENSOR_REDUCE, {"data": x}, (4,), D.int32, op="bitwise_xor", axes=(1,))
    np.testing.assert_array_equal(got, np.bitwise_xor.reduce(x, axis=1))


def test_tensor_reduce_rejects_partition_axis():
    with pytest.raises(ShapeError, match="axes"):
        run(Opcode.TENSOR_REDUCE, {"data": rand((4, 6))}, (6,), op="add", axes=(0,))


@pytest.mark.parametrize("op,ref", [("add", np.sum), ("maximum", np.max)])
def test_tensor_partition_reduce(op, ref):
    x = rand((16, 10))
    got = run(Opcode.TENSOR_PARTITION_REDUCE, {"data": x}, (1, 10), op=op, engine=Engine.GPSIMD)
    np.testing.assert_allclose(got, ref(x, axis=0, keepdims=True), rtol=1e-5)
    ints = RNG.integers(0, 2**16, size=(8, 4), dtype=np.int32)
    got = run(Opcode.TENSOR_PARTITION_REDUCE, {"data": ints}, (1, 4), D.int32, op="bitwise_or")
    np.testing.assert_array_equal(got, np.bitwise_or.reduce(ints, axis=0, keepdims=True))


# --- bn_stats / bn_aggr ------------------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 2, 7, 64, 512])
def test_bn_stats_layout(n):
    x = rand((4, n))
    got = run(Opcode.BN_STATS, {"data": x}, (4, 6))
    ev, od = x[:, 0::2].astype(np.float64), x[:, 1::2].astype(np.float64)
    for half, cols in ((ev, got[:, :3]), (od, got[:, 3:])):
        np.testing.assert_array_equal(cols[:, 0], half.shape[1])
        if half.shape[1]:
            np.testing.assert_allclose(cols[:, 1], half.mean(axis=1), rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(cols[:, 2], half.var(axis=1) * half.shape[1], rtol=1e-4,
                                       atol=1e-5)


@pytest.mark.parametrize("chunks", [[512], [512, 512, 100], [1, 3, 64]])
def test_bn_aggr_of_bn_stats_is_mean_and_variance(chunks):
    x = rand((8, sum(chunks)), lo=-5.0, hi=9.0)
    stats, start = [], 0
    for c in chunks:  # one bn_stats per chunk, concatenated as in the NKI layernorm example
        stats.append(run(Opcode.BN_STATS, {"data": x[:, start:start + c]}, (8, 6)))
        start += c
    got = run(Opcode.BN_AGGR, {"data": np.concatenate(stats, axis=1)}, (8, 2))
    np.testing.assert_allclose(got[:, 0], x.astype(np.float64).mean(axis=1), rtol=1e-5,
                               atol=1e-5)
    np.testing.assert_allclose(got[:, 1], x.astype(np.float64).var(axis=1), rtol=1e-4)


def test_bn_aggr_rejects_non_triples():
    with pytest.raises(ShapeError, match="multiple of 3"):
        run(Opcode.BN_AGGR, {"data": rand((2, 4))}, (2, 2))


# --- activation functions ----------------------------------------------------------------------

_erf = np.vectorize(math.erf)
REF_ACT = {
    "copy": lambda x: x, "identity": lambda x: x, "square": lambda x: x * x,
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)), "relu": lambda x: np.maximum(x, 0),
    "gelu": lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2))),
    "gelu_dx": lambda x: 0.5 * (1 + _erf(x / math.sqrt(2))) + x * np.exp(-x * x / 2) / math.sqrt(
        2 * math.pi),
    "gelu_apprx_tanh": lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (
        x + 0.044715 * x**3))),
    "gelu_apprx_sigmoid": lambda x: x / (1 + np.exp(-1.702 * x)),
    "silu": lambda x: x / (1 + np.exp(-x)),
    "silu_dx": lambda x: (1 / (1 + np.exp(-x))) * (1 + x * (1 - 1 / (1 + np.exp(-x)))),
    "tanh": np.tanh, "softplus": lambda x: np.log1p(np.exp(x)),
    "mish": lambda x: x * np.tanh(np.log1p(np.exp(x))), "erf": _erf,
    "erf_dx": lambda x: 2 / math.sqrt(math.pi) * np.exp(-x * x), "exp": np.exp,
    "log": lambda x: np.log(np.abs(x) + 0.1), "sin": np.sin, "cos": np.cos, "tan": np.tan,
    "arctan": np.arctan, "sqrt": lambda x: np.sqrt(np.abs(x)),
    "rsqrt": lambda x: 1 / np.sqrt(np.abs(x) + 0.1), "reciprocal": lambda x: 1 / x,
    "sign": np.sign, "abs": np.abs, "negative": np.negative, "floor": np.floor,
    "ceil": np.ceil, "trunc": np.trunc,
}
# Inputs kept inside each function's documented valid range.
_DOMAIN = {"log": lambda x: np.abs(x) + 0.1, "sqrt": np.abs, "rsqrt": lambda x: np.abs(x) + 0.1}


def test_every_activation_has_a_reference():
    assert set(REF_ACT) == set(S.ACTIVATIONS)


@pytest.mark.parametrize("name", sorted(REF_ACT))
def test_activation_functions(name):
    x = rand((8, 64), lo=-4.0, hi=4.0)
    x[0, 0] = 0.5  # keep reciprocal away from 0
    got = run(Opcode.ACTIVATION, {"data": _DOMAIN.get(name, lambda v: v)(x).astype(F32)},
              x.shape, op=name, scale=1.0)
    want = REF_ACT[name](x.astype(np.float64))
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6)


def test_activation_scale_bias_and_reduce():
    x, scale, bias = rand((4, 3, 5)), rand((4, 1)), rand((4, 1))
    got = run(Opcode.ACTIVATION, {"data": x, "scale": scale, "bias": bias}, x.shape,
              extra={"reduce_res": ((4, 1), D.float32)}, engine=Engine.SCALAR, op="exp",
              scale=None, reduce_op="add", reduce_cmd="reset_reduce")
    y = np.exp(x * scale[:, :, None] + bias[:, :, None])
    np.testing.assert_allclose(got["out"], y, rtol=1e-5)
    np.testing.assert_allclose(got["reduce_res"][:, 0], y.reshape(4, -1).sum(axis=1), rtol=1e-5)
    with pytest.raises(UnsupportedError, match="add"):
        run(Opcode.ACTIVATION, {"data": x}, x.shape, engine=Engine.SCALAR, op="exp",
            reduce_op="maximum", extra={"reduce_res": ((4, 1), D.float32)})


def test_erf_accuracy():
    x = np.concatenate([np.linspace(-6, 6, 20001), np.geomspace(1e-30, 1.0, 2000),
                        -np.geomspace(1e-30, 1.0, 2000)])
    got = S.erf(x).astype(np.float64)
    want = _erf(x.astype(F32).astype(np.float64))
    assert np.max(np.abs(got - want)) < 2e-7
    small = np.abs(want) > 0
    assert np.max(np.abs(got[small] - want[small]) / np.abs(want[small])) < 4e-7


# --- data movement and generators --------------------------------------------------------------

def test_nc_matmul_semantics():
    s, m = rand((32, 16), ml_dtypes.bfloat16), rand((32, 24), ml_dtypes.bfloat16)
    got = run(Opcode.NC_MATMUL, {"stationary": s, "moving": m}, (16, 24), engine=Engine.TENSOR)
    np.testing.assert_allclose(got, s.astype(F32).T @ m.astype(F32), rtol=1e-5, atol=1e-5)
    with pytest.raises(ShapeError, match="contraction"):
        S.nc_matmul({"stationary": s, "moving": m[:8]}, {}, {}, Engine.TENSOR)


@pytest.mark.parametrize("engine", [Engine.VECTOR, Engine.TENSOR])
def test_nc_transpose_flattens_free_axes(engine):
    x = rand((4, 2, 3), ml_dtypes.bfloat16)
    got = run(Opcode.NC_TRANSPOSE, {"data": x}, (6, 4), D.bfloat16, engine=engine)
    np.testing.assert_array_equal(got, x.reshape(4, 6).T)


def test_nc_transpose_nan_poisons_row_on_tensor_engine():
    x = rand((4, 3))
    x[1, 2] = np.nan
    tensor = run(Opcode.NC_TRANSPOSE, {"data": x}, (3, 4), engine=Engine.TENSOR)
    vector = run(Opcode.NC_TRANSPOSE, {"data": x}, (3, 4), engine=Engine.VECTOR)
    np.testing.assert_array_equal(vector, x.T)
    assert np.isnan(tensor[2]).all()  # NaN * 0 reaches every output of row 2
    np.testing.assert_array_equal(tensor[:2], x.T[:2])


@pytest.mark.parametrize("shape,perm", [((3, 5), (1, 0)), ((2, 3, 4), (2, 1, 0)),
                                        ((2, 3, 4, 5), (3, 1, 2, 0))])
def test_dma_transpose(shape, perm):
    x = rand(shape)
    got = run(Opcode.DMA_TRANSPOSE, {"src": x}, tuple(shape[p] for p in perm), engine=Engine.DMA)
    np.testing.assert_array_equal(got, np.transpose(x, perm))


def test_iota_and_affine_select():
    got = run(Opcode.IOTA, {}, (4, 6), D.int32, engine=Engine.GPSIMD,
              expr=Affine(const=3, coefs=(10, -1)))
    i, j = np.mgrid[0:4, 0:6]
    np.testing.assert_array_equal(got, 3 + 10 * i - j)
    as_float = run(Opcode.IOTA, {}, (4, 6), D.bfloat16, expr=Affine(const=0, coefs=(6, 1)))
    np.testing.assert_array_equal(as_float.astype(F32), np.arange(24).reshape(4, 6))
    x = rand((5, 5))
    causal = Predicate(">=", Affine(0, (1, -1)))  # keep j <= i
    got = run(Opcode.AFFINE_SELECT, {"on_true": x}, x.shape, engine=Engine.GPSIMD, pred=causal,
              on_false_value=-1e4)
    np.testing.assert_array_equal(got, np.where(np.tril(np.ones((5, 5))) > 0, x, F32(-1e4)))


def test_reciprocal_and_memset():
    x = rand((3, 4), lo=0.5, hi=2.0)
    np.testing.assert_allclose(run(Opcode.RECIPROCAL, {"data": x}, x.shape), 1 / x, rtol=1e-6)
    big = run(Opcode.MEMSET, {}, (2, 3), D.int32, value=2**31 - 1)
    assert (big == 2**31 - 1).all()  # integers reach integer tiles exactly
    half = run(Opcode.MEMSET, {}, (2, 3), D.bfloat16, value=1.0 / 3.0)
    assert (half == ml_dtypes.bfloat16(1.0 / 3.0)).all()


def test_copies_bit_exact_or_through_fp32():
    big = np.array([[2**24 + 1, -7]], dtype=np.int32)
    vec = run(Opcode.TENSOR_COPY, {"src": big}, big.shape, D.int32, engine=Engine.VECTOR)
    np.testing.assert_array_equal(vec, big)
    sca = run(Opcode.TENSOR_COPY, {"src": big}, big.shape, D.int32, engine=Engine.SCALAR)
    assert sca[0, 0] == 2**24  # ScalarE on NC-v2 casts through fp32
    nan = np.array([[np.nan]], F32).view(np.uint32) | np.uint32(0x1234)  # a NaN payload
    got = run(Opcode.TENSOR_COPY, {"src": nan.view(F32)}, (1, 1), engine=Engine.GPSIMD)
    assert got.view(np.uint32)[0, 0] == nan[0, 0]
    dma = run(Opcode.DMA_COPY, {"src": rand((2, 3))}, (2, 3), D.bfloat16, engine=Engine.DMA)
    assert dma.dtype == ml_dtypes.bfloat16


# --- hypothesis: elementwise ops over random shapes and dtypes ---------------------------------

_DTYPES = [D.float32, D.bfloat16, D.float16, D.float8_e4m3, D.int32, D.int8, D.uint8]
_OPS = ["add", "subtract", "multiply", "maximum", "minimum", "greater", "abs_max"]


def _values(shape, dt, seed):
    rng = np.random.default_rng(seed)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(max(info.min, -1000), min(info.max, 1000), size=shape).astype(dt)
    return rng.uniform(-8, 8, size=shape).astype(dt)


@settings(max_examples=60, deadline=None)
@given(shape=st.lists(st.integers(1, 6), min_size=1, max_size=4).map(tuple),
       dt_in=st.sampled_from(_DTYPES), dt_out=st.sampled_from(_DTYPES),
       op=st.sampled_from(_OPS), seed=st.integers(0, 2**32 - 1))
def test_elementwise_matches_fp32_reference(shape, dt_in, dt_out, op, seed):
    a, b = _values(shape, dt_in, seed), _values(shape, dt_in, seed + 1)
    got = run(Opcode.TENSOR_TENSOR, {"data1": a, "data2": b}, shape, dt_out, op=op)
    want = D.cast(REF_BINARY[op](a.astype(F32), b.astype(F32)).astype(F32), dt_out)
    assert got.dtype == D.cast(np.zeros(1, F32), dt_out).dtype
    np.testing.assert_array_equal(got, want)


@settings(max_examples=40, deadline=None)
@given(shape=st.lists(st.integers(1, 5), min_size=2, max_size=4).map(tuple),
       dt=st.sampled_from(_DTYPES[:4]), seed=st.integers(0, 2**32 - 1),
       name=st.sampled_from(["exp", "tanh", "gelu", "silu", "square", "relu"]))
def test_activation_output_cast(shape, dt, seed, name):
    x = _values(shape, dt, seed)
    got = run(Opcode.ACTIVATION, {"data": x}, shape, dt, engine=Engine.SCALAR, op=name)
    with np.errstate(all="ignore"):
        want = D.cast(S.ACTIVATIONS[name](x.astype(F32)).astype(F32), dt)
    np.testing.assert_array_equal(got, want)
