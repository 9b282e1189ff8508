"""Property tests: near the documented limits, a kernel is accepted exactly when the rule says so
(shared/arch.md 1.4, 1.5, 2, 3.6). Timing-only traces: only the front end's checks run."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import neuroncore_sim as ncs
from neuroncore_sim.errors import AccessError, CapacityError, KernelError
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl

SETTINGS = settings(max_examples=60, deadline=None)


def near(*limits: int) -> st.SearchStrategy[int]:
    """Sizes at and around each limit, plus anything in 1..2*max(limits)."""
    edge = sorted({n for lim in limits for n in (lim - 1, lim, lim + 1) if n >= 1})
    return st.one_of(st.sampled_from(edge), st.integers(1, 2 * max(limits)))


def accepted(kernel, *args) -> bool:
    try:
        ncs.trace(kernel, *args, functional=False)
    except KernelError:
        return False
    return True


@SETTINGS
@given(p=near(128))
def test_load_partitions(p):
    def k(a):
        nl.load(a)

    assert accepted(k, np.zeros((p, 4), np.float32)) == (p <= 128)


@SETTINGS
@given(p=near(128))
def test_ndarray_partitions(p):
    def k():
        nl.ndarray((p, 4), nl.float32)

    assert accepted(k) == (p <= 128)


@SETTINGS
@given(k_dim=near(128).filter(lambda n: n <= 128), fs=near(128), fm=near(512))
def test_matmul_free_sizes(k_dim, fs, fm):
    def k(a, b):
        nisa.nc_matmul(nl.load(a), nl.load(b))

    ok = accepted(k, np.zeros((k_dim, fs), np.float32), np.zeros((k_dim, fm), np.float32))
    assert ok == (fs <= 128 and fm <= 512)


@SETTINGS
@given(ks=near(64).filter(lambda n: n <= 128), km=near(64).filter(lambda n: n <= 128))
def test_matmul_contraction(ks, km):
    def k(a, b):
        nisa.nc_matmul(nl.load(a), nl.load(b))

    assert accepted(k, np.zeros((ks, 8), np.float32), np.zeros((km, 8), np.float32)) == (ks == km)


@SETTINGS
@given(f=near(512, 1024), dt=st.sampled_from([nl.float32, nl.bfloat16, nl.int8]))
def test_psum_bank(f, dt):
    def k():
        nl.ndarray((128, f), dt, buffer=nl.psum)

    try:
        ncs.trace(k, functional=False)
        ok = True
    except CapacityError:
        ok = False
    assert ok == (f * np.dtype(dt).itemsize <= 2048)


@SETTINGS
@given(p=near(32), f=near(128))
def test_vector_transpose(p, f):
    def k(a):
        nisa.nc_transpose(nl.load(a), engine=nisa.vector_engine)

    # larger than 32x32: 32x32 blocks (transpose_blocks.py), up to 128 either way
    assert accepted(k, np.zeros((min(p, 128), f), np.float32)) == (f <= 128)


@SETTINGS
@given(f=near(512))
def test_bn_stats(f):
    def k(a):
        nisa.bn_stats(nl.load(a))

    assert accepted(k, np.zeros((8, f), np.float32)) == (f <= 512)


@SETTINGS
@given(f=near(6, 12, 18))
def test_bn_aggr(f):
    def k(a):
        nisa.bn_aggr(nl.load(a))

    assert accepted(k, np.zeros((8, f), np.float32)) == (f % 6 == 0)


def start_ok(start: int, p: int) -> bool:
    """arch.md 1.5."""
    if p > 64:
        return start == 0
    if p > 32:
        return start in (0, 64)
    return start in (0, 32, 64, 96)


@settings(max_examples=150, deadline=None)
@given(start=st.one_of(st.sampled_from([0, 1, 31, 32, 33, 63, 64, 65, 95, 96, 97]),
                       st.integers(0, 127)),
       p=st.one_of(st.sampled_from([1, 31, 32, 33, 63, 64, 65, 127, 128]), st.integers(1, 128)),
       space=st.sampled_from(["sbuf", "psum"]))
def test_start_partition(start, p, space):
    if start + p > 128:
        p = 128 - start
    buf = nl.sbuf if space == "sbuf" else nl.psum

    def k():
        t = nl.zeros((128, 8), nl.float32, buffer=buf)
        nisa.tensor_copy(t[start:start + p])

    try:
        ncs.trace(k, functional=False)
        ok = True
    except AccessError as e:
        assert "start-partition rule" in e.message
        ok = False
    assert ok == start_ok(start, p)


@settings(max_examples=40, deadline=None)
@given(start=st.integers(0, 127), p=st.integers(1, 128))
def test_dma_ignores_start_partition(start, p):
    p = min(p, 128 - start)

    def k(a):
        t = nl.ndarray((128, 8), nl.float32)
        t[start:start + p] = nl.load(a)

    assert accepted(k, np.zeros((p, 8), np.float32))


@pytest.mark.parametrize("cols,ok", [(511, True), (512, True), (513, False)])
def test_hbm_column_bound(cols, ok):
    def sliced(a):
        nl.load(a[:, 0:cols])  # slices are not clipped as in numpy: past the end is an error

    def arange(a):
        i_p, i_f = nl.mgrid[0:8, 0:cols]
        nl.load(a[i_p, i_f])

    assert accepted(sliced, np.zeros((8, 512), np.float32)) == ok
    assert accepted(arange, np.zeros((8, 512), np.float32)) == ok
