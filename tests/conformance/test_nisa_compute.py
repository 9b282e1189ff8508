"""nki.isa compute instructions against numpy: tensor_tensor, tensor_scalar, activation (bias,
scale, reduce), tensor_reduce, tensor_copy, iota, memset, affine_select, bn_stats / bn_aggr,
max8 / nc_find_index8, nc_matmul, nc_transpose, scans and partition reductions.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl
from neuroncore_sim.errors import SimulatorError

from .helpers import apply, run

RNG = np.random.default_rng(5)
OPS = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "maximum": np.maximum,
       "minimum": np.minimum}


def _x(*shape, lo=-2.0, hi=2.0):
    return RNG.uniform(lo, hi, shape).astype(np.float32)


@pytest.mark.api("nki.isa.tensor_tensor", "nki.isa.engine")
@pytest.mark.parametrize("engine", ["vector", "gpsimd"])
@pytest.mark.parametrize("op", sorted(OPS))
def test_tensor_tensor(op, engine):
    a, b = _x(16, 32), _x(16, 32)
    eng = getattr(nisa.engine, engine)
    got = apply(lambda s, t: nisa.tensor_tensor(s, t, op=getattr(nl, op), engine=eng), a, b)
    np.testing.assert_allclose(got, OPS[op](a, b), rtol=1e-6)


@pytest.mark.api("nki.isa.tensor_tensor")
def test_tensor_tensor_partition_mismatch_is_an_error():
    with pytest.raises(SimulatorError, match="partition|shape|128|16"):
        apply(lambda s, t: nisa.tensor_tensor(s, t, op=nl.add), _x(16, 8), _x(1, 8))


@pytest.mark.api("nki.isa.tensor_scalar")
@pytest.mark.parametrize("reverse0", [False, True])
def test_tensor_scalar_two_ops_with_a_per_partition_operand(reverse0):
    x, col = _x(16, 32), _x(16, 1, lo=0.5)
    got = apply(lambda t, c: nisa.tensor_scalar(t, op0=nl.subtract, operand0=c, reverse0=reverse0,
                                                op1=nl.multiply, operand1=3.0), x, col)
    first = col - x if reverse0 else x - col
    np.testing.assert_allclose(got, first * 3.0, rtol=1e-6)


@pytest.mark.api("nki.isa.activation")
@pytest.mark.parametrize("fn,ref", [(nl.exp, np.exp), (nl.tanh, np.tanh),
                                    (nl.relu, lambda v: np.maximum(v, 0))],
                         ids=["exp", "tanh", "relu"])
def test_activation_scale_and_bias(fn, ref):
    x, bias = _x(16, 32), _x(16, 1)
    got = apply(lambda t, b: nisa.activation(op=fn, data=t, bias=b, scale=0.5), x, bias)
    np.testing.assert_allclose(got, ref(x * 0.5 + bias), rtol=1e-5, atol=1e-6)


@pytest.mark.api("nki.isa.activation", "nki.isa.activation_reduce", "nki.isa.reduce_cmd")
def test_activation_reduce_sums_the_activated_values():
    x = _x(16, 32)

    def k(a):
        t = nl.load(a)
        red = nl.ndarray((16, 1), dtype=nl.float32, buffer=nl.sbuf)
        act = nisa.activation_reduce(op=nl.exp, data=t, reduce_op=nl.add, reduce_res=red)
        out = nl.ndarray((16, 33), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out[:, 0:32], value=act)
        nl.store(out[:, 32:33], value=red)
        return out
    got = run(k, x)
    np.testing.assert_allclose(got[:, :32], np.exp(x), rtol=1e-5)
    np.testing.assert_allclose(got[:, 32], np.exp(x).sum(axis=1), rtol=1e-5)


@pytest.mark.api("nki.isa.tensor_reduce")
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("op,ref", [(nl.add, np.sum), (nl.maximum, np.max), (nl.minimum, np.min)],
                         ids=["add", "max", "min"])
def test_tensor_reduce(op, ref, keepdims):
    x = _x(16, 4, 8)
    got = apply(lambda t: nisa.tensor_reduce(op, t, axis=(1, 2), keepdims=keepdims), x)
    want = ref(x, axis=(1, 2), keepdims=keepdims)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5)


@pytest.mark.api("nki.isa.tensor_reduce")
def test_tensor_reduce_negate():
    x = _x(16, 8)
    got = apply(lambda t: nisa.tensor_reduce(nl.add, t, axis=1, negate=True), x)
    np.testing.assert_allclose(got.reshape(16), -x.sum(axis=1), rtol=1e-5)


@pytest.mark.api("nki.isa.tensor_copy", "nki.language.bfloat16")
@pytest.mark.parametrize("engine", ["vector", "scalar", "gpsimd"])
def test_tensor_copy_engines_and_dtype(engine):
    x = _x(16, 8)
    got = apply(lambda t: nisa.tensor_copy(t, dtype=nl.bfloat16,
                                           engine=getattr(nisa.engine, engine)), x)
    assert got.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(got, x.astype(ml_dtypes.bfloat16))


@pytest.mark.api("nki.isa.iota")
def test_iota_affine_expression():
    def k():
        i_p = nl.arange(8)[:, None]
        i_f = nl.arange(16)[None, :]
        t = nisa.iota(i_p * 16 + i_f * 2, dtype=nl.int32)
        out = nl.ndarray((8, 16), dtype=nl.int32, buffer=nl.shared_hbm)
        nl.store(out, value=t)
        return out
    p, f = np.mgrid[0:8, 0:16]
    np.testing.assert_array_equal(run(k), (p * 16 + f * 2).astype(np.int32))


@pytest.mark.api("nki.isa.memset")
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_memset(dtype):
    def k():
        t = nisa.memset(shape=(8, 16), value=3, dtype=dtype)
        out = nl.ndarray((8, 16), dtype=dtype, buffer=nl.shared_hbm)
        nl.store(out, value=t)
        return out
    got = run(k)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, np.full((8, 16), 3, dtype))


@pytest.mark.api("nki.isa.affine_select")
def test_affine_select_causal_mask():
    x = _x(16, 16)

    def fn(t):
        i_p = nl.arange(16)[:, None]
        i_f = nl.arange(16)[None, :]
        return nisa.affine_select(pred=(i_p - i_f >= 0), on_true_tile=t[i_p, i_f],
                                  on_false_value=-9984.0)
    p, f = np.mgrid[0:16, 0:16]
    np.testing.assert_array_equal(apply(fn, x), np.where(p >= f, x, -9984.0).astype(np.float32))


@pytest.mark.api("nki.isa.bn_stats", "nki.isa.bn_aggr")
def test_bn_stats_then_bn_aggr_give_mean_and_variance():
    x = _x(16, 64)

    def fn(t):
        return nisa.bn_aggr(nisa.bn_stats(t))
    got = apply(fn, x)
    assert got.shape == (16, 2)
    np.testing.assert_allclose(got[:, 0], x.mean(axis=1), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(got[:, 1], x.var(axis=1), rtol=1e-4, atol=1e-6)


@pytest.mark.api("nki.isa.bn_stats")
def test_bn_stats_over_bn_stats_fmax_is_an_error():
    with pytest.raises(SimulatorError, match="512"):
        apply(nisa.bn_stats, _x(4, 1024))


@pytest.mark.api("nki.isa.max8", "nki.isa.nc_find_index8")
def test_max8_and_find_index8():
    x = np.stack([RNG.permutation(64) for _ in range(8)]).astype(np.float32)

    def k(a):
        t = nl.load(a)
        m = nisa.max8(src=t)
        idx = nisa.nc_find_index8(data=t, vals=m)
        o1 = nl.ndarray((8, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        o2 = nl.ndarray((8, 8), dtype=nl.uint32, buffer=nl.shared_hbm)
        nl.store(o1, value=m)
        nl.store(o2, value=idx)
        return [o1, o2]
    m, idx = run(k, x)
    want = -np.sort(-x, axis=1)[:, :8]
    np.testing.assert_array_equal(m, want)
    np.testing.assert_array_equal(np.take_along_axis(x, idx.astype(np.int64), axis=1), want)


@pytest.mark.api("nki.isa.nc_matmul")
def test_nc_matmul_stationary_transposed_times_moving():
    s, m = _x(32, 16), _x(32, 24)

    def k(a, b):
        res = nisa.nc_matmul(nl.load(a), nl.load(b))
        out = nl.ndarray((16, 24), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, value=nl.copy(res))
        return out
    np.testing.assert_allclose(run(k, s, m), s.T @ m, rtol=1e-4, atol=1e-4)


@pytest.mark.api("nki.isa.nc_matmul")
def test_nc_matmul_moving_over_512_is_an_error():
    with pytest.raises(SimulatorError, match="512"):
        apply(lambda a, b: nl.copy(nisa.nc_matmul(a, b)), _x(32, 16), _x(32, 1024))


@pytest.mark.api("nki.isa.nc_transpose")
@pytest.mark.parametrize("engine", ["tensor", "vector"])
def test_nc_transpose(engine):
    x = _x(32, 16)
    got = apply(lambda t: nl.copy(nisa.nc_transpose(t, engine=getattr(nisa.engine, engine))), x)
    np.testing.assert_array_equal(got, x.T)


@pytest.mark.api("nki.isa.tensor_tensor_scan")
def test_tensor_tensor_scan_is_a_first_order_recurrence():
    a, b = _x(8, 16), _x(8, 16)
    got = apply(lambda s, t: nisa.tensor_tensor_scan(s, t, initial=0.0, op0=nl.multiply,
                                                     op1=nl.add), a, b)
    want = np.zeros_like(a)
    prev = np.zeros(8, np.float32)
    for i in range(16):
        prev = a[:, i] * prev + b[:, i]
        want[:, i] = prev
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.api("nki.isa.scalar_tensor_tensor")
def test_scalar_tensor_tensor():
    x, y = _x(8, 16), _x(8, 16)
    got = apply(lambda s, t: nisa.scalar_tensor_tensor(data=s, op0=nl.multiply, operand0=2.0,
                                                       op1=nl.add, operand1=t), x, y)
    np.testing.assert_allclose(got, x * 2 + y, rtol=1e-6)


@pytest.mark.api("nki.isa.tensor_partition_reduce")
def test_tensor_partition_reduce():
    x = _x(16, 8)
    got = apply(lambda t: nisa.tensor_partition_reduce(np.add, t), x)
    np.testing.assert_allclose(got.reshape(1, 8), x.sum(axis=0, keepdims=True), rtol=1e-5)


@pytest.mark.api("nki.isa.reciprocal")
def test_reciprocal():
    x = _x(8, 16, lo=0.5)
    np.testing.assert_allclose(apply(nisa.reciprocal, x), 1 / x, rtol=1e-6)


@pytest.mark.api("nki.isa.tensor_scalar_reduce")
def test_tensor_scalar_reduce():
    x = _x(8, 16)

    def k(a):
        red = nl.ndarray((8, 1), dtype=nl.float32, buffer=nl.sbuf)
        r = nisa.tensor_scalar_reduce(data=nl.load(a), op0=nl.multiply, operand0=2.0,
                                      reduce_op=nl.add, reduce_res=red)
        out = nl.ndarray((8, 17), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out[:, 0:16], value=r)
        nl.store(out[:, 16:17], value=red)
        return out
    got = run(k, x)
    np.testing.assert_allclose(got[:, :16], 2 * x, rtol=1e-6)
    np.testing.assert_allclose(got[:, 16], (2 * x).sum(axis=1), rtol=1e-5)


@pytest.mark.api("nki.isa.get_nc_version", "nki.isa.nc_version")
def test_nc_version_is_gen2():
    assert nisa.get_nc_version() == nisa.nc_version.gen2


DTYPED = {
    "tensor_tensor": lambda t, **kw: nisa.tensor_tensor(t, t, op=nl.add, **kw),
    "tensor_scalar": lambda t, **kw: nisa.tensor_scalar(t, op0=nl.multiply, operand0=2.0, **kw),
    "activation": lambda t, **kw: nisa.activation(op=nl.exp, data=t, **kw),
    "tensor_reduce": lambda t, **kw: nisa.tensor_reduce(nl.add, t, axis=1, keepdims=True, **kw),
    "tensor_copy": lambda t, **kw: nisa.tensor_copy(t, **kw),
    "reciprocal": lambda t, **kw: nisa.reciprocal(t, **kw),
}


@pytest.mark.parametrize("name", sorted(DTYPED))
def test_output_dtype_defaults_to_the_input_and_follows_dtype(name, request):
    # The reference: dtype "if not specified, it will default to be the same as the data type
    # of the input tile"; the engines compute in float32 and cast on the way out.
    request.node.add_marker(pytest.mark.api(f"nki.isa.{name}", "nki.language.bfloat16"))
    x = _x(8, 16, lo=0.5).astype(ml_dtypes.bfloat16)
    fn = DTYPED[name]
    as_input = apply(fn, x)
    as_f32 = apply(lambda t: fn(t, dtype=nl.float32), x)
    assert as_input.dtype == ml_dtypes.bfloat16 and as_f32.dtype == np.float32
    np.testing.assert_array_equal(as_input, as_f32.astype(ml_dtypes.bfloat16))
