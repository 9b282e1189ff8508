"""Mistakes a first-time NKI user makes: each bad kernel raises a SimulatorError located at its
own kernel line (never a raw Python error from inside the package), and the nearest correct
kernel runs."""

from __future__ import annotations

import inspect
import re
import tracemalloc

import numpy as np
import pytest

import neuroncore_sim as ncs
from neuroncore_sim.errors import AccessError, DTypeError, KernelError, MemorySpaceError, \
    ShapeError, SimulatorError
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl

F32 = np.float32
HERE = "test_user_errors.py"


def bad_line(kernel) -> int:
    """Line number of the kernel line marked ``# BAD``."""
    src, start = inspect.getsourcelines(kernel)
    return start + next(i for i, s in enumerate(src) if "# BAD" in s)


def expect_error(cls, message: str, kernel, *args, line: int | None = None, **kw):
    """Running ``kernel`` raises exactly ``cls`` with ``message`` at the ``# BAD`` line."""
    with pytest.raises(cls) as info:
        ncs.trace(kernel, *args, **kw)
    assert type(info.value) is cls
    want = line if line is not None else bad_line(kernel)
    assert info.value.loc == f"{HERE}:{want}", str(info.value)
    assert re.search(message, info.value.message), info.value.message
    return info.value


def z(*shape, dtype=F32):
    return np.zeros(shape, dtype)


def def_line(kernel) -> int:
    return kernel.__code__.co_firstlineno


def store(t):
    out = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.shared_hbm)
    nl.store(out, t)
    return out


# --- what a kernel returns -----------------------------------------------------------------------
def test_returning_an_sbuf_tile_names_the_kernel_and_the_tile():
    def bad(a):
        return nl.exp(nl.load(a))  # BAD

    def good(a):
        return store(nl.exp(nl.load(a)))

    expect_error(KernelError, r"kernel return value: expected HBM tensors .*found a tile in sbuf "
                 rf"made at {HERE}:{bad_line(bad)}", bad, z(4, 4), line=def_line(bad))
    np.testing.assert_allclose(ncs.trace(good, z(4, 4)).outputs[0], np.ones((4, 4)))


# --- dtypes --------------------------------------------------------------------------------------
def test_bad_dtype_inside_a_kernel_is_located():
    def bad():
        nl.ndarray((128, 4), dtype="float33")  # BAD

    def good():
        nl.ndarray((128, 4), dtype="float32")

    expect_error(DTypeError, r"nl.ndarray dtype: expected an NKI dtype .*found 'float33'", bad)
    ncs.trace(good)


def test_bad_argument_dtype_names_the_kernel_and_says_why():
    def k(a):
        nl.load(a)

    expect_error(DTypeError, r"argument 'a' dtype: .*found float64 \(NeuronCore-v2 has no 64-bit",
                 k, z(4, 4, dtype=np.float64), line=def_line(k))
    err = expect_error(DTypeError, r"found complex64$", k, z(4, 4, dtype=np.complex64),
                       line=def_line(k))
    assert "64-bit" not in str(err)  # complex64 is 8 bytes but not a 64-bit number type
    ncs.trace(k, z(4, 4))


# --- control flow on device values ---------------------------------------------------------------
def test_if_on_a_tile_is_an_error_not_a_silent_branch():
    def bad(a):
        t = nl.load(a)
        if t > 0:  # BAD
            t = nl.exp(t)
        return store(t)

    def good(a):
        t = nl.load(a)
        return store(nl.where(t > 0, nl.exp(t), t))

    x = np.array([[-1.0, 0.5]], F32)
    expect_error(KernelError, r"a tile has no Python truth value", bad, x)
    np.testing.assert_allclose(ncs.trace(good, x).outputs[0], [[-1.0, np.exp(0.5)]], rtol=1e-6)


def test_loop_bounds_must_be_integers():
    def bad(a):
        for i in nl.affine_range(a.shape[0] / 256):  # BAD
            nl.load(a[i * 256:(i + 1) * 256])

    def good(a):
        for i in nl.affine_range(a.shape[0] // 128):
            nl.load(a[i * 128:(i + 1) * 128])

    expect_error(KernelError, r"nl.affine_range: expected 1 to 3 integer bounds .*, found \[1.5\]",
                 bad, z(384, 4))
    ncs.trace(good, z(384, 4))


# --- shapes --------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(128, -1), (128, 0), (128, 2.5)])
def test_allocation_shape_must_be_positive_integers(shape):
    def bad():
        nl.ndarray(shape, nl.float32)  # BAD

    def good():
        nl.ndarray((128, 1), nl.float32)

    expect_error(ShapeError, r"nl.ndarray shape: expected a shape of positive integers, found "
                 + re.escape(repr(shape)), bad)
    ncs.trace(good)


def test_hbm_zeros_hold_no_values_in_a_timing_only_run():
    def k():
        nl.zeros((4096, 4096), nl.float32, buffer=nl.shared_hbm)

    tracemalloc.start()
    try:
        ncs.trace(k, functional=False)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20  # the values would be 64 MiB (128 MiB on the way, as int64)


# --- indexing ------------------------------------------------------------------------------------
def test_slice_bounds_must_be_integers():
    def bad(a):
        nl.load(a[0:128, 0.5:3])  # BAD

    def good(a):
        return store(nl.load(a[0:128, 1:3]))

    a = np.arange(128 * 8, dtype=F32).reshape(128, 8)
    expect_error(AccessError, r"slice of axis 1: expected integer bounds, found 0.5 \(float\)",
                 bad, a)
    np.testing.assert_array_equal(ncs.trace(good, a).outputs[0], a[:, 1:3])


def test_numpy_array_index_with_ellipsis_is_a_located_error():
    def bad(a):
        nl.load(a[np.array([1, 2]), ...])  # BAD

    def two_ellipses(a):
        nl.load(a[..., 0:4, ...])  # BAD

    expect_error(AccessError, r"index: expected an int, slice, .* found ndarray", bad, z(128, 8))
    expect_error(AccessError, r"expected at most one '...', found 2", two_ellipses, z(128, 8))


def test_index_tile_with_ellipsis_gathers_rows():
    def k(table, idx):
        return store(nl.load(table[nl.load(idx), ...]))

    table = np.arange(256 * 4, dtype=F32).reshape(256, 4)
    rows = np.random.default_rng(0).integers(0, 256, (128, 1)).astype(np.int32)
    np.testing.assert_array_equal(ncs.trace(k, table, rows).outputs[0], table[rows[:, 0]])


def test_reduction_axis_out_of_range():
    def bad(a):
        nl.sum(nl.load(a), axis=5)  # BAD

    def good(a):
        return store(nl.sum(nl.load(a), axis=-1, keepdims=True))

    a = np.arange(128 * 8, dtype=F32).reshape(128, 8)
    expect_error(KernelError, r"tensor_reduce axis: expected axes of the 2-d data \(-2..1\), "
                 r"found 5", bad, a)
    np.testing.assert_allclose(ncs.trace(good, a).outputs[0], a.sum(1, keepdims=True))


def test_empty_slices_are_errors_at_the_slice():
    def empty(a):
        nl.load(a[5:5])  # BAD

    def reversed_bounds(a):
        nl.load(a[0:128, 10:5])  # BAD

    def negative_ds(a):
        nl.load(a[nl.ds(-1, 4)])  # BAD

    def good(a):
        return store(nl.load(a[nl.ds(4, 4), 5:10]))

    a = np.arange(128 * 16, dtype=F32).reshape(128, 16)
    expect_error(AccessError, r"slice of axis 0: expected at least one element, found 5:5 on an "
                 r"axis of size 128", empty, a)
    expect_error(AccessError, r"slice of axis 1: expected at least one element, found 10:5",
                 reversed_bounds, a)
    expect_error(AccessError, r"nl.ds: expected an integer start >= 0 and size >= 1, found start "
                 r"-1, size 4", negative_ds, a)
    np.testing.assert_array_equal(ncs.trace(good, a).outputs[0], a[4:8, 5:10])


# --- nl.matmul in the user's terms (not those of its lowering) ----------------------------------
def test_matmul_operand_in_hbm_is_named_as_the_users_argument():
    """An HBM operand is refused in the user's terms; a PSUM one (an nl.transpose result, as
    AWS's attention tutorial passes) is copied to SBUF first, as the compiler does."""
    def bad(a):
        nl.matmul(a, nl.load(a), transpose_x=True)  # BAD

    def good(a):
        at = nl.transpose(nl.load(a))  # [64, 128] in PSUM
        return store(nl.copy(nl.matmul(nl.load(a), at, transpose_x=False)))

    a = np.arange(128 * 64, dtype=F32).reshape(128, 64) / 1000
    expect_error(MemorySpaceError, r"nl.matmul x: expected a tensor in sbuf or psum, found hbm",
                 bad, a)
    np.testing.assert_allclose(ncs.trace(good, a).outputs[0], a @ a.T, rtol=1e-5)


def test_matmul_shapes_are_checked_as_x_at_y():
    def bad(a):
        x = nl.load(a)
        nl.matmul(x, x)  # BAD

    def good(a, b):
        return store(nl.copy(nl.matmul(nl.load(a), nl.load(b))))

    expect_error(ShapeError, r"nl.matmul: x @ y with x \[128, 64\]: expected y of shape \[64, N\], "
                 r"found \[128, 64\]", bad, z(128, 64))
    a = np.arange(128 * 64, dtype=F32).reshape(128, 64) / 1000
    b = np.arange(64 * 32, dtype=F32).reshape(64, 32) / 1000
    np.testing.assert_allclose(ncs.trace(good, a, b).outputs[0], a @ b, rtol=1e-5)


# --- tiles made by an instruction obey the partition limit ---------------------------------------
def test_instruction_results_have_at_most_128_partitions():
    def bad_memset():
        nisa.memset((129, 4), 0.0, nl.float32)  # BAD

    def bad_iota():
        nisa.iota(nl.arange(129)[:, None], nl.int32)  # BAD

    def good():
        return store(nisa.iota(nl.arange(128)[:, None], nl.int32))

    msg = r"the result's partition dim \(dim 0\) must be 1..128; found shape \[129, "
    expect_error(ShapeError, "memset: " + msg, bad_memset)
    expect_error(ShapeError, "iota: " + msg, bad_iota)
    np.testing.assert_array_equal(ncs.trace(good).outputs[0], np.arange(128)[:, None])


def test_broadcast_to_a_shape_that_is_no_broadcast():
    def bad(a):
        nl.load(a).broadcast_to((128, 129))  # BAD

    def good(a):
        return store(nl.load(a[:, 0:1]).broadcast_to((128, 3)))

    a = np.arange(128 * 4, dtype=F32).reshape(128, 4)
    expect_error(ShapeError, r"broadcast_to: expected each dim of \[128, 4\] to be 1 or the "
                 r"target's, found target \[128, 129\]", bad, a)
    np.testing.assert_array_equal(ncs.trace(good, a).outputs[0], np.repeat(a[:, :1], 3, 1))


def test_dtype_none_is_not_float64():
    def bad():
        nl.ndarray((128, 4), None)  # BAD

    err = expect_error(DTypeError, r"nl.ndarray dtype: expected an NKI dtype .*found None$", bad)
    assert "64-bit" not in str(err)


@pytest.mark.parametrize("use, what", [
    (lambda t: float(t[0:1, 0:1]), "float value"),
    (lambda t: int(t[0:1, 0:1]), "int value"),
    (lambda t: range(t[0:1, 0:1]), "int value"),
    (lambda t: not t, "truth value"),
])
def test_python_values_of_a_tile_are_errors(use, what):
    def bad(a):
        use(nl.load(a))

    err = expect_error(KernelError, rf"a tile has no Python {what}", bad, z(128, 4),
                       line=use.__code__.co_firstlineno)
    assert "exist only on the device" in err.message


def test_a_list_argument_is_not_an_hbm_tensor():
    def k(a):
        return store(nl.load(a))  # BAD

    expect_error(KernelError, r"load src: expected an HBM tensor, found list \(numpy arrays passed "
                 r"to the kernel become HBM tensors", k, [[1.0, 2.0]])
    np.testing.assert_array_equal(ncs.trace(k, np.array([[1.0, 2.0]], F32)).outputs[0],
                                  [[1.0, 2.0]])


def test_one_element_of_hbm_moves_as_a_1_by_1_tile():
    """a[3, 4] (as AWS's flash attention loads its sink) is a [1, 1] region for load and store,
    like a[3:4, 4:5]; a region of more elements does not fit one."""
    def bad_store(a):
        nl.store(a[0, 0], value=nl.load(a[0:2, 0:1]))  # BAD

    def good(a, out):  # an output-argument kernel
        nl.store(out[0, 0], value=nl.load(a[3, 4]))
        nl.store(out[1:2, 0:1], 1.0)
        t = nl.load(a[5, 6])
        assert t.shape == (1, 1)

    a = np.arange(64, dtype=F32).reshape(8, 8)
    expect_error(ShapeError, r"store: expected src shape \[1, 1\] \(the dst shape\), found \[2, 1\]",
                 bad_store, a)
    out = np.zeros((2, 1), F32)
    ncs.trace(good, a, out)
    np.testing.assert_array_equal(out, [[28.0], [1.0]])


# --- outside a kernel ----------------------------------------------------------------------------
@pytest.mark.parametrize("call, name", [
    (lambda: nl.exp(z(2, 2)), "nl.exp"),
    (lambda: nl.add(z(2, 2), 1.0), "nl.add"),
    (lambda: nl.load(z(2, 2)), "load"),
    (lambda: nl.ndarray((2, 2), nl.float32), "nl.ndarray"),
])
def test_nl_call_outside_a_kernel_names_the_call(call, name):
    # named at the calling line (the lambda above), as every error outside a kernel is
    with pytest.raises(SimulatorError, match=rf"^test_user_errors.py:\d+: {re.escape(name)} "
                                             "can only run inside a kernel"):
        call()
