"""nisa.nc_transpose masks range over the INPUT tile's axes (NKI masking docs: "which range of
indices along one of the input tile axes should be valid"), and a masked TensorE result copied
into an SBUF tile copies only its active box."""

from __future__ import annotations

import warnings

import numpy as np

import neuroncore_sim as ncs
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl
from kernel_checks import expect_error
from neuroncore_sim.errors import UnsupportedError

F32 = np.float32
RNG = np.random.default_rng(5)


def _ragged_transpose(a, rows, cols):
    # a [rows, cols] block of a 128 x 64 input, transposed into a pre-filled SBUF tile
    out = nl.ndarray((64, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    i = nl.arange(128)[:, None]
    j = nl.arange(64)[None, :]
    x = nl.load(a)
    dst = nl.full((64, 128), -1.0, dtype=nl.float32)
    dst[...] = nisa.nc_transpose(x[i, j], mask=(i < rows) & (j < cols))
    nl.store(out, value=dst)
    return out


def test_masked_transpose_takes_the_mask_over_input_axes():
    a = RNG.standard_normal((128, 64)).astype(F32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no read of the unwritten part of the PSUM result
        out = ncs.simulate(_ragged_transpose, a, 72, 40, timing=False).outputs[0]
    ref = np.full((64, 128), -1.0, F32)
    ref[:40, :72] = a[:72, :40].T  # input rows < 72 and columns < 40, transposed
    np.testing.assert_array_equal(out, ref)


def test_triangular_mask_on_a_transpose_is_refused():
    def kernel(a):
        i = nl.arange(32)[:, None]
        j = nl.arange(32)[None, :]
        nisa.nc_transpose(nl.load(a)[i, j], mask=(i >= j))  # BAD
    expect_error(UnsupportedError, r"nc_transpose: a mask that is not a rectangle over the "
                 r"input \[32, 32\]", kernel, np.zeros((32, 32), F32))
