"""nki.isa select, gather, shuffle, dynamic-copy and DMA instructions, and nl gather/loop_reduce,
against numpy."""

from __future__ import annotations

import numpy as np
import pytest

import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl

from .helpers import apply, run

RNG = np.random.default_rng(9)


def _store(t, dtype=None):
    out = nl.ndarray(t.shape, dtype=dtype or t.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=t)
    return out


@pytest.mark.api("nki.isa.tensor_copy_predicated")
@pytest.mark.parametrize("reverse_pred", [False, True])
def test_tensor_copy_predicated(reverse_pred):
    src = RNG.normal(size=(8, 16)).astype(np.float32)
    base = RNG.normal(size=(8, 16)).astype(np.float32)
    pred = RNG.integers(0, 2, (8, 16)).astype(np.uint8)

    def k(s, b, p):
        dst = nl.ndarray((8, 16), dtype=nl.float32, buffer=nl.sbuf)
        dst[...] = nl.load(b)
        nisa.tensor_copy_predicated(src=nl.load(s), dst=dst, predicate=nl.load(p),
                                    reverse_pred=reverse_pred)
        return _store(dst)
    take = (pred == 0) if reverse_pred else (pred != 0)
    np.testing.assert_array_equal(run(k, src, base, pred), np.where(take, src, base))


@pytest.mark.api("nki.isa.select_reduce", "nki.isa.reduce_cmd")
def test_select_reduce_with_max_reduction():
    on_true = RNG.normal(size=(8, 16)).astype(np.float32)
    pred = RNG.integers(0, 2, (8, 16)).astype(np.uint8)

    def k(t, p):
        dst = nl.ndarray((8, 16), dtype=nl.float32, buffer=nl.sbuf)
        red = nl.ndarray((8, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.select_reduce(dst=dst, predicate=nl.load(p), on_true=nl.load(t), on_false=-5.0,
                           reduce_res=red, reduce_cmd=nisa.reduce_cmd.reset_reduce,
                           reduce_op=np.max)
        return [_store(dst), _store(red)]
    dst, red = run(k, on_true, pred)
    want = np.where(pred != 0, on_true, -5.0).astype(np.float32)
    np.testing.assert_array_equal(dst, want)
    np.testing.assert_array_equal(red.reshape(8), want.max(axis=1))


def _bounds(ids):
    n = len(ids)
    start, end = np.empty(n), np.empty(n)
    for i, s in enumerate(ids):
        if s == 0:
            start[i], end[i] = n, -1
            continue
        j = i
        while j > 0 and ids[j - 1] == s:
            j -= 1
        e = i
        while e + 1 < n and ids[e + 1] == s:
            e += 1
        start[i], end[i] = j, e + 1
    return np.stack([start, end])[None].astype(np.float32)


@pytest.mark.api("nki.isa.sequence_bounds")
def test_sequence_bounds():
    ids = np.array([[1, 1, 1, 2, 2, 0, 3, 3, 3, 3, 0, 0, 4, 5, 5, 5]], dtype=np.float32)
    got = apply(lambda t: nisa.sequence_bounds(segment_ids=t), ids)
    assert got.shape == (1, 2, 16)
    np.testing.assert_array_equal(got, _bounds(ids[0]))


@pytest.mark.api("nki.language.gather_flattened")
def test_gather_flattened_indexes_the_flattened_free_dims():
    data = RNG.normal(size=(4, 2, 8)).astype(np.float32)
    idx = RNG.integers(0, 16, (4, 2, 8)).astype(np.uint32)
    got = apply(nl.gather_flattened, data, idx)
    want = np.take_along_axis(data.reshape(4, 16), idx.reshape(4, 16).astype(np.int64), axis=1)
    np.testing.assert_array_equal(got, want.reshape(4, 2, 8))


@pytest.mark.api("nki.isa.nc_match_replace8", "nki.isa.max8")
def test_nc_match_replace8_replaces_the_top8():
    x = np.stack([RNG.permutation(32) for _ in range(4)]).astype(np.float32)

    def fn(t):
        return nisa.nc_match_replace8(data=t, vals=nisa.max8(src=t), imm=-1.0)
    want = x.copy()
    want[x >= 24] = -1.0
    np.testing.assert_array_equal(apply(fn, x), want)


@pytest.mark.api("nki.isa.nc_stream_shuffle")
def test_nc_stream_shuffle_within_a_quadrant():
    x = RNG.normal(size=(32, 8)).astype(np.float32)
    perm = list(reversed(range(32)))

    def k(a):
        src = nl.load(a)
        # zeros first: the simulator reads dst (partitions a 255 entry leaves unmodified)
        dst = nl.zeros((32, 8), dtype=nl.float32, buffer=nl.sbuf)
        nisa.nc_stream_shuffle(src=src, dst=dst, shuffle_mask=perm)
        return _store(dst)
    np.testing.assert_array_equal(run(k, x), x[perm])


@pytest.mark.api("nki.isa.dma_transpose")
def test_dma_transpose_2d():
    x = RNG.normal(size=(16, 32)).astype(np.float32)

    def k(a):
        return _store(nisa.dma_transpose(a))
    np.testing.assert_array_equal(run(k, x), x.T)


@pytest.mark.api("nki.isa.dma_copy", "nki.isa.dge_mode")
@pytest.mark.parametrize("mode", ["none", "swdge", "unknown"])
def test_dma_copy_modes_of_neuroncore_v2(mode):
    x = RNG.normal(size=(8, 16)).astype(np.float32)

    def k(a):
        t = nl.ndarray((8, 16), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a, dge_mode=getattr(nisa.dge_mode, mode))
        return _store(t)
    np.testing.assert_array_equal(run(k, x), x)


@pytest.mark.api("nki.language.loop_reduce")
def test_loop_reduce_accumulates_over_the_loop():
    x = RNG.normal(size=(4, 8, 16)).astype(np.float32)

    def k(a):
        acc = nl.zeros((8, 16), dtype=nl.float32, buffer=nl.sbuf)
        for i in nl.affine_range(4):
            acc = nl.loop_reduce(nl.load(a[i]), op=np.add, loop_indices=[i], dtype=nl.float32)
        return _store(acc)
    np.testing.assert_allclose(run(k, x), x.sum(axis=0), rtol=1e-5)


@pytest.mark.api("nki.language.atomic_rmw")
def test_atomic_rmw_adds_into_indirectly_indexed_rows():
    base = RNG.normal(size=(16, 8)).astype(np.float32)
    val = RNG.normal(size=(4, 8)).astype(np.float32)
    rows = np.array([[3], [0], [7], [12]], dtype=np.int32)

    def k(b, v, r):
        out = nl.ndarray((16, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, value=nl.load(b))
        idx = nl.load(r)
        nl.atomic_rmw(out[idx, nl.arange(8)[None, :]], value=nl.load(v), op=np.add)
        return out
    want = base.copy()
    want[rows[:, 0]] += val
    np.testing.assert_allclose(run(k, base, val, rows), want, rtol=1e-6)


@pytest.mark.api("nki.language.atomic_rmw")
def test_atomic_rmw_with_direct_indexing_is_a_clear_error():
    # The reference: dst "only supports indirect dynamic indexing currently".
    from neuroncore_sim.errors import SimulatorError

    def k(b):
        out = nl.ndarray((8, 16), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, value=nl.load(b))
        nl.atomic_rmw(out, value=nl.load(b), op=np.add)
        return out
    with pytest.raises(SimulatorError, match="indirect|index tile"):
        run(k, np.zeros((8, 16), np.float32))
