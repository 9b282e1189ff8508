"""NKI traces an ``nl.affine_range`` or ``nl.sequential_range`` body once: Python state the body
changes (an address counter) changes once. Here the body runs per iteration, so a direct
allocation at one line of such a loop keeps the placement of its first iteration (AWS's
allocated attention kernels). ``nl.static_range`` is unrolled by NKI itself: there each
iteration allocates anew."""

from __future__ import annotations

import re

import numpy as np
import pytest

import neuroncore_sim as ncs
import neuroncore_sim.nki as nki
import neuroncore_sim.nki.compiler as ncc
import neuroncore_sim.nki.language as nl


class Counter:
    def __init__(self) -> None:
        self.addr = 0

    def take(self, nbytes: int):
        base, self.addr = self.addr, self.addr + nbytes
        return ncc.sbuf.mod_alloc(base_addr=base, num_free_tiles=(1,))


def make(counter: Counter, loop=nl.affine_range):
    @nki.jit
    def kernel(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        for i in loop(a.shape[0] // 128):
            # 64 KiB per iteration: 16 iterations would pass the end of SBUF if each moved on
            t = nl.ndarray((nl.par_dim(128), 16384), dtype=a.dtype, buffer=counter.take(65536))
            t[...] = nl.load(a[i * 128:(i + 1) * 128, :])
            nl.store(out[i * 128:(i + 1) * 128, :], value=t)
        return out
    return kernel


@pytest.mark.parametrize("loop", [nl.affine_range, nl.sequential_range])
def test_direct_allocation_in_a_traced_loop_is_placed_once(loop) -> None:
    a = np.random.default_rng(0).random((16 * 128, 16384)).astype(np.float32)
    counter = Counter()
    res = ncs.simulate(make(counter, loop), a, timing=False)
    np.testing.assert_array_equal(res.outputs[0], a)
    placed = {t.placement for t in res.program.tensors if t.placement is not None}
    assert len(placed) == 1 and next(iter(placed)).tiles == ((0, 0),)
    assert counter.addr == 16 * 65536  # the Python counter did run per iteration


def test_static_range_allocates_per_iteration_and_runs_out_of_sbuf() -> None:
    """Unrolled, the counter moves on each iteration: from the fourth on, tiles lie past the
    192 KiB partition, one AllocationWarning each at the allocation line (docs/frontend.md)."""
    a = np.random.default_rng(3).random((16 * 128, 16384)).astype(np.float32)
    with pytest.warns(ncs.errors.AllocationWarning) as caught:
        res = ncs.simulate(make(Counter(), nl.static_range), a, timing=False)
    past = [w for w in caught if issubclass(w.category, ncs.errors.AllocationWarning)]
    assert len(past) == 16 - 3  # 3 x 64 KiB fit in 192 KiB
    assert all(re.match(r"test_loop_allocation.py:\d+: ncc.sbuf.mod_alloc: block \(\): a tile of 65536 bytes", str(w.message))
               for w in past)
    np.testing.assert_array_equal(res.outputs[0], a)


def test_sequential_range_keeps_len_and_runs_in_order() -> None:
    @nki.jit
    def kernel(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        acc = nl.zeros((128, a.shape[1]), dtype=nl.float32, buffer=nl.sbuf)
        rows = nl.sequential_range(a.shape[0] // 128)
        assert len(rows) == a.shape[0] // 128
        for i in rows:
            acc[...] = nl.add(acc, nl.load(a[i * 128:(i + 1) * 128, :]))
            nl.store(out[i * 128:(i + 1) * 128, :], value=acc)
        return out

    a = np.random.default_rng(1).random((3 * 128, 8)).astype(np.float32)
    res = ncs.simulate(kernel, a, timing=False)
    want = np.cumsum(a.reshape(3, 128, 8), axis=0).reshape(a.shape)
    np.testing.assert_allclose(res.outputs[0], want, rtol=1e-6)
