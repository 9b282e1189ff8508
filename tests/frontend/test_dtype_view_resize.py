"""``t.view(dtype)`` with a dtype of another element size (frontend/tensors/dtype_view.py).

As numpy's ``ndarray.view``: the last dim scales by old size / new size, on chip the partition
dim never changes, and the view names the same bytes, for the values (writes through either
name are seen through the other) and for the timing (bytes moved, hazards between the names).
Each rule has a kernel checked against numpy and a misuse that gets a clear error.
"""

from __future__ import annotations

import inspect
import warnings

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import neuroncore_sim as ncs
from neuroncore_sim.errors import ShapeError, UnsupportedError, UninitializedReadWarning
from neuroncore_sim.program.ir import Access, MemSpace, Opcode, TensorDecl
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl

HERE = "test_dtype_view_resize.py"
RNG = np.random.default_rng(11)
F32 = np.float32


def store(t):
    out = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=t)
    return out


def bad_line(kernel) -> int:
    src, start = inspect.getsourcelines(kernel)
    return start + next(i for i, s in enumerate(src) if "# BAD" in s)


def expect_error(cls, message, kernel, *args):
    with pytest.raises(cls, match=message) as info:
        ncs.trace(kernel, *args)
    assert type(info.value) is cls
    assert info.value.loc == f"{HERE}:{bad_line(kernel)}", str(info.value)


# --- HBM tensors ---------------------------------------------------------------------------------
def test_hbm_views_read_the_bytes_numpy_reads():
    def kernel(a, b):
        return store(nl.load(a.view(nl.int8))), store(nl.load(b.view(nl.int32)))

    a = RNG.random((128, 16), dtype=F32)
    b = RNG.random((128, 16), dtype=F32).astype(ml_dtypes.bfloat16)
    launch = ncs.trace(kernel, a, b)
    assert launch.outputs[0].shape == (128, 64)
    np.testing.assert_array_equal(launch.outputs[0], a.view(np.int8))
    np.testing.assert_array_equal(launch.outputs[1], b.view(np.int32))


def test_a_store_through_a_view_of_an_output_writes_its_bytes():
    def kernel(a):
        out = nl.ndarray((64, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out.view(nl.bfloat16), value=nl.load(a))  # [64, 16] bf16 = [64, 8] fp32
        return out

    a = RNG.random((64, 16), dtype=F32).astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(ncs.trace(kernel, a).outputs[0], a.view(np.float32))


@settings(max_examples=25, deadline=None)
@given(st.sampled_from([(np.float32, np.int8), (np.float32, ml_dtypes.bfloat16),
                        (np.int8, np.float32), (ml_dtypes.bfloat16, np.int32),
                        (np.uint8, np.float16), (np.float16, np.uint8)]),
       st.integers(1, 4), st.integers(1, 8), st.integers(0, 3))
def test_hbm_view_of_a_slice_matches_numpy(pair, rows, units, start):
    old, new = (np.dtype(d) for d in pair)
    per = max(1, new.itemsize // old.itemsize)  # old elements per new one
    cols = (units + start) * per
    a = (RNG.random((rows + 1, cols)) * 100).astype(old)

    def kernel(x):
        return store(nl.load(x[1:, start * per:cols].view(new)))

    got = np.ascontiguousarray(ncs.trace(kernel, a).outputs[0])
    want = np.ascontiguousarray(a[1:, start * per:]).view(new)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))  # bytes: NaNs too


# --- on-chip tiles -------------------------------------------------------------------------------
def test_block_tile_scales_pack_as_bytes():
    """A [G, P, 1] float32 block tile read as [G, P, 4] float8 bytes, stored next to quantized
    values (the fp32 -> fp8 packing of quantization kernels)."""
    def kernel(a):
        scales = nl.ndarray((2, nl.par_dim(128), 1), dtype=nl.float32, buffer=nl.sbuf)
        out = nl.ndarray((2, 128, 4), dtype=nl.float8_e4m3, buffer=nl.shared_hbm)
        for g in nl.affine_range(2):
            scales[g] = nl.max(nl.load(a[g]), axis=1, keepdims=True)
        for g in nl.affine_range(2):
            nl.store(out[g], value=scales.view(nl.float8_e4m3)[g, :, 0:4])
        return out

    a = RNG.random((2, 128, 32), dtype=F32)
    got = ncs.trace(kernel, a).outputs[0]
    want = a.max(2, keepdims=True).view(np.uint8)
    np.testing.assert_array_equal(got.view(np.uint8), want)


def test_writes_through_either_name_are_seen_through_the_other():
    def kernel(a, b):
        t = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf)
        t.view(nl.int8)[...] = nl.load(a.view(nl.int8))  # fills all 32 bytes per partition
        whole = store(nl.copy(t))
        t[:, 2:4] = nl.load(b)  # and the int16 view sees what the fp32 name wrote
        halves = store(nl.copy(t.view(nl.int16)[:, 4:8]))
        return whole, halves

    a, b = RNG.random((128, 8), dtype=F32), RNG.random((128, 2), dtype=F32)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UninitializedReadWarning)  # the view wrote it all
        launch = ncs.trace(kernel, a, b)
    np.testing.assert_array_equal(launch.outputs[0], a)
    np.testing.assert_array_equal(launch.outputs[1], b.view(np.int16))


def test_psum_tile_read_as_bf16_pairs():
    def kernel(a, b):
        acc = nisa.nc_matmul(nl.load(a), nl.load(b))  # [32, 8] fp32 in PSUM
        return store(nl.copy(acc.view(nl.bfloat16)))  # [32, 16] bf16

    a, b = RNG.random((64, 32), dtype=F32), RNG.random((64, 8), dtype=F32)
    got = ncs.trace(kernel, a, b).outputs[0]
    assert got.shape == (32, 16)
    want = (a.T @ b).astype(F32)
    np.testing.assert_allclose(np.ascontiguousarray(got).view(F32), want, rtol=1e-5)


def test_view_reads_partly_written_bytes_warns():
    def bad(a):
        out = nl.ndarray((128, 8), dtype=nl.int8, buffer=nl.shared_hbm)
        t = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.sbuf)
        t[:, 0:2] = nl.load(a)
        # BAD: bytes 8..11 are t[:, 2], never written (the copy passes them on to the store)
        nl.store(out, nl.copy(t.view(nl.int8)[:, 4:12]))
        return out

    with pytest.warns(UninitializedReadWarning, match=r"reads 512 element\(s\) of t"):
        ncs.trace(bad, RNG.random((128, 2), dtype=F32))


# --- the timing path -----------------------------------------------------------------------------
def test_accesses_count_the_view_bytes_and_overlap_by_tensor_elements():
    decl = TensorDecl(0, "t", MemSpace.SBUF, (128, 4), np.dtype(F32), 0)
    as_int8 = Access(decl, 5, ((16, 128), (1, 6)), np.dtype(np.int8))  # bytes 5..10: t[:, 1:3]
    assert as_int8.nbytes == 128 * 6
    assert (as_int8.row_lo, as_int8.row_hi, as_int8.col_lo, as_int8.col_hi) == (0, 128, 1, 3)
    assert as_int8.overlaps(Access(decl, 2, ((4, 128), (1, 1))))  # t[:, 2]
    assert not as_int8.overlaps(Access(decl, 3, ((4, 128), (1, 1))))  # t[:, 3]
    as_i64 = Access(decl, 1, ((2, 128), (1, 1)), np.dtype(np.int64))  # t[:, 2:4]
    assert (as_i64.col_lo, as_i64.col_hi, as_i64.nbytes) == (2, 4, 128 * 8)


def test_a_read_through_the_original_waits_for_a_write_through_the_view():
    def kernel(a):
        t = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
        t.view(nl.bfloat16)[...] = nl.load(a)  # DMA write of [128, 1024] bf16
        return store(nl.exp(t))

    a = RNG.random((128, 1024), dtype=F32).astype(ml_dtypes.bfloat16)
    res = ncs.simulate(kernel, a)
    np.testing.assert_allclose(res.outputs[0], np.exp(a.view(F32)), rtol=1e-5)
    ev = res.events
    load = ev[ev.instr_id == res.program.instructions[0].id]
    act = ev[ev.opcode == Opcode.ACTIVATION.value].iloc[0]
    assert res.program.instructions[0].opcode is Opcode.DMA_COPY
    assert load.nbytes.sum() == 128 * 1024 * 2
    assert act.start_ns >= load.end_ns.max()


# --- misuse --------------------------------------------------------------------------------------
def _odd_bytes(a):
    nl.load(a).view(nl.int8)[:, 0:6].view(nl.float32)  # BAD


def _strided_last(a):
    a[:, ::2].view(nl.int8)  # BAD


def _misaligned_start(a):
    nl.load(a).view(nl.int8)[:, 2:10].view(nl.float32)  # BAD


def _partition_last(a):
    nl.sum(nl.load(a), axis=1).view(nl.int8)  # BAD


@pytest.mark.parametrize("kernel,cls,message", [
    (_odd_bytes, ShapeError, r"view of int8 \[128, 6\] \(1 bytes per element\) as float32 \(4 "
                             r"bytes\): the last dim holds 6 x 1 = 6 bytes, expected a multiple "
                             r"of 4"),
    (_strided_last, ShapeError, r"expected the last dim contiguous in memory, found a stride of "
                                r"2 elements"),
    (_misaligned_start, ShapeError, r"the view starts at byte 2 of t\d+, expected a multiple of 4"),
    (_partition_last, ShapeError, r"the last dim is the partition dim, which a view never "
                                  r"changes"),
])
def test_misuse_is_a_clear_error(kernel, cls, message):
    expect_error(cls, message, kernel, RNG.random((128, 8), dtype=F32))


@settings(max_examples=20, deadline=None)
@given(st.sampled_from([(np.float32, np.uint8), (np.float32, np.float16), (np.int16, np.int32),
                        (np.uint8, np.float32), (np.int32, np.int8)]),
       st.integers(1, 4), st.integers(0, 2))
def test_tile_written_through_a_view_reads_back_through_the_original(pair, units, start):
    """Bytes written into columns of a tile's dtype view are the tile's bytes (numpy's view of
    the same buffer), and the rest of the tile keeps what it held."""
    old, new = (np.dtype(d) for d in pair)
    per_new = max(1, old.itemsize // new.itemsize)  # new elements per old one
    per_old = max(1, new.itemsize // old.itemsize)
    cols = 4 * per_old  # the tile's free size, in old elements
    lo, n = start * per_new, units * per_new  # the view's columns written, in new elements
    base = (RNG.random((32, cols)) * 50).astype(old)
    src = (RNG.random((32, n)) * 50).astype(new)
    if lo + n > cols * old.itemsize // new.itemsize:
        return

    def kernel(a, b):
        t = nl.ndarray((32, cols), dtype=old, buffer=nl.sbuf)
        t[...] = nl.load(a)
        t.view(new)[:, lo:lo + n] = nl.load(b)
        return store(nl.copy(t))

    want = base.copy()
    want.view(new)[:, lo:lo + n] = src
    got = np.ascontiguousarray(ncs.trace(kernel, base, src).outputs[0])
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
