"""The documented methods and attributes of NKI tensors (``nki.tensor``): reshape of HBM tensors
and tiles, view, astype, expand_dims, itemsize, assert_shape, and clear errors for the rest."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import neuroncore_sim as ncs
from neuroncore_sim.errors import ShapeError, SimulatorError, UnsupportedError
from neuroncore_sim.program.ir import Opcode
import neuroncore_sim.nki.language as nl

RNG = np.random.default_rng(7)


def bad_line(kernel) -> str:
    src, start = inspect.getsourcelines(kernel)
    return f"test_tensor_methods.py:{start + next(i for i, s in enumerate(src) if '# BAD' in s)}"


def test_reshape_of_a_vector_argument_loads_as_one_row():
    def k(g, x):
        out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
        i_p = nl.arange(1)[:, None]
        i_f = nl.arange(g.shape[0])[None, :]
        row = nl.load(g.reshape(shape=(1, g.shape[0]))[i_p, i_f])
        nl.store(out, value=nl.load(x) * row.broadcast_to(x.shape))
        return out

    g, x = RNG.random(96, dtype=np.float32), RNG.random((8, 96), dtype=np.float32)
    np.testing.assert_allclose(ncs.trace(k, g, x).outputs[0], x * g[None, :], rtol=1e-6)


def test_writes_through_a_reshaped_output_are_the_outputs_bytes():
    def k(a):  # a: [4, 256]; written through a [8, 128] name, read back through the first
        out = nl.ndarray((4, 256), a.dtype, buffer=nl.shared_hbm)
        flat = out.reshape(8, 128)
        nl.store(flat, value=nl.load(a.reshape(8, 128)) * 2.0)
        out2 = nl.ndarray((4, 256), a.dtype, buffer=nl.shared_hbm)
        nl.store(out2, value=nl.load(out) + 1.0)
        return out, out2

    a = RNG.random((4, 256), dtype=np.float32)
    launch = ncs.trace(k, a)
    np.testing.assert_array_equal(launch.outputs[0], a * 2)
    np.testing.assert_array_equal(launch.outputs[1], a * 2 + 1)
    # the Program addresses the same bytes: the store's destination is the whole of `out`
    store = [i for i in launch.program.instructions if i.opcode is Opcode.DMA_COPY][1]
    dst = store.dsts["out"]
    assert dst.tensor.name == launch.program.tensors[1].name or dst.tensor.kind == "output"
    assert (dst.offset, dst.pattern) == (0, ((128, 8), (1, 128)))
    # and the later load of `out` waits for that store (same tensor, overlapping region)
    load_back = [i for i in launch.program.instructions if i.opcode is Opcode.DMA_COPY][2]
    assert load_back.srcs["src"].tensor is dst.tensor and load_back.srcs["src"].overlaps(dst)


def test_reshape_of_a_slice_and_of_a_tile():
    def k(a):  # a: [6, 8, 16]
        out = nl.ndarray((8, 4, 8), a.dtype, buffer=nl.shared_hbm)
        v = a[2].reshape(8, 2, 8)  # a contiguous [8, 16] slab, offset 2*128
        t = nl.load(v)  # [8, 2, 8]
        t2 = t.reshape(8, 16).reshape((8, 4, 4))  # free dims only: stays one tile
        nl.store(out[:, 0:4, 0:4], value=t2)
        nl.store(out[:, :, 4:8], value=nl.load(a[3].reshape(8, 4, 4)))
        return out

    a = RNG.random((6, 8, 16), dtype=np.float32)
    got = ncs.trace(k, a).outputs[0]
    np.testing.assert_array_equal(got[:, :, 0:4], a[2].reshape(8, 4, 4))
    np.testing.assert_array_equal(got[:, :, 4:8], a[3].reshape(8, 4, 4))


@settings(max_examples=40, deadline=None)
@given(st.sampled_from([(4, 6, 8), (2, 12, 4), (3, 4, 10)]), st.integers(0, 3), st.data())
def test_reshape_matches_numpy_or_needs_a_copy(shape, which, data):
    """A reshape of a (maybe strided) HBM view reads what numpy's reshape reads, and is refused
    exactly when numpy could not reshape the view without a copy."""
    a = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    views = [(slice(None),), (slice(1, None),), (slice(None), slice(None, None, 2)),
             (slice(None), slice(None), slice(0, 2))]
    key = views[which]
    sub = a[key]
    n = sub.size
    divisors = [d for d in range(1, n + 1) if n % d == 0]
    p = data.draw(st.sampled_from([d for d in divisors if d <= 128]))
    q = data.draw(st.sampled_from([d for d in divisors if (n // p) % d == 0]))
    new = (p, q, n // p // q)
    probe = sub.view()
    try:
        probe.shape = new
        ok = True
    except AttributeError:  # numpy: "incompatible shape for in-place modification"
        ok = False

    def k(x):
        out = nl.ndarray(new, x.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.load(x[key].reshape(new)))
        return out

    if ok:
        np.testing.assert_array_equal(ncs.trace(k, a).outputs[0], sub.reshape(new))
    else:
        with pytest.raises(UnsupportedError, match="would need a copy"):
            ncs.trace(k, a)


def test_documented_attributes_and_methods():
    seen = {}

    def k(a):
        out = nl.ndarray((128, 1, 64), nl.float32, buffer=nl.shared_hbm)
        t = nl.load(a)
        seen.update(ndim=t.ndim, itemsize=t.itemsize, shape=t.shape, hbm_itemsize=a.itemsize)
        assert t.assert_shape((128, 64)) is t
        assert a.view(a.dtype) is a
        b = t.astype(nl.float32)
        nl.store(out, value=b.expand_dims(1))
        return out

    a = RNG.random((128, 64)).astype(np.float16)
    got = ncs.trace(k, a).outputs[0]
    np.testing.assert_array_equal(got, a.astype(np.float32)[:, None, :])
    assert seen == {"ndim": 2, "itemsize": 2, "shape": (128, 64), "hbm_itemsize": 2}


def _reshape_count(a):
    return a.reshape(7, 10)  # BAD


def _reshape_partition(a):
    t = nl.load(a)
    return t.reshape(64, 2, 128)  # BAD


def _reshape_strided(a):
    return a[:, 0:4].reshape(64)  # BAD


def _unknown_method(a):
    return a.permute(1, 0)  # BAD


def _view_other_dtype(a):
    return a.view(nl.int16)[:, 0:3].view(nl.float32)  # BAD


def _assert_shape(a):
    return a.assert_shape((3, 3))  # BAD


@pytest.mark.parametrize("kernel,cls,message", [
    (_reshape_count, ShapeError, r"reshape: expected a shape of 128 elements, found \[7, 10\]"),
    (_reshape_partition, ShapeError, r"expected the partition dim \(128\) kept"),
    (_reshape_strided, UnsupportedError, "would need a copy"),
    (_unknown_method, UnsupportedError, r"have no attribute 'permute'; expected one of shape"),
    (_view_other_dtype, ShapeError, r"view of int16 \[16, 3\] .* as float32 \(4 bytes\): the "
                                    r"last dim holds 3 x 2 = 6 bytes, expected a multiple of 4"),
    (_assert_shape, ShapeError, r"assert_shape: expected shape \[3, 3\], found \[16, 8\]"),
])
def test_misuse_is_a_clear_error(kernel, cls, message):
    a = np.zeros((16, 8) if kernel in (_reshape_count, _reshape_strided, _unknown_method,
                                       _view_other_dtype, _assert_shape) else (128, 128),
                 np.float32)
    with pytest.raises(cls, match=message) as info:
        ncs.trace(kernel, a)
    assert isinstance(info.value, SimulatorError)
    assert info.value.loc == bad_line(kernel)


def test_unknown_attribute_keeps_hasattr_working():
    seen = []

    def k(a):
        seen.append((hasattr(a, "permute"), hasattr(a, "reshape"), getattr(a, "ap", None)))
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.load(a))
        return out

    ncs.trace(k, np.zeros((4, 4), np.float32))
    assert seen == [(False, True, None)]


def test_mgrid_names_its_free_axes_x_y_z():
    def k(a):  # a: [4, 2, 3, 5]
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        g = nl.mgrid[0:4, 0:2, 0:3, 0:5]
        t = nl.load(a[g.p, g.x, g.y, g.z])
        nl.store(out[g.p, g.x, g.y, g.z], value=t)
        return out

    a = RNG.random((4, 2, 3, 5), dtype=np.float32)
    np.testing.assert_array_equal(ncs.trace(k, a).outputs[0], a)

    def bad(a):
        g = nl.mgrid[0:4, 0:2]
        return a[g.p, g.y]  # BAD

    with pytest.raises(SimulatorError, match=r"nl.mgrid .y: expected a grid of at least 3 axes, "
                       r"found 2") as info:
        ncs.trace(bad, a)
    assert info.value.loc == bad_line(bad)


def test_view_reinterprets_the_same_bytes():
    """uint8 data read as float8_e4m3; float32 bits handled as int32 on chip and stored back
    through an int32 view of a float32 output."""
    import ml_dtypes

    def k(q, x):
        f8 = nl.ndarray(q.shape, nl.float32, buffer=nl.shared_hbm)
        out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
        nl.store(f8, value=nl.copy(nl.load(q.view(nl.float8_e4m3)), dtype=nl.float32))
        bits = nl.load(x).view(nl.int32)
        absolute = nl.bitwise_and(bits, 0x7FFFFFFF, dtype=nl.int32)
        nl.store(out.view(nl.int32), value=absolute)
        return f8, out

    q = RNG.integers(0, 120, (4, 16), dtype=np.uint8)  # finite float8_e4m3 bit patterns
    x = RNG.standard_normal((4, 16)).astype(np.float32)
    launch = ncs.trace(k, q, x)
    np.testing.assert_array_equal(launch.outputs[0],
                                  q.view(ml_dtypes.float8_e4m3).astype(np.float32))
    np.testing.assert_array_equal(launch.outputs[1], np.abs(x))
    res = ncs.simulate(k, q, x)
    assert res.latency_ns > 0
    np.testing.assert_array_equal(res.outputs[1], np.abs(x))


def test_indirect_rows_of_a_batch_of_a_reshaped_tensor():
    """t[b, idx_tile, cols] on a reshaped [B, H*W, C] view: the rows of t[b] at idx_tile,
    gathered from the input and scattered into a reshaped output."""
    def k(data, idx):  # data: [2, 4, 8, 16] -> [2, 32, 16]; idx: [2, 24, 1] row numbers
        got = nl.ndarray((2, 24, 16), data.dtype, buffer=nl.shared_hbm)
        out = nl.ndarray((2, 4, 8, 16), data.dtype, buffer=nl.shared_hbm)
        flat, out_flat = data.reshape(shape=(2, 32, 16)), out.reshape((2, 32, 16))
        i_c = nl.arange(16)[None, :]
        for b in nl.affine_range(2):
            nl.store(out_flat[b], value=nl.zeros((32, 16), nl.float32))
            rows = nl.load(idx[b])
            tile = nl.load(flat[b, rows, i_c])
            nl.store(got[b], value=tile)
            nl.store(out_flat[b, rows, i_c], value=tile)
        return got, out

    data = RNG.random((2, 4, 8, 16), dtype=np.float32)
    idx = np.stack([RNG.permutation(32)[:24] for _ in range(2)])[:, :, None].astype(np.int32)
    got, out = ncs.trace(k, data, idx).outputs
    flat = data.reshape(2, 32, 16)
    want = np.zeros_like(flat)
    for b in range(2):
        np.testing.assert_array_equal(got[b], flat[b, idx[b, :, 0]])
        want[b, idx[b, :, 0]] = flat[b, idx[b, :, 0]]
    np.testing.assert_array_equal(out.reshape(2, 32, 16), want)


def test_returned_views_give_the_values_they_select():
    """`return out.reshape(...)` (NKI's transpose kernel does this) returns the reshaped
    values; a returned slice or dtype view returns what it selects."""
    def k(a):
        out = nl.ndarray((4, 6), a.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.load(a))
        return out.reshape((2, 2, 6)), out[1:3], out.view(nl.int32)

    a = RNG.random((4, 6), dtype=np.float32)
    shaped, rows, bits = ncs.trace(k, a).outputs
    np.testing.assert_array_equal(shaped, a.reshape(2, 2, 6))
    np.testing.assert_array_equal(rows, a[1:3])
    np.testing.assert_array_equal(bits, a.view(np.int32))


def test_reshape_of_a_block_tile_needs_one_block():
    def k(a):
        t = nl.ndarray((2, nl.par_dim(16), 8), nl.float32, buffer=nl.sbuf)
        t[0] = nl.load(a)
        t[1] = nl.load(a)
        out = nl.ndarray((16, 2, 4), nl.float32, buffer=nl.shared_hbm)
        nl.store(out, value=t[1].reshape((16, 2, 4)))
        return t.reshape((2, 16, 2, 4))  # BAD: block dims first

    with pytest.raises(ShapeError, match=r"whose first axis is not its partition dim \(\[2, 16, "
                       r"8\], block dims first\)") as info:
        ncs.trace(k, RNG.random((16, 8), dtype=np.float32))
    assert info.value.loc == bad_line(k)


def test_shift_and_reflected_operators_and_the_ones_without_an_instruction():
    def k(a):
        u = nl.load(a)
        out = nl.ndarray((5,) + a.shape, a.dtype, buffer=nl.shared_hbm)
        for n, r in enumerate((u << 2, 1 << u, u >> 1, 6 & u, 9 ^ u)):
            nl.store(out[n], value=r)
        return out

    a = np.arange(16, dtype=np.int32).reshape(4, 4) % 8
    got = ncs.trace(k, a).outputs[0]
    for g, w in zip(got, (a << 2, 1 << a, a >> 1, 6 & a, 9 ^ a)):
        np.testing.assert_array_equal(g, w)

    def bad(a):
        t = nl.load(a)
        return t // 2  # BAD

    with pytest.raises(UnsupportedError, match=r"this Python operator has no NKI instruction "
                       r"for tiles \(//, divmod, @, round\)") as info:
        ncs.trace(bad, a)
    assert info.value.loc == bad_line(bad)


def test_a_loaded_tile_viewed_as_another_dtype_feeds_a_matmul():
    """uint8 bytes loaded plainly, then read as float8_e4m3 by nc_matmul: the GEMM fast path
    (which reads loaded tiles straight from HBM) must see the float8 values, not the uint8."""
    import ml_dtypes
    import neuroncore_sim.nki.isa as nisa

    def k(q, b):
        out = nl.ndarray((16, 32), nl.float32, buffer=nl.shared_hbm)
        acc = nl.zeros((16, 32), nl.float32, buffer=nl.psum)
        for t in nl.affine_range(4):  # a K loop: the chain's GEMM stacks the loaded K tiles
            raw = nl.load(q[t * 8:(t + 1) * 8])  # [8, 16] uint8
            acc += nisa.nc_matmul(raw.view(nl.float8_e4m3), nl.load(b[t * 8:(t + 1) * 8]))
        nl.store(out, value=nl.copy(acc))
        return out

    q = RNG.integers(0, 100, (32, 16), dtype=np.uint8)
    b = RNG.random((32, 32), dtype=np.float32).astype(ml_dtypes.float8_e4m3)
    got = ncs.trace(k, q, b).outputs[0]
    want = q.view(ml_dtypes.float8_e4m3).astype(np.float32).T @ b.astype(np.float32)
    np.testing.assert_allclose(got, want, rtol=1e-5)
