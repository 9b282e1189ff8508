"""nki.language element-wise math, comparison, logical and bitwise functions against numpy.

Each function of the 2.26 reference's math / logical / bitwise sections: values on small tiles,
the output dtype (the input's, or the promoted type of the inputs, or ``dtype=``), broadcasting
of a [P, 1] and a scalar operand, and masks.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

import neuroncore_sim.nki.language as nl

from .helpers import apply, tile_result

RNG = np.random.default_rng(7)
BF16 = ml_dtypes.bfloat16
_erf = np.vectorize(math.erf, otypes=[np.float64])


def _sig(x):
    return 1 / (1 + np.exp(-x))


def _gelu_dx(x):
    return 0.5 * (1 + _erf(x / math.sqrt(2))) + x * np.exp(-x * x / 2) / math.sqrt(2 * math.pi)


#: name -> (numpy reference, input range)
UNARY = {
    "abs": (np.abs, (-3, 3)), "negative": (np.negative, (-3, 3)), "sign": (np.sign, (-3, 3)),
    "trunc": (np.trunc, (-3, 3)), "floor": (np.floor, (-3, 3)), "ceil": (np.ceil, (-3, 3)),
    "exp": (np.exp, (-3, 3)), "log": (np.log, (0.1, 3)), "cos": (np.cos, (-3, 3)),
    "sin": (np.sin, (-3, 3)), "tan": (np.tan, (-1.4, 1.4)), "tanh": (np.tanh, (-3, 3)),
    "arctan": (np.arctan, (-1.5, 1.5)), "sqrt": (np.sqrt, (0.1, 3)),
    "rsqrt": (lambda x: 1 / np.sqrt(x), (0.1, 3)), "sigmoid": (_sig, (-3, 3)),
    "relu": (lambda x: np.maximum(x, 0), (-3, 3)),
    "gelu": (lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2))), (-3, 3)),
    "gelu_dx": (_gelu_dx, (-3, 3)),
    "gelu_apprx_tanh": (lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi)
                                                         * (x + 0.044715 * x ** 3))), (-3, 3)),
    "gelu_apprx_sigmoid": (lambda x: x * _sig(1.702 * x), (-3, 3)),
    "silu": (lambda x: x * _sig(x), (-3, 3)),
    "silu_dx": (lambda x: _sig(x) * (1 + x * (1 - _sig(x))), (-3, 3)),
    "erf": (_erf, (-3, 3)), "erf_dx": (lambda x: 2 / math.sqrt(math.pi) * np.exp(-x * x), (-3, 3)),
    "softplus": (lambda x: np.log1p(np.exp(x)), (-3, 3)),
    "mish": (lambda x: x * np.tanh(np.log1p(np.exp(x))), (-3, 3)),
    "square": (np.square, (-3, 3)), "reciprocal": (lambda x: 1 / x, (0.5, 3)),
}


def _x(lo, hi, shape=(16, 24), dtype=np.float32):
    return RNG.uniform(lo, hi, shape).astype(dtype)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_values_and_dtype(name, request):
    request.node.add_marker(pytest.mark.api(f"nki.language.{name}"))
    ref, (lo, hi) = UNARY[name]
    x = _x(lo, hi)
    got = apply(getattr(nl, name), x)
    assert got.dtype == np.float32, "the output has the input's dtype"
    np.testing.assert_allclose(got, ref(x.astype(np.float64)), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", ["exp", "tanh", "sigmoid", "square", "abs"])
def test_unary_bfloat16_keeps_dtype_and_dtype_kwarg_casts(name, request):
    request.node.add_marker(pytest.mark.api(f"nki.language.{name}", "nki.language.bfloat16"))
    ref, (lo, hi) = UNARY[name]
    x = _x(lo, hi).astype(BF16)
    got = apply(getattr(nl, name), x)
    assert got.dtype == BF16
    np.testing.assert_allclose(got.astype(np.float32), ref(x.astype(np.float64)), rtol=2e-2,
                               atol=2e-2)
    got32 = apply(lambda t: getattr(nl, name)(t, dtype=nl.float32), x)
    assert got32.dtype == np.float32
    np.testing.assert_allclose(got32, ref(x.astype(np.float64)), rtol=1e-4, atol=1e-5)


BINARY = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
    "power": np.power, "maximum": np.maximum, "minimum": np.minimum,
    "mod": np.mod, "fmod": np.fmod,
}


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("form", ["tiles", "column", "scalar"])
def test_binary_values_and_broadcasting(name, form, request):
    request.node.add_marker(pytest.mark.api(f"nki.language.{name}"))
    x = _x(0.5, 3)
    y = {"tiles": _x(0.5, 2), "column": _x(0.5, 2, (16, 1))}.get(form)
    fn = getattr(nl, name)
    if form == "scalar":
        got = apply(lambda a: fn(a, 1.5), x)
        want = BINARY[name](x.astype(np.float64), 1.5)
    else:
        got = apply(fn, x, y)
        want = BINARY[name](x.astype(np.float64), y)
    assert got.shape == x.shape and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


#: (dtype x, dtype y, promoted) from the reference's type promotion table.
PROMOTION = [
    (np.int32, np.float16, np.float16), (np.float32, BF16, np.float32),
    (np.float16, BF16, np.float32), (np.int16, np.int32, np.int32),
    (np.uint8, np.uint16, np.uint16), (np.uint16, np.int32, np.int32),
    (np.int8, np.uint8, np.int16), (np.int8, np.uint16, np.int32),
    (np.int32, np.uint32, np.float32), (ml_dtypes.float8_e4m3, BF16, BF16),
    (ml_dtypes.float8_e4m3, np.float16, np.float16),
    (ml_dtypes.float8_e4m3, ml_dtypes.float8_e5m2, BF16),
]


@pytest.mark.api("nki.language.add", "nki.language.float8_e4m3", "nki.language.float8_e5m2",
                 "nki.language.int8", "nki.language.uint8", "nki.language.int16",
                 "nki.language.uint16", "nki.language.uint32", "nki.language.float16")
@pytest.mark.parametrize("a,b,want", PROMOTION,
                         ids=[f"{np.dtype(a).name}-{np.dtype(b).name}" for a, b, _ in PROMOTION])
def test_type_promotion(a, b, want):
    x = np.full((4, 8), 2, dtype=a)
    y = np.full((4, 8), 3, dtype=b)
    shape, dtype = tile_result(nl.add, x, y)
    assert dtype == np.dtype(want)
    got = apply(nl.add, x, y)
    np.testing.assert_array_equal(got.astype(np.float32), np.full((4, 8), 5, np.float32))


COMPARE = {"equal": np.equal, "not_equal": np.not_equal, "greater": np.greater,
           "greater_equal": np.greater_equal, "less": np.less, "less_equal": np.less_equal}
LOGICAL = {"logical_and": np.logical_and, "logical_or": np.logical_or,
           "logical_xor": np.logical_xor}


@pytest.mark.parametrize("name", sorted(COMPARE) + sorted(LOGICAL))
def test_comparison_and_logical_values(name, request):
    request.node.add_marker(pytest.mark.api(f"nki.language.{name}"))
    x = RNG.integers(0, 3, (16, 8)).astype(np.float32)
    y = RNG.integers(0, 3, (16, 8)).astype(np.float32)
    ref = {**COMPARE, **LOGICAL}[name]
    got = apply(getattr(nl, name), x, y)
    np.testing.assert_array_equal(got.astype(bool), ref(x, y))
    as_u8 = apply(lambda a, b: getattr(nl, name)(a, b, dtype=nl.uint8), x, y)
    assert as_u8.dtype == np.uint8
    np.testing.assert_array_equal(as_u8, ref(x, y).astype(np.uint8))


@pytest.mark.api("nki.language.logical_not")
def test_logical_not():
    x = RNG.integers(0, 2, (16, 8)).astype(np.float32)
    np.testing.assert_array_equal(apply(nl.logical_not, x).astype(bool), x == 0)


BITWISE = {"bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or,
           "bitwise_xor": np.bitwise_xor, "left_shift": np.left_shift,
           "right_shift": np.right_shift}


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.uint16])
@pytest.mark.parametrize("name", sorted(BITWISE))
def test_bitwise_on_integers(name, dtype, request):
    request.node.add_marker(pytest.mark.api(f"nki.language.{name}"))
    x = RNG.integers(0, 100, (16, 8)).astype(dtype)
    y = RNG.integers(0, 5, (16, 8)).astype(dtype)
    got = apply(getattr(nl, name), x, y)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, BITWISE[name](x, y))


@pytest.mark.api("nki.language.invert")
@pytest.mark.parametrize("dtype", [np.int32, np.uint8])
def test_invert_on_integers(dtype):
    x = RNG.integers(0, 100, (16, 8)).astype(dtype)
    np.testing.assert_array_equal(apply(nl.invert, x), np.invert(x))


@pytest.mark.api("nki.language.invert", "nki.language.bitwise_and")
@pytest.mark.parametrize("fn", [nl.invert, lambda a: nl.bitwise_and(a, a)])
def test_bitwise_on_floats_is_a_clear_error(fn):
    from neuroncore_sim.errors import DTypeError
    with pytest.raises(DTypeError, match="int"):
        apply(fn, _x(0, 1))


@pytest.mark.api("nki.language.add", "nki.language.exp")
def test_mask_limits_the_elements_written():
    x = _x(0, 1, (16, 8))

    def fn(a):
        out = nl.zeros((16, 8), dtype=nl.float32, buffer=nl.sbuf)
        i_p, i_f = nl.mgrid[0:16, 0:8]
        out[i_p, i_f] = nl.exp(a[i_p, i_f], mask=(i_p < 4) & (i_f >= 2))
        return out
    got = apply(fn, x)
    want = np.zeros_like(x)
    want[:4, 2:] = np.exp(x[:4, 2:])
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.api("nki.language.greater", "nki.language.equal")
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_comparison_without_dtype_gives_one_and_zero_in_the_input_dtype(dtype):
    # The signature says dtype=bool, its text says "default to be the same as the data type of
    # the input tiles"; later references say the same ("1 where x > y, 0 otherwise"): we follow it.
    x = np.arange(16, dtype=dtype).reshape(4, 4)
    got = apply(lambda a: nl.greater(a, 7), x)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, (x > 7).astype(dtype))
