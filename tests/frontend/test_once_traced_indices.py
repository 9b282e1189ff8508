"""Index names rebound late in an nl.affine_range / nl.sequential_range body keep their
loop-entry binding at the earlier lines of every iteration, as NKI traces such a body once."""

from __future__ import annotations

import numpy as np
import pytest

import neuroncore_sim as ncs
import neuroncore_sim.nki.language as nl
from kernel_checks import expect_error
from neuroncore_sim.errors import ShapeError

F32 = np.float32
RNG = np.random.default_rng(11)


@pytest.mark.parametrize("loop", [nl.affine_range, nl.sequential_range])
def test_late_rebinding_of_an_index_does_not_reach_the_next_iteration(loop):
    def kernel(a):
        out = nl.ndarray((3, 128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
        ip = nl.arange(128)[:, None]
        jf = nl.arange(64)[None, :]      # the wide index, bound before the loop
        for i in loop(3):
            t = nl.load(a[i, ip, jf])    # NKI's single trace sees the 64-wide jf here
            nl.store(out[i, ip, jf], value=nl.multiply(t, 2.0))
            jf = nl.arange(8)[None, :]   # rebound late in the body (used after it)
            nl.store(out[i, ip, jf], value=nl.load(a[i, ip, jf]))
        return out

    a = RNG.standard_normal((3, 128, 64)).astype(F32)
    ref = 2 * a
    ref[:, :, :8] = a[:, :, :8]
    np.testing.assert_array_equal(ncs.simulate(kernel, a, timing=False).outputs[0], ref)


def test_a_python_range_is_unrolled_so_the_rebinding_carries_over():
    # range / nl.static_range loops are unrolled by Python in NKI too: the second iteration
    # sees the 8-wide index, and storing 64 columns' worth into it is a shape error
    def kernel(a):
        out = nl.ndarray((2, 128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
        ip = nl.arange(128)[:, None]
        jf = nl.arange(64)[None, :]
        wide = nl.load(a[0])
        for i in range(2):
            out[i, ip, jf] = wide[ip, nl.arange(64)[None, :]]  # BAD
            jf = nl.arange(8)[None, :]
        return out

    expect_error(ShapeError, r"assignment: expected src shape \[128, 8\] \(the dst shape\), "
                 r"found \[128, 64\]", kernel,
                 np.zeros((2, 128, 64), F32))


@pytest.mark.parametrize("loop", [nl.affine_range, nl.sequential_range])
def test_a_body_that_rebinds_nothing_is_checked_once(loop, monkeypatch):
    """Reading the kernel frame's locals each iteration is costly: a loop whose first
    iteration rebound no index name is not checked again (NKI traces the body once, so later
    iterations bind what the first did); one that rebinds is checked every iteration."""
    from neuroncore_sim.frontend import tracer

    calls = []

    def counted(frame, entry):
        calls.append(1)
        return real(frame, entry)

    real = tracer.restore_indices
    monkeypatch.setattr(tracer, "restore_indices", counted)

    def kernel(a, rebind):
        out = nl.ndarray((6, 128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
        ip = nl.arange(128)[:, None]
        jf = nl.arange(64)[None, :]
        for i in loop(6):
            nl.store(out[i, ip, jf], value=nl.load(a[i, ip, jf]))
            if rebind:
                jf = nl.arange(64)[None, :]  # (a new, equal expression each iteration)
        return out

    a = RNG.standard_normal((6, 128, 64)).astype(F32)
    for rebind, checks in ((False, 1), (True, 5)):
        calls.clear()
        np.testing.assert_array_equal(ncs.simulate(kernel, a, rebind, timing=False).outputs[0], a)
        assert len(calls) == checks
