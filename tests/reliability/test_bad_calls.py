"""Bad arguments to the package's own entry points (issue 19, item 1): a SimulatorError subclass
naming the caller's file.py:LINE, never a Python AttributeError / TypeError from inside."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import neuroncore_sim as ncs
import neuroncore_sim.nki.language as nl
from neuroncore_sim.errors import ConfigError, KernelError, SimulatorError, caller_loc
from neuroncore_sim.sweep import sweep
from neuroncore_sim.sweep.point import SweepError

KERNELS = Path(__file__).resolve().parents[2] / "kernels"
HERE = Path(__file__).name
A = np.ones((128, 4), np.float32)


def _line_of(text: str) -> int:
    """The line of this file holding ``text`` (the call the error must name)."""
    lines = Path(__file__).read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line and "_line_of" not in line)


@pytest.mark.parametrize("call, error, message, marker", [
    (lambda: ncs.simulate(42, A, A), KernelError,
     "kernel; expected an NKI kernel (a function, or an nki.jit kernel), found int 42",
     "ncs.simulate(42, A, A)"),
    (lambda: ncs.simulate(lambda a: None, A, functional="fast"), ConfigError,
     'functional; expected True, False or "reference", found \'fast\'',
     'functional="fast"'),
    (lambda: sweep(str(KERNELS / "tensor_add.py"), None), SweepError,
     "sweep parameters; expected a dict of name -> values, or a list of points (dicts), "
     "found NoneType None", '"tensor_add.py"), None)'),
    (lambda: sweep(str(KERNELS / "tensor_add.py"), 5), SweepError,
     "found int 5", '"tensor_add.py"), 5)'),
    (lambda: sweep(np.add, {}), SweepError,
     'sweep target; expected "file.py::kernel" (a path: each worker loads the kernel file), '
     "found ufunc 'add'", "sweep(np.add, {})"),
])
def test_bad_call_names_the_callers_line(call, error, message, marker) -> None:
    with pytest.raises(error) as info:
        call()
    assert isinstance(info.value, SimulatorError)
    assert message in str(info.value)
    assert info.value.loc == f"{HERE}:{_line_of(marker)}"


def test_caller_loc_skips_the_package() -> None:
    here = caller_loc()
    assert re.fullmatch(rf"{re.escape(HERE)}:\d+", here)


# --- issue 19 item 7: return values a device launch cannot hand back --------------------------
def _copy_then(ret):
    def kernel(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)  # OUT
        nl.store(out, value=nl.load(a))
        return out if ret == "out" else ret
    return kernel


def test_a_python_value_returned_as_an_output_warns():
    import warnings as _w
    from neuroncore_sim.errors import ReturnValueWarning
    with _w.catch_warnings(record=True) as caught:
        _w.simplefilter("always")
        res = ncs.simulate(_copy_then(3), np.zeros((128, 4), np.float32), timing=False)
    assert res.outputs == (3,)
    msgs = [str(w.message) for w in caught if issubclass(w.category, ReturnValueWarning)]
    assert len(msgs) == 1 and "kernel return value 3 (int) is not an HBM tensor" in msgs[0]


def test_returning_nothing_after_writing_an_own_hbm_tensor_warns_and_names_it():
    import warnings as _w
    from neuroncore_sim.errors import ReturnValueWarning
    kernel = _copy_then(None)
    with _w.catch_warnings(record=True) as caught:
        _w.simplefilter("always")
        res = ncs.simulate(kernel, np.zeros((128, 4), np.float32), timing=False)
    assert res.outputs == ()
    msgs = [str(w.message) for w in caught if issubclass(w.category, ReturnValueWarning)]
    assert len(msgs) == 1 and "returns nothing but writes HBM tensors of its own: hbm" in msgs[0]
    assert "test_bad_calls.py" in msgs[0]  # names where the tensor was allocated


def test_returning_the_written_tensor_does_not_warn():
    import warnings as _w
    with _w.catch_warnings():
        _w.simplefilter("error")
        res = ncs.simulate(_copy_then("out"), np.ones((128, 4), np.float32), timing=False)
    np.testing.assert_array_equal(res.outputs[0], np.ones((128, 4), np.float32))


# --- issue 19 item 8: operations NKI does not have on tiles say what it offers ---------------
@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "all", "mean", "var"])
def test_a_reduction_without_axis_says_axis_is_required(name):
    def kernel(a):
        t = nl.load(a)
        getattr(nl, name)(t)  # BAD

    with pytest.raises(KernelError, match=rf"test_bad_calls.py:\d+: nl.{name}: expected axis= "
                                          r".*found none: NKI reduces along free axes only"):
        ncs.simulate(kernel, np.ones((128, 4), np.float32), timing=False)


def test_matmul_operator_on_tiles_names_the_nki_way():
    def kernel(a):
        t = nl.load(a)
        return t @ t  # BAD

    with pytest.raises(ncs.errors.UnsupportedError, match=r"nl.matmul or nisa calls"):
        ncs.simulate(kernel, np.ones((128, 128), np.float32), timing=False)


def test_a_float_in_index_arithmetic_names_what_an_index_takes():
    def kernel(a):
        i = nl.arange(4)
        return i + 0.5  # BAD

    with pytest.raises(ncs.errors.UnsupportedError, match=r"index expression arithmetic: "
                                                          r"expected an int"):
        ncs.simulate(kernel, np.ones((128, 4), np.float32), timing=False)


# --- issue 19 item 6: Python values where the kernel uses a tensor ------------------------------
def _uses_shape(a, n):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)  # USES
    nl.store(out, value=nl.load(a))
    return out


@pytest.mark.parametrize("value, kind", [([[1.0] * 4] * 128, "list"), (None, "NoneType"),
                                         ((1, 2), "tuple"), (3.0, "float")])
def test_a_python_value_used_as_a_tensor_is_named_at_the_kernel_line(value, kind):
    with pytest.raises(KernelError, match=rf"test_bad_calls.py:\d+: argument 'a' is a Python "
                                          rf"{kind}, not a tensor .*compile-time constant"):
        ncs.simulate(_uses_shape, value, 1, timing=False)


def test_python_constants_that_the_kernel_uses_as_constants_are_fine():
    res = ncs.simulate(_uses_shape, np.ones((128, 4), np.float32), [1, 2], timing=False)
    np.testing.assert_array_equal(res.outputs[0], np.ones((128, 4), np.float32))
