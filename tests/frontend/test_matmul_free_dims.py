"""nisa.nc_matmul with a moving tile of several free dims (a conv window ``x[:, r:r+H, c:c+W]``,
as AWS's conv kernels and CS149 students' conv2d pass it): the free size is their product
(<= 512) and the PSUM result keeps them, ``[M, H, W]``."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import neuroncore_sim as ncs
from neuroncore_sim.errors import ShapeError
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl

RNG = np.random.default_rng(3)


def _conv3x3(w, x):  # w: [3, 3, K, M] (K in channels, M out), x: [K, H, W] -> valid conv
    _, _, k, m = w.shape
    _, h, wd = x.shape
    out = nl.ndarray((m, h - 2, wd - 2), nl.float32, buffer=nl.shared_hbm)
    xs = nl.load(x)
    acc = nl.zeros((m, h - 2, wd - 2), nl.float32, buffer=nl.psum)
    for i in nl.affine_range(3):
        for j in nl.affine_range(3):
            acc += nisa.nc_matmul(nl.load(w[i, j]), xs[:, i:i + h - 2, j:j + wd - 2])
    nl.store(out, value=nl.copy(acc))
    return out


def test_conv_window_as_moving_tile():
    w = RNG.random((3, 3, 128, 64), dtype=np.float32)
    x = RNG.random((128, 12, 10), dtype=np.float32)
    got = ncs.trace(_conv3x3, w, x).outputs[0]
    want = sum(np.einsum("km,khw->mhw", w[i, j].astype(np.float64), x[:, i:i + 10, j:j + 8])
               for i in range(3) for j in range(3))
    np.testing.assert_allclose(got, want, rtol=1e-5)


def _too_wide(x):
    xs = nl.load(x)
    ones = nl.ones((128, 1), nl.float32)
    return nisa.nc_matmul(ones, xs)  # BAD: 16 x 40 = 640 > 512 moving elements


def _stationary_3d(x):
    xs = nl.load(x)
    return nisa.nc_matmul(xs, xs)  # BAD: stationary has two free dims


@pytest.mark.parametrize("k,message", [
    (_too_wide, r"nc_matmul moving: free size at most 512, found 640 \(\[128, 16, 40\]\)"),
    (_stationary_3d, r"nc_matmul stationary: expected a 2-D tile \[K, F\], found "
                     r"\[128, 16, 40\]"),
])
def test_errors(k, message):
    with pytest.raises(ShapeError, match=message) as info:
        ncs.trace(k, np.zeros((128, 16, 40), np.float32))
    src, start = inspect.getsourcelines(k)
    bad = start + next(i for i, line in enumerate(src) if "# BAD" in line)
    assert info.value.loc == f"test_matmul_free_dims.py:{bad}"
