"""nc_transpose(engine=vector) of a tile larger than 32x32: one VectorE transpose per 32x32
block, the full transpose as the result (transpose_blocks.py, docs/frontend.md)."""

from __future__ import annotations

import numpy as np
import pytest

import neuroncore_sim as ncs
from neuroncore_sim.errors import ShapeError, SimulatorError, UnsupportedError
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl
from neuroncore_sim.program.ir import Engine, Opcode

RNG = np.random.default_rng(7)


def transposed_on_vector(a):
    out = nl.ndarray((a.shape[1], a.shape[0]), a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a)
    nl.store(out, value=nisa.nc_transpose(t, engine=nisa.vector_engine))
    return out


def row_scale_by_transposed_column(x, s):
    """x [64, 128] times s[q] along q, with s held as [128, 64] rows (the pattern that needs
    the full transpose: a per-row value broadcast along the free axis, then transposed)."""
    out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
    s_rows = nl.load(s).broadcast_to((128, 64))
    s_t = nisa.nc_transpose(s_rows, engine=nisa.vector_engine)
    nl.store(out, value=nl.multiply(nl.load(x), s_t))
    return out


@pytest.mark.parametrize("shape", [(128, 64), (100, 50), (32, 128), (33, 33), (1, 96)])
def test_good_full_transpose_by_blocks(shape):
    a = RNG.random(shape, dtype=np.float32)
    res = ncs.simulate(transposed_on_vector, a)
    np.testing.assert_array_equal(res.outputs[0], a.T)
    blocks = -(-shape[0] // 32) * -(-shape[1] // 32)
    moves = [i for i in res.program.instructions if i.opcode is Opcode.NC_TRANSPOSE]
    assert len(moves) == blocks and all(i.engine is Engine.VECTOR for i in moves)


def test_good_broadcast_row_values_transposed():
    x = RNG.random((64, 128), dtype=np.float32)
    s = RNG.random((128, 1), dtype=np.float32)
    res = ncs.simulate(row_scale_by_transposed_column, x, s)
    np.testing.assert_allclose(res.outputs[0], x * s[:, 0][None, :], rtol=1e-6)


def test_bad_free_size_over_128_names_the_line():
    def bad(a):
        t = nl.load(a)
        nisa.nc_transpose(t, engine=nisa.vector_engine)  # BAD

    with pytest.raises(ShapeError) as info:
        ncs.trace(bad, np.zeros((64, 200), np.float32))
    line = bad.__code__.co_firstlineno + 2
    assert info.value.loc == f"test_vector_transpose_blocks.py:{line}"
    assert "expected at most 32x32 per instruction and 128x128 in all" in info.value.message
    assert "found 64x200" in info.value.message
    assert isinstance(info.value, SimulatorError)


def test_bad_mask_on_a_blocked_transpose_is_unsupported():
    def bad(a):
        t = nl.load(a)
        i = nl.arange(64)[:, None]
        nisa.nc_transpose(t, engine=nisa.vector_engine, mask=(i < 40))  # BAD

    with pytest.raises(UnsupportedError, match="mask= on a tile larger than 32x32"):
        ncs.trace(bad, np.zeros((64, 64), np.float32))
