"""Surface additions lowered onto existing opcodes: load_transpose2d, nisa.dma_transpose,
dtype-info constants, nl.nc / nl.spmd_dim grids, shared_identity_matrix, logical/bitwise ops."""

from __future__ import annotations

import numpy as np
import pytest

import neuroncore_sim as ncs
from neuroncore_sim import nki
from neuroncore_sim.errors import ShapeError
from neuroncore_sim.program.ir import Opcode
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl

RNG = np.random.default_rng(2)


def test_load_transpose2d():
    def k(a):
        out = nl.ndarray((a.shape[1], a.shape[0]), a.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.load_transpose2d(a))
        return out

    a = RNG.random((256, 96), dtype=np.float32)
    launch = ncs.trace(k, a)
    np.testing.assert_array_equal(launch.outputs[0], a.T)
    ins = launch.program.instructions[0]
    assert ins.opcode is Opcode.DMA_TRANSPOSE and ins.engine.value == "dma"
    res = ncs.simulate(k, a)
    assert res.total_ns > 0 if hasattr(res, "total_ns") else True

    with pytest.raises(ShapeError, match="partition dim .* at most 128, found 129"):
        ncs.trace(k, np.zeros((4, 129), np.float32))


@pytest.mark.parametrize("shape,axes", [((64, 32), None), ((4, 8, 16), (2, 1, 0)),
                                        ((2, 3, 4, 5), (3, 1, 2, 0))])
def test_dma_transpose_from_hbm_and_sbuf(shape, axes):
    perm = axes or (1, 0)
    out_shape = tuple(shape[a] for a in perm)

    def k(a):
        out = nl.ndarray(out_shape, a.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nisa.dma_transpose(a, axes=axes))
        return out

    a = RNG.random(shape, dtype=np.float32)
    np.testing.assert_array_equal(ncs.trace(k, a).outputs[0], np.transpose(a, perm))

    def from_sbuf(a):
        out = nl.ndarray((32, 64), a.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nisa.dma_transpose(nl.load(a)))
        return out

    b = RNG.random((64, 32), dtype=np.float32)
    np.testing.assert_array_equal(ncs.trace(from_sbuf, b).outputs[0], b.T)


def test_dtype_info_constants():
    assert np.float32(nl.fp32.min).view(np.uint32) == 0xff7fffff
    assert nl.bfp16.min == float(np.array(0xff80, np.uint16).view(nl.bfloat16))
    assert nl.finfo(nl.float16).max == 65504.0

    def k(a):
        out = nl.ndarray((8, 1), nl.float32, buffer=nl.shared_hbm)
        t = nl.load(a)
        m = nl.full((8, 1), nl.fp32.min, nl.float32)
        nl.store(out, value=nl.maximum(m, nl.max(t, axis=1, keepdims=True)))
        return out

    a = RNG.random((8, 16), dtype=np.float32) - 5
    np.testing.assert_array_equal(ncs.trace(k, a).outputs[0], a.max(axis=1, keepdims=True))


def test_spmd_dim_and_nc_grids_run_as_plain_grid_dims():
    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        i, j = nl.program_id(0), nl.program_id(1)
        nl.store(out[i, j], value=nl.load(a[i, j]) * 2.0)
        return out

    a = RNG.random((4, 2, 8, 8), dtype=np.float32)
    np.testing.assert_allclose(k[nl.spmd_dim(nl.nc(2), 2), 2](a), a * 2)
    b = a[:2]
    np.testing.assert_allclose(k[nl.nc(2), 2](b), b * 2)


def test_shared_identity_matrix():
    def k():
        out = nl.ndarray((16, 16), nl.float32, buffer=nl.shared_hbm)
        ident = nl.shared_identity_matrix(16, dtype=nl.float32)
        nl.store(out, value=nl.load(ident))
        return out

    np.testing.assert_array_equal(ncs.trace(k).outputs[0], np.eye(16, dtype=np.float32))


def test_logical_and_bitwise_ops_match_numpy():
    def k(a, b):
        outs = [nl.ndarray((8, 8), nl.int32, buffer=nl.shared_hbm) for _ in range(7)]
        x, y = nl.load(a), nl.load(b)
        vals = [nl.bitwise_and(x, y), nl.bitwise_or(x, y), nl.bitwise_xor(x, y), nl.invert(x),
                nl.logical_and(x, y), nl.logical_or(x, y), nl.logical_xor(x, y)]
        for o, v in zip(outs, vals):
            nl.store(o, value=nl.copy(v, dtype=nl.int32))
        return tuple(outs)

    a = RNG.integers(0, 4, (8, 8)).astype(np.int32)
    b = RNG.integers(0, 4, (8, 8)).astype(np.int32)
    got = ncs.trace(k, a, b).outputs
    want = [a & b, a | b, a ^ b, ~a, np.logical_and(a, b), np.logical_or(a, b),
            np.logical_xor(a, b)]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w.astype(np.int32))
