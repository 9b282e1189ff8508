"""Values and costs of the select / sort / gather / shuffle / dynamic-copy instructions.

Each instruction runs inside a kernel and is compared with a numpy reference written from its
NKI API reference page (docs 2.26.1); each cost is checked on a one-instruction kernel against
the formula of shared/arch.md section 2 (or the assumption docs/model.md lists).
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import neuroncore_sim as ncs
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl
from neuroncore_sim.config import TRN1
from neuroncore_sim.timing.cost import instruction_cycles
from neuroncore_sim.program.ir import Engine, Opcode
from neuroncore_sim.timing.engines import simulate_timing

RNG = np.random.default_rng(7)
BF16 = np.dtype(ml_dtypes.bfloat16)
CLOCK_GHZ = {"vector": 1.12, "scalar": 1.4, "gpsimd": 1.4}
MIN_II, MIN_II_DYNAMIC, GPSIMD_START = 64, 600, 150
SETTINGS = settings(max_examples=25, deadline=None)


def run(kernel, *args):
    """Outputs of a functional trace (a tuple)."""
    return ncs.trace(kernel, *args).outputs


def only(kernel, opcode: Opcode, *args):
    """The single instruction of ``opcode`` a timing-only trace records, and its cycles."""
    program = ncs.trace(kernel, *args, functional=False).program
    found = [i for i in program.instructions if i.opcode is opcode]
    assert len(found) == 1, program.format()
    return found[0], instruction_cycles(found[0], TRN1)


def busy_ns(kernel, engine: str, *args) -> float:
    program = ncs.trace(kernel, *args, functional=False).program
    return simulate_timing(program, TRN1).busy_ns.get(engine, 0.0)


def hbm(shape, dtype=nl.float32):
    return nl.ndarray(shape, dtype, buffer=nl.shared_hbm)


# --- tensor_copy_dynamic_src / _dst -----------------------------------------------------------
def gather_columns(a, idx):
    """The API page's example: out[:, b] = a[:, idx[0, b]] with one dynamic copy per column."""
    out = hbm((a.shape[0], idx.shape[1]), a.dtype)
    ix, iy = nl.mgrid[0:a.shape[0], 0:1]
    src, offsets = nl.load(a), nl.load(idx)
    res = nl.ndarray((a.shape[0], idx.shape[1]), a.dtype, buffer=nl.sbuf)
    for b in nl.affine_range(idx.shape[1]):
        res[ix, b] = nisa.tensor_copy_dynamic_src(src[ix, offsets[0, b] + iy])
    nl.store(out, res)
    return out


@pytest.mark.parametrize("p,f,n", [(128, 512, 64), (32, 40, 7), (1, 16, 3)])
@pytest.mark.parametrize("dtype", [np.float32, BF16, np.int32])
def test_dynamic_src_gathers_columns(p, f, n, dtype):
    a = (RNG.random((p, f)) * 1000).astype(dtype)
    idx = RNG.integers(0, f, (1, n)).astype(np.int32)
    np.testing.assert_array_equal(run(gather_columns, a, idx)[0], a[:, idx[0]])


def test_dynamic_src_3d_with_a_bare_offset_element():
    def k(a, idx):
        out = hbm((128, 8, 4))
        ix, _, iz = nl.mgrid[0:128, 0:1, 0:4]
        src, offsets = nl.load(a), nl.load(idx)
        res = nl.ndarray((128, 8, 4), nl.float32, buffer=nl.sbuf)
        for b in nl.affine_range(8):
            res[ix, b, iz] = nisa.tensor_copy_dynamic_src(src[ix, offsets[0, b], iz])
        nl.store(out, res)
        return out

    a = RNG.random((128, 512, 4), dtype=np.float32)
    idx = (4 + np.arange(8, dtype=np.int32))[None]
    np.testing.assert_array_equal(run(k, a, idx)[0], np.take(a, idx[0], axis=1))


def test_dynamic_src_with_a_static_window_and_scalar_engine_cast():
    def k(a, idx):
        out = hbm((64, 16), nl.bfloat16)
        src, offsets = nl.load(a), nl.load(idx)
        i_p, i_f = nl.mgrid[0:64, 0:16]
        t = nisa.tensor_copy_dynamic_src(src[i_p, offsets[0, 1] + i_f], dtype=nl.bfloat16,
                                         engine=nisa.scalar_engine)
        nl.store(out, t)
        return out

    a = RNG.random((64, 100), dtype=np.float32)
    idx = np.array([[0, 37]], np.int32)
    np.testing.assert_array_equal(run(k, a, idx)[0], a[:, 37:53].astype(BF16))


def test_dynamic_dst_scatters_columns():
    def k(a, idx):
        out = hbm((128, 200))
        ix, iy = nl.mgrid[0:128, 0:1]
        res = nl.zeros((128, 200), nl.float32, buffer=nl.sbuf)
        src, offsets = nl.load(a), nl.load(idx)
        for b in nl.affine_range(a.shape[1]):
            if b % 2:
                nisa.tensor_copy_dynamic_dst(dst=res[ix, offsets[0, b] + iy], src=src[ix, b])
            else:  # assignment to a runtime-offset view is the same instruction
                res[ix, offsets[0, b] + iy] = src[ix, b]
        nl.store(out, res)
        return out

    a = RNG.random((128, 10), dtype=np.float32)
    idx = RNG.permutation(200)[:10].astype(np.int32)[None]
    want = np.zeros((128, 200), np.float32)
    want[:, idx[0]] = a
    np.testing.assert_array_equal(run(k, a, idx)[0], want)
    program = ncs.trace(k, a, idx, functional=False).program
    assert sum(i.opcode is Opcode.TENSOR_COPY_DYNAMIC_DST for i in program.instructions) == 10


def test_dynamic_copies_cost_max_min_ii_dynamic_n():
    def k(a, idx, n):
        src, offsets = nl.load(a), nl.load(idx)
        i_p, i_f = nl.mgrid[0:128, 0:n]
        t = nisa.tensor_copy_dynamic_src(src[i_p, offsets[0, 0] + i_f])
        dst = nl.ndarray((128, 4096), nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy_dynamic_dst(dst=dst[i_p, offsets[0, 0] + i_f], src=t,
                                     engine=nisa.gpsimd_engine)

    for n in (1, 600, 2048):
        a, idx = np.zeros((128, 4096), np.float32), np.zeros((1, 1), np.int32)
        _, src_cycles = only(k, Opcode.TENSOR_COPY_DYNAMIC_SRC, a, idx, n)
        ins, dst_cycles = only(k, Opcode.TENSOR_COPY_DYNAMIC_DST, a, idx, n)
        assert src_cycles == dst_cycles == max(MIN_II_DYNAMIC, n)
        assert ins.engine is Engine.GPSIMD
        assert busy_ns(k, "gpsimd", a, idx, n) == pytest.approx(max(600, n) / 1.4)


# --- tensor_copy_predicated -------------------------------------------------------------------
@pytest.mark.parametrize("pred_dtype", [nl.uint8, nl.uint16, nl.uint32])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, BF16, np.int32])
def test_tensor_copy_predicated(pred_dtype, reverse, dtype):
    def k(pred, on_true, dst0):
        out = hbm(dst0.shape, dst0.dtype)
        d = nl.load(dst0)
        nisa.tensor_copy_predicated(src=nl.load(on_true), dst=d, predicate=nl.load(pred),
                                    reverse_pred=reverse)
        nl.store(out, d)
        return out

    pred = (RNG.random((128, 96)) < 0.4).astype(pred_dtype)
    a, b = ((RNG.random((128, 96)) * 100).astype(dtype) for _ in range(2))
    keep = (pred != 0) != reverse
    np.testing.assert_array_equal(run(k, pred, a, b)[0], np.where(keep, a, b))


def test_tensor_copy_predicated_page_example_with_a_bool_predicate():
    def k(predicate, on_true_tensor, on_false_tensor):
        out_tensor = hbm((128, 512))
        pre_tile, src_tile = nl.load(predicate), nl.load(on_true_tensor)
        ix, iy = nl.mgrid[0:128, 0:512]
        dst_tile = nl.zeros(shape=src_tile.shape, dtype=src_tile.dtype)
        dst_tile[ix, iy] = nl.load(on_false_tensor)
        nisa.tensor_copy_predicated(src=src_tile, dst=dst_tile, predicate=pre_tile)
        nl.store(out_tensor, dst_tile)
        return out_tensor

    a, b = RNG.random((128, 512), dtype=np.float32), RNG.random((128, 512), dtype=np.float32)
    np.testing.assert_array_equal(run(k, np.less_equal(a, 0.8), a, b)[0],
                                  np.where(a <= 0.8, a, b))


def test_tensor_copy_predicated_scalar_src():
    def k(pred, dst0):
        out = hbm(dst0.shape, dst0.dtype)
        d = nl.load(dst0)
        nisa.tensor_copy_predicated(src=7, dst=d, predicate=nl.load(pred))
        nl.store(out, d)
        return out

    pred = (RNG.random((16, 32)) < 0.5).astype(np.uint8)
    b = RNG.integers(-5, 5, (16, 32)).astype(np.int32)
    np.testing.assert_array_equal(run(k, pred, b)[0], np.where(pred != 0, 7, b))


@pytest.mark.parametrize("n", [1, 64, 100, 512])
def test_tensor_copy_predicated_cost(n):
    def k(src_in_psum):
        d = nl.ndarray((128, n), nl.float32, buffer=nl.sbuf)
        s = nl.zeros((128, n), nl.float32, buffer=nl.psum if src_in_psum else nl.sbuf)
        p = nl.zeros((128, n), nl.uint8, buffer=nl.sbuf)
        nisa.tensor_copy_predicated(src=s, dst=d, predicate=p)

    assert only(k, Opcode.TENSOR_COPY_PREDICATED, False)[1] == max(MIN_II, 2 * n)
    assert only(k, Opcode.TENSOR_COPY_PREDICATED, True)[1] == max(MIN_II, n)


# --- select_reduce ------------------------------------------------------------------------------
def test_select_reduce_selects_and_reduces_max_through_the_registers():
    def k(pred, on_true, fill):
        out, red1, red2 = hbm(on_true.shape), hbm((128, 1)), hbm((128, 1))
        d = nl.ndarray(on_true.shape, nl.float32, buffer=nl.sbuf)
        p, t = nl.load(pred), nl.load(on_true)
        r = nl.ndarray((128, 1), nl.float32, buffer=nl.sbuf)
        nisa.select_reduce(dst=d, predicate=p, on_true=t, on_false=nl.load(fill),
                           reduce_res=r, reduce_cmd=nisa.reduce_cmd.reset_reduce)
        nl.store(out, d)
        nl.store(red1, r)
        # keep accumulating over a second, shifted selection; read the registers at the end
        d2 = nl.ndarray(on_true.shape, nl.float32, buffer=nl.sbuf)
        nisa.select_reduce(dst=d2, predicate=p, on_true=nl.add(t, 5.0), on_false=-1e30,
                           reverse_pred=True, reduce_cmd=nisa.reduce_cmd.reduce)
        r2 = nl.ndarray((128, 1), nl.float32, buffer=nl.sbuf)
        nisa.select_reduce(dst=d2, predicate=p, on_true=t, on_false=-1e30, reduce_res=r2,
                           reduce_cmd=nisa.reduce_cmd.reduce)
        nl.store(red2, r2)
        return out, red1, red2

    pred = (RNG.random((128, 64)) < 0.3).astype(np.uint8)
    t = RNG.standard_normal((128, 64)).astype(np.float32)
    fill = RNG.standard_normal((128, 1)).astype(np.float32)
    out, red1, red2 = run(k, pred, t, fill)
    sel = np.where(pred != 0, t, fill)
    np.testing.assert_array_equal(out, sel)
    np.testing.assert_array_equal(red1, sel.max(axis=1, keepdims=True))
    second = np.where(pred == 0, t + 5, np.float32(-1e30)).max(axis=1, keepdims=True)
    third = np.where(pred != 0, t, np.float32(-1e30)).max(axis=1, keepdims=True)
    np.testing.assert_array_equal(red2, np.maximum(np.maximum(red1, second), third))


@pytest.mark.parametrize("n", [8, 64, 300])
def test_select_reduce_cost(n):
    def k(with_res):
        d = nl.ndarray((128, n), nl.float32, buffer=nl.sbuf)
        t = nl.zeros((128, n), nl.float32, buffer=nl.psum)
        p = nl.zeros((128, n), nl.uint8, buffer=nl.sbuf)
        r = nl.ndarray((128, 1), nl.float32, buffer=nl.sbuf) if with_res else None
        nisa.select_reduce(dst=d, predicate=p, on_true=t, on_false=0.0, reduce_res=r)

    assert only(k, Opcode.SELECT_REDUCE, False)[1] == max(MIN_II, n)
    assert only(k, Opcode.SELECT_REDUCE, True)[1] == max(MIN_II, n) + MIN_II


# --- tensor_partition_reduce --------------------------------------------------------------------
@pytest.mark.parametrize("op,ref,dtype", [(np.add, np.sum, np.float32), (nl.maximum, np.max,
                                                                          np.float32),
                                          (np.bitwise_or, np.bitwise_or.reduce, np.int32),
                                          (nl.bitwise_and, np.bitwise_and.reduce, np.int32)])
def test_tensor_partition_reduce(op, ref, dtype):
    def k(a):
        out = hbm((1,) + a.shape[1:], a.dtype)
        nl.store(out, nisa.tensor_partition_reduce(op, nl.load(a)))
        return out

    a = (RNG.random((128, 32, 4)) * 1000).astype(dtype)
    got = run(k, a)[0]
    want = ref(a, axis=0)[None]
    if dtype == np.float32:
        np.testing.assert_allclose(got, want, rtol=1e-5)
    else:
        np.testing.assert_array_equal(got, want)


# --- local_gather -------------------------------------------------------------------------------
def gather_reference(src, index, n_elem, n_valid):
    """The page's numpy semantics, per GpSimd core of 16 partitions (hardware indices are
    element offsets: idx * num_elem_per_idx)."""
    p = src.shape[0]
    flat = src.reshape(p, -1)
    out = np.empty((p, n_valid, n_elem), src.dtype)
    for g in range(0, p, 16):
        idx = index[g:g + 16].reshape(16, -1).flatten(order="F")[:n_valid].astype(int)
        out[g:g + 16] = flat[g:g + 16][:, idx[:, None] + np.arange(n_elem)]
    return out


@pytest.mark.parametrize("n_elem", [1, 4, 32])
@pytest.mark.parametrize("dtype", [np.float32, BF16, np.uint8])
def test_local_gather_page_example_shape(n_elem, dtype):
    def k(src, index):
        out = hbm((128, 4, 16, n_elem), src.dtype)
        nl.store(out, nisa.local_gather(nl.load(src), nl.load(index), n_elem))
        return out

    src = (RNG.random((128, 512, 4)) * 100).astype(dtype)
    per_core = RNG.integers(0, 2048 // n_elem, (16, 4))
    index = (np.tile(per_core, (8, 1)) * n_elem).astype(np.uint16)
    want = gather_reference(src, index, n_elem, 64).reshape(128, 4, 16, n_elem)
    np.testing.assert_array_equal(run(k, src, index)[0], want)


@given(st.integers(1, 4), st.integers(1, 3), st.sampled_from([1, 2, 8]), st.data())
@SETTINGS
def test_local_gather_matches_numpy(cores, cols, n_elem, data):
    p, f = 16 * cores, 64
    n_valid = data.draw(st.integers(1, 16 * cols))
    src = RNG.standard_normal((p, f)).astype(np.float32)
    index = RNG.integers(0, f - n_elem + 1, (p, cols)).astype(np.uint16)

    def k(src, index):
        g = nisa.local_gather(nl.load(src), nl.load(index), n_elem, n_valid)
        out = hbm(g.shape, src.dtype)
        nl.store(out, g)
        return out

    got = run(k, src, index)[0].reshape(p, n_valid, n_elem)
    np.testing.assert_array_equal(got, gather_reference(src, index, n_elem, n_valid))


@pytest.mark.parametrize("n_elem,dtype,n_valid", [(1, np.float32, 64), (4, np.float32, 64),
                                                   (8, BF16, 32), (32, np.uint8, 16)])
def test_local_gather_cost(n_elem, dtype, n_valid):
    def k(src, index):
        nisa.local_gather(nl.load(src), nl.load(index), n_elem, n_valid)

    src, index = np.zeros((128, 512), dtype), np.zeros((128, 4), np.uint16)
    t, size = 4, np.dtype(dtype).itemsize
    c = ((28 + t * n_elem) / (t * n_elem)) / min(4 / size, n_elem)
    assert only(k, Opcode.LOCAL_GATHER, src, index)[1] == pytest.approx(
        GPSIMD_START + n_valid * n_elem / c)


# --- max8, nc_find_index8, nc_match_replace8 ----------------------------------------------------
def top8(data):
    """max8, its indices and one match-replace step, as one kernel."""
    p = data.shape[0]
    vals, idx, rep = hbm((p, 8)), hbm((p, 8), nl.uint32), hbm(data.shape)
    pos = hbm((p, 8), nl.uint32)
    t = nl.load(data)
    m = nisa.max8(src=t, dtype=nl.float32)
    nl.store(vals, m)
    nl.store(idx, nisa.nc_find_index8(data=t, vals=m))
    where = nl.ndarray((p, 8), nl.uint32, buffer=nl.sbuf)
    nl.store(rep, nisa.nc_match_replace8(data=t, vals=m, imm=-1e9, dst_idx=where,
                                         dtype=nl.float32))
    nl.store(pos, where)
    return vals, idx, rep, pos


def match_replace_reference(x, vals, imm):
    """The page's numpy equivalent: per row, each val in turn replaces its first occurrence."""
    x, idx = x.copy(), np.zeros(vals.shape, np.int64)
    for i in range(x.shape[0]):
        for j in range(vals.shape[1]):
            hits = np.flatnonzero(x[i] == vals[i, j])
            if hits.size:
                idx[i, j] = hits[0]
                x[i, hits[0]] = imm
    return x, idx


@given(st.integers(1, 128), st.integers(8, 300), st.sampled_from(["float32", "bfloat16",
                                                                  "int32"]),
       st.integers(0, 2**32 - 1))
@SETTINGS
def test_top8_family_matches_numpy(p, n, dtype, seed):
    rng = np.random.default_rng(seed)
    # few distinct values in bf16 / int32: ties exercise "first occurrence" and repeated vals
    data = (rng.standard_normal((p, n)) * 40).astype(
        ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype)
    vals, idx, rep, pos = run(top8, data)
    x = data.astype(np.float32)
    want = -np.sort(-x, axis=1)[:, :8]
    np.testing.assert_array_equal(vals, want)
    first = np.array([[int(np.flatnonzero(row == v)[0]) for v in w] for row, w in zip(x, want)])
    np.testing.assert_array_equal(idx, first)
    replaced, where = match_replace_reference(x, want, np.float32(-1e9))
    np.testing.assert_array_equal(pos, where)
    np.testing.assert_array_equal(rep, replaced)


def test_match_replace8_repeated_values_take_successive_occurrences_and_misses_keep_data():
    def k(data, vals):
        out, pos = hbm(data.shape), hbm((1, 8), nl.uint32)
        where = nl.ndarray((1, 8), nl.uint32, buffer=nl.sbuf)
        nl.store(out, nisa.nc_match_replace8(data=nl.load(data), vals=nl.load(vals), imm=0.0,
                                             dst_idx=where))
        nl.store(pos, where)
        return out, pos

    data = np.array([[5, 3, 5, 5, 1, 9, 3, 2, 8, 7]], np.float32)
    vals = np.array([[5, 5, 3, 42, 9, 5, 7, 1]], np.float32)
    out, pos = run(k, data, vals)
    np.testing.assert_array_equal(pos, [[0, 2, 1, 0, 5, 3, 9, 4]])  # 42: no match, index 0
    np.testing.assert_array_equal(out, [[0, 0, 0, 0, 0, 0, 3, 2, 8, 0]])


@pytest.mark.parametrize("n", [8, 64, 100, 16384])
def test_top8_family_costs(n):
    def k(a):
        t = nl.load(a)
        m = nisa.max8(src=t)
        nisa.nc_find_index8(data=t, vals=m)
        nisa.nc_match_replace8(data=t, vals=m, imm=0.0)

    a = np.zeros((128, n), np.float32)
    assert only(k, Opcode.MAX8, a)[1] == n
    assert only(k, Opcode.NC_FIND_INDEX8, a)[1] == n
    ins, cycles = only(k, Opcode.NC_MATCH_REPLACE8, a)
    assert cycles == max(MIN_II, n) and ins.engine is Engine.VECTOR


# --- nc_stream_shuffle --------------------------------------------------------------------------
def test_stream_shuffle_page_example_in_place():
    def k(in_tensor, out_tensor):
        a = nl.load(in_tensor)
        grid = nl.mgrid[0:32, 0:128]  # the page's example: grid.p / grid.x
        nisa.nc_stream_shuffle(src=a[grid.p, grid.x], dst=a[grid.p, grid.x],
                               shuffle_mask=[(i - 1) % 32 for i in range(32)])
        nl.store(out_tensor, value=a)

    x = RNG.random((32, 128), dtype=np.float32)
    out = np.zeros_like(x)
    ncs.simulate(k, x, out)
    np.testing.assert_array_equal(out, x[[(i - 1) % 32 for i in range(32)]])


@given(st.sampled_from([32, 64, 96, 128]), st.lists(st.sampled_from(list(range(32)) + [255]),
                                                    min_size=32, max_size=32))
@SETTINGS
def test_stream_shuffle_matches_numpy(p, mask):
    def k(src, dst0):
        out = hbm(dst0.shape, dst0.dtype)
        d = nl.load(dst0)
        nisa.nc_stream_shuffle(nl.load(src), d, mask)
        nl.store(out, d)
        return out

    src = RNG.integers(0, 1000, (p, 24)).astype(np.int32)
    old = RNG.integers(0, 1000, (p, 24)).astype(np.int32)
    want = old.copy()
    for i in range(p):
        if mask[i % 32] != 255:
            want[i] = src[(i // 32) * 32 + mask[i % 32]]
    np.testing.assert_array_equal(run(k, src, old)[0], want)


@pytest.mark.parametrize("n", [1, 64, 1000])
def test_stream_shuffle_cost(n):
    def k(a):
        t = nl.load(a)
        nisa.nc_stream_shuffle(t, t, list(range(32)))

    assert only(k, Opcode.NC_STREAM_SHUFFLE, np.zeros((32, n), np.float32))[1] == max(MIN_II, n)


# --- sequence_bounds ----------------------------------------------------------------------------
def bounds_reference(seq):
    """The page's numpy equivalent (a neighbour-by-neighbour scan)."""
    n = len(seq)
    lo, hi = np.zeros(n), np.zeros(n)
    lo[0] = 0 if seq[0] != 0 else n
    for i in range(1, n):
        lo[i] = n if seq[i] == 0 else lo[i - 1] if seq[i] == seq[i - 1] else i
    hi[-1] = n if seq[-1] != 0 else -1
    for i in range(n - 2, -1, -1):
        hi[i] = -1 if seq[i] == 0 else hi[i + 1] if seq[i] == seq[i + 1] else i + 1
    return np.stack([lo, hi])[None]


def bounds_kernel(ids):
    out = hbm((1, 2, ids.shape[1]), ids.dtype)
    nl.store(out, nisa.sequence_bounds(segment_ids=nl.load(ids)))
    return out


def test_sequence_bounds_page_example():
    ids = np.array([[0, 1, 1, 2, 2, 2, 0, 3, 3]], np.int32)
    np.testing.assert_array_equal(run(bounds_kernel, ids)[0],
                                  [[[9, 1, 1, 3, 3, 3, 9, 7, 7], [-1, 3, 3, 6, 6, 6, -1, 9, 9]]])


@given(st.lists(st.integers(0, 4), min_size=1, max_size=80), st.sampled_from(["float32",
                                                                              "int32"]))
@SETTINGS
def test_sequence_bounds_matches_numpy(seq, dtype):
    ids = np.array([seq], dtype)
    np.testing.assert_array_equal(run(bounds_kernel, ids)[0], bounds_reference(ids[0]))


@pytest.mark.parametrize("n", [1, 512])
def test_sequence_bounds_cost_assumption(n):
    ins, cycles = only(bounds_kernel, Opcode.SEQUENCE_BOUNDS, np.zeros((1, n), np.float32))
    assert ins.engine is Engine.GPSIMD and cycles == GPSIMD_START + 2 * n


def test_simulated_busy_time_is_the_formula_on_the_engine_clock():
    n = 300
    a = np.zeros((128, n), np.float32)

    def k(a):
        nisa.max8(src=nl.load(a))

    assert busy_ns(k, "vector", a) == pytest.approx(n / CLOCK_GHZ["vector"])
    assert math.isclose(only(k, Opcode.MAX8, a)[1], n)
