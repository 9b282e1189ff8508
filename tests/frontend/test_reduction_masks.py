"""Masks of reductions range over the input's axes (the NKI docs: "which range of indices along
one of the input tile axes should be valid"): bn_stats / bn_aggr, tensor_reduce (nl.sum ...),
max8, nc_find_index8 and nc_match_replace8 reduce only the masked rectangle of their input."""

from __future__ import annotations

import numpy as np
import pytest

import neuroncore_sim as ncs
from neuroncore_sim.errors import UnsupportedError
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl

RNG = np.random.default_rng(9)


def test_bn_stats_of_a_ragged_row_in_chunks():
    """A 700-wide row in chunks of 512: the last chunk is masked to its 188 columns."""
    def k(a):  # a: [64, 700]
        out = nl.ndarray((64, 2), nl.float32, buffer=nl.shared_hbm)
        x = nl.load(a)
        i_p = nl.arange(64)[:, None]
        i_f = nl.arange(512)[None, :]
        i_s = nl.arange(6)[None, :]
        stats = nl.ndarray((64, 12), nl.float32)
        for j in nl.affine_range(2):
            stats[i_p, j * 6 + i_s] = nisa.bn_stats(x[i_p, j * 512 + i_f],
                                                    mask=(j * 512 + i_f < 700), dtype=nl.float32)
        nl.store(out, value=nisa.bn_aggr(stats))
        return out

    a = RNG.random((64, 700), dtype=np.float32)
    got = ncs.trace(k, a).outputs[0]
    np.testing.assert_allclose(got[:, 0], a.mean(1), rtol=1e-5)
    np.testing.assert_allclose(got[:, 1], a.var(1), rtol=1e-4)


@pytest.mark.parametrize("keepdims", [False, True])
def test_sum_of_a_masked_block(keepdims):
    def k(a):  # a: [16, 40]: rows < 10, columns < 25
        i_p = nl.arange(16)[:, None]
        i_f = nl.arange(40)[None, :]
        s = nl.sum(nl.load(a), axis=1, keepdims=keepdims, mask=(i_p < 10) & (i_f < 25))
        out = nl.ndarray((10, 1), nl.float32, buffer=nl.shared_hbm)
        nl.store(out, value=s[0:10] if keepdims else s.expand_dims(1)[0:10])
        return out

    a = RNG.random((16, 40), dtype=np.float32)
    np.testing.assert_allclose(ncs.trace(k, a).outputs[0][:, 0], a[:10, :25].sum(1), rtol=1e-5)


def test_max8_and_match_replace8_in_a_masked_block():
    def k(a):  # a: [8, 64]: the top 8 of the first 32 columns of rows < 4
        out = nl.ndarray((4, 32), a.dtype, buffer=nl.shared_hbm)
        idx = nl.ndarray((4, 8), nl.uint32, buffer=nl.shared_hbm)
        ix, iy = nl.mgrid[0:8, 0:64]
        x = nl.load(a)
        m = nisa.max8(src=x[ix, iy], mask=(ix < 4) & (iy < 32))
        found = nisa.nc_find_index8(data=x[ix, iy], vals=m, mask=(ix < 4) & (iy < 32))
        r = nisa.nc_match_replace8(data=x[ix, iy], vals=m, imm=-1.0, mask=(ix < 4) & (iy < 32))
        nl.store(out, value=r[0:4, 0:32])
        nl.store(idx, value=found[0:4])
        return out, idx

    a = RNG.permutation(8 * 64).reshape(8, 64).astype(np.float32)
    got, idx = ncs.trace(k, a).outputs
    block = a[:4, :32]
    top = np.argsort(-block, axis=1)[:, :8]
    np.testing.assert_array_equal(idx, top)
    want = block.copy()
    np.put_along_axis(want, top, -1.0, axis=1)
    np.testing.assert_array_equal(got, want)


def test_a_triangle_mask_on_a_reduction_is_an_error():
    def k(a):
        i_p = nl.arange(16)[:, None]
        i_f = nl.arange(40)[None, :]
        return nl.sum(nl.load(a), axis=1, mask=i_f < i_p)

    with pytest.raises(UnsupportedError, match=r"tensor_reduce: a mask that is not a rectangle "
                       r"over the input \[16, 40\] is not supported"):
        ncs.trace(k, np.zeros((16, 40), np.float32))
