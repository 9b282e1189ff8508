"""``nl.zeros(..., lazy_initialization=True)`` (the compiler's own NKI kernels, NKIBench, declare
their PSUM accumulators so): the tensor holds zeros without a memset, so its block tiles take
memory from their first use, not all from the declaration (docs/frontend.md)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import neuroncore_sim as ncs
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl
from neuroncore_sim.errors import KernelError, SpillWarning
from neuroncore_sim.program.ir import Opcode

B = 40  # 40 PSUM tiles of one bank each: five times the 8 banks


def _accumulate(lazy: bool):
    def k(a, b):
        out = nl.ndarray((B, 128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        acc = nl.zeros((B, nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.psum,
                       lazy_initialization=lazy)
        y = nl.load(b)
        for i in nl.affine_range(B):
            x = nl.load(a[i])
            acc[i] = nisa.nc_matmul(x, y)  # written first: a zero memset stays (psum_zeros.py)
            acc[i] += nisa.nc_matmul(x, y)
            nl.store(out[i], nl.copy(acc[i]))
        return out
    return k


def _inputs():
    rng = np.random.default_rng(0)
    return (rng.random((B, 128, 128), dtype=np.float32),
            rng.random((128, 512), dtype=np.float32))


def test_lazy_zeros_hold_zeros_without_memsets_and_do_not_spill():
    a, b = _inputs()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = ncs.simulate(_accumulate(True), a, b)
    np.testing.assert_allclose(res.outputs[0], 2 * np.einsum("ikm,kn->imn", a, b), rtol=1e-5)
    ops = [i.opcode for i in ncs.trace(_accumulate(True), a, b).program.instructions]
    assert Opcode.MEMSET not in ops


def test_eager_zeros_memset_every_tile_at_the_declaration_and_spill():
    a, b = _inputs()
    with pytest.warns(SpillWarning, match="PSUM over-subscribed"):
        res = ncs.simulate(_accumulate(False), a, b)
    np.testing.assert_allclose(res.outputs[0], 2 * np.einsum("ikm,kn->imn", a, b), rtol=1e-5)


def test_lazy_zeros_read_before_any_write_read_zeros():
    def k():
        out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.full((nl.par_dim(128), 64), 3.0, dtype=nl.float32, lazy_initialization=True)
        nl.store(out, nl.add(t, 1.0))
        return out

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert (ncs.simulate(k).outputs[0] == 4.0).all()


def test_lazy_full_of_a_tile_is_an_error():
    def k():
        x = nl.zeros((nl.par_dim(128), 64), dtype=nl.float32)
        nl.full((nl.par_dim(128), 64), x, dtype=nl.float32, lazy_initialization=True)

    with pytest.raises(KernelError, match=r"test_lazy_initialization.py:\d+: .*fill_value: "
                       r"expected a scalar, found a tile"):
        ncs.trace(k)
