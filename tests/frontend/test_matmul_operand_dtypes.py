"""Matmul operand dtypes on NeuronCore-v2 (frontend/operands.py ``require_matmul_dtype``).

The nc_matmul reference and the architecture guide list the TensorE input dtypes: float8_e4m3,
float8_e5m2, bfloat16, float16, tfloat32 and float32, accumulated in float32 PSUM. Each works
(checked against numpy on the values the dtype holds). Byte integers (uint8, int8), which AWS's
kernels pass, are exact in float32 and taken too; a wider integer operand (int32, uint16) is the
kernel's error, a DTypeError at its line, for nisa.nc_matmul and nl.matmul alike.
"""

from __future__ import annotations

import inspect

import ml_dtypes
import numpy as np
import pytest

import neuroncore_sim as ncs
from neuroncore_sim.errors import DTypeError
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl

HERE = "test_matmul_operand_dtypes.py"
RNG = np.random.default_rng(5)
F32 = np.float32


def bad_line(kernel) -> int:
    src, start = inspect.getsourcelines(kernel)
    return start + next(i for i, s in enumerate(src) if "# BAD" in s)


@pytest.mark.parametrize("name", ["float8_e4m3", "float8_e5m2", "bfloat16", "float16",
                                  "tfloat32", "float32"])
def test_tensor_engine_dtypes_accumulate_in_float32(name):
    dt = getattr(nl, name)

    def kernel(a, b):
        x = nl.copy(nl.load(a), dtype=dt)
        y = nl.copy(nl.load(b), dtype=dt)
        acc = nisa.nc_matmul(x, y)
        assert acc.dtype == nl.float32
        also = nl.matmul(x, y, transpose_x=True)
        out = nl.ndarray((2, 32, 16), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out[0], value=nl.copy(acc))
        nl.store(out[1], value=nl.copy(also))
        return out

    a = (RNG.random((64, 32)) - 0.5).astype(F32)
    b = (RNG.random((64, 16)) - 0.5).astype(F32)
    held = {"float8_e4m3": ml_dtypes.float8_e4m3fn, "float8_e5m2": ml_dtypes.float8_e5m2,
            "bfloat16": ml_dtypes.bfloat16, "float16": np.float16}.get(name, F32)
    ra, rb = a.astype(held).astype(F32), b.astype(held).astype(F32)
    tol = 1e-2 if name == "tfloat32" else 1e-5
    out = ncs.trace(kernel, a, b).outputs[0]
    np.testing.assert_allclose(out[0], ra.T @ rb, rtol=tol, atol=tol)
    np.testing.assert_allclose(out[1], ra.T @ rb, rtol=tol, atol=tol)


def _nc_matmul_int32(a):
    x = nl.load(a)
    nisa.nc_matmul(x, x)  # BAD


def _nl_matmul_uint16(a):
    x = nl.load(a)
    nl.matmul(x, x, transpose_x=True)  # BAD


@pytest.mark.parametrize("dt", [np.uint8, np.int8])
def test_byte_integer_operands_are_exact_in_float32(dt):
    """uint8 / int8 bytes (a partition broadcast with is_stationary_onezero, quantized
    weights): every value is exact in the float32 TensorE computes in."""
    def kernel(a, b):
        out = nl.ndarray((2, 32, 16), dtype=nl.float32, buffer=nl.shared_hbm)
        x, y = nl.load(a), nl.load(b)
        nl.store(out[0], value=nl.copy(nisa.nc_matmul(x, y)))
        nl.store(out[1], value=nl.copy(nl.matmul(x, y, transpose_x=True)))
        return out

    lo = -128 if dt is np.int8 else 0
    a = RNG.integers(lo, lo + 256, (64, 32)).astype(dt)
    b = RNG.integers(lo, lo + 256, (64, 16)).astype(dt)
    out = ncs.trace(kernel, a, b).outputs[0]
    want = a.astype(F32).T @ b.astype(F32)  # (sums of 64 products < 2^24: exact)
    np.testing.assert_array_equal(out[0], want)
    np.testing.assert_array_equal(out[1], want)


@pytest.mark.parametrize("kernel,role,found", [
    (_nc_matmul_int32, "nc_matmul stationary", "int32"),
    (_nl_matmul_uint16, "nl.matmul x", "uint16"),
])
def test_wider_integer_operands_are_the_kernels_error(kernel, role, found):
    a = np.ones((64, 64), np.int32 if found == "int32" else np.uint16)
    with pytest.raises(DTypeError, match=rf"{role}: expected a TensorE input dtype \(float8_e4m3, "
                       rf"float8_e5m2, bfloat16, float16, tfloat32, float32, or 8-bit uint8 / "
                       rf"int8; the result accumulates in float32 PSUM\), found {found}") as info:
        ncs.trace(kernel, a)
    assert info.value.loc == f"{HERE}:{bad_line(kernel)}"
