"""nc_matmul with a moving tile of several free axes keeps them in its result ([M, a, b]), so
`psum[p, a, b] += nc_matmul(...)` accumulates into that slot; a [P] value fills a [P, 1]
indirect store."""

from __future__ import annotations

import numpy as np

import neuroncore_sim as ncs
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl
from kernel_checks import expect_error
from neuroncore_sim.errors import ShapeError

F32 = np.float32
RNG = np.random.default_rng(17)


def test_three_d_moving_tile_accumulates_into_a_three_d_psum_slot():
    def kernel(w, x):
        out = nl.ndarray((64, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        ps = nl.zeros((nl.par_dim(64), 512), dtype=nl.float32, buffer=nl.psum)
        mv = nl.load(x)                                        # [128, 4, 128]
        for k in nl.affine_range(2):
            ps[nl.arange(64)[:, None, None], 128 * nl.arange(4)[None, :, None]
               + nl.arange(128)[None, None, :]] += nisa.nc_matmul(nl.load(w[k]), mv)
        nl.store(out, value=nl.copy(ps))
        return out

    w = RNG.standard_normal((2, 128, 64)).astype(F32)
    x = RNG.standard_normal((128, 4, 128)).astype(F32)
    out = ncs.simulate(kernel, w, x, timing=False).outputs[0]
    ref = (w[0] + w[1]).T @ x.reshape(128, 512)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-3)


def test_a_result_into_a_slot_of_another_shape_is_a_shape_error():
    def kernel(w, x):
        ps = nl.zeros((nl.par_dim(64), 4, 64), dtype=nl.float32, buffer=nl.psum)
        ps[...] += nisa.nc_matmul(nl.load(w), nl.load(x))  # BAD

    expect_error(ShapeError, r"nl.add: expected shapes that broadcast .* found \[64, 4, 64\] and "
                 r"\[64, 4, 128\]", kernel,
                 np.zeros((128, 64), F32), np.zeros((128, 4, 128), F32))


def test_a_partition_vector_fills_a_p_by_1_indirect_store():
    def kernel(x, idx, table):
        t = nl.load(x)
        s = nisa.tensor_reduce(np.add, t, axis=(1,))          # [128]
        i_tile = nl.load(idx)
        nl.store(table[i_tile[nl.arange(128)[:, None], 0], nl.arange(1)[None, :]], value=s)

    x = RNG.standard_normal((128, 8)).astype(F32)
    idx = RNG.permutation(200)[:128].astype(np.int32).reshape(128, 1)
    table = np.zeros((200, 1), F32)
    ncs.simulate(kernel, x, idx, table, timing=False)
    ref = np.zeros((200, 1), F32)
    ref[idx[:, 0], 0] = x.sum(axis=1)
    np.testing.assert_allclose(table, ref, rtol=1e-5, atol=1e-5)
