"""Documented constraints of the select / sort / gather / shuffle / dynamic-copy instructions, and
the NeuronCore-v3-only surface: each bad kernel raises the exact error at its own ``# BAD`` line,
and the nearest correct kernel runs (docs 2.26.1 API reference; shared/arch.md section 2)."""

from __future__ import annotations

import inspect
import os
import re

import numpy as np
import pytest

import neuroncore_sim as ncs
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl
from neuroncore_sim.errors import UnsupportedAttributeError, AccessError, DTypeError, KernelError, MemorySpaceError, \
    ShapeError, UnsupportedError

HERE = os.path.basename(__file__)
SB, PS = nl.sbuf, nl.psum


def expect_error(cls, message: str, kernel, *args):
    """Tracing ``kernel`` raises exactly ``cls`` with ``message`` at its ``# BAD`` line."""
    src, start = inspect.getsourcelines(kernel)
    line = start + next(i for i, s in enumerate(src) if "# BAD" in s)
    with pytest.raises(cls) as info:
        ncs.trace(kernel, *args)
    assert type(info.value) is cls
    assert info.value.loc == f"{HERE}:{line}", str(info.value)
    assert re.search(message, info.value.message), info.value.message


def ok(kernel, *args):
    return ncs.trace(kernel, *args)


def t(shape, dtype=nl.float32, buffer=SB):
    return nl.zeros(shape, dtype, buffer=buffer)


# --- dynamic offsets ------------------------------------------------------------------------------
@pytest.mark.parametrize("idx_dtype,idx_buf,cls,msg", [
    (nl.float32, SB, DTypeError, r"expected an integer offset tile, found float32"),
    (nl.int32, PS, MemorySpaceError, r"the offset must be in sbuf, found psum"),
])
def test_dynamic_offset_must_be_an_integer_in_sbuf(idx_dtype, idx_buf, cls, msg):
    def bad():
        src, idx = t((128, 64)), t((1, 4), idx_dtype, idx_buf)
        nisa.tensor_copy_dynamic_src(src[:, idx[0, 1]])  # BAD

    def good():
        src, idx = t((128, 64)), t((1, 4), nl.int32)
        nisa.tensor_copy_dynamic_src(src[:, idx[0, 1]])

    expect_error(cls, msg, bad)
    ok(good)


def test_dynamic_offset_is_one_element_on_a_free_axis_once():
    def two_elements():
        src, idx = t((128, 64)), t((1, 4), nl.int32)
        nisa.tensor_copy_dynamic_src(src[:, idx[0, 0:2]])  # BAD

    def on_partitions():
        src, idx = t((128, 64)), t((1, 4), nl.int32)
        nisa.tensor_copy_dynamic_src(src[idx[0, 0], :])  # BAD

    def twice():
        src, idx = t((128, 64, 8)), t((1, 4), nl.int32)
        nisa.tensor_copy_dynamic_src(src[:, idx[0, 0], idx[0, 1]])  # BAD

    expect_error(ShapeError, r"expected one element \(e.g. idx\[0, i\]\), found shape \[2\]",
                 two_elements)
    expect_error(AccessError, r"expected a free axis, found the partition axis", on_partitions)
    expect_error(UnsupportedError, r"one runtime index per access, found 2", twice)


def test_dynamic_copies_take_dynamic_views_and_copy_engines():
    def plain():
        nisa.tensor_copy_dynamic_src(t((128, 64)))  # BAD

    def on_tensor_engine():
        src, idx = t((128, 64)), t((1, 4), nl.int32)
        nisa.tensor_copy_dynamic_src(src[:, idx[0, 1]], engine=nisa.tensor_engine)  # BAD

    def gpsimd_psum():
        src, idx = t((128, 64), buffer=PS), t((1, 4), nl.int32)
        nisa.tensor_copy_dynamic_src(src[:, idx[0, 1]], engine=nisa.gpsimd_engine)  # BAD

    def good():
        src, idx = t((128, 64), buffer=PS), t((1, 4), nl.int32)
        nisa.tensor_copy_dynamic_src(src[:, idx[0, 1]], engine=nisa.scalar_engine)

    def assign_scalar():
        src, idx = t((128, 64)), t((1, 4), nl.int32)
        src[:, idx[0, 1]] = 1.0  # BAD

    expect_error(KernelError, r"expected a tile indexed with a runtime offset", plain)
    expect_error(UnsupportedError, r"runtime-offset view: expected a tile .* found float",
                 assign_scalar)
    expect_error(UnsupportedError, r"expected engine vector, scalar or gpsimd, found tensor",
                 on_tensor_engine)
    expect_error(MemorySpaceError, r"GpSimd cannot access PSUM", gpsimd_psum)
    ok(good)


def test_dynamic_dst_needs_src_of_its_size_and_dtype():
    def size():
        dst, idx = t((128, 64)), t((1, 4), nl.int32)
        nisa.tensor_copy_dynamic_dst(dst=dst[:, idx[0, 1]], src=t((128, 2)))  # BAD

    def dtype():
        dst, idx = t((128, 64)), t((1, 4), nl.int32)
        nisa.tensor_copy_dynamic_dst(dst=dst[:, idx[0, 1]], src=t((128, 1)),  # BAD
                                     dtype=nl.bfloat16)

    def good():
        dst, idx = t((128, 64)), t((1, 4), nl.int32)
        nisa.tensor_copy_dynamic_dst(dst=dst[:, idx[0, 1]], src=t((128, 1), nl.bfloat16))

    expect_error(ShapeError, r"same partitions and elements per partition; expected \[128\], "
                 r"found \[128, 2\]", size)
    expect_error(DTypeError, r"expected float32, found bfloat16", dtype)
    ok(good)


def test_dynamic_offset_out_of_range_at_run_time():
    def k(idx):
        src, offsets = t((128, 64)), nl.load(idx)
        i_p, i_f = nl.mgrid[0:128, 0:8]
        nisa.tensor_copy_dynamic_src(src[i_p, offsets[0, 0] + i_f])  # BAD

    expect_error(AccessError, r"dynamic offset read from SBUF; expected 0..56 .*found 57",
                 k, np.array([[57]], np.int32))
    ok(k, np.array([[56]], np.int32))


# --- tensor_copy_predicated and select_reduce ---------------------------------------------------
def test_tensor_copy_predicated_rules():
    def float_pred():
        nisa.tensor_copy_predicated(src=t((8, 16)), dst=t((8, 16)), predicate=t((8, 16)))  # BAD

    def dtypes():
        nisa.tensor_copy_predicated(src=t((8, 16), nl.bfloat16), dst=t((8, 16)),  # BAD
                                    predicate=t((8, 16), nl.uint8))

    def sizes():
        nisa.tensor_copy_predicated(src=t((8, 16)), dst=t((8, 16)),  # BAD
                                    predicate=t((8, 15), nl.uint8))

    def both_psum():
        nisa.tensor_copy_predicated(src=t((8, 16), buffer=PS), dst=t((8, 16)),  # BAD
                                    predicate=t((8, 16), nl.uint8, PS))

    def good():
        nisa.tensor_copy_predicated(src=t((8, 16), buffer=PS), dst=t((8, 16)),
                                    predicate=t((8, 4, 4), nl.uint32))

    expect_error(DTypeError, r"predicate: expected uint8 / uint16 / uint32 / bool, found float32",
                 float_pred)
    expect_error(DTypeError, r"share a dtype; expected float32, found bfloat16", dtypes)
    expect_error(ShapeError, r"expected 8 partitions x 16 elements", sizes)
    expect_error(MemorySpaceError, r"at most one of them may be in psum", both_psum)
    ok(good)


def test_select_reduce_rules():
    def pred_dtype():
        nisa.select_reduce(dst=t((8, 16)), predicate=t((8, 16), nl.uint32),  # BAD
                           on_true=t((8, 16)), on_false=0.0)

    def on_true_dtype():
        nisa.select_reduce(dst=t((8, 16)), predicate=t((8, 16), nl.uint8),  # BAD
                           on_true=t((8, 16), nl.int32), on_false=0.0)

    def on_false_shape():
        nisa.select_reduce(dst=t((8, 16)), predicate=t((8, 16), nl.uint8),  # BAD
                           on_true=t((8, 16)), on_false=t((8, 2)))

    def reduce_res_dtype():
        nisa.select_reduce(dst=t((8, 16)), predicate=t((8, 16), nl.uint8),  # BAD
                           on_true=t((8, 16)), on_false=0.0, reduce_res=t((8, 1), nl.int32))

    def reduce_op():
        nisa.select_reduce(dst=t((8, 16)), predicate=t((8, 16), nl.uint8),  # BAD
                           on_true=t((8, 16)), on_false=0.0, reduce_op=nl.add)

    def both_psum():
        nisa.select_reduce(dst=t((8, 16)), predicate=t((8, 16), nl.int8, PS),  # BAD
                           on_true=t((8, 16), buffer=PS), on_false=0.0)

    def good():
        nisa.select_reduce(dst=t((8, 16), buffer=PS), predicate=t((8, 16), nl.int16),
                           on_true=t((8, 16), nl.bfloat16, PS), on_false=t((8, 1)),
                           reduce_res=t((8, 1)), reduce_op=np.max)

    expect_error(DTypeError, r"expected int8 / uint8 / int16 / uint16 / bool, found uint32", pred_dtype)
    expect_error(DTypeError, r"on_true: expected any dtype but tfloat32 / int32 / uint32",
                 on_true_dtype)
    expect_error(ShapeError, r"on_false: expected shape \[8, 1\], found \[8, 2\]", on_false_shape)
    expect_error(DTypeError, r"reduce_res: expected a float dtype, found int32", reduce_res_dtype)
    expect_error(KernelError, r"reduce_op: expected one of \['maximum'\], found 'add'", reduce_op)
    expect_error(MemorySpaceError, r"at most one of them may be in psum", both_psum)
    ok(good)


# --- GpSimd: partition reduce, local_gather, sequence_bounds -----------------------------------
def test_tensor_partition_reduce_rules():
    def op():
        nisa.tensor_partition_reduce(nl.subtract, t((8, 16)))  # BAD

    def bitvec_float():
        nisa.tensor_partition_reduce(nl.bitwise_or, t((8, 16)))  # BAD

    def psum():
        nisa.tensor_partition_reduce(nl.add, t((8, 16), buffer=PS))  # BAD

    def good():
        nisa.tensor_partition_reduce(nl.bitwise_or, t((8, 16), nl.int32))

    expect_error(KernelError, r"op: expected one of \['add', 'bitwise_and', 'bitwise_or', "
                 r"'maximum'\], found 'subtract'", op)
    expect_error(DTypeError, r"bit-vector op 'bitwise_or' needs integer operands", bitvec_float)
    expect_error(MemorySpaceError, r"GpSimd reaches sbuf only; found psum", psum)
    ok(good)


def test_local_gather_rules():
    def index_dtype():
        nisa.local_gather(t((32, 64)), t((32, 2), nl.int32))  # BAD

    def partitions():
        nisa.local_gather(t((24, 64)), t((24, 2), nl.uint16))  # BAD

    def elems():
        nisa.local_gather(t((32, 64)), t((32, 2), nl.uint16), 3)  # BAD

    def too_many():
        nisa.local_gather(t((16, 64)), t((16, 257), nl.uint16))  # BAD

    def valid():
        nisa.local_gather(t((32, 64)), t((32, 2), nl.uint16), 1, 33)  # BAD

    def psum():
        nisa.local_gather(t((32, 64), buffer=PS), t((32, 2), nl.uint16))  # BAD

    def good():
        nisa.local_gather(t((32, 64)), t((32, 256), nl.uint16), 32, 32)

    expect_error(DTypeError, r"index: expected uint16, found int32", index_dtype)
    expect_error(ShapeError, r"a multiple of 16; found 24 and 24", partitions)
    expect_error(KernelError, r"expected one of \[1, 2, 4, 8, 16, 32\], found 3", elems)
    expect_error(ShapeError, r"at most 4096 indices per GpSimd core .* found 4112", too_many)
    expect_error(KernelError, r"num_valid_indices: expected 1..32 .* found 33", valid)
    expect_error(MemorySpaceError, r"GpSimd reaches sbuf only", psum)
    ok(good)


def test_local_gather_index_out_of_range_at_run_time():
    def k(index):
        nisa.local_gather(t((16, 64)), nl.load(index), 4)  # BAD

    idx = np.zeros((16, 1), np.uint16)
    ok(k, idx + 60)
    expect_error(AccessError, r"expected 0..60 .* found 61..61", k, idx + 61)


def test_sequence_bounds_rules():
    def partitions():
        nisa.sequence_bounds(segment_ids=t((2, 16)))  # BAD

    def ids_dtype():
        nisa.sequence_bounds(segment_ids=t((1, 16), nl.int16))  # BAD

    def out_dtype():
        nisa.sequence_bounds(segment_ids=t((1, 16)), dtype=nl.bfloat16)  # BAD

    def good():
        nisa.sequence_bounds(segment_ids=t((1, 16)), dtype=nl.int32)

    expect_error(ShapeError, r"expected \[1, N\] \(partition dim 1\), found \[2, 16\]", partitions)
    expect_error(DTypeError, r"segment_ids: expected float32 / int32, found int16", ids_dtype)
    expect_error(DTypeError, r"dtype: expected float32 or int32, found bfloat16", out_dtype)
    ok(good)


# --- max8 family --------------------------------------------------------------------------------
def test_top8_family_rules():
    def few():
        nisa.max8(src=t((4, 7)))  # BAD

    def many():
        nisa.max8(src=t((4, 16385)))  # BAD

    def vals():
        nisa.nc_find_index8(data=t((4, 64)), vals=t((4, 7)))  # BAD

    def index_dtype():
        nisa.nc_find_index8(data=t((4, 64)), vals=t((4, 8)), dtype=nl.int32)  # BAD

    def dst_idx():
        nisa.nc_match_replace8(data=t((4, 64)), vals=t((4, 8)), imm=0.0,  # BAD
                               dst_idx=t((4, 8)))

    def masked():  # a triangle over the input: no rectangle to shrink the reduction to
        i_p, i_f = nl.arange(4)[:, None], nl.arange(64)[None, :]
        nisa.max8(src=t((4, 64)), mask=i_p + i_f < 40)  # BAD

    def good():
        m = nisa.max8(src=t((4, 2, 8)))
        nisa.nc_find_index8(data=t((4, 16384)), vals=m, dtype=nl.uint16)
        nisa.nc_match_replace8(data=t((4, 3)), vals=t((4, 2, 4)), imm=0.0,
                               dst_idx=t((4, 8), nl.uint16))

    expect_error(ShapeError, r"expected at most 5 dims and 8..16384 elements per partition, "
                 r"found \[4, 7\]", few)
    expect_error(ShapeError, r"8..16384 elements per partition, found \[4, 16385\]", many)
    expect_error(ShapeError, r"vals: expected 4 partitions x 8 elements", vals)
    expect_error(DTypeError, r"expected uint16 or uint32, found int32", index_dtype)
    expect_error(DTypeError, r"dst_idx: expected an integer dtype, found float32", dst_idx)
    expect_error(UnsupportedError, r"max8: a mask that is not a rectangle over the input "
                 r"\[4, 64\] is not supported", masked)
    ok(good)


def test_find_index8_value_not_in_data_is_reported():
    def k(data, vals):
        nisa.nc_find_index8(data=nl.load(data), vals=nl.load(vals))  # BAD

    data = np.arange(16, dtype=np.float32)[None]
    ok(k, data, data[:, 8:])
    expect_error(KernelError, r"vals\[0, 7\] = 99.0; expected a value present", k, data,
                 np.array([[8, 9, 10, 11, 12, 13, 14, 99]], np.float32))


# --- nc_stream_shuffle --------------------------------------------------------------------------
def test_stream_shuffle_rules():
    ident = list(range(32))

    def dtype():
        nisa.nc_stream_shuffle(t((32, 8)), t((32, 8), nl.bfloat16), ident)  # BAD

    def size():
        nisa.nc_stream_shuffle(t((32, 8)), t((32, 4)), ident)  # BAD

    def mask_len():
        nisa.nc_stream_shuffle(t((32, 8)), t((32, 8)), ident[:31])  # BAD

    def mask_value():
        nisa.nc_stream_shuffle(t((32, 8)), t((32, 8)), [40] * 32)  # BAD

    def start():
        src = t((64, 8))
        nisa.nc_stream_shuffle(src[32:64], t((64, 8)), ident)  # BAD

    def reads_past_src():
        nisa.nc_stream_shuffle(t((32, 8)), t((64, 8)), ident)  # BAD

    def good():
        src = t((128, 8))
        nisa.nc_stream_shuffle(src[96:128], t((32, 2, 4), buffer=PS), [255] + ident[1:])

    expect_error(DTypeError, r"dst must have src's dtype; expected float32, found bfloat16",
                 dtype)
    expect_error(ShapeError, r"expected 8, found 4", size)
    expect_error(KernelError, r"shuffle_mask: expected 32 ints in 0..31 or 255", mask_len)
    expect_error(KernelError, r"shuffle_mask: expected 32 ints", mask_value)
    expect_error(AccessError, r"src: with 64 active partitions the start partition must be 0 "
                 r"or 64; found 32", start)
    expect_error(AccessError, r"dst partition 32 reads src partition 32; expected < 32",
                 reads_past_src)
    ok(good)


# --- NeuronCore-v3-only surface -----------------------------------------------------------------
V3 = r"is not available on NeuronCore-v2 \(NeuronCore-v3 or later\)"


def test_range_select_is_v3_only():
    def bad():
        nisa.range_select(on_true_tile=t((8, 16)), comp_op0=np.greater_equal,  # BAD
                          comp_op1=np.less, bound0=t((8, 1)), bound1=t((8, 1)))

    expect_error(UnsupportedError, r"^range_select " + V3, bad)


def test_matmul_perf_mode_and_scalar_bias_and_hwdge_are_v3_only():
    def perf_mode():
        nisa.nc_matmul(t((128, 128)), t((128, 512)), perf_mode="double_row")  # BAD

    def bias():
        nisa.activation(nl.exp, t((8, 16)), bias=1.0)  # BAD

    def hwdge(a):
        nisa.dma_copy(dst=t((8, 16)), src=a, dge_mode=nisa.dge_mode.hwdge)  # BAD

    def good(a):
        nisa.nc_matmul(t((128, 128)), t((128, 512)), perf_mode="none")
        nisa.activation(nl.exp, t((8, 16)), bias=t((8, 1)))
        nisa.dma_copy(dst=t((8, 16)), src=a, dge_mode=nisa.dge_mode.swdge)

    a = np.zeros((8, 16), np.float32)
    expect_error(UnsupportedError, r"nc_matmul perf_mode=double_row " + V3, perf_mode)
    expect_error(UnsupportedError, r"activation with a scalar bias " + V3, bias)
    expect_error(UnsupportedError, r"dma_copy dge_mode=hwdge .*" + V3, hwdge, a)
    ok(good, a)


@pytest.mark.parametrize("name", ["exponential", "nc_n_gather", "topk", "register_alloc",
                                  "matmul_perf_mode", "quantize_mx"])
def test_later_api_names_are_v3_only(name):
    def bad():
        getattr(nisa, name)  # BAD

    # (an UnsupportedError that is also an AttributeError: hasattr(nisa, name) answers False)
    expect_error(UnsupportedAttributeError, rf"nisa.{name} " + V3, bad)
    with pytest.raises(UnsupportedError, match="NeuronCore-v3 or later"):
        getattr(nisa, name)  # outside a kernel: the same error, without a location
    assert not hasattr(nisa, name)


def test_surface_names():
    assert nisa.get_nc_version() is nisa.nc_version.gen2
    assert {e.name: e.value for e in nisa.engine} == {
        "unknown": 0, "tensor": 1, "scalar": 2, "gpsimd": 3, "vector": 5, "sync": 6}
    assert nisa.fp32.min == float(np.finfo(np.float32).min)
    for name in ("tensor_copy_dynamic_src", "tensor_copy_dynamic_dst", "tensor_copy_predicated",
                 "select_reduce", "range_select", "tensor_partition_reduce", "local_gather",
                 "max8", "nc_find_index8", "nc_match_replace8", "nc_stream_shuffle",
                 "sequence_bounds", "get_nc_version", "nc_version", "dma_engine",
                 "vector_engine", "gpsimd_engine", "scalar_engine", "tensor_engine",
                 "unknown_engine"):
        assert name in dir(nisa) and callable(getattr(nisa, name)) or name.endswith(
            ("engine", "version")), name
