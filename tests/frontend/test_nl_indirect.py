"""Indirect (index-tile) DMA: nl.load / nl.store / nl.atomic_rmw / nisa.dma_copy with
``t[idx_tile, ...]`` operands: values against numpy, error paths at the kernel line, and the
DMA cost (one descriptor per gathered row)."""

from __future__ import annotations


import numpy as np
import pytest

import neuroncore_sim as ncs
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl
from kernel_checks import expect_error
from neuroncore_sim.config import TRN1
from neuroncore_sim.timing.cost import dma_transfers
from neuroncore_sim.errors import AccessError, DTypeError, KernelError, MemorySpaceError, \
    ShapeError, UnsupportedError

F32 = np.float32
RNG = np.random.default_rng(7)


# --- kernels (the NKI docs' examples, in our words) ----------------------------------------------
def gather_from_hbm_indices(data, idx):
    out = nl.ndarray([64, 512], dtype=data.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(64)[:, None]
    i_f = nl.arange(512)[None, :]
    idx_tile = nl.load(idx[i_p])
    rows = nl.load(data[idx_tile[i_p, 0], i_f])
    nl.store(out, value=rows)
    return out


def gather_iota_indices(data):
    out = nl.ndarray([64, 512], dtype=data.dtype, buffer=nl.shared_hbm)
    idx_tile = nisa.iota(2 * nl.arange(64)[:, None], dtype=np.int32)
    nl.store(out, value=nl.load(data[idx_tile, 0:512]))
    return out


def scatter(src, idx):
    out = nl.ndarray([128, 512], dtype=src.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.zeros((128, 512), dtype=src.dtype))
    idx_tile = nl.load(idx[nl.arange(64)[:, None]])
    nl.store(out[idx_tile, nl.arange(512)[None, :]], value=nl.load(src))
    return out


def rmw(table, idx, val):
    idx_tile = nl.load(idx[nl.arange(64)[:, None]])
    nl.atomic_rmw(table[idx_tile, nl.arange(512)[None, :]], value=nl.load(val), op=np.add)


def test_gather_matches_numpy_both_index_forms():
    data = RNG.standard_normal((128, 512)).astype(F32)
    idx = RNG.permutation(128)[:64].astype(np.int32)
    res = ncs.simulate(gather_from_hbm_indices, data, idx)
    np.testing.assert_array_equal(res.outputs[0], data[idx])
    res = ncs.simulate(gather_iota_indices, data)
    np.testing.assert_array_equal(res.outputs[0], data[2 * np.arange(64)])


def test_gather_of_a_column_slice_and_bf16():
    import ml_dtypes

    def kernel(data, idx):
        out = nl.ndarray([32, 100], dtype=nl.float32, buffer=nl.shared_hbm)
        idx_tile = nl.load(idx[nl.arange(32)[:, None]])
        nl.store(out, value=nl.load(data[idx_tile, 7:107], dtype=nl.float32))
        return out
    data = RNG.standard_normal((300, 256)).astype(ml_dtypes.bfloat16)
    idx = RNG.integers(0, 300, 32).astype(np.int32)
    res = ncs.simulate(kernel, data, idx)
    np.testing.assert_array_equal(res.outputs[0], data[idx, 7:107].astype(F32))


def test_scatter_writes_only_the_indexed_rows():
    src = RNG.standard_normal((64, 512)).astype(F32)
    idx = (2 * np.arange(64)).astype(np.int32)
    out = ncs.simulate(scatter, src, idx).outputs[0]
    np.testing.assert_array_equal(out[idx], src)
    assert not out[1::2].any()


def test_atomic_rmw_adds_and_repeated_rows_accumulate():
    table = RNG.standard_normal((128, 512)).astype(F32)
    idx = np.array([0, 1, 1, 3] * 16, np.int32)
    val = RNG.standard_normal((64, 512)).astype(F32)
    ref = table.copy()
    np.add.at(ref, idx, val)
    ncs.simulate(rmw, table, idx, val)
    np.testing.assert_allclose(table, ref, rtol=1e-6, atol=1e-5)


def test_dma_copy_oob_skip_keeps_destination_rows():
    def gather_skip(data, idx):
        out = nl.ndarray([8, 16], dtype=data.dtype, buffer=nl.shared_hbm)
        dst = nl.full((8, 16), -1.0, nl.float32)
        idx_tile = nl.load(idx[nl.arange(8)[:, None]])
        nisa.dma_copy(dst=dst, src=data[idx_tile, 0:16], oob_mode=nisa.oob_mode.skip)
        nl.store(out, value=dst)
        return out

    def scatter_skip(table, idx, val):
        idx_tile = nl.load(idx[nl.arange(8)[:, None]])
        nisa.dma_copy(dst=table[idx_tile, 0:16], src=nl.load(val), oob_mode=nisa.oob_mode.skip)
    data = RNG.standard_normal((10, 16)).astype(F32)
    idx = np.array([0, 9, 10, -1, 3, 100, 2, 1], np.int32)
    ok = (idx >= 0) & (idx < 10)
    out = ncs.simulate(gather_skip, data, idx).outputs[0]
    np.testing.assert_array_equal(out[ok], data[idx[ok]])
    assert (out[~ok] == -1).all()
    val = RNG.standard_normal((8, 16)).astype(F32)
    table, ref = data.copy(), data.copy()
    ref[idx[ok]] = val[ok]
    ncs.simulate(scatter_skip, table, idx, val)
    np.testing.assert_array_equal(table, ref)


# --- error paths ----------------------------------------------------------------------------
def test_out_of_bounds_index_is_an_error_at_the_dma_line():
    def bad(data, idx):
        idx_tile = nl.load(idx[nl.arange(4)[:, None]])
        nl.load(data[idx_tile, 0:8])  # BAD
    expect_error(AccessError, r"row index \(partition 2 of the index tile\); expected 0..9 .*"
                 r"found 12", bad, z(10, 8), np.array([0, 1, 12, 3], np.int32))
    ncs.simulate(bad, z(10, 8), np.array([0, 1, 9, 3], np.int32), timing=False)


def test_index_tile_rules():
    def in_hbm(data, idx):
        nl.load(data[idx, 0:8])  # BAD

    def float_index(data, idx):
        t = nl.load(idx, dtype=nl.float32)
        nl.load(data[t, 0:8])  # BAD

    def wide_index(data, idx):
        t = nl.load(idx)
        nl.load(data[t, 0:8])  # BAD

    def index_not_first(data, idx):
        t = nl.load(idx)
        nl.load(data[0:4, t])  # BAD

    idx = np.zeros((4, 1), np.int32)
    expect_error(MemorySpaceError, r"indirect index tile: expected a tile in sbuf .* found hbm",
                 in_hbm, z(10, 8), idx)
    expect_error(DTypeError, r"expected an integer dtype, found float32", float_index,
                 z(10, 8), idx)
    expect_error(ShapeError, r"expected shape \[P, 1\] .* found \[4, 2\]", wide_index, z(10, 8),
                 np.zeros((4, 2), np.int32))
    expect_error(UnsupportedError, r"only the first index may be a tile", index_not_first,
                 z(10, 8), idx)


def test_atomic_rmw_rules():
    def direct(table, val):
        nl.atomic_rmw(table[0:4, 0:8], value=nl.load(val), op=np.add)  # BAD

    def multiply(table, idx, val):
        t = nl.load(idx)
        nl.atomic_rmw(table[t, 0:8], value=nl.load(val), op=np.multiply)  # BAD

    def shape(table, idx, val):
        t = nl.load(idx)
        nl.atomic_rmw(table[t, 0:8], value=nl.load(val[0:4, 0:4]), op=np.add)  # BAD

    def good(table, idx, val):
        t = nl.load(idx)
        nl.atomic_rmw(table[t, 0:8], value=nl.load(val), op=np.add)

    idx = np.zeros((4, 1), np.int32)
    expect_error(UnsupportedError, r"atomic_rmw dst: expected an HBM tensor indexed by an index "
                 r"tile", direct, z(10, 8), z(4, 8))
    expect_error(KernelError, r"atomic_rmw op: expected one of \['add'\], found 'multiply'",
                 multiply, z(10, 8), idx, z(4, 8))
    expect_error(ShapeError, r"expected a tile of shape \[4, 8\] .* found \[4, 4\]", shape,
                 z(10, 8), idx, z(4, 8))
    table = z(10, 8)
    ncs.simulate(good, table, idx, np.ones((4, 8), F32), timing=False)
    assert table[0, 0] == 4.0 and table[1:].sum() == 0


def test_rmw_with_skip_is_rejected():
    def bad(table, idx, val):
        t = nl.load(idx)
        nisa.dma_copy(dst=table[t, 0:8], src=nl.load(val), dst_rmw_op=np.add,  # BAD
                      oob_mode=nisa.oob_mode.skip)
    expect_error(KernelError, r"only oob_mode=oob_mode.error is allowed", bad, z(10, 8),
                 np.zeros((4, 1), np.int32), z(4, 8))


def z(*shape):
    return np.zeros(shape, F32)


# --- timing ------------------------------------------------------------------------------------
def _indirect_dma(program):
    return next(i for i in program.instructions if i.attrs.get("indirect"))


@pytest.mark.parametrize("table_rows", [128, 8192])
def test_gather_cost_is_one_descriptor_per_row_whatever_the_table_size(table_rows):
    data = np.zeros((table_rows, 512), F32)
    prog = ncs.trace(gather_from_hbm_indices, data, np.arange(64, dtype=np.int32),
                     functional=False).program
    transfers = dma_transfers(_indirect_dma(prog), TRN1)
    assert sum(t.buffers for t in transfers) == 64
    assert sum(t.nbytes for t in transfers) == 64 * 512 * 4
    assert len(transfers) == 16
    # 4 rows of 2 KiB per engine, each a descriptor, read from HBM
    per_row = max(TRN1.dma_buffer_overhead_ns, 2048 / TRN1.dma_hbm_read_bytes_per_ns)
    assert transfers[0].engine_ns == pytest.approx(4 * per_row)


def test_strided_rows_cost_one_descriptor_per_run():
    def kernel(data, idx):
        t = nl.load(idx[nl.arange(8)[:, None]])
        nl.load(data[t, nl.arange(0, 64, 2)[None, :]])
    prog = ncs.trace(kernel, np.zeros((16, 64), F32), np.zeros(8, np.int32),
                     functional=False).program
    assert sum(t.buffers for t in dma_transfers(_indirect_dma(prog), TRN1)) == 8 * 32


def test_atomic_rmw_costs_two_passes_and_reads_hbm():
    table, val, idx = np.zeros((128, 512), F32), np.ones((64, 512), F32), np.zeros(64, np.int32)
    rmw_prog = ncs.trace(rmw, table, idx, val, functional=False).program
    st_prog = ncs.trace(scatter, val, idx, functional=False).program
    a = dma_transfers(_indirect_dma(rmw_prog), TRN1)
    b = dma_transfers(_indirect_dma(st_prog), TRN1)
    assert [t.buffers for t in a] == [t.buffers for t in b]
    assert a[0].engine_ns == pytest.approx(TRN1.dma_rmw_passes * b[0].engine_ns)
    assert a[0].hbm_bytes == 2 * b[0].hbm_bytes


def test_gather_waits_for_the_index_tile_and_simulates():
    data = RNG.standard_normal((128, 512)).astype(F32)
    res = ncs.simulate(gather_iota_indices, data)
    ev = res.events
    iota_end = ev[ev.opcode == "iota"].end_ns.max()
    dma_rows = ev[ev.instr_id == _indirect_dma(res.program).id]
    assert len(dma_rows) == 16 and dma_rows.start_ns.min() >= iota_end
