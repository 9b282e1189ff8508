"""Masks combined with Python's ``and`` / ``or``, as the NKI reference examples write them
(``mask=(ix < n // 2 and iy < m // 2)``): the same as ``&`` / ``|``; the uses whose meaning
Python would lose are clear errors."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import neuroncore_sim as ncs
from neuroncore_sim.errors import SimulatorError, UnsupportedError, UnwrittenOutputWarning
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl

RNG = np.random.default_rng(4)
A = RNG.random((8, 32), dtype=np.float32)


def _run(body):
    def k(a):
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        ix, iy = nl.mgrid[0:8, 0:32]
        res = nl.zeros(a.shape, dtype=a.dtype)
        body(res, nl.load(a), ix, iy)
        nl.store(out, value=res)
        return out
    return ncs.trace(k, A).outputs[0]


def _expect(block):
    want = np.zeros_like(A)
    want[block] = A[block]
    return want


def test_and_is_a_conjunction():
    def body(res, x, ix, iy):
        res[ix, iy] = nl.copy(x[ix, iy], mask=(ix < 4 and iy < 16))
    np.testing.assert_array_equal(_run(body), _expect(np.s_[:4, :16]))


def test_and_chains_and_or():
    def chain(res, x, ix, iy):
        res[ix, iy] = nl.copy(x[ix, iy], mask=(ix < 4 and iy < 16 and iy >= 2))

    def either(res, x, ix, iy):
        res[ix, iy] = nl.copy(x[ix, iy], mask=(ix < 2 or iy < 3))

    np.testing.assert_array_equal(_run(chain), _expect(np.s_[:4, 2:16]))
    want = np.where((np.arange(8)[:, None] < 2) | (np.arange(32)[None, :] < 3), A, 0)
    np.testing.assert_array_equal(_run(either), want)


def test_and_in_a_reduction_mask_and_affine_select():
    def k(a):
        out = nl.ndarray((4, 8), a.dtype, buffer=nl.shared_hbm)
        out2 = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        ix, iy = nl.mgrid[0:8, 0:32]
        x = nl.load(a)
        m = nisa.max8(src=x[ix, iy], mask=(ix < 4 and iy < 16))
        nl.store(out, value=m[0:4])
        nl.store(out2, value=nisa.affine_select(ix < 4 and iy < 16, x, 0.0))
        return out, out2

    top, sel = ncs.trace(k, A).outputs
    np.testing.assert_array_equal(top, -np.sort(-A[:4, :16], axis=1)[:, :8])
    np.testing.assert_array_equal(sel, _expect(np.s_[:4, :16]))


def _stored(a):
    ix, iy = nl.mgrid[0:8, 0:32]
    m = ix < 4 and iy < 16  # BAD
    return nl.copy(nl.load(a), mask=m)


def _if(a):
    ix, iy = nl.mgrid[0:8, 0:32]
    if ix < 4:  # BAD
        pass


def _not(a):
    ix, iy = nl.mgrid[0:8, 0:32]
    return nl.copy(nl.load(a), mask=not (ix < 4))  # BAD


def _call_between(a):
    ix, iy = nl.mgrid[0:8, 0:32]
    x = nl.load(a)
    return nl.copy(x, mask=(ix < 4 and iy < 16), dtype=getattr(nl, "float32"))  # BAD


@pytest.mark.parametrize("k,message", [
    (_stored, r"'and' between masks stored in a variable loses the left mask; combine masks "
              r"with & and \|"),
    (_if, r"with no Python truth value \(if / not on a mask\)"),
    (_not, r"a mask is a compile-time predicate over index expressions"),
    (_call_between, r"'and' between masks whose value is not the mask= of the next instruction"),
])
def test_uses_python_would_lose_are_errors(k, message):
    with pytest.raises(UnsupportedError, match=message) as info:
        ncs.trace(k, A)
    src, start = inspect.getsourcelines(k)
    bad = start + next(i for i, line in enumerate(src) if "# BAD" in line)
    assert info.value.loc == f"test_mask_and_or.py:{bad}"


def test_masks_combine_with_bools_of_unrolled_loop_indices():
    """(i_f < n) & (t * 8 < 8): the bool keeps or drops the whole mask."""
    def k(a):
        out = nl.ndarray((16, 32), a.dtype, buffer=nl.shared_hbm)
        ix, iy = nl.mgrid[0:8, 0:32]
        for t in nl.affine_range(2):
            res = nl.zeros((8, 32), dtype=a.dtype)
            res[ix, iy] = nl.copy(nl.load(a[t * 8 + ix, iy]),
                                  mask=(iy < 20) & (t * 8 < 8) | (t > 5))
            nl.store(out[t * 8 + ix, iy], value=res)
        return out

    a = RNG.random((16, 32), dtype=np.float32)
    want = np.zeros_like(a)
    want[:8, :20] = a[:8, :20]  # t = 1: (t * 8 < 8) is False, the copy is dropped
    np.testing.assert_array_equal(ncs.trace(k, a).outputs[0], want)

    def bad(a):
        ix, iy = nl.mgrid[0:8, 0:32]
        return nl.copy(nl.load(a[ix, iy]), mask=(iy < 20) & 3)  # BAD

    with pytest.raises(SimulatorError, match=r"mask &: expected a comparison of index "
                       r"expressions or a bool, found int"):
        ncs.trace(bad, a)


def test_accumulating_a_dropped_matmul_writes_nothing():
    def k(a, b):
        out = nl.ndarray((32, 64), nl.float32, buffer=nl.shared_hbm)
        acc = nl.zeros((32, 64), nl.float32, buffer=nl.psum)
        for t in nl.affine_range(3):
            acc += nisa.nc_matmul(nl.load(a[t]), nl.load(b[t]), mask=(t < 2))
        nl.store(out, value=nl.copy(acc))
        return out

    a = RNG.random((3, 16, 32), dtype=np.float32)
    b = RNG.random((3, 16, 64), dtype=np.float32)
    launch = ncs.trace(k, a, b)
    np.testing.assert_allclose(launch.outputs[0], a[0].T @ b[0] + a[1].T @ b[1], rtol=1e-5)
    assert sum(i.opcode.value == "nc_matmul" for i in launch.program.instructions) == 2


def test_and_with_a_bool_on_the_right():
    def k(a):
        out = nl.ndarray((16, 32), a.dtype, buffer=nl.shared_hbm)
        ix, iy = nl.mgrid[0:8, 0:32]
        for t in nl.affine_range(2):
            res = nl.zeros((8, 32), dtype=a.dtype)
            res[ix, iy] = nl.copy(nl.load(a[t * 8 + ix, iy]), mask=(iy < 20 and t < 1))
            nl.store(out[t * 8 + ix, iy], value=res)
        return out

    a = RNG.random((16, 32), dtype=np.float32)
    want = np.zeros_like(a)
    want[:8, :20] = a[:8, :20]
    np.testing.assert_array_equal(ncs.trace(k, a).outputs[0], want)


def test_an_and_whose_value_is_never_a_mask_is_reported():
    def before(a):
        ix, iy = nl.mgrid[0:8, 0:32]
        print(ix < 4 and iy < 16)
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.load(a))  # BAD: the next instruction after the print
        return out

    def last(a):
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.load(a))
        ix, iy = nl.mgrid[0:8, 0:32]
        print(ix < 4 and iy < 16)  # BAD: no instruction follows
        return out

    for k, message in ((before, "is not the mask= of the next instruction"),
                       (last, "never became an instruction's mask=")):
        with pytest.raises(UnsupportedError, match=message) as info:
            ncs.trace(k, A)
        src, start = inspect.getsourcelines(k)
        bad = start + next(i for i, line in enumerate(src) if "# BAD" in line)
        assert info.value.loc == f"test_mask_and_or.py:{bad}"


def test_a_failed_launch_leaves_nothing_pending():
    def broken(a):
        ix, iy = nl.mgrid[0:8, 0:32]
        return nl.copy(nl.load(a[ix, iy]), mask=(ix < 4 and iy < 16), dtype="no-such-dtype")

    with pytest.raises(SimulatorError):
        ncs.trace(broken, A)

    def no_instructions(a):  # nothing here would drop the stale operand on its own
        return nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)

    with pytest.warns(UnwrittenOutputWarning, match="is never written"):
        assert ncs.trace(no_instructions, A).outputs[0].shape == A.shape


def test_and_between_masks_outside_a_launch_is_refused():
    """No instruction outside a launch could take the combined mask: the left operand would be
    lost, so the expression is refused at its line (each launch keeps its own pending list)."""
    ix, iy = nl.mgrid[0:8, 0:32]
    with pytest.raises(UnsupportedError, match="outside a kernel launch") as info:
        bool(ix < 4 and iy < 16)
    assert info.value.loc.startswith("test_mask_and_or.py:")
