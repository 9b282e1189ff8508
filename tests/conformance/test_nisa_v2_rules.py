"""NeuronCore-v2 rules of nki.isa that the 2.26 reference states, and local_gather: a kernel that
follows each rule runs and matches numpy; one that breaks it gets a clear SimulatorError."""

from __future__ import annotations

import numpy as np
import pytest

import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl
from neuroncore_sim.errors import SimulatorError

from .helpers import apply, run

RNG = np.random.default_rng(17)


@pytest.mark.api("nki.isa.activation_reduce")
def test_activation_reduce_with_max_is_an_error_on_v2():
    # The reference: "On NeuronCore-v2, the reduce_op can only be an addition".
    def k(a):
        red = nl.ndarray((8, 1), dtype=nl.float32, buffer=nl.sbuf)
        r = nisa.activation_reduce(op=nl.exp, data=nl.load(a), reduce_op=nl.maximum,
                                   reduce_res=red)
        out = nl.ndarray((8, 16), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, value=r)
        return out
    with pytest.raises(SimulatorError, match="add") as e:
        run(k, np.zeros((8, 16), np.float32))
    assert "test_nisa_v2_rules.py:" in str(e.value)


@pytest.mark.api("nki.isa.nc_matmul")
@pytest.mark.parametrize("size,ok", [
    ((64, 64), True), ((32, 64), True),
    pytest.param((32, 32), False, marks=pytest.mark.xfail(
        strict=True, reason="a 32 x 32 tile_size (not on NeuronCore-v2) is accepted"))])
def test_nc_matmul_tile_size_rules_of_v2(size, ok):
    # PE tiling: positions and sizes multiples of 32; a 32 x 32 tile_size is not on NeuronCore-v2.
    s = RNG.normal(size=(32, 32)).astype(np.float32)
    m = RNG.normal(size=(32, 64)).astype(np.float32)

    def fn(a, b):
        return nl.copy(nisa.nc_matmul(a, b, tile_position=(0, 0), tile_size=size))
    if ok:
        np.testing.assert_allclose(apply(fn, s, m), s.T @ m, rtol=1e-4, atol=1e-4)
    else:
        with pytest.raises(SimulatorError, match="32"):
            apply(fn, s, m)


@pytest.mark.api("nki.isa.tensor_partition_reduce")
def test_tensor_partition_reduce_with_subtract_is_an_error():
    # The reference lists add, max, bitwise_or, bitwise_and.
    with pytest.raises(SimulatorError, match="subtract|op"):
        apply(lambda t: nisa.tensor_partition_reduce(nl.subtract, t),
              np.zeros((8, 4), np.float32))


@pytest.mark.api("nki.isa.tensor_reduce")
def test_tensor_reduce_bitwise_or_on_integers():
    x = RNG.integers(0, 256, (8, 16)).astype(np.int32)
    got = apply(lambda t: nisa.tensor_reduce(nl.bitwise_or, t, axis=1, keepdims=True), x)
    np.testing.assert_array_equal(got, np.bitwise_or.reduce(x, axis=1, keepdims=True))


@pytest.mark.api("nki.isa.local_gather")
@pytest.mark.parametrize("n_elem", [1, 2])
def test_local_gather_gathers_within_each_16_partition_group(n_elem):
    src = RNG.normal(size=(32, 16)).astype(np.float32)
    idx = RNG.integers(0, 16 // n_elem, (32, 2)).astype(np.uint16)

    def fn(s, i):
        # indices are element offsets: index * num_elem_per_idx
        return nisa.local_gather(s, nl.multiply(i, n_elem, dtype=nl.uint16),
                                 num_elem_per_idx=n_elem)
    got = apply(fn, src, idx)
    # Each 16-partition group (one GpSimd core) flattens its indices partition-first; every
    # partition of the group gathers, from its own row, n_elem elements at each index.
    want = np.empty((32, 32, n_elem), np.float32)
    for g in range(2):
        flat = idx[16 * g:16 * g + 16].flatten(order="F").astype(np.int64)
        for p in range(16 * g, 16 * g + 16):
            want[p] = src[p].reshape(-1, n_elem)[flat]
    np.testing.assert_array_equal(got.reshape(want.shape), want)


@pytest.mark.api("nki.isa.local_gather")
def test_local_gather_with_float_indices_is_an_error():
    with pytest.raises(SimulatorError, match="uint16"):
        apply(lambda s, i: nisa.local_gather(s, i), np.zeros((16, 8), np.float32),
              np.zeros((16, 2), np.float32))
