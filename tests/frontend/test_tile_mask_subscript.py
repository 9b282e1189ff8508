"""tile[mask]: an operand subscripted with a mask expression (as AWS-internal kernels pass
matmul operands) is the tile itself when the mask keeps all of it; a rectangle it keeps
restricts the instruction taking it (element-wise: as its mask=; nc_matmul: contraction rows
and result rows / columns); anything else is a clear error."""

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


def test_a_rectangle_kept_by_an_element_wise_operand_restricts_the_instruction():
    def kernel(x):
        out = nl.ndarray((128, 256), dtype=nl.float32, buffer=nl.shared_hbm)
        i_w = nl.arange(256)[None, :]
        t = nl.load(x)
        nl.store(out, value=nl.zeros((128, 256), nl.float32))
        nl.store(out[:, 0:100], value=nl.exp(t[i_w < 100])[:, 0:100])
        return out

    x = np.random.default_rng(2).standard_normal((128, 256)).astype(F32)
    out = ncs.simulate(kernel, x, timing=False).outputs[0]
    np.testing.assert_allclose(out[:, :100], np.exp(x[:, :100]), rtol=1e-6)
    assert (out[:, 100:] == 0).all()


def test_matmul_operands_carry_contraction_and_result_boxes():
    """As AWS's rmsnorm_quant reference passes its moving operand: ``moving[mask]`` keeps the
    first columns; ``stationary[mask]`` over its partitions shortens the contraction."""
    def kernel(w, x):
        out = nl.ndarray((64, 256), dtype=nl.float32, buffer=nl.shared_hbm)
        i_k, i_n = nl.arange(128)[:, None], nl.arange(256)[None, :]
        acc = nl.zeros((64, 256), nl.float32, buffer=nl.psum)
        acc[...] = nisa.nc_matmul(nl.load(w)[i_k < 96], nl.load(x)[i_n < 200])
        nl.store(out, value=nl.copy(acc))
        return out

    w = np.random.default_rng(0).standard_normal((128, 64)).astype(F32)
    x = np.random.default_rng(1).standard_normal((128, 256)).astype(F32)
    out = ncs.simulate(kernel, w, x, timing=False).outputs[0]
    np.testing.assert_allclose(out[:, :200], w[:96].T @ x[:96, :200], rtol=1e-4, atol=1e-4)
    assert (out[:, 200:] == 0).all()  # not written: the zeros the tile held


def test_a_mask_on_the_matmul_result_masks_rows_not_the_contraction():
    def kernel(w, x):
        out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
        i_m = nl.arange(128)[:, None]
        acc = nl.zeros((128, 64), nl.float32, buffer=nl.psum)
        acc[...] = nisa.nc_matmul(nl.load(w), nl.load(x), mask=(i_m < 100))
        nl.store(out, value=nl.copy(acc))
        return out

    w = np.random.default_rng(3).standard_normal((128, 128)).astype(F32)
    x = np.random.default_rng(4).standard_normal((128, 64)).astype(F32)
    out = ncs.simulate(kernel, w, x, timing=False).outputs[0]
    np.testing.assert_allclose(out[:100], (w.T @ x)[:100], rtol=1e-4, atol=1e-4)
    assert (out[100:] == 0).all()


def test_a_mask_that_is_not_a_rectangle_asks_for_mask_on_the_instruction():
    def kernel(x):
        i_p, i_w = nl.arange(128)[:, None], nl.arange(256)[None, :]
        t = nl.load(x)
        nl.exp(t[i_w < i_p])  # BAD

    expect_error(UnsupportedError, r"tile\[mask\]: a mask carried by an operand must keep the "
                 r"whole tile \[128, 256\] or a rectangle .*non-rectangular predicate", kernel,
                 np.zeros((128, 256), F32))


def test_a_box_the_instruction_cannot_map_is_refused():
    def kernel(x):
        i_p = nl.arange(128)[:, None]
        t = nl.load(x)
        scale = nl.load(x[:, 0:1])
        nl.multiply(t, scale[i_p < 64])  # BAD: a [128, 1] operand of a [128, 256] instruction

    expect_error(UnsupportedError, r"an operand restricted by tile\[mask\] to the box \[\[0, 64\], "
                 r"\[0, 1\]\] of its \[128, 1\]; expected the instruction's own shape", kernel,
                 np.zeros((128, 256), F32))
