"""The process-wide settings of a launch (neuroncore_sim.environment): changed inside, restored
on exit and after errors, left alone by nested blocks; the values worker never leaves a waiter
hanging."""

from __future__ import annotations

import gc
import threading

import numpy as np
import pytest

import neuroncore_sim as ncs
import neuroncore_sim.nki as nki
import neuroncore_sim.nki.language as nl
from neuroncore_sim.config import TRN1
from neuroncore_sim.environment import launch_environment
from neuroncore_sim.errors import KernelError
from neuroncore_sim.values.execute import Executor
from neuroncore_sim.values.fast.pipeline import PipelinedExecutor


def _blas_threads() -> int:
    from threadpoolctl import threadpool_info

    infos = [i for i in threadpool_info() if i.get("user_api") == "blas"]
    return max((int(i["num_threads"]) for i in infos), default=1)


def test_gc_paused_inside_and_restored_after_an_error() -> None:
    assert gc.isenabled()
    with pytest.raises(ValueError):
        with launch_environment(blas_single_threaded=False) as threads:
            assert not gc.isenabled() and threads == 1
            raise ValueError("the launch failed")
    assert gc.isenabled()


def test_nested_blocks_leave_the_outer_settings() -> None:
    before = _blas_threads()
    with launch_environment(blas_single_threaded=True):
        with launch_environment(blas_single_threaded=False):
            assert not gc.isenabled()
        assert not gc.isenabled()  # the inner block did not enable it again
        assert _blas_threads() == 1
    assert gc.isenabled() and _blas_threads() == before


@nki.jit
def _fails_midway(x):
    t = nl.load(x)
    nl.load(x[0:256, :])  # out of bounds: a KernelError from inside the launch
    return t


def test_a_failing_launch_restores_the_process() -> None:
    before = _blas_threads()
    with pytest.raises(KernelError):
        ncs.simulate(_fails_midway, np.ones((128, 8), np.float32))
    assert gc.isenabled() and _blas_threads() == before


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_dead_values_worker_never_hangs_its_waiters() -> None:
    """When the worker thread stops without being closed, every wait returns (an internal
    error), now and later: no polling, the stop wakes them."""
    pipe = PipelinedExecutor(Executor(TRN1))
    pipe._queue.put(42)  # not a queued call: the worker's own loop fails and the thread ends
    pipe._thread.join(timeout=10)
    assert not pipe._thread.is_alive()
    waiter = threading.Thread(target=pipe.first_error)
    waiter.start()
    waiter.join(timeout=10)
    assert not waiter.is_alive()
    assert "values worker of this launch stopped" in str(pipe.first_error())
    pipe.close()

