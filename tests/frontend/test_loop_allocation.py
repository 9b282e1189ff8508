"""NKI traces an ``nl.affine_range`` body once: Python state the body changes (an address
counter) changes once. Here the body runs per iteration, so a direct allocation at one line of
an affine loop keeps the placement of its first iteration (AWS's allocated attention)."""

from __future__ import annotations

import numpy as np

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


def make(counter: Counter):
    @nki.jit
    def kernel(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        for i in nl.affine_range(a.shape[0] // 128):
            # 64 KiB per iteration: 16 iterations would pass the end of SBUF if each moved on
            t = nl.ndarray((nl.par_dim(128), 16384), dtype=a.dtype, buffer=counter.take(65536))
            t[...] = nl.load(a[i * 128:(i + 1) * 128, :])
            nl.store(out[i * 128:(i + 1) * 128, :], value=t)
        return out
    return kernel


def test_direct_allocation_in_an_affine_loop_is_placed_once() -> None:
    a = np.random.default_rng(0).random((16 * 128, 16384)).astype(np.float32)
    counter = Counter()
    res = ncs.simulate(make(counter), a, timing=False)
    np.testing.assert_array_equal(res.outputs[0], a)
    placed = {t.placement for t in res.program.tensors if t.placement is not None}
    assert len(placed) == 1 and next(iter(placed)).tiles == ((0, 0),)
    assert counter.addr == 16 * 65536  # the Python counter did run per iteration
