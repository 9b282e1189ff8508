"""Values computed in a worker thread while the kernel goes on tracing.

A functional run does two kinds of work per instruction: the front end records it (Python, in
the kernel's thread) and the executor computes its values (numpy). The big numpy calls (the
GEMMs of PSUM accumulation chains, tile copies and dtype conversions) release the GIL, so
running the executor in a worker thread lets them overlap with the tracing of the instructions
that follow. :class:`PipelinedExecutor` has the executor's interface and feeds it through a
queue, in program order; nothing else changes:

- Values are the same, computed by the same calls in the same order (deterministic).
- Anything that needs values waits for the worker first (``read``: ``print(tile)``,
  ``nl.device_print``; ``logical`` and ``checks`` at the end of the launch).
- Errors. The worker stops at the first instruction that fails and keeps the error; the kernel's
  thread raises it at its next call into the executor, or when it drains. When the kernel itself
  fails (a front-end error, or a bug in the kernel's Python), :meth:`first_error` tells the
  caller whether an instruction recorded *before* that point had already failed, so the error a
  user sees is always the first in program order, exactly as without the thread. Executor errors
  carry their instruction's ``file.py:LINE``, so where they are raised does not change what
  they say.
"""

from __future__ import annotations

import queue
import threading
from typing import Any, Callable

import numpy as np

from ..checks import ValueChecks
from ..execute import Executor
from ...program.ir import Access, Instruction, TensorDecl


#: Queued calls at which the kernel's thread stops and waits until the worker is down to
#: AHEAD_LOW. Both threads need the GIL for their Python; without a limit the tracing thread
#: keeps it and the worker (which gives it up at every numpy call) falls far behind, so the
#: GEMMs it would start early run at the end instead (measured: all but one of a 2048^3
#: blocked matmul's GEMMs ran after tracing had finished). A few hundred calls is about one
#: block of a tiled matmul.
AHEAD_HIGH = 256
AHEAD_LOW = 64


class PipelinedExecutor:
    """An :class:`Executor` run by a worker thread (the front end's ``ValueBackend``).

    Call :meth:`close` when the launch ends (also on errors): it stops the thread.

    Args:
        executor: the executor that computes the values (owned by the worker until drained).
    """

    def __init__(self, executor: Executor) -> None:
        self.executor = executor
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._error: BaseException | None = None
        self._caught_up = threading.Event()  # set by the worker when the backlog is short
        self._waiting = False  # the kernel's thread waits for _caught_up
        #: set (under _lock) when the worker has stopped; nothing queued after runs
        self._stopped = False
        self._closed_cleanly = False
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="neuroncore_sim-values",
                                        daemon=True)
        self._thread.start()

    # --- the ValueBackend protocol ---------------------------------------------------------------

    def declare(self, decl: TensorDecl, values: np.ndarray | None) -> None:
        """Queue :meth:`Executor.declare`."""
        self._put(self.executor.declare, decl, values)

    def execute(self, ins: Instruction) -> None:
        """Queue :meth:`Executor.execute`; raises the worker's error if one has happened."""
        self._put(self.executor.execute, ins)

    def release(self, decl: TensorDecl) -> None:
        """Queue :meth:`Executor.release`."""
        self._put(self.executor.release, decl)

    def read(self, access: Access) -> np.ndarray:
        """:meth:`Executor.read`, once everything queued before has run."""
        self.drain()
        return self.executor.read(access)

    # --- end of launch ---------------------------------------------------------------------------

    def logical(self, decl: TensorDecl) -> np.ndarray:
        """:meth:`Executor.logical`, once everything queued before has run."""
        self.drain()
        return self.executor.logical(decl)

    def take(self, decl: TensorDecl) -> np.ndarray:
        """:meth:`Executor.take`, once everything queued before has run."""
        self.drain()
        return self.executor.take(decl)

    @property
    def checks(self) -> ValueChecks:
        """The executor's value checks (their warnings), once everything queued has run."""
        self.drain()
        return self.executor.checks

    def drain(self) -> None:
        """Wait until the worker has run everything queued; raise its error if it failed."""
        error = self.first_error()
        if error is not None:
            raise error

    def first_error(self) -> BaseException | None:
        """Wait for the worker, then return the error of the first instruction that failed (or
        None), without raising it."""
        with self._lock:  # (a worker that stops sets every marker queued before it stopped)
            done = None if self._stopped else threading.Event()
            if done is not None:
                self._queue.put((_DRAINED, done))
        if done is not None:
            done.wait()
        return self._error

    def close(self) -> None:
        """Stop the worker thread, once it has run what is queued."""
        with self._lock:
            stopped = self._stopped
            if not stopped:
                self._queue.put(None)
        self._thread.join()

    # --- worker ----------------------------------------------------------------------------------

    def _put(self, fn: Callable[..., Any], *args: Any) -> None:
        if self._error is not None:
            raise self._error
        if self._stopped:
            raise RuntimeError("internal: the values worker of this launch has been closed")
        self._queue.put((fn, args))
        if self._queue.qsize() > AHEAD_HIGH:  # let the worker catch up (see AHEAD_HIGH)
            self._caught_up.clear()
            self._waiting = True  # (after clear: the worker sets the event only after this)
            # The worker sets the event at the first call it takes with at most AHEAD_LOW left
            # (only this thread adds calls, so the backlog then stays short), or when it stops.
            if self._queue.qsize() > AHEAD_LOW:
                self._caught_up.wait()
            self._waiting = False

    def _run(self) -> None:
        try:
            self._serve()
        finally:
            # Stopped (closed, or broken by a bug): wake every waiter, now and later.
            with self._lock:
                self._stopped = True
                if self._error is None and not self._closed_cleanly:
                    self._error = RuntimeError("internal: the values worker of this launch "
                                               "stopped")
                while not self._queue.empty():
                    item = self._queue.get()
                    if item is not None and item[0] is _DRAINED:
                        item[1].set()
            self._caught_up.set()

    def _serve(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                self._closed_cleanly = True
                return
            fn, args = item
            if self._waiting and self._queue.qsize() <= AHEAD_LOW:
                self._caught_up.set()
            if fn is _DRAINED:  # everything queued before the marker has run: settle, report
                if self._error is None:
                    try:
                        self.executor.settle()  # held instructions may still fail
                    except BaseException as e:
                        self._error = e
                args.set()
            elif self._error is None:  # after a failure the rest is dropped
                try:
                    fn(*args)
                except BaseException as e:  # handed to the kernel's thread, raised there
                    self._error = e


#: Queue marker of :meth:`PipelinedExecutor.first_error` (its argument is the Event to set).
_DRAINED = object()
