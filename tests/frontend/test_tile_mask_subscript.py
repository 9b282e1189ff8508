"""tile[mask]: an operand subscripted with a mask expression (as AWS-internal kernels pass
matmul operands) is the tile itself when the mask keeps all of it, else a clear error."""

from __future__ import annotations

import numpy as np

import neuroncore_sim as ncs
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl
from kernel_checks import expect_error
from neuroncore_sim.errors import UnsupportedError

F32 = np.float32


def test_an_all_true_mask_leaves_the_operand_whole():
    def kernel(w, x):
        out = nl.ndarray((64, 256), dtype=nl.float32, buffer=nl.shared_hbm)
        i_w = nl.arange(256)[None, :]
        mv = nl.load(x)
        res = nisa.nc_matmul(nl.load(w), mv[i_w < 256])  # bounds that divide evenly
        nl.store(out, value=nl.copy(res))
        return out

    w = np.random.default_rng(0).standard_normal((128, 64)).astype(F32)
    x = np.random.default_rng(1).standard_normal((128, 256)).astype(F32)
    out = ncs.simulate(kernel, w, x, timing=False).outputs[0]
    np.testing.assert_allclose(out, w.T @ x, rtol=1e-4, atol=1e-4)


def test_a_mask_that_drops_elements_asks_for_mask_on_the_instruction():
    def kernel(x):
        i_w = nl.arange(256)[None, :]
        t = nl.load(x)
        nl.exp(t[i_w < 100])  # BAD

    expect_error(UnsupportedError, r"tile\[mask\]: a mask carried by an operand must keep the "
                 r"whole tile \[128, 256\].*keeping the box \[\[0, 128\], \[0, 100\]\]", kernel,
                 np.zeros((128, 256), F32))
