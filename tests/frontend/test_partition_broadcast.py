"""Partition-aligned broadcasting (frontend/broadcast.py, docs/frontend.md "Broadcasting").

NKI lines shapes up at the partition dim: a [P] reduction result is one value per partition,
the same elements as [P, 1]; [1, F] and [1, 1] tiles reach P partitions by data movement
(TensorE for floats, a DMA for other dtypes). Each rule has a kernel that works (checked against
numpy) and a misuse that gets a clear error at its kernel line.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import neuroncore_sim as ncs
from neuroncore_sim.errors import AccessError, ShapeError
from neuroncore_sim.program.ir import Engine, Opcode
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl

F32 = np.float32
HERE = "test_partition_broadcast.py"
RNG = np.random.default_rng(7)


def rand(*shape, dtype=F32):
    return RNG.random(shape).astype(dtype)


def store(t):
    out = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.shared_hbm)
    nl.store(out, t)
    return out


def bad_line(kernel) -> int:
    src, start = inspect.getsourcelines(kernel)
    return start + next(i for i, s in enumerate(src) if "# BAD" in s)


def expect_error(cls, message: str, kernel, *args):
    """``kernel`` raises exactly ``cls`` matching ``message`` at its ``# BAD`` line."""
    with pytest.raises(cls, match=message) as info:
        ncs.trace(kernel, *args)
    assert type(info.value) is cls
    assert info.value.loc == f"{HERE}:{bad_line(kernel)}", str(info.value)


def ops(launch):
    return [i.opcode for i in launch.program.instructions]


def only(launch, opcode):
    found = [i for i in launch.program.instructions if i.opcode is opcode]
    assert len(found) == 1, ops(launch)
    return found[0]


# --- a [P] reduction result is a per-partition value ------------------------------------------
def test_reduction_result_broadcasts_along_free_dims_of_nl_ops():
    def kernel(a):
        x = nl.load(a)
        row_max = nl.max(x, axis=1)  # [128]
        e = nl.exp(nl.subtract(x, row_max))
        return store(nl.divide(e, nl.sum(e, axis=1)))

    a = rand(128, 300)
    launch = ncs.trace(kernel, a)
    e = np.exp(a - a.max(1, keepdims=True))
    np.testing.assert_allclose(launch.outputs[0], e / e.sum(1, keepdims=True), rtol=1e-5)
    # each per-partition operand is a [128, 1] access of a tensor_scalar: what the timing sees
    scalars = [i for i in launch.program.instructions if i.opcode is Opcode.TENSOR_SCALAR]
    assert len(scalars) == 2
    assert all(i.srcs["operand0"].shape == (128, 1) for i in scalars)


def test_a_per_partition_vector_against_a_tile_with_fewer_partitions_is_an_error():
    def bad(a):
        x = nl.load(a)
        nl.add(x, nl.sum(x[0:64, :], axis=1))  # BAD

    expect_error(ShapeError, r"nl\.add: expected shapes that broadcast .* found \[128, 8\] and "
                 r"\[64\] \(NKI aligns shapes at the partition dim.*\[64, 1\]", bad, rand(128, 8))


def test_reduction_result_fills_a_one_column_slot_directly():
    def kernel(a):
        x = nl.load(a)
        t = nl.ndarray((128, 2), dtype=nl.float32)
        i_p = nl.arange(128)[:, None]
        t[i_p, 0] = nisa.tensor_reduce(nl.max, x, axis=1)  # [128] into [128, 1]
        t[:, 1] = nl.sum(x, axis=1)  # [128] into [128]
        c = nl.ndarray((128, 1), dtype=nl.float32)
        c[...] = t[:, 0]  # a [128] view copied into a [128, 1] tile
        return store(t), store(c)

    a = rand(128, 40)
    launch = ncs.trace(kernel, a)
    np.testing.assert_allclose(launch.outputs[0], np.stack([a.max(1), a.sum(1)], 1), rtol=1e-6)
    np.testing.assert_array_equal(launch.outputs[1], a.max(1, keepdims=True))
    # the reductions write into the slots: no extra copies for them
    assert ops(launch).count(Opcode.TENSOR_REDUCE) == 2
    assert ops(launch).count(Opcode.TENSOR_COPY) == 1


def test_assignment_that_does_not_broadcast_is_an_error():
    def bad(a):
        x = nl.load(a)
        t = nl.ndarray((128, 8), dtype=nl.float32)
        t[...] = x  # BAD

    expect_error(ShapeError, r"assignment: expected shapes that broadcast .* found \[128, 4\] "
                 r"and \[128, 8\]", bad, rand(128, 4))


# --- nisa operands that take one value per partition -----------------------------------------
def test_nisa_per_partition_operands_take_a_reduction_result():
    def kernel(a, b):
        x, y = nl.load(a), nl.load(b)
        s = nisa.tensor_reduce(nl.add, x, axis=1)  # [128]
        act = nisa.activation(nl.exp, x, bias=s, scale=-1.0)
        ts = nisa.tensor_scalar(x, nl.subtract, s, op1=nl.multiply, operand1=s)
        c = nl.ndarray((128, 16), dtype=nl.float32)
        c[:, 0:8] = nisa.tensor_tensor_scan(x[:, 0:8], y[:, 0:8], initial=0.0,
                                            op0=np.multiply, op1=np.add)
        c[:, 8:16] = nisa.tensor_tensor_scan(x[:, 8:16], y[:, 8:16], initial=c[:, 7],
                                             op0=np.multiply, op1=np.add)
        return store(act), store(ts), store(c)

    a, b = rand(128, 16), rand(128, 16)
    launch = ncs.trace(kernel, a, b)
    s = a.sum(1, keepdims=True)
    np.testing.assert_allclose(launch.outputs[0], np.exp(-a + s), rtol=1e-5)
    np.testing.assert_allclose(launch.outputs[1], (a - s) * s, rtol=1e-5)
    want = np.zeros_like(a)
    prev = np.zeros(128, F32)
    for i in range(16):
        prev = a[:, i] * prev + b[:, i]
        want[:, i] = prev
    np.testing.assert_allclose(launch.outputs[2], want, rtol=1e-5)
    assert only(launch, Opcode.ACTIVATION).srcs["bias"].shape == (128, 1)
    scan = [i for i in launch.program.instructions if i.opcode is Opcode.TENSOR_TENSOR_SCAN]
    assert scan[1].srcs["initial"].shape == (128, 1)


def test_nisa_per_partition_operand_of_one_partition_is_an_error():
    def bad(a):
        x = nl.load(a)
        nisa.tensor_scalar(x, nl.add, x[0:1, 0:1])  # BAD

    expect_error(ShapeError, r"tensor_scalar operand0: expected shape \[128, 1\], found \[1, 1\]",
                 bad, rand(128, 4))


def test_nisa_bias_with_free_elements_is_an_error():
    def bad(a):
        x = nl.load(a)
        nisa.activation(nl.exp, x, bias=x[:, 0:2])  # BAD

    expect_error(ShapeError, r"activation bias: expected shape \[128, 1\], found \[128, 2\]",
                 bad, rand(128, 4))


# --- [1, F] and [1, 1] tiles: one partition to many ------------------------------------------
@pytest.mark.parametrize("b_shape", [(1, 512), (1, 1), (128, 1)])
def test_nl_add_broadcasts_like_the_reference_examples(b_shape):
    def kernel(a, b):
        return store(nl.add(nl.load(a), nl.load(b)))

    a, b = rand(128, 512), rand(*b_shape)
    launch = ncs.trace(kernel, a, b)
    np.testing.assert_array_equal(launch.outputs[0], a + b)
    matmuls = ops(launch).count(Opcode.NC_MATMUL)
    assert matmuls == (0 if b_shape[0] == 128 else 1)  # TensorE copies one partition to 128


def test_each_operand_broadcasts_along_its_own_dim():
    def kernel(a, b):
        return store(nl.multiply(nl.load(a), nl.load(b)))

    a, b = rand(128, 1), rand(1, 700)  # 700 columns: two matmuls of at most 512
    launch = ncs.trace(kernel, a, b)
    np.testing.assert_array_equal(launch.outputs[0], a * b)
    assert ops(launch).count(Opcode.NC_MATMUL) == 2
    assert only(launch, Opcode.TENSOR_SCALAR).srcs["operand0"].shape == (128, 1)


def test_integer_partition_broadcast_is_a_dma_and_exact():
    def kernel(a, b):
        return store(nl.add(nl.load(a), nl.load(b))), store(nl.load(b).broadcast_to((128, 64)))

    # values float32 cannot hold: a float matmul would round them
    a = RNG.integers(-2 ** 30, 2 ** 30, (128, 64)).astype(np.int32)
    b = RNG.integers(-2 ** 30, 2 ** 30, (1, 64)).astype(np.int32) | 1
    launch = ncs.trace(kernel, a, b)
    np.testing.assert_array_equal(launch.outputs[0], (a.astype(np.int64) + b).astype(np.int32))
    np.testing.assert_array_equal(launch.outputs[1], np.repeat(b, 128, 0))
    assert Opcode.NC_MATMUL not in ops(launch)
    copies = [i for i in launch.program.instructions
              if i.opcode is Opcode.DMA_COPY and i.out.space.value == "sbuf"
              and i.srcs["src"].space.value == "sbuf"]
    assert len(copies) == 2
    assert all(i.srcs["src"].pattern[0] == (0, 128) for i in copies)  # partition stride 0


def test_broadcast_to_takes_a_per_partition_vector():
    def kernel(a):
        return store((1.0 / nl.sum(nl.load(a), axis=1)).broadcast_to((128, 6)))

    a = rand(128, 10)
    np.testing.assert_allclose(ncs.trace(kernel, a).outputs[0],
                               np.repeat(1.0 / a.sum(1, keepdims=True), 6, 1), rtol=1e-6)


def test_broadcast_to_fewer_dims_is_an_error():
    def bad(a):
        nl.load(a).broadcast_to((128,))  # BAD

    expect_error(ShapeError, r"broadcast_to: expected a shape with at least 2 dims, found "
                 r"\[128\]", bad, rand(128, 1))


def test_a_view_repeating_one_partition_is_not_a_compute_operand():
    def bad(a):
        x = nl.load(a)
        ix, iy = nl.mgrid[0:128, 0:4]
        nl.exp(x[0 * ix, iy])  # BAD

    def good(a):
        x = nl.load(a)
        return store(nl.exp(nl.broadcast_to(x[0:1, :], (128, 4))))

    a = rand(128, 4)
    expect_error(AccessError, r"activation data: the view repeats one partition over 128 "
                 r"partitions; compute engines read one partition per lane", bad, a)
    np.testing.assert_allclose(ncs.trace(good, a).outputs[0], np.exp(np.repeat(a[:1], 128, 0)),
                               rtol=1e-6)


def test_timing_runs_with_partition_broadcasts():
    def kernel(a, b, c):
        x = nl.load(a)
        return store(nl.add(nl.add(x, nl.load(b)), nl.load(c)))

    a, b = rand(128, 512), rand(1, 512)
    c = RNG.integers(0, 9, (1, 1)).astype(np.int32)
    res = ncs.simulate(kernel, a, b, c)
    np.testing.assert_allclose(res.outputs[0], a + b + c, rtol=1e-6)
    assert res.latency_ns > 0
    engines = {i.engine for i in ncs.trace(kernel, a, b, c).program.instructions}
    assert Engine.TENSOR in engines


# --- the rule as a property ------------------------------------------------------------------
def _nki_broadcast(x: np.ndarray, ndim: int) -> np.ndarray:
    """numpy broadcasting with NKI's alignment: missing axes are appended, not prepended."""
    return x.reshape(x.shape + (1,) * (ndim - x.ndim))


@settings(max_examples=25, deadline=None)
@given(p=st.sampled_from([1, 3, 128]), free=st.lists(st.integers(1, 5), min_size=1, max_size=3),
       keep_a=st.lists(st.booleans(), min_size=4, max_size=4),
       keep_b=st.lists(st.booleans(), min_size=4, max_size=4),
       cut=st.integers(0, 3), op=st.sampled_from(["add", "subtract", "maximum", "multiply"]))
def test_binary_ops_follow_partition_aligned_numpy(p, free, keep_a, keep_b, cut, op):
    full = (p, *free)
    a_shape = tuple(n if k else 1 for n, k in zip(full, keep_a))
    b_shape = tuple(n if k else 1 for n, k in zip(full, keep_b))
    b_shape = b_shape[:max(1, len(b_shape) - cut)]  # fewer dims: read as trailing 1s

    def kernel(a, b):
        x = nl.load(a) if len(a_shape) > 1 else nl.load(a)[:, 0]
        y = nl.load(b) if len(b_shape) > 1 else nl.load(b)[:, 0]
        return store(getattr(nl, op)(x, y))

    a, b = rand(*a_shape), rand(*b_shape)
    want_shape = np.broadcast_shapes(a_shape, _nki_broadcast(b, len(a_shape)).shape)
    got = ncs.trace(kernel, a, b).outputs[0]
    want = getattr(np, op)(a, _nki_broadcast(b, len(a_shape)))
    np.testing.assert_allclose(got.reshape(want_shape), want, rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_a_psum_row_is_copied_to_sbuf_before_its_partition_broadcast(dtype):
    def kernel(a, b):
        row = nl.copy(nl.load(b), dtype=nl.float32)
        acc = nl.zeros((1, 8), dtype=nl.float32, buffer=nl.psum)
        acc[...] = nl.add(acc, row)  # a [1, 8] tile in PSUM
        src = acc if dtype is np.float32 else nl.copy(acc, dtype=nl.int32)
        return store(nl.add(nl.load(a), src))

    a = RNG.integers(0, 99, (64, 8)).astype(dtype)
    b = RNG.integers(0, 9, (1, 8)).astype(F32)  # whole numbers: the int32 cast is exact
    want = a + b.astype(dtype)
    np.testing.assert_allclose(ncs.trace(kernel, a, b).outputs[0], want, rtol=1e-6)


def test_tensor_tensor_values_align_ranks_at_the_partition_dim():
    # A hand-built Program may give tensor_tensor a [P] operand: it is [P, 1], not numpy's [1, P].
    from neuroncore_sim.values.semantics import core as semantics
    from neuroncore_sim.values.semantics.core import Out

    a, b = rand(4, 4), rand(4)
    got = semantics.tensor_tensor({"data1": a, "data2": b}, {"op": "subtract"},
                                  {"out": Out((4, 4), np.dtype(F32))}, Engine.VECTOR)["out"]
    np.testing.assert_array_equal(got, a - b[:, None])


def test_scalar_tensor_tensor_and_select_reduce_take_per_partition_vectors():
    def kernel(a, b):
        x, y = nl.load(a), nl.load(b)
        s = nl.max(x, axis=1)  # [128]
        stt = nisa.scalar_tensor_tensor(data=x, op0=nl.subtract, operand0=s, op1=nl.add,
                                        operand1=y)
        col = nisa.tensor_tensor(s, y[:, 0:1], nl.multiply)  # [128] with [128, 1]
        sel = nl.ndarray((128, 8), dtype=nl.float32)
        nisa.select_reduce(dst=sel, predicate=nl.greater(x, 0.5, dtype=nl.uint8), on_true=x,
                           on_false=s)
        same = nl.broadcast_to(x, (128, 8))  # already that shape: returned as is
        return store(stt), store(col), store(sel), store(same)

    a, b = rand(128, 8), rand(128, 8)
    out = ncs.trace(kernel, a, b).outputs
    m = a.max(1, keepdims=True)
    np.testing.assert_allclose(out[0], a - m + b, rtol=1e-6)
    assert out[1].shape == (128,)  # data1's shape
    np.testing.assert_allclose(out[1], (m * b[:, :1])[:, 0], rtol=1e-6)
    np.testing.assert_array_equal(out[2], np.where(a > 0.5, a, m))
    np.testing.assert_array_equal(out[3], a)
