"""nki.language creation, manipulation, indexing, iterator and memory functions against numpy."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import neuroncore_sim as ncs
import neuroncore_sim.nki as nki
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl
from neuroncore_sim.errors import AccessError, SimulatorError, UnsupportedError

from .helpers import apply, run

RNG = np.random.default_rng(3)


def _store(t):
    out = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=t)
    return out


@pytest.mark.api("nki.language.zeros", "nki.language.ones", "nki.language.full",
                 "nki.language.sbuf", "nki.language.shared_hbm", "nki.language.int32")
@pytest.mark.parametrize("fn,value", [(lambda s, d: nl.zeros(s, dtype=d, buffer=nl.sbuf), 0),
                                      (lambda s, d: nl.ones(s, dtype=d, buffer=nl.sbuf), 1),
                                      (lambda s, d: nl.full(s, 7, dtype=d, buffer=nl.sbuf), 7)],
                         ids=["zeros", "ones", "full"])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, ml_dtypes.bfloat16])
def test_filled_creation(fn, value, dtype):
    got = run(lambda: _store(fn((8, 12), dtype)))
    assert got.dtype == np.dtype(dtype) and got.shape == (8, 12)
    np.testing.assert_array_equal(got.astype(np.float32), np.full((8, 12), value, np.float32))


@pytest.mark.api("nki.language.zeros_like", "nki.language.empty_like", "nki.language.ndarray")
def test_like_creation_takes_shape_and_dtype():
    x = RNG.normal(size=(8, 4)).astype(np.float32)

    def k(a):
        t = nl.load(a)
        z = nl.zeros_like(t)
        e = nl.empty_like(t, dtype=nl.bfloat16)
        assert (tuple(z.shape), np.dtype(z.dtype)) == ((8, 4), np.float32)
        assert (tuple(e.shape), np.dtype(e.dtype)) == ((8, 4), np.dtype(ml_dtypes.bfloat16))
        n = nl.ndarray((8, 4), dtype=nl.float32, buffer=nl.sbuf)
        n[...] = nl.add(z, t)
        return _store(n)
    np.testing.assert_array_equal(run(k, x), x)


@pytest.mark.api("nki.language.ndarray", "nki.language.par_dim", "nki.language.psum",
                 "nki.language.hbm", "nki.language.private_hbm")
def test_ndarray_buffers_and_par_dim():
    def k():
        t = nl.ndarray((2, nl.par_dim(8), 4), dtype=nl.float32, buffer=nl.sbuf)
        assert tuple(t.shape) == (2, 8, 4)
        p = nl.zeros((8, 4), dtype=nl.float32, buffer=nl.psum)
        h = nl.ndarray((8, 4), dtype=nl.float32, buffer=nl.hbm)
        assert nl.private_hbm is not None and h is not None
        return _store(nl.add(p, 1.0))
    np.testing.assert_array_equal(run(k), np.ones((8, 4), np.float32))


@pytest.mark.api("nki.language.ndarray")
def test_sbuf_tile_over_128_partitions_is_an_error():
    with pytest.raises(SimulatorError, match="128|partition"):
        run(lambda: _store(nl.zeros((256, 4), dtype=nl.float32, buffer=nl.sbuf)))


@pytest.mark.api("nki.language.arange", "nki.language.mgrid", "nki.language.ds")
def test_arange_mgrid_and_ds_index_like_numpy():
    x = RNG.normal(size=(16, 32)).astype(np.float32)

    def k(a):
        i_p = nl.arange(8)[:, None]
        i_f = nl.arange(4, 20)[None, :]
        t1 = nl.load(a[i_p, i_f])
        g = nl.mgrid[0:8, 0:16]
        t2 = nl.load(a[8 + g.p, 16 + g.x])
        t3 = nl.load(a[nl.ds(2, 8), nl.ds(0, 16)])
        return _store(nl.add(nl.add(t1, t2), t3))
    want = x[0:8, 4:20] + x[8:16, 16:32] + x[2:10, 0:16]
    np.testing.assert_allclose(run(k, x), want, rtol=1e-6)


@pytest.mark.api("nki.language.shared_constant", "nki.language.shared_identity_matrix")
def test_shared_constant_and_identity():
    c = RNG.normal(size=(8, 8)).astype(np.float32)

    def k():
        a = nl.load(nl.shared_constant(c))
        i = nl.load(nl.shared_identity_matrix(8, dtype=nl.float32))
        return _store(nl.add(a, i))
    np.testing.assert_allclose(run(k), c + np.eye(8, dtype=np.float32), rtol=1e-6)


@pytest.mark.api("nki.language.expand_dims")
def test_expand_dims_adds_a_size_one_axis():
    x = RNG.normal(size=(8, 6)).astype(np.float32)
    got = apply(lambda t: nl.expand_dims(t, 2), x)
    assert got.shape == (8, 6, 1)
    np.testing.assert_array_equal(got, x[:, :, None])


@pytest.mark.api("nki.language.expand_dims")
def test_expand_dims_of_a_number_is_a_clear_error():
    with pytest.raises(SimulatorError, match="expand_dims: expected a tile") as e:
        apply(lambda t: nl.expand_dims(3.0, 1), np.zeros((4, 4), np.float32))
    assert "test_nl_creation.py:" in str(e.value)


@pytest.mark.api("nki.language.broadcast_to")
@pytest.mark.parametrize("src_shape", [(8, 1), (1, 6), (1, 1)])
def test_broadcast_to(src_shape):
    x = RNG.normal(size=src_shape).astype(np.float32)
    got = apply(lambda t: nl.broadcast_to(t, shape=(8, 6)), x)
    np.testing.assert_array_equal(got, np.broadcast_to(x, (8, 6)))


@pytest.mark.api("nki.language.copy", "nki.language.where", "nki.language.transpose")
def test_copy_where_transpose():
    x = RNG.normal(size=(8, 16)).astype(np.float32)
    np.testing.assert_array_equal(apply(lambda t: nl.copy(t, dtype=nl.float32), x), x)
    got = apply(lambda t: nl.where(nl.greater(t, 0.0), t, 0.0), x)
    np.testing.assert_array_equal(got, np.where(x > 0, x, 0))
    np.testing.assert_array_equal(apply(nl.transpose, x), x.T)


@pytest.mark.api("nki.language.matmul")
@pytest.mark.parametrize("transpose_x", [False, True])
def test_matmul(transpose_x):
    a = RNG.normal(size=(16, 32)).astype(np.float32)
    b = RNG.normal(size=(32, 24)).astype(np.float32)
    xa = a.T.copy() if transpose_x else a
    got = apply(lambda s, t: nl.matmul(s, t, transpose_x=transpose_x), xa, b)
    np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=1e-4)


@pytest.mark.api("nki.language.affine_range", "nki.language.sequential_range",
                 "nki.language.static_range")
@pytest.mark.parametrize("rng", [nl.affine_range, nl.sequential_range, nl.static_range])
def test_iterators_cover_every_tile(rng):
    x = RNG.normal(size=(4, 8, 16)).astype(np.float32)

    def k(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        for i in rng(4):
            nl.store(out[i], value=nl.multiply(nl.load(a[i]), 2.0))
        return out
    np.testing.assert_array_equal(run(k, x), 2 * x)


@pytest.mark.api("nki.language.program_id", "nki.language.num_programs",
                 "nki.language.program_ndim", "nki.jit")
def test_spmd_grid_program_ids():
    @nki.jit
    def k(a, out):
        i = nl.program_id(0)
        assert nl.num_programs(0) == 3 and nl.program_ndim() == 1
        nl.store(out[i], value=nl.add(nl.load(a[i]), 1.0))

    x = RNG.normal(size=(3, 4, 8)).astype(np.float32)
    out = np.zeros_like(x)
    nki.simulate_kernel(k[3], x, out)
    np.testing.assert_allclose(out, x + 1, rtol=1e-6)


@pytest.mark.api("nki.language.load", "nki.language.store")
def test_load_store_with_mask_and_dtype():
    x = RNG.normal(size=(8, 16)).astype(np.float32)

    def k(a):
        out = nl.ndarray((8, 16), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, value=nl.zeros((8, 16), dtype=nl.float32, buffer=nl.sbuf))
        i_p, i_f = nl.mgrid[0:8, 0:16]
        t = nl.load(a[i_p, i_f], mask=(i_f < 10))
        nl.store(out[i_p, i_f], value=t, mask=(i_f < 10))
        return out
    want = np.zeros_like(x)
    want[:, :10] = x[:, :10]
    np.testing.assert_array_equal(run(k, x), want)


@pytest.mark.api("nki.language.load")
def test_load_of_an_sbuf_tile_is_a_clear_error():
    def k(a):
        t = nl.zeros((8, 8), dtype=nl.float32, buffer=nl.sbuf)
        return _store(nl.load(t))
    with pytest.raises(SimulatorError, match="hbm"):
        run(k, np.zeros((8, 8), np.float32))


@pytest.mark.api("nki.language.load_transpose2d")
def test_load_transpose2d():
    x = RNG.normal(size=(16, 8)).astype(np.float32)

    def k(a):
        return _store(nl.load_transpose2d(a))
    np.testing.assert_array_equal(run(k, x), x.T)


@pytest.mark.api("nki.language.load_transpose2d")
def test_load_transpose2d_mask_loads_the_rows_of_a_ragged_matrix():
    """The mask ranges over the source's index expressions (as nc_transpose's over its input):
    a 16-row block of a 10-row matrix loads its 10 rows, the rows past the end are not read."""
    x = RNG.normal(size=(10, 8)).astype(np.float32)

    def k(a):
        out = nl.ndarray((8, 10), dtype=nl.float32, buffer=nl.shared_hbm)
        i_p, i_f = nl.arange(16)[:, None], nl.arange(8)[None, :]
        t = nl.load_transpose2d(a[i_p, i_f], mask=(i_p < 10))
        j_p, j_f = nl.arange(8)[:, None], nl.arange(16)[None, :]
        nl.store(out[j_p, j_f], value=t, mask=(j_f < 10))
        return out
    np.testing.assert_array_equal(run(k, x), x.T)


@pytest.mark.api("nki.isa.dma_transpose")
def test_dma_transpose_mask_ranges_over_the_source_axes():
    y = RNG.normal(size=(2, 3, 4)).astype(np.float32)

    def k(a):
        out = nl.ndarray((3, 3, 2), dtype=nl.float32, buffer=nl.shared_hbm)
        i0, i1, i2 = nl.mgrid[0:2, 0:3, 0:4]
        t = nisa.dma_transpose(a[i0, i1, i2], mask=(i2 < 3))
        nl.store(out, value=t[0:3])
        return out
    np.testing.assert_array_equal(run(k, y), y.transpose(2, 1, 0)[0:3])


@pytest.mark.api("nki.language.load_transpose2d")
def test_load_transpose2d_without_a_mask_past_the_end_or_with_a_triangle_is_an_error():
    x = np.zeros((10, 8), np.float32)

    def past_the_end(a):
        i_p, i_f = nl.arange(16)[:, None], nl.arange(8)[None, :]
        nl.load_transpose2d(a[i_p, i_f])

    def triangle(a):
        i_p, i_f = nl.arange(10)[:, None], nl.arange(8)[None, :]
        nl.load_transpose2d(a[i_p, i_f], mask=(i_p < i_f))
    with pytest.raises(AccessError, match=r"test_nl_creation.py:\d+: load_transpose2d src: out "
                       r"of bounds: index of dim 0 of a \[10, 8\]: expected 0..9, found 0..15"):
        run(past_the_end, x)
    with pytest.raises(UnsupportedError, match=r"test_nl_creation.py:\d+: load_transpose2d: a "
                       r"mask that is not a rectangle over the input \[10, 8\]"):
        run(triangle, x)


@pytest.mark.api("nki.language.tile_size.pmax", "nki.language.tile_size.psum_fmax",
                 "nki.language.tile_size.gemm_stationary_fmax",
                 "nki.language.tile_size.gemm_moving_fmax", "nki.language.tile_size.bn_stats_fmax",
                 "nki.language.tile_size.total_available_sbuf_size", "nki.language.tile_size")
def test_tile_size_constants_of_neuroncore_v2():
    ts = nl.tile_size
    assert (ts.pmax, ts.psum_fmax, ts.gemm_stationary_fmax, ts.gemm_moving_fmax,
            ts.bn_stats_fmax) == (128, 512, 128, 512, 512)
    assert 0 < ts.total_available_sbuf_size <= 192 * 1024


@pytest.mark.api("nki.language.fp32.min", "nki.language.fp32")
def test_fp32_min():
    assert nl.fp32.min == np.finfo(np.float32).min


DTYPES = {"bfloat16": ml_dtypes.bfloat16, "float8_e4m3": ml_dtypes.float8_e4m3,
          "float8_e5m2": ml_dtypes.float8_e5m2, "float16": np.float16, "float32": np.float32,
          "int8": np.int8, "uint8": np.uint8, "int16": np.int16, "uint16": np.uint16,
          "int32": np.int32, "uint32": np.uint32}


@pytest.mark.parametrize("name", sorted(DTYPES))
def test_dtype_round_trip_and_cast(name, request):
    request.node.add_marker(pytest.mark.api(f"nki.language.{name}"))
    dt = getattr(nl, name)
    assert np.dtype(dt) == np.dtype(DTYPES[name])
    # Small integers: exact in every type, so the cast is checked without a rounding question.
    x = RNG.integers(0, 8, (8, 8)).astype(np.float32)
    got = apply(lambda t: nl.copy(t, dtype=dt), x)
    assert got.dtype == np.dtype(DTYPES[name])
    np.testing.assert_array_equal(got, x.astype(DTYPES[name]))


@pytest.mark.api("nki.language.bool_", "nki.language.tfloat32")
def test_bool_and_tfloat32_are_four_and_one_bytes():
    assert np.dtype(nl.bool_).itemsize == 1
    assert np.dtype(nl.tfloat32).itemsize == 4


@pytest.mark.api("nki.tensor", "nki.tensor.reshape", "nki.tensor.shape", "nki.tensor.dtype",
                 "nki.tensor.ndim", "nki.tensor.itemsize", "nki.tensor.astype",
                 "nki.tensor.view", "nki.tensor.broadcast_to", "nki.tensor.expand_dims",
                 "nki.tensor.assert_shape")
def test_tensor_members():
    x = RNG.normal(size=(8, 16)).astype(np.float32)

    def k(a):
        assert isinstance(a, nki.tensor)
        assert (tuple(a.shape), a.ndim, a.itemsize, np.dtype(a.dtype)) == \
            ((8, 16), 2, 4, np.float32)
        a.assert_shape((8, 16))
        t = nl.load(a.reshape((8, 2, 8)))
        u = t.astype(nl.bfloat16)
        v = nl.load(a.view(nl.int32))
        w = nl.load(a[:, 0:1]).broadcast_to((8, 16))
        e = nl.load(a).expand_dims(1)
        return [_store(u), _store(v), _store(w), _store(e)]
    u, v, w, e = run(k, x)
    np.testing.assert_array_equal(u, x.reshape(8, 2, 8).astype(ml_dtypes.bfloat16))
    np.testing.assert_array_equal(v, x.view(np.int32))
    np.testing.assert_array_equal(w, np.broadcast_to(x[:, :1], (8, 16)))
    np.testing.assert_array_equal(e, x[:, None, :])
