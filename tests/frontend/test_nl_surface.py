"""Every nl / nisa function of the core surface, run through a kernel and checked against numpy."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import neuroncore_sim as ncs
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl

RNG = np.random.default_rng(1)
BF16 = ml_dtypes.bfloat16


def apply(fn, *arrays, out_shape=None, out_dtype=None):
    """Load each array into SBUF, apply ``fn`` to the tiles, store and return the result."""
    def kernel(*hbm):
        tiles = [nl.load(h) for h in hbm]
        r = fn(*tiles)
        shape = out_shape or r.shape
        out = nl.ndarray(shape, dtype=out_dtype or r.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=r)
        return out
    return ncs.trace(kernel, *arrays).outputs[0]


def sig(x):
    return 1 / (1 + np.exp(-x))


UNARY = {
    "exp": np.exp, "log": np.log, "tanh": np.tanh, "sigmoid": sig, "relu": lambda x: np.maximum(x, 0),
    "silu": lambda x: x * sig(x), "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x),
    "square": np.square, "abs": np.abs, "reciprocal": lambda x: 1 / x, "sin": np.sin,
    "cos": np.cos, "arctan": np.arctan, "sign": np.sign, "softplus": lambda x: np.log1p(np.exp(x)),
    "gelu": lambda x: 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2))),
    "erf": np.vectorize(math.erf), "floor": np.floor, "ceil": np.ceil,
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_functions_match_numpy(name):
    hi = 1.5 if name == "arctan" else 3.0  # arctan's documented input range is [-pi/2, pi/2]
    x = RNG.uniform(0.1, hi, (128, 64)).astype(np.float32)
    got = apply(getattr(nl, name), x)
    np.testing.assert_allclose(got, UNARY[name](x).astype(np.float32), rtol=2e-5, atol=2e-6)


def test_negative_and_operators():
    x = RNG.normal(size=(32, 16)).astype(np.float32)
    y = RNG.uniform(1, 2, (32, 16)).astype(np.float32)
    np.testing.assert_allclose(apply(lambda a: -a, x), -x)
    np.testing.assert_allclose(apply(lambda a, b: a * 2.0 + b / a - 1.0, x, y),
                               x * 2 + y / x - 1, rtol=1e-5)
    np.testing.assert_allclose(apply(lambda a, b: 3.0 - a, x, y), 3 - x, rtol=1e-6)
    np.testing.assert_allclose(apply(lambda a, b: (a < b), x, y), (x < y).astype(np.float32))


BINARY = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
          "maximum": np.maximum, "minimum": np.minimum, "power": np.power,
          "greater": np.greater, "less_equal": np.less_equal, "equal": np.equal}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_functions_tile_tile_scalar_and_column(name):
    a = RNG.uniform(0.5, 2.0, (64, 32)).astype(np.float32)
    b = RNG.uniform(0.5, 2.0, (64, 32)).astype(np.float32)
    col = RNG.uniform(0.5, 2.0, (64, 1)).astype(np.float32)
    f, ref = getattr(nl, name), BINARY[name]
    np.testing.assert_allclose(apply(f, a, b), ref(a, b).astype(np.float32), rtol=1e-5)
    np.testing.assert_allclose(apply(lambda t: f(t, 1.5), a), ref(a, 1.5).astype(np.float32),
                               rtol=1e-5)
    np.testing.assert_allclose(apply(f, a, col), ref(a, col).astype(np.float32), rtol=1e-5)
    np.testing.assert_allclose(apply(lambda c, t: f(c, t), col, a),
                               ref(col, a).astype(np.float32), rtol=1e-5)


@pytest.mark.parametrize("name,ref", [("sum", np.sum), ("max", np.max), ("min", np.min),
                                      ("prod", np.prod), ("mean", np.mean)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions_over_free_axes(name, ref, keepdims):
    x = RNG.uniform(0.9, 1.1, (16, 4, 8)).astype(np.float32)
    fn = getattr(nl, name)
    if name == "mean" and not keepdims:
        got = apply(lambda t: fn(t, axis=(1, 2)), x)
    else:
        got = apply(lambda t: fn(t, axis=(1, 2), keepdims=keepdims), x)
    np.testing.assert_allclose(got, ref(x, axis=(1, 2), keepdims=keepdims), rtol=1e-5)


def test_var_softmax_rmsnorm_where():
    x = RNG.normal(size=(128, 96)).astype(np.float32)
    w = RNG.normal(size=(128, 96)).astype(np.float32)
    np.testing.assert_allclose(apply(lambda t: nl.var(t, axis=1), x),  # the axis removed
                               x.var(axis=1), rtol=1e-4)
    np.testing.assert_allclose(apply(lambda t: nl.var(t, axis=1, keepdims=True), x),
                               x.var(axis=1, keepdims=True), rtol=1e-4)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(apply(lambda t: nl.softmax(t, axis=1), x),
                               e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)
    rms = x / np.sqrt((x * x).mean(axis=1, keepdims=True) + 1e-6) * w
    np.testing.assert_allclose(apply(lambda t, ww: nl.rms_norm(t, ww, axis=1, n=96), x, w),
                               rms, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(apply(lambda t, ww: nl.where(t > 0.0, t, ww), x, w),
                               np.where(x > 0, x, w), rtol=1e-6)


def test_matmul_transpose_copy_static_cast():
    x = RNG.normal(size=(128, 64)).astype(np.float32)
    y = RNG.normal(size=(64, 256)).astype(np.float32)
    np.testing.assert_allclose(apply(lambda a, b: nl.matmul(a, b), x, y), x @ y, rtol=1e-4,
                               atol=1e-4)
    np.testing.assert_allclose(apply(lambda a, b: nl.matmul(a, b, transpose_x=True),
                                     x[:64, :64].copy(), y), x[:64, :64].T @ y, rtol=1e-4,
                               atol=1e-4)
    np.testing.assert_array_equal(apply(nl.transpose, x), x.T)
    np.testing.assert_array_equal(apply(nl.copy, x), x)
    got = apply(lambda a: nl.static_cast(a, nl.bfloat16), x)
    assert got.dtype == BF16
    np.testing.assert_array_equal(got, x.astype(BF16))


def test_nisa_instructions_against_numpy():
    x = RNG.uniform(0.5, 2.0, (64, 32)).astype(np.float32)
    b = RNG.uniform(-1, 1, (64, 1)).astype(np.float32)
    np.testing.assert_allclose(
        apply(lambda t, bb: nisa.activation(nl.exp, t, bias=bb, scale=2.0), x, b),
        np.exp(x * 2 + b), rtol=1e-5)
    np.testing.assert_allclose(
        apply(lambda t: nisa.tensor_scalar(t, np.multiply, 3.0, op1=np.add, operand1=1.0), x),
        x * 3 + 1, rtol=1e-6)
    np.testing.assert_allclose(
        apply(lambda t: nisa.tensor_scalar(t, np.subtract, 1.0, reverse0=True), x), 1 - x,
        rtol=1e-6)
    np.testing.assert_allclose(
        apply(lambda t, u: nisa.tensor_tensor(t, u, op=np.maximum), x, x[::-1].copy()),
        np.maximum(x, x[::-1]))
    np.testing.assert_allclose(
        apply(lambda t: nisa.scalar_tensor_tensor(data=t, op0=np.multiply, operand0=2.0,
                                                  op1=np.add, operand1=t), x), x * 3, rtol=1e-6)
    np.testing.assert_allclose(apply(lambda t: nisa.tensor_reduce(np.add, t, axis=1), x),
                               x.sum(axis=1), rtol=1e-5)
    np.testing.assert_allclose(apply(lambda t: nisa.reciprocal(t), x), 1 / x, rtol=1e-6)
    np.testing.assert_allclose(
        apply(lambda t, u: nisa.tensor_tensor_scan(t, u, 0.0, np.multiply, np.add), x, x),
        _scan(x, x), rtol=1e-4)
    np.testing.assert_array_equal(apply(lambda t: nisa.tensor_copy(t, engine=nisa.gpsimd_engine),
                                        x), x)


def _scan(a, b):
    out = np.zeros_like(a)
    prev = np.zeros(a.shape[0], np.float32)
    for i in range(a.shape[1]):
        prev = a[:, i] * prev + b[:, i]
        out[:, i] = prev
    return out


def test_reduce_variants_write_reduce_res():
    x = RNG.uniform(0.5, 2.0, (32, 16)).astype(np.float32)

    def k(h):
        t = nl.load(h)
        out = nl.ndarray((32, 2), dtype=nl.float32, buffer=nl.shared_hbm)
        s1 = nl.ndarray((32, 1), dtype=nl.float32)
        s2 = nl.ndarray((32, 1), dtype=nl.float32)
        nisa.activation_reduce(nl.exp, t, reduce_op=np.add, reduce_res=s1)
        nisa.tensor_scalar_reduce(data=t, op0=np.multiply, operand0=2.0, reduce_op=np.add,
                                  reduce_res=s2)
        nl.store(out[:, 0:1], value=s1)
        nl.store(out[:, 1:2], value=s2)
        return out

    (got,) = ncs.trace(k, x).outputs
    np.testing.assert_allclose(got[:, 0], np.exp(x).sum(axis=1), rtol=1e-5)
    np.testing.assert_allclose(got[:, 1], (2 * x).sum(axis=1), rtol=1e-5)


def test_memset_iota_affine_select_transposes_bn():
    def k(h):
        t = nl.load(h)
        i_p, i_f = nl.mgrid[0:32, 0:32]
        out = nl.ndarray((5, 32, 32), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out[0], value=nisa.memset((32, 32), 7.0, nl.float32))
        nl.store(out[1], value=nisa.iota(i_p * 32 + i_f, dtype=nl.float32))
        nl.store(out[2], value=nisa.affine_select(i_f <= i_p, t, -1.0))
        nl.store(out[3], value=nisa.nc_transpose(t, engine=nisa.vector_engine))
        nl.store(out[4], value=nisa.nc_transpose(t, engine=nisa.tensor_engine))
        return out

    x = RNG.normal(size=(32, 32)).astype(np.float32)
    (got,) = ncs.trace(k, x).outputs
    np.testing.assert_array_equal(got[0], np.full((32, 32), 7.0))
    np.testing.assert_array_equal(got[1], np.arange(1024).reshape(32, 32))
    np.testing.assert_array_equal(got[2], np.where(np.tri(32, dtype=bool), x, -1.0))
    np.testing.assert_array_equal(got[3], x.T)
    np.testing.assert_array_equal(got[4], x.T)


def test_bn_stats_bn_aggr_give_mean_and_variance():
    x = RNG.normal(size=(128, 1024)).astype(np.float32)

    def k(h):
        stats = nl.ndarray((128, 12), dtype=nl.float32)
        for c in nl.affine_range(2):
            stats[:, c * 6:(c + 1) * 6] = nisa.bn_stats(nl.load(h[:, c * 512:(c + 1) * 512]))
        out = nl.ndarray((128, 2), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, value=nisa.bn_aggr(stats))
        return out

    (got,) = ncs.trace(k, x).outputs
    np.testing.assert_allclose(got[:, 0], x.mean(axis=1), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(got[:, 1], x.var(axis=1), rtol=1e-4)


def test_dma_copy_and_full_zeros_ones_like():
    x = RNG.normal(size=(16, 8)).astype(np.float32)

    def k(h):
        out = nl.ndarray((4, 16, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.ndarray((16, 8), dtype=nl.float32)
        nisa.dma_copy(dst=t, src=h)
        nisa.dma_copy(dst=out[0], src=t)
        nl.store(out[1], value=nl.zeros_like(t))
        nl.store(out[2], value=nl.ones((16, 8), nl.float32))
        nl.store(out[3], value=nl.full((16, 8), 2.5, nl.float32))
        return out

    (got,) = ncs.trace(k, x).outputs
    np.testing.assert_array_equal(got[0], x)
    np.testing.assert_array_equal(got[1:], np.stack([np.zeros_like(x), np.ones_like(x),
                                                     np.full_like(x, 2.5)]))


@pytest.mark.parametrize("dtype", [np.float32, BF16, np.float16, ml_dtypes.float8_e4m3])
def test_matmul_dtypes_accumulate_in_fp32(dtype):
    a = RNG.normal(size=(128, 128)).astype(dtype)
    b = RNG.normal(size=(128, 512)).astype(dtype)

    def k(x, y):
        out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
        acc += nisa.nc_matmul(nl.load(x), nl.load(y))
        nl.store(out, value=nl.copy(acc))
        return out

    (got,) = ncs.trace(k, a, b).outputs
    ref = a.astype(np.float32).T @ b.astype(np.float32)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-4)


@settings(max_examples=30, deadline=None)
@given(p=st.integers(1, 128), f=st.integers(1, 64),
       name=st.sampled_from(["add", "multiply", "maximum", "subtract"]),
       dtype=st.sampled_from(["float32", "bfloat16", "float16"]))
def test_elementwise_dtype_rounding_property(p, f, name, dtype):
    dt = np.dtype(BF16) if dtype == "bfloat16" else np.dtype(dtype)
    a = RNG.normal(size=(p, f)).astype(dt)
    b = RNG.normal(size=(p, f)).astype(dt)
    got = apply(getattr(nl, name), a, b)
    # The engines compute in fp32 and round once to the output dtype.
    ref = BINARY[name](a.astype(np.float32), b.astype(np.float32)).astype(dt)
    assert got.dtype == dt
    np.testing.assert_array_equal(got, ref)


def test_activation_reduce_res_and_accumulator_registers():
    x = RNG.uniform(0.5, 2.0, (16, 8)).astype(np.float32)

    def k(h):
        t = nl.load(h)
        out = nl.ndarray((16, 2), dtype=nl.float32, buffer=nl.shared_hbm)
        own = nl.ndarray((16, 1), dtype=nl.float32)
        nisa.activation(nl.exp, t, reduce_op=np.add, reduce_res=own)  # no reduce_cmd given
        total = nl.ndarray((16, 1), dtype=nl.float32)
        nisa.activation(nl.exp, t, reduce_op=np.add, reduce_cmd=nisa.reduce_cmd.reset_reduce)
        nisa.activation(nl.square, t, reduce_op=np.add, reduce_res=total,
                        reduce_cmd=nisa.reduce_cmd.reduce)  # adds to the registers, reads them
        nl.store(out[:, 0:1], value=own)
        nl.store(out[:, 1:2], value=total)
        return out

    (got,) = ncs.trace(k, x).outputs
    np.testing.assert_allclose(got[:, 0], np.exp(x).sum(axis=1), rtol=1e-5)
    np.testing.assert_allclose(got[:, 1], np.exp(x).sum(axis=1) + (x * x).sum(axis=1), rtol=1e-5)
