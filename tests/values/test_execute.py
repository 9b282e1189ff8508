"""Tests of ``memory.py`` and ``execute.py``: layout, views, bounds, masks, casts, accumulation.

Instructions are built by hand (no front end): a TensorDecl per tile, an Access per operand.
"""

from __future__ import annotations

import numpy as np
import pytest
from exec_helpers import BF16, F32, acc, decl, ins, rect, tile
from hypothesis import given, settings
from hypothesis import strategies as st

from neuroncore_sim import dtypes as D
from neuroncore_sim.config import TRN1
from neuroncore_sim.errors import AccessError, KernelError, ShapeError, UnsupportedError
from neuroncore_sim.values.execute import Executor
from neuroncore_sim.program.ir import Access, Affine, Engine, MemSpace, Opcode, Predicate
from neuroncore_sim.values.memory import Memory

RNG = np.random.default_rng(99)


@pytest.fixture
def ex() -> Executor:
    return Executor(TRN1)


# --- memory layout and views -------------------------------------------------------------------

def test_block_dims_layout_is_partition_major():
    # A [2 blocks, 4 partitions, 3] tile: each partition's row holds both blocks.
    values = np.arange(24, dtype=F32).reshape(2, 4, 3)
    t = decl((2, 4, 3), pa=1)
    mem = Memory()
    mem.declare(t, values)
    flat = mem.storage(t)
    np.testing.assert_array_equal(flat.reshape(4, 2, 3), values.transpose(1, 0, 2))
    np.testing.assert_array_equal(mem.logical(t), values)
    # Block 1, all partitions: offset = one block inside the row, partition stride = row size.
    view = mem.view(acc(t, t.strides[0], (t.strides[1], 4), (t.strides[2], 3)))
    np.testing.assert_array_equal(view, values[1])


@settings(max_examples=50, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple), data=st.data())
def test_layout_roundtrip_and_declared_strides(shape, data):
    pa = data.draw(st.integers(0, len(shape) - 1))
    t = decl(shape, pa=pa)
    values = np.arange(np.prod(shape), dtype=F32).reshape(shape)
    mem = Memory()
    mem.declare(t, values)
    np.testing.assert_array_equal(mem.logical(t), values)
    # TensorDecl.strides address the same elements in the flat partition-major storage.
    declared_order = mem.view(Access(t, 0, tuple(zip(t.strides, shape))))
    np.testing.assert_array_equal(declared_order, values)
    rows = mem.storage(t).reshape(shape[pa], -1)
    np.testing.assert_array_equal(rows, np.moveaxis(values, pa, 0).reshape(shape[pa], -1))


def test_uninitialised_memory_is_nan_for_floats_zero_for_ints(ex):
    f, i, b = tile(ex, shape=(2, 3)), tile(ex, shape=(2, 3), dtype=D.int32), \
        tile(ex, shape=(2, 3), dtype=D.bool_)
    assert np.isnan(ex.logical(f)).all()
    assert (ex.logical(i) == 0).all() and not ex.logical(b).any()
    hbm = tile(ex, shape=(4, 4), dtype=D.bfloat16, space=MemSpace.HBM, kind="hbm")
    assert np.isnan(ex.logical(hbm).astype(F32)).all()


def test_declare_checks_shape_and_casts_values(ex):
    with pytest.raises(ShapeError, match="shape"):
        ex.declare(decl((2, 3)), np.zeros((3, 2)))
    t = decl((2, 2), D.bfloat16)
    ex.declare(t, np.array([[1.0 + 2**-9, 3.0], [0.1, -2.0]]))  # float64 in
    got = ex.logical(t)
    assert got.dtype == BF16 and got[0, 0] == BF16(1.0)


def test_views_are_strided_writable_and_share_storage(ex):
    t = tile(ex, np.arange(48, dtype=F32).reshape(4, 12))
    every_third = acc(t, 1, (12, 4), (3, 4))  # columns 1, 4, 7, 10
    np.testing.assert_array_equal(ex.read(every_third), np.arange(48).reshape(4, 12)[:, 1::3])
    ex.write(every_third, np.zeros((4, 4)))
    assert (ex.logical(t)[:, 1::3] == 0).all() and ex.logical(t)[0, 0] == 0 and \
        ex.logical(t)[0, 2] == 2
    backwards = acc(t, 11, (12, 4), (-1, 12))
    np.testing.assert_array_equal(ex.read(backwards), ex.logical(t)[:, ::-1])


@pytest.mark.parametrize("offset,pattern", [
    (0, ((12, 5), (1, 12))),  # one partition too many
    (1, ((12, 4), (1, 12))),  # runs one element past the end
    (-1, ((12, 1), (1, 2))),  # negative offset
    (3, ((12, 1), (-1, 5))),  # negative stride below 0
])
def test_out_of_bounds_access_raises(ex, offset, pattern):
    t = tile(ex, shape=(4, 12))
    with pytest.raises(AccessError, match="offsets"):
        ex.read(acc(t, offset, *pattern))


def test_undeclared_tensor_raises(ex):
    with pytest.raises(AccessError, match="never allocated"):
        ex.read(acc(decl((2, 2)), 0, (2, 2), (1, 2)))


@settings(max_examples=200, deadline=None)
@given(offset=st.integers(-5, 40), dims=st.lists(
    st.tuples(st.integers(-9, 9), st.integers(1, 5)), min_size=1, max_size=4))
def test_view_is_in_bounds_or_refused(offset, dims):
    mem = Memory()
    t = decl((4, 8))
    mem.declare(t, np.arange(32, dtype=F32).reshape(4, 8))
    index = np.full([n for _, n in dims], offset)
    for k, (s, n) in enumerate(dims):
        shape = [1] * len(dims)
        shape[k] = n
        index = index + s * np.arange(n).reshape(shape)
    a = Access(t, offset, tuple(dims))
    if index.min() < 0 or index.max() >= 32:
        with pytest.raises(AccessError):
            mem.view(a)
    else:
        np.testing.assert_array_equal(mem.view(a), index.astype(F32))


# --- casting -----------------------------------------------------------------------------------

def test_bf16_output_rounds_to_nearest_even(ex):
    # bf16 keeps 7 mantissa bits, so every x + 2^-8 below is a tie: 1 + 2^-8 goes down to the even
    # 1.0, 1 + 2^-7 + 2^-8 up to the even 1 + 2^-6, 1 + 2^-6 + 2^-8 down to 1 + 2^-6.
    x = tile(ex, np.array([[1.0, 1.0 + 2**-7, 1.0 + 2**-6, 3.0]], F32))
    y = tile(ex, np.array([[2**-8, 2**-8, 2**-8, 2**-20]], F32))
    out = tile(ex, shape=(1, 4), dtype=D.bfloat16)
    ex.execute(ins(Opcode.TENSOR_TENSOR, {"out": rect(out, slice(None), slice(None))},
                   {"data1": rect(x, slice(None), slice(None)),
                    "data2": rect(y, slice(None), slice(None))}, op="add"))
    got = ex.logical(out).astype(F32)
    np.testing.assert_array_equal(got, [[1.0, 1.0 + 2**-6, 1.0 + 2**-6, 3.0]])


def test_float8_and_int_outputs(ex):
    x = tile(ex, np.array([[0.3, 1.26, -2.5, 300.7, np.nan, -1e10]], F32))
    for dt in (D.float8_e4m3, D.int32, D.uint8):
        out = tile(ex, shape=(1, 6), dtype=dt)
        ex.execute(ins(Opcode.TENSOR_COPY, {"out": rect(out, slice(None), slice(None))},
                       {"src": rect(x, slice(None), slice(None))}))
        want = D.cast(ex.logical(x), dt)  # compare bit patterns: NaN == NaN there
        np.testing.assert_array_equal(ex.logical(out).view(f"u{dt.itemsize}"),
                                      want.view(f"u{dt.itemsize}"))
    assert ex.logical(out).tolist() == [[0, 1, 0, 255, 0, 0]]  # rounding, saturation, NaN -> 0


def test_tfloat32_destination_is_rounded(ex):
    x = tile(ex, np.array([[1.0 + 2**-12, 1.0 + 2**-10]], F32))
    out = tile(ex, shape=(1, 2), dtype=D.tfloat32)
    ex.execute(ins(Opcode.TENSOR_COPY, {"out": rect(out, slice(None), slice(None))},
                   {"src": rect(x, slice(None), slice(None))}))
    np.testing.assert_array_equal(ex.logical(out), [[1.0, 1.0 + 2**-10]])


# --- masks -------------------------------------------------------------------------------------

def test_rectangular_mask_leaves_other_elements(ex):
    x = tile(ex, rand := RNG.uniform(size=(4, 6)).astype(F32))
    out = tile(ex, np.full((4, 6), 7.0, F32))
    cols_lt_4 = Predicate("<", Affine(-4, (0, 1)))  # j - 4 < 0
    ex.execute(ins(Opcode.ACTIVATION, {"out": rect(out, slice(None), slice(None))},
                   {"data": rect(x, slice(None), slice(None))}, Engine.SCALAR,
                   mask=cols_lt_4, op="exp"))
    got = ex.logical(out)
    np.testing.assert_allclose(got[:, :4], np.exp(rand[:, :4]), rtol=1e-6)
    assert (got[:, 4:] == 7.0).all()


def test_triangular_mask(ex):
    out = tile(ex, np.zeros((5, 5), F32))
    upper = Predicate("and", parts=(Predicate(">=", Affine(0, (-1, 1))),  # j >= i
                                    Predicate("<", Affine(-5, (0, 1)))))
    ex.execute(ins(Opcode.MEMSET, {"out": rect(out, slice(None), slice(None))}, {},
                   mask=upper, value=1.0))
    np.testing.assert_array_equal(ex.logical(out), np.triu(np.ones((5, 5))))


# --- accumulation ------------------------------------------------------------------------------

def _matmul(ex, psum, s, m, accumulate, mask=None):
    ex.execute(ins(Opcode.NC_MATMUL, {"out": rect(psum, slice(None), slice(None))},
                   {"stationary": rect(s, slice(None), slice(None)),
                    "moving": rect(m, slice(None), slice(None))}, Engine.TENSOR, mask=mask,
                   accumulate=accumulate))


def test_nc_matmul_accumulation_group(ex):
    psum = tile(ex, shape=(16, 32), space=MemSpace.PSUM)
    ss = [RNG.standard_normal((64, 16)).astype(BF16) for _ in range(3)]
    ms = [RNG.standard_normal((64, 32)).astype(BF16) for _ in range(3)]
    for k, (s, m) in enumerate(zip(ss, ms)):
        _matmul(ex, psum, tile(ex, s), tile(ex, m), accumulate=k > 0)
    want = sum(s.astype(F32).T @ m.astype(F32) for s, m in zip(ss, ms))
    np.testing.assert_allclose(ex.logical(psum), want, rtol=1e-5, atol=1e-4)


def test_matmul_flattens_free_axes(ex):
    s = RNG.standard_normal((8, 2, 3)).astype(BF16)  # stationary [K, 2, 3] -> M = 6
    m = RNG.standard_normal((8, 5)).astype(BF16)
    psum = tile(ex, shape=(6, 5), space=MemSpace.PSUM)
    st_, mv = tile(ex, s), tile(ex, m)
    ex.execute(ins(Opcode.NC_MATMUL, {"out": rect(psum, slice(None), slice(None))},
                   {"stationary": acc(st_, 0, (6, 8), (3, 2), (1, 3)),
                    "moving": rect(mv, slice(None), slice(None))}, Engine.TENSOR))
    want = s.astype(F32).reshape(8, 6).T @ m.astype(F32)
    np.testing.assert_allclose(ex.logical(psum), want, rtol=1e-5, atol=1e-5)


def test_masked_matmul_takes_general_path_with_same_values(ex):
    s, m = RNG.standard_normal((8, 4)).astype(F32), RNG.standard_normal((8, 6)).astype(F32)
    fast, masked = tile(ex, shape=(4, 6)), tile(ex, np.zeros((4, 6), F32))
    _matmul(ex, fast, tile(ex, s), tile(ex, m), accumulate=False)
    rows_lt_2 = Predicate("<", Affine(-2, (1, 0)))
    _matmul(ex, masked, tile(ex, s), tile(ex, m), accumulate=True, mask=rows_lt_2)
    np.testing.assert_array_equal(ex.logical(masked)[:2], ex.logical(fast)[:2])
    assert (ex.logical(masked)[2:] == 0).all()


def test_matmul_sees_rewritten_stationary(ex):
    # The executor caches float32 conversions of matmul operands; a write must invalidate them.
    s = tile(ex, np.ones((8, 4), BF16))
    m = tile(ex, np.ones((8, 6), BF16))
    psum = tile(ex, shape=(4, 6), space=MemSpace.PSUM)
    _matmul(ex, psum, s, m, accumulate=False)
    assert (ex.logical(psum) == 8).all()
    src = tile(ex, np.full((8, 4), 2.0, F32))
    ex.execute(ins(Opcode.TENSOR_COPY, {"out": rect(s, slice(None), slice(None))},
                   {"src": rect(src, slice(None), slice(None))}))
    _matmul(ex, psum, s, m, accumulate=False)
    assert (ex.logical(psum) == 16).all()
    ex.write(rect(m, slice(0, 4), slice(None)), np.zeros((4, 6)))
    _matmul(ex, psum, s, m, accumulate=False)
    assert (ex.logical(psum) == 8).all()


def test_dma_copy_cast_rmw_and_reshape(ex):
    hbm = tile(ex, np.arange(12, dtype=F32).reshape(3, 4), space=MemSpace.HBM, kind="input")
    sb = tile(ex, np.ones((3, 4), BF16))
    copy = ins(Opcode.DMA_COPY, {"out": rect(sb, slice(None), slice(None))},
               {"src": rect(hbm, slice(None), slice(None))}, Engine.DMA, dst_rmw_op="add")
    ex.execute(copy)
    ex.execute(copy)
    np.testing.assert_array_equal(ex.logical(sb).astype(F32), 1 + 2 * np.arange(12).reshape(3, 4))
    # A [1, 4] row into a [4] vector: shapes differ only by a dim of size 1.
    vec = tile(ex, shape=(4,), space=MemSpace.HBM, kind="hbm")
    ex.execute(ins(Opcode.DMA_COPY, {"out": acc(vec, 0, (1, 4))},
                   {"src": rect(hbm, slice(2, 3), slice(None))}, Engine.DMA))
    np.testing.assert_array_equal(ex.logical(vec), [8, 9, 10, 11])
    with pytest.raises(UnsupportedError, match="dst_rmw_op"):
        ex.execute(ins(Opcode.DMA_COPY, {"out": rect(sb, slice(None), slice(None))},
                       {"src": rect(hbm, slice(None), slice(None))}, Engine.DMA,
                       dst_rmw_op="multiply"))


# --- activation accumulator registers ----------------------------------------------------------

def _act(ex, x, out, red, cmd, opcode=Opcode.ACTIVATION):
    dsts = {"out": rect(out, slice(None), slice(None))}
    if red is not None:
        dsts["reduce_res"] = rect(red, slice(None), slice(None))
    attrs = {"op": "copy"} | ({"reduce_op": "add", "reduce_cmd": cmd} if cmd else {})
    ex.execute(ins(opcode, dsts, {"data": rect(x, slice(None), slice(None))}, Engine.SCALAR,
                   **attrs))


def test_activation_accumulator_registers(ex):
    x = tile(ex, np.ones((4, 8), F32))
    out, red = tile(ex, shape=(4, 8)), tile(ex, shape=(4, 1))
    _act(ex, x, out, None, "reset_reduce")
    _act(ex, x, out, None, "reduce")
    _act(ex, x, out, None, "idle")
    _act(ex, x, out, red, "reduce")
    np.testing.assert_array_equal(ex.logical(red)[:, 0], [24.0] * 4)  # three reductions of 8
    np.testing.assert_array_equal(ex.registers(Engine.SCALAR)[:4], [24.0] * 4)
    _act(ex, x, out, red, "reset")
    np.testing.assert_array_equal(ex.logical(red)[:, 0], [0.0] * 4)
    _act(ex, x, out, red, "reduce", Opcode.ACTIVATION_REDUCE)  # always reset_reduce
    np.testing.assert_array_equal(ex.logical(red)[:, 0], [8.0] * 4)
    assert (ex.registers(Engine.VECTOR) == 0).all()  # registers are per engine
    with pytest.raises(UnsupportedError, match="reduce_cmd"):
        _act(ex, x, out, red, "load_reduce")


# --- errors ------------------------------------------------------------------------------------

def test_errors_name_the_kernel_line(ex):
    a, b = tile(ex, shape=(4, 4)), tile(ex, shape=(4, 5))
    with pytest.raises(ShapeError, match=r"^k\.py:7: tensor_tensor: operand shapes"):
        ex.execute(ins(Opcode.TENSOR_TENSOR, {"out": rect(a, slice(None), slice(None))},
                       {"data1": rect(a, slice(None), slice(None)),
                        "data2": rect(b, slice(None), slice(None))}, op="add"))
    with pytest.raises(KernelError, match=r"^k\.py:7: tensor_tensor: ALU operator"):
        ex.execute(ins(Opcode.TENSOR_TENSOR, {"out": rect(a, slice(None), slice(None))},
                       {"data1": rect(a, slice(None), slice(None)),
                        "data2": rect(a, slice(None), slice(None))}, op="nope"))
    with pytest.raises(KernelError, match="missing"):
        ex.execute(ins(Opcode.TENSOR_TENSOR, {"out": rect(a, slice(None), slice(None))},
                       {"data1": rect(a, slice(None), slice(None))}, op="add"))
    with pytest.raises(AccessError, match=r"^k\.py:7: .*offsets"):
        ex.execute(ins(Opcode.TENSOR_COPY, {"out": acc(a, 4, (4, 4), (1, 4))},
                       {"src": rect(a, slice(None), slice(None))}))


def test_in_place_update_reads_before_writing(ex):
    x = tile(ex, np.arange(8, dtype=F32).reshape(1, 8))
    shifted_src, shifted_dst = acc(x, 0, (8, 1), (1, 7)), acc(x, 1, (8, 1), (1, 7))
    ex.execute(ins(Opcode.TENSOR_COPY, {"out": shifted_dst}, {"src": shifted_src}))
    np.testing.assert_array_equal(ex.logical(x), [[0, 0, 1, 2, 3, 4, 5, 6]])
