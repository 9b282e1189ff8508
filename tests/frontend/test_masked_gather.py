"""Two classes from AWS's resize kernel: ``nl.load(t[idx, ...], mask=m)`` gathers only the rows
the mask keeps (the dropped rows' indices are never read), and ``nl.divide`` of integer tiles
is true division (a float32 quotient that ``nl.floor`` then floors)."""

from __future__ import annotations

import numpy as np
import pytest

import neuroncore_sim as ncs
import neuroncore_sim.nki as nki
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl
from neuroncore_sim.errors import AccessError, UnsupportedError


@nki.jit
def gather_valid(table, idx, n_valid):
    out = nl.ndarray((128, 64), dtype=table.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(64)[None, :]
    ix = nl.load(idx)
    t = nl.load(table[ix[i_p, 0], i_f], mask=(i_p < n_valid))
    nl.store(out[i_p, i_f], value=t, mask=(i_p < n_valid))
    nl.store(out[i_p, i_f], value=nl.zeros((128, 64), dtype=table.dtype), mask=(i_p >= n_valid))
    return out


@nki.jit
def gather_all(table, idx):
    out = nl.ndarray((128, 64), dtype=table.dtype, buffer=nl.shared_hbm)
    ix = nl.load(idx)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(64)[None, :]
    nl.store(out, value=nl.load(table[ix[i_p, 0], i_f]))
    return out


@nki.jit
def row_and_column(n):
    out = nl.ndarray((128, 2), dtype=nl.int32, buffer=nl.shared_hbm)
    pos = nisa.iota(512 + nl.arange(128)[:, None], dtype=nl.int32)
    nl.store(out[:, 0:1], nl.floor(pos / n, dtype=nl.int32))
    nl.store(out[:, 1:2], nl.mod(pos, n, dtype=nl.int32))
    return out


def _table_and_index():
    table = np.random.default_rng(0).random((32, 64)).astype(np.float32)
    idx = np.full((128, 1), 10**6, np.int32)  # rows past n_valid: any value, never read
    idx[:100, 0] = np.arange(100) % 32
    return table, idx


def test_masked_gather_reads_only_the_kept_rows() -> None:
    table, idx = _table_and_index()
    out = ncs.simulate(gather_valid, table, idx, 100).outputs[0]
    np.testing.assert_array_equal(out[:100], table[idx[:100, 0]])
    np.testing.assert_array_equal(out[100:], 0)


def test_without_the_mask_a_bad_row_index_is_an_error() -> None:
    table, idx = _table_and_index()
    with pytest.raises(AccessError, match="indirect DMA row index"):
        ncs.simulate(gather_all, table, idx)


def test_a_mask_that_is_not_a_box_is_refused() -> None:
    @nki.jit
    def diagonal(table, idx):
        ix = nl.load(idx)
        i_p = nl.arange(128)[:, None]
        i_f = nl.arange(64)[None, :]
        nl.load(table[ix[i_p, 0], i_f], mask=(i_p < i_f))  # BAD

    table, idx = _table_and_index()
    with pytest.raises(UnsupportedError, match="must be bounds per axis"):
        ncs.simulate(diagonal, table, idx)


def test_integer_divide_is_true_division() -> None:
    out = ncs.simulate(row_and_column, 38).outputs[0]
    pos = 512 + np.arange(128)
    np.testing.assert_array_equal(out[:, 0], pos // 38)  # floor(13.5) is 13, not 14
    np.testing.assert_array_equal(out[:, 1], pos % 38)
