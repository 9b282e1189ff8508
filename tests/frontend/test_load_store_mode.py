"""nl.load / nl.store take mode= (an nisa.oob_mode: what an indirect DMA does with an index
out of bounds, as nisa.dma_copy's oob_mode=); any other unknown keyword is a KernelError at
the kernel line (NKI declares them with **kwargs), never Python's TypeError."""

from __future__ import annotations

import warnings

import numpy as np

import neuroncore_sim as ncs
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl
from kernel_checks import expect_error
from neuroncore_sim.errors import KernelError

F32 = np.float32
RNG = np.random.default_rng(21)


def test_mode_skip_on_indirect_load_and_store_skips_out_of_bounds_rows():
    def kernel(data, idx, table):
        out = nl.ndarray([8, 16], dtype=data.dtype, buffer=nl.shared_hbm)
        idx_tile = nl.load(idx[nl.arange(8)[:, None]])
        rows = nl.load(data[idx_tile, 0:16], mode=nisa.oob_mode.skip)
        nl.store(out, value=rows, mode=nisa.oob_mode.error)          # a direct store
        nl.store(table[idx_tile, 0:16], value=nl.add(rows, 1.0), mode=nisa.oob_mode.skip)
        return out

    data = RNG.standard_normal((10, 16)).astype(F32)
    idx = np.array([0, 9, 10, -1, 3, 100, 2, 1], np.int32)
    ok = (idx >= 0) & (idx < 10)
    table = np.zeros((10, 16), F32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the skipped rows of the load are never written
        out = ncs.simulate(kernel, data, idx, table, timing=False).outputs[0]
    np.testing.assert_array_equal(out[ok], data[idx[ok]])
    ref = np.zeros((10, 16), F32)
    ref[idx[ok]] = data[idx[ok]] + 1
    np.testing.assert_array_equal(table, ref)


def test_unknown_load_keyword_or_mode_is_a_kernel_error():
    def bad_keyword(data):
        nl.load(data, cache=True)  # BAD

    def bad_mode(data):
        nl.load(data, mode="wrap")  # BAD

    expect_error(KernelError, r"nl.load: unexpected keyword\(s\) \['cache'\]; expected only "
                 r"mask, dtype, name, mode", bad_keyword, np.zeros((4, 4), F32))
    expect_error(KernelError, r"oob_mode: expected nisa.oob_mode.error or nisa.oob_mode.skip, "
                 r"found 'wrap'", bad_mode, np.zeros((4, 4), F32))

