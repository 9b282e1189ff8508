"""NKI rules the front end enforces: each bad kernel raises the exact error, located at its own
kernel line, and the nearest correct kernel runs.

Rules and limits: shared/arch.md sections 1.4, 1.5, 2 and 3.
"""

from __future__ import annotations

import inspect
import re

import numpy as np
import pytest

import neuroncore_sim as ncs
from neuroncore_sim.errors import AccessError, CapacityError, DTypeError, InputWriteWarning, \
    KernelError, MemorySpaceError, ShapeError, UnsupportedError
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl

F32 = np.float32
RNG = np.random.default_rng(1)


def bad_line(kernel) -> int:
    """Line number of the kernel line marked ``# BAD``."""
    src, start = inspect.getsourcelines(kernel)
    return start + next(i for i, s in enumerate(src) if "# BAD" in s)


def expect_error(cls, message: str, kernel, *args, **kw):
    """Tracing ``kernel`` raises exactly ``cls`` with ``message`` at the ``# BAD`` line."""
    with pytest.raises(cls) as info:
        ncs.trace(kernel, *args, **kw)
    assert type(info.value) is cls
    assert info.value.loc == f"test_rules.py:{bad_line(kernel)}", str(info.value)
    assert re.search(message, info.value.message), info.value.message
    return info.value


def ok(kernel, *args, **kw):
    return ncs.trace(kernel, *args, **kw)


def z(*shape, dtype=F32):
    return np.zeros(shape, dtype)


# --- partition dim ------------------------------------------------------------------------------
def test_ndarray_partition_dim_at_most_128():
    def bad():
        nl.ndarray((129, 4), nl.float32)  # BAD

    def good():
        nl.ndarray((128, 4), nl.float32)

    expect_error(ShapeError, r"nl.ndarray: partition dim \(dim 0\) must be 1..128; found shape "
                 r"\[129, 4\]", bad)
    ok(good)


def test_ndarray_par_dim_block_layout_checks_the_marked_dim():
    def bad():
        nl.ndarray((2, nl.par_dim(129), 4), nl.float32)  # BAD

    def good():
        nl.ndarray((200, nl.par_dim(128), 4), nl.float32)  # block dim may exceed 128

    expect_error(ShapeError, r"partition dim \(dim 1\) must be 1..128", bad)
    ok(good)


def test_load_of_more_than_128_rows():
    def bad(a):
        nl.load(a)  # BAD

    def good(a):
        nl.load(a[0:128])

    expect_error(ShapeError, r"load: the first axis becomes the partition dim; expected at most "
                 r"128, found 129", bad, z(129, 8))
    ok(good, z(129, 8))


# --- matmul -------------------------------------------------------------------------------------
def _mm(st_shape, mv_shape, *, st_space=None, mv_space=None):
    def k(a, b):
        s = nl.load(a)
        m = nl.load(b)
        if st_space is nl.psum:
            s = nl.zeros(st_shape, nl.float32, buffer=nl.psum)
        if mv_space is nl.psum:
            m = nl.zeros(mv_shape, nl.float32, buffer=nl.psum)
        nisa.nc_matmul(s, m)  # BAD
    return k, z(*st_shape), z(*mv_shape)


def test_matmul_stationary_free_at_most_128():
    expect_error(ShapeError, r"nc_matmul stationary: free size at most 128, found 129",
                 *_mm((128, 129), (128, 512)))
    ok(*_mm((128, 128), (128, 512)))


def test_matmul_moving_free_at_most_512():
    expect_error(ShapeError, r"nc_matmul moving: free size at most 512, found 513",
                 *_mm((128, 128), (128, 513)))
    ok(*_mm((128, 128), (128, 512)))


def test_matmul_contraction_must_match():
    expect_error(ShapeError, r"contraction \(partition\) sizes must match; expected moving K = "
                 r"64, found 32", *_mm((64, 128), (32, 16)))
    ok(*_mm((64, 128), (64, 16)))


def test_matmul_operands_must_be_in_sbuf():
    # a PSUM operand is copied to SBUF first (as the compiler does); HBM is refused
    ok(*_mm((128, 128), (128, 64), st_space=nl.psum))
    ok(*_mm((128, 128), (128, 64), mv_space=nl.psum))

    def hbm_operand(a, b):
        nisa.nc_matmul(a, nl.load(b))  # BAD

    expect_error(MemorySpaceError, r"stationary: expected a tile in sbuf, found hbm",
                 hbm_operand, z(128, 128), z(128, 64))


def test_matmul_result_is_correct_at_the_limits():
    a = RNG.random((128, 128), dtype=F32)
    b = RNG.random((128, 512), dtype=F32)

    def k(a, b):
        out = nl.ndarray((128, 512), nl.float32, buffer=nl.shared_hbm)
        nl.store(out, value=nl.copy(nisa.nc_matmul(nl.load(a), nl.load(b))))
        return out

    np.testing.assert_allclose(ok(k, a, b).outputs[0], a.T @ b, rtol=1e-4)


# --- PSUM -------------------------------------------------------------------------------------
def test_psum_tile_fits_one_bank():
    def bad():
        nl.ndarray((128, 513), nl.float32, buffer=nl.psum)  # BAD

    def bad_blocks():
        nl.ndarray((2, nl.par_dim(128), 513), nl.float32, buffer=nl.psum)  # BAD

    def good():
        nl.ndarray((128, 512), nl.float32, buffer=nl.psum)
        nl.ndarray((128, 1024), nl.bfloat16, buffer=nl.psum)  # 2 KiB of bf16
        nl.ndarray((4, nl.par_dim(128), 512), nl.float32, buffer=nl.psum)  # one bank per block

    expect_error(CapacityError, r"a PSUM tile must fit one bank; expected at most 2048 bytes per "
                 r"partition, found 2052", bad)
    expect_error(CapacityError, r"found 2052", bad_blocks)
    ok(good)


def test_gpsimd_cannot_touch_psum():
    def bad_copy():
        p = nl.zeros((128, 64), nl.float32, buffer=nl.psum)
        nisa.tensor_copy(p, engine=nisa.gpsimd_engine)  # BAD

    def bad_tt(a):
        p = nl.zeros((128, 64), nl.float32, buffer=nl.psum)
        nisa.tensor_tensor(nl.load(a), p, nl.add, engine=nisa.gpsimd_engine)  # BAD

    def good(a):
        p = nl.zeros((128, 64), nl.float32, buffer=nl.psum)
        nisa.tensor_copy(p, engine=nisa.vector_engine)
        nisa.tensor_tensor(nl.load(a), p, nl.add, engine=nisa.vector_engine)
        t = nl.load(a)
        nisa.tensor_tensor(t, t, nl.add, engine=nisa.gpsimd_engine)

    msg = r"GpSimd cannot access PSUM; expected SBUF operands, found a PSUM operand"
    expect_error(MemorySpaceError, "tensor_copy: " + msg, bad_copy)
    expect_error(MemorySpaceError, "tensor_tensor: " + msg, bad_tt, z(128, 64))
    ok(good, z(128, 64))


# --- transposes ---------------------------------------------------------------------------------
def test_tensor_engine_transpose_reads_sbuf():
    def bad():
        p = nl.zeros((128, 64), nl.float32, buffer=nl.psum)
        nisa.nc_transpose(p, engine=nisa.tensor_engine)  # BAD

    def good(a):
        r = nisa.nc_transpose(nl.load(a), engine=nisa.tensor_engine)
        assert r.buffer is nl.psum and r.shape == (64, 128)

    expect_error(MemorySpaceError, r"nc_transpose on TensorE: expected data in sbuf, found psum",
                 bad)
    ok(good, z(128, 64))


def test_vector_engine_transpose_at_most_128x128():
    # one VectorE instruction transposes 32x32; larger tiles run as 32x32 blocks
    def bad(a):
        nisa.nc_transpose(nl.load(a), engine=nisa.vector_engine)  # BAD

    def good(a):
        nisa.nc_transpose(nl.load(a[:, 0:128]), engine=nisa.vector_engine)

    expect_error(ShapeError, r"nc_transpose on VectorE: expected at most 32x32 per instruction "
                 r"and 128x128 in all .*found 33x129", bad, z(33, 129))
    ok(good, z(33, 129))

    def values(a):
        out = nl.ndarray((32, 32), nl.float32, buffer=nl.shared_hbm)
        nl.store(out, value=nisa.nc_transpose(nl.load(a), engine=nisa.vector_engine))
        return out

    a = RNG.random((32, 32), dtype=F32)
    np.testing.assert_array_equal(ok(values, a).outputs[0], a.T)


# --- bn_stats / bn_aggr ---------------------------------------------------------------------------
def test_bn_stats_width_at_most_512():
    def bad(a):
        nisa.bn_stats(nl.load(a))  # BAD

    def good(a):
        nisa.bn_stats(nl.load(a[:, 0:512]))

    expect_error(ShapeError, r"bn_stats data: expected \[P, N\] with N <= 512, found \[128, 513\]",
                 bad, z(128, 513))
    ok(good, z(128, 513))


def test_bn_aggr_width_multiple_of_6():
    def bad(a):
        nisa.bn_aggr(nl.load(a))  # BAD

    def good(a):
        nisa.bn_aggr(nl.load(a[:, 0:12]))

    expect_error(ShapeError, r"bn_aggr data: expected \[P, 6\*k\] bn_stats results, found "
                 r"\[128, 13\]", bad, z(128, 13))
    ok(good, z(128, 13))


# --- shapes -------------------------------------------------------------------------------------
def test_tensor_tensor_shapes_must_match():
    def bad(a, b):
        nisa.tensor_tensor(nl.load(a), nl.load(b), nl.add)  # BAD

    def good(a, b):
        nisa.tensor_tensor(nl.load(a), nl.load(b[:, 0:64]), nl.add)

    expect_error(ShapeError, r"tensor_tensor: expected operands with the same partition size "
                 r"whose free axes are equal or 1 \(broadcast along free axes\), found "
                 r"\[128, 64\] and \[128, 65\]", bad, z(128, 64), z(128, 65))
    ok(good, z(128, 64), z(128, 65))


def test_scalar_tensor_tensor_operand1_shape():
    def bad(a, b):
        nisa.scalar_tensor_tensor(data=nl.load(a), op0=nl.multiply, operand0=2.0,  # BAD
                                  op1=nl.add, operand1=nl.load(b))

    def good(a, b):
        nisa.scalar_tensor_tensor(data=nl.load(a), op0=nl.multiply, operand0=2.0,
                                  op1=nl.add, operand1=nl.load(b[0:64]))

    expect_error(ShapeError, r"scalar_tensor_tensor data and operand1: expected operands with "
                 r"the same partition size .* found \[64, 32\] and \[65, 32\]", bad, z(64, 32),
                 z(65, 32))
    ok(good, z(64, 32), z(65, 32))


def test_dma_shapes_must_match():
    def bad(a):
        t = nl.ndarray((128, 64), nl.float32)
        nisa.dma_copy(dst=t, src=a)  # BAD

    def good(a):
        t = nl.ndarray((128, 64), nl.float32)
        nisa.dma_copy(dst=t, src=a[:, 0:64])

    expect_error(ShapeError, r"dma_copy: expected src shape \[128, 64\] \(the dst shape\), found "
                 r"\[128, 32\]", bad, z(128, 32))
    ok(good, z(128, 64))

    def bad_store(a):
        out = nl.ndarray((128, 64), nl.float32, buffer=nl.shared_hbm)
        nl.store(out, value=nl.load(a))  # BAD
        return out

    expect_error(ShapeError, r"store: expected src shape \[128, 64\]", bad_store, z(128, 32))


# --- dtypes -------------------------------------------------------------------------------------
def test_bitvec_ops_need_integer_tiles():
    def bad_tt(a):
        t = nl.load(a)
        nisa.tensor_tensor(t, t, nl.bitwise_and)  # BAD

    def bad_ts(a):
        nisa.tensor_scalar(nl.load(a), nl.left_shift, 1)  # BAD

    def bad_nl(a):
        nl.bitwise_xor(nl.load(a), nl.load(a))  # BAD

    def bad_invert(a):
        nl.invert(nl.load(a))  # BAD

    expect_error(DTypeError, r"tensor_tensor: bit-vector op 'bitwise_and' needs integer "
                 r"operands; expected an int dtype, found float32", bad_tt, z(8, 8))
    expect_error(DTypeError, r"tensor_scalar: bit-vector op 'left_shift' needs integer operands; "
                 r"expected an int dtype, found bfloat16", bad_ts,
                 z(8, 8, dtype=ncs.dtypes.bfloat16))
    expect_error(DTypeError, r"'bitwise_xor'", bad_nl, z(8, 8))
    expect_error(DTypeError, r"'bitwise_xor'", bad_invert, z(8, 8))

    def good(a):
        out = nl.ndarray((8, 8), nl.int32, buffer=nl.shared_hbm)
        t = nl.load(a)
        u = nisa.tensor_tensor(t, t, nl.bitwise_and)
        v = nisa.tensor_scalar(u, nl.left_shift, 1)
        nl.store(out, value=nl.bitwise_xor(v, t))
        return out

    a = RNG.integers(0, 1000, (8, 8)).astype(np.int32)
    np.testing.assert_array_equal(ok(good, a).outputs[0], ((a & a) << 1) ^ a)


# --- HBM bounds ---------------------------------------------------------------------------------
def test_out_of_bounds_hbm_slice():
    def bad(a):
        nl.load(a[0:128, 448:520])  # BAD

    def good(a):
        nl.load(a[0:128, 440:512])

    expect_error(AccessError, r"load src: out of bounds: index of dim 1 of a \[128, 512\]: "
                 r"expected 0..511, found 448..519", bad, z(128, 512))
    ok(good, z(128, 512))


def test_out_of_bounds_hbm_arange_expression():
    def bad(a):
        i_p, i_f = nl.mgrid[0:128, 0:64]
        nl.load(a[i_p, 2 * i_f + 1])  # BAD

    def good(a):
        i_p, i_f = nl.mgrid[0:128, 0:63]
        nl.load(a[i_p, 2 * i_f + 1])

    expect_error(AccessError, r"index of dim 1 of a \[128, 127\]: expected 0..126, found 1..127",
                 bad, z(128, 127))
    ok(good, z(128, 127))


def test_out_of_bounds_store():
    def bad(a):
        out = nl.ndarray((64, 8), nl.float32, buffer=nl.shared_hbm)
        i_p = nl.arange(128)[:, None]
        i_f = nl.arange(8)[None, :]
        nl.store(out[i_p, i_f], value=nl.load(a))  # BAD
        return out

    expect_error(AccessError, r"store dst: out of bounds: index of dim 0 of hbm\d* \[64, 8\]: "
                 r"expected 0..63, found 0..127", bad, z(128, 8))


# --- start partition ------------------------------------------------------------------------------
@pytest.mark.parametrize("lo,hi,allowed", [
    (32, 96, "0 or 64"),        # 64 partitions must start at 0 or 64
    (1, 128, "0"),              # 127 partitions must start at 0
    (16, 48, "0 or 32 or 64 or 96"),
    (63, 128, "0"),             # 65 partitions
    (100, 101, "0 or 32 or 64 or 96"),
])
def test_start_partition_rule_rejects(lo, hi, allowed):
    def bad(a):
        t = nl.ndarray((128, 16), nl.float32)
        t[...] = nl.load(a)
        nl.exp(t[lo:hi])  # BAD

    p = hi - lo
    e = expect_error(AccessError, rf"activation data: start-partition rule: an access over {p} "
                     rf"partitions must start at partition {allowed}; found start partition "
                     rf"{lo}", bad, z(128, 16))
    assert f"rows {lo}..{hi - 1}" in e.message


@pytest.mark.parametrize("lo,hi", [(0, 128), (0, 64), (64, 128), (0, 32), (32, 64), (96, 128),
                                   (64, 80), (96, 97), (0, 65)])
def test_start_partition_rule_accepts(lo, hi):
    def good(a):
        out = nl.ndarray((hi - lo, 16), nl.float32, buffer=nl.shared_hbm)
        t = nl.ndarray((128, 16), nl.float32)
        t[...] = nl.load(a)
        nl.store(out, value=nl.exp(t[lo:hi]))
        return out

    a = RNG.random((128, 16), dtype=F32)
    np.testing.assert_allclose(ok(good, a).outputs[0], np.exp(a[lo:hi]), rtol=1e-6)


def test_start_partition_rule_checks_destinations_and_skips_dma():
    def bad_dst(a):
        t = nl.ndarray((128, 16), nl.float32)
        x = nl.load(a[0:64])
        t[16:80] = nl.exp(x)  # BAD

    expect_error(AccessError, r"assignment target: start-partition rule: an access over 64 "
                 r"partitions must start at partition 0 or 64; found start partition 16",
                 bad_dst, z(128, 16))

    def bad_psum(a, b):
        acc = nl.zeros((128, 64), nl.float32, buffer=nl.psum)
        acc[8:72] += nisa.nc_matmul(nl.load(a), nl.load(b))  # BAD

    expect_error(AccessError, r"matmul accumulation target: start-partition rule: .*start "
                 r"partition 8", bad_psum, z(32, 64), z(32, 64))

    def dma_anywhere(a):
        out = nl.ndarray((128, 16), nl.float32, buffer=nl.shared_hbm)
        t = nl.zeros((128, 16), nl.float32)
        t[16:80] = nl.load(a[0:64])  # DMA writes may start at any partition
        nl.store(out, value=t)  # (all of it: a partly written output warns)
        return out

    a = RNG.random((128, 16), dtype=F32)
    got = ok(dma_anywhere, a).outputs[0]
    np.testing.assert_array_equal(got[3:50], np.concatenate([np.zeros((13, 16), F32),
                                                             a[0:34]]))


def test_masked_instruction_is_checked_after_shrinking():
    def bad(a):
        t = nl.load(a)
        i_p = nl.arange(128)[:, None]
        nl.exp(t, mask=(i_p >= 16))  # BAD  (active partitions 16..127)

    def good(a):
        t = nl.load(a)
        i_p = nl.arange(128)[:, None]
        nl.exp(t, mask=(i_p >= 64))  # partitions 64..127

    expect_error(AccessError, r"start-partition rule: an access over 112 partitions must start "
                 r"at partition 0; found start partition 16", bad, z(128, 4))
    ok(good, z(128, 4))


# --- writes into kernel inputs ------------------------------------------------------------------------
def test_return_style_kernel_writing_an_input_warns():
    def bad(a):
        out = nl.ndarray(a.shape, nl.float32, buffer=nl.shared_hbm)
        t = nl.load(a)
        nl.store(a, value=t)  # BAD
        nl.store(out, value=t)
        return out

    with pytest.warns(InputWriteWarning, match=rf"test_rules.py:{bad_line(bad)}: kernel writes its "
                      r"input tensor 'a' but returns its outputs"):
        launch = ok(bad, z(8, 8))
    assert len(launch.warnings) == 1

    def output_argument(a, out):
        nl.store(out, value=nl.load(a))

    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        launch = ok(output_argument, np.ones((8, 8), F32), z(8, 8))
    assert launch.warnings == []


# --- masks, index expressions, iteration ------------------------------------------------------------
def test_mask_must_be_a_comparison():
    def bad(a):
        t = nl.load(a)
        nl.exp(t, mask=t)  # BAD

    def good(a):
        t = nl.load(a)
        i_p = nl.arange(8)[:, None]
        nl.exp(t, mask=(i_p < 4))

    expect_error(KernelError, r"mask: expected a comparison of nl.arange / nl.mgrid index "
                 r"expressions \(combined with &\), found NkiTensor", bad, z(8, 8))
    ok(good, z(8, 8))


def test_mask_cannot_be_used_as_a_python_bool():
    def bad(a):
        i_p = nl.arange(8)[:, None]
        if i_p < 4:  # BAD
            pass

    expect_error(UnsupportedError, r"a mask is a compile-time predicate", bad, z(8, 8))


def test_non_affine_index_expressions():
    def bad_div(a):
        i_p, i_f = nl.mgrid[0:8, 0:4]
        nl.load(a[i_p, i_f // 2])  # BAD

    def bad_mul(a):
        i_p, i_f = nl.mgrid[0:8, 0:4]
        nl.load(a[i_p, i_f * i_f])  # BAD

    def good(a):
        i_p, i_f = nl.mgrid[0:8, 0:4]
        nl.load(a[i_p, 2 * i_f])

    # i_f // 2 repeats each column: two strides (1 and 0) in one view axis
    expect_error(UnsupportedError, r"walks memory as 2 x stride 1, 2 x stride 0, not with one "
                 r"stride", bad_div, z(8, 8))
    expect_error(UnsupportedError, r"only multiplication by an integer is affine", bad_mul,
                 z(8, 8))
    ok(good, z(8, 8))


def test_iterating_over_a_tile():
    def bad(a):
        for _row in nl.load(a):  # BAD
            pass

    def good(a):
        t = nl.load(a)
        for i in nl.affine_range(2):
            nl.exp(t[:, i * 4:(i + 1) * 4])

    expect_error(UnsupportedError, r"iterating over a tile is not supported", bad, z(8, 8))
    ok(good, z(8, 8))
