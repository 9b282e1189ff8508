"""Values computed in a worker thread (pipeline.py): same values, same first error, no leaks."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import neuroncore_sim as ncs
import neuroncore_sim.nki.language as nl
from neuroncore_sim.errors import AccessError, UnsupportedError
from neuroncore_sim.values.execute import Executor
from neuroncore_sim.values.fast.pipeline import PipelinedExecutor
from neuroncore_sim.config import TRN1
from neuroncore_sim.program.ir import Opcode
from neuroncore_sim.values.semantics import SEMANTICS

A = np.arange(128 * 64, dtype=np.float32).reshape(128, 64)


def _line(fn, marker: str) -> int:
    """The line number of the statement tagged ``# <marker>`` in ``fn``'s source file."""
    import inspect
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, text in enumerate(lines) if f"# {marker}" in text)


def bad_values_then_bad_index(a):
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a)
    t = nl.exp(t)  # fails-in-executor
    for _ in range(50):  # plenty of front-end work the kernel's thread may do meanwhile
        t = nl.add(t, 1.0)
    nl.load(a[:, 0:999])  # fails-in-front-end
    return out


@pytest.fixture
def failing_activation(monkeypatch):
    """Make the executor fail on activation instructions (the front end accepts them): a
    stand-in for an error only the values layer can find."""
    def fail(srcs, attrs, outs, engine):
        raise UnsupportedError("activation: refused by this test")
    monkeypatch.setitem(SEMANTICS, Opcode.ACTIVATION, fail)


def test_first_error_in_program_order_wins(failing_activation):
    """The executor's error comes from an earlier line than the front end's: it is the one
    raised, whichever thread got there first."""
    for _ in range(5):
        with pytest.raises(UnsupportedError, match="refused by this test") as info:
            ncs.simulate(bad_values_then_bad_index, A)
        assert f":{_line(bad_values_then_bad_index, 'fails-in-executor')}" in str(info.value)


def test_value_error_raised_at_a_later_call(failing_activation):
    """Without a front-end error the executor's error still surfaces, naming its line."""
    def kernel(a):
        t = nl.exp(nl.load(a))  # fails-in-executor
        for _ in range(50):
            t = nl.add(t, 1.0)
        nl.store(a, value=t)
    with pytest.raises(UnsupportedError, match="refused by this test") as info:
        ncs.simulate(kernel, A.copy())
    assert f":{_line(kernel, 'fails-in-executor')}" in str(info.value)


def test_front_end_error_without_earlier_value_error_is_kept():
    def bad_index(a):
        t = nl.load(a)
        nl.store(a, value=nl.add(t, 1.0))
        nl.load(a[:, 0:999])
    with pytest.raises(AccessError, match="999|index"):
        ncs.simulate(bad_index, A)


def test_values_thread_stops_after_success_and_errors(failing_activation):
    before = threading.active_count()
    ncs.simulate(lambda a: nl.store(a, value=nl.load(a)), A.copy())
    with pytest.raises(UnsupportedError):
        ncs.simulate(bad_values_then_bad_index, A)
    with pytest.raises(AccessError):
        ncs.simulate(lambda a: nl.load(a[:, 0:999]), A)
    assert threading.active_count() == before


def test_read_inside_kernel_waits_for_values():
    """Values read while the kernel runs (print, device_print) include every earlier write."""
    seen = []

    def kernel(a):
        t = nl.load(a)
        for _ in range(20):
            t = nl.add(t, 1.0)
        seen.append(ncs.frontend.tracer.current().read(t.access()).copy())
        return t

    res = ncs.simulate(_store_after(kernel), A, timing=False)
    np.testing.assert_array_equal(seen[0], A + 20)
    np.testing.assert_array_equal(res.outputs[0], A + 20)


def _store_after(kernel):
    def wrapped(a):
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=kernel(a))
        return out
    return wrapped


def test_calls_after_close_are_refused():
    backend = PipelinedExecutor(Executor(TRN1))
    backend.close()
    with pytest.raises(RuntimeError, match="closed"):
        backend.release(None)
