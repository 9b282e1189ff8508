"""``nl`` used outside a kernel, as the SDK allows: ``nl.static_cast`` of host arrays and
scalars, and launch-grid expressions (``nl.nc(2) * 2``, ``2 * nl.nc(2)``, ``nl.spmd_dim``)."""

from __future__ import annotations

import inspect

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import neuroncore_sim as ncs
from neuroncore_sim import nki
from neuroncore_sim.errors import KernelError
import neuroncore_sim.nki.language as nl

RNG = np.random.default_rng(3)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(-1e6, 1e6, width=32), min_size=1, max_size=16))
def test_static_cast_of_a_host_array_rounds_like_numpy(xs):
    a = np.array(xs, np.float32)
    got = nl.static_cast(a, nl.bfloat16)
    assert got.dtype == np.dtype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(got, a.astype(ml_dtypes.bfloat16))


def test_static_cast_of_host_values_to_integers_and_scalars():
    np.testing.assert_array_equal(nl.static_cast(np.array([1.5, 2.5, -7.2, 1e12]), nl.int32),
                                  np.array([2, 2, -7, np.iinfo(np.int32).max], np.int32))
    assert nl.static_cast(3.7, nl.int32) == 4 and nl.static_cast(True, nl.float32) == 1.0


def test_static_cast_of_a_tile_still_copies_on_vector():
    def k(a):
        out = nl.ndarray(a.shape, nl.bfloat16, buffer=nl.shared_hbm)
        nl.store(out, value=nl.static_cast(nl.load(a), nl.bfloat16))
        return out

    a = RNG.random((4, 8), dtype=np.float32)
    launch = ncs.trace(k, a)
    assert [i.opcode.value for i in launch.program.instructions].count("tensor_copy") == 1
    np.testing.assert_array_equal(launch.outputs[0], a.astype(ml_dtypes.bfloat16))


def test_static_cast_of_a_non_number_is_a_clear_error():
    with pytest.raises(KernelError, match="static_cast: expected a tile, a number or a numeric "
                       "array, found str"):
        nl.static_cast("1.0", nl.float32)

    def k(a):
        return nl.static_cast({"a": 1}, nl.float32)  # BAD

    with pytest.raises(KernelError, match="found dict") as info:
        ncs.trace(k, np.zeros((2, 2), np.float32))
    src, start = inspect.getsourcelines(k)
    assert info.value.loc == f"test_host_side_nl.py:{start + 1}"


def test_grid_products_are_spmd_dims():
    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        i, j = nl.program_id(0), nl.program_id(1)
        nl.store(out[i, j], value=nl.load(a[i, j]) + 1.0)
        return out

    a = RNG.random((4, 2, 4, 8), dtype=np.float32)
    for dim in (nl.nc(2) * 2, 2 * nl.nc(2), nl.spmd_dim(2, nl.nc(2))):
        assert dim.size == 4
        np.testing.assert_array_equal(k[dim, 2](a), a + 1)
    assert repr(nl.nc(2) * 2) == "nl.spmd_dim(nl.nc(2), 2)"
    assert repr(2 * nl.nc(2)) == "nl.spmd_dim(2, nl.nc(2))"


@pytest.mark.parametrize("make", [lambda: nl.nc(2) * 1.5, lambda: nl.nc(0), lambda: nl.spmd_dim(),
                                  lambda: nl.spmd_dim(nl.nc(2), -1)])
def test_bad_grid_dims_are_kernel_errors(make):
    with pytest.raises(KernelError, match="expected a positive int, nl.nc"):
        make()
