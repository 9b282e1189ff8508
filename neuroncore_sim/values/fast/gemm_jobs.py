"""The GEMMs of PSUM accumulation chains, run by background threads.

``psum_chain.py`` turns the ``nc_matmul`` of a tiled matmul into a few large GEMMs. They are
the bulk of a functional run's arithmetic, so they run on a small thread pool while the values
worker goes on with the instructions that do not need their results (the executor holds back
those that do, ``execute.py``). A :class:`GemmJob` owns everything it reads (float32 operand
arrays nobody else writes, or live tile views the executor keeps unwritten while the job is in
flight) and writes its results into PSUM only when it is *retired*, in the worker thread, so
the pool threads never touch the launch's memory bookkeeping.

Retiring is deterministic: :class:`GemmRunner` keeps at most ``keep`` jobs in flight when a new
one is submitted and retires the oldest first, so which instructions wait for which GEMM
depends on the program only, never on thread timing.

Merging. BLAS runs a [128 x 2048] x [2048 x 1024] GEMM about 35% slower per flop than a 2048^3
one (measured single-threaded, benchmarks/simulator_speed.py's machine). A matmul that computes
one 128-row block at a time makes one such GEMM per block, all with the same moving operand (a
float32 view of the HBM tensor, ``hbm_origin.py``) and stationary operands side by side in the
same HBM tensor. So while a job is in flight, the next one is *staged*, not started: later jobs
that continue it (same moving view and the next stationary columns, or the converse) merge into
it until it has :data:`MERGE_ELEMENTS` output elements or a job that does not continue it comes.
The decision depends on the operands only, so it is deterministic too.

BLAS threads. A multi-threaded BLAS call runs its threads in lockstep; when the Python threads of
the launch (tracing, values) take a core from it, the whole GEMM stalls (measured: a GEMM ran
4x slower next to a tracing thread on 2 cores). So during a functional launch BLAS runs
single-threaded (:func:`single_threaded_blas`) and each job is split into as many independent
row (or column) blocks as BLAS had threads, one per pool thread: a core taken by Python then
slows one block, not all of them. docs/model.md ("Functional values") describes the trade-off.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Iterator

import numpy as np

from ...program.ir import TensorDecl
from ...dtypes import float32

#: Below this many output rows (or columns) a GEMM is not split: the parts would be too small
#: for BLAS to run efficiently.
MIN_PART = 64
#: A staged job takes merges until its result has this many elements ([512 x 2048]: BLAS runs
#: it at about 90% of its 2048^3 rate single-threaded, against 73% for [128 x 1024] parts).
MERGE_ELEMENTS = 512 * 2048

#: How many nice steps the GEMM pool threads run below the launch (see _lower_priority).
GEMM_NICE = 10

#: How a GemmJob target receives its result block (see GemmJob).
ADD, SET, ONTO_ZERO = "add", "set", "onto_zero"
_PLUS_ZERO = np.float32(0.0)

_pools: dict[int, ThreadPoolExecutor] = {}
#: errors of pool threads that could not lower their priority (kept for inspection)
_priority_refused: list[OSError] = []
_pools_lock = threading.Lock()


def _forget_pools_in_child() -> None:
    """A forked child (sweeps fork their workers) has none of the parent's pool threads; a
    pool copied from the parent would take jobs and never run them."""
    global _pools_lock
    _pools.clear()
    _pools_lock = threading.Lock()


_fork_hook_registered = False


def _shared_pool(threads: int) -> ThreadPoolExecutor:
    """The process's GEMM thread pool of ``threads`` threads (created on first use, kept: its
    idle threads cost nothing and launches reuse them). The first pool registers the fork hook
    that makes a forked child forget the pools (nothing is registered by importing this)."""
    global _fork_hook_registered
    with _pools_lock:
        if not _fork_hook_registered:
            os.register_at_fork(after_in_child=_forget_pools_in_child)
            _fork_hook_registered = True
        pool = _pools.get(threads)
        if pool is None:
            pool = _pools[threads] = ThreadPoolExecutor(max_workers=threads,
                                                        thread_name_prefix="ncs-gemm",
                                                        initializer=_lower_priority)
        return pool


def _lower_priority() -> None:
    """Lower the calling pool thread's priority by :data:`GEMM_NICE` nice steps (Linux: nice
    is per thread; a new thread starts with its creator's).

    The launch's Python threads (tracing, values) are its critical path: the GEMMs only fill
    the time they leave. On 2 cores a pool thread at equal priority takes turns with them and
    slowed the whole run down; at a lower priority it yields to them at once (measured on
    benchmarks/simulator_speed.py's kernels, interleaved: about 6% faster, docs/model.md). A
    speed hint only: where the platform refuses, the thread keeps its priority."""
    if not sys.platform.startswith("linux"):  # elsewhere PRIO_PROCESS takes process ids only
        return
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid)
                                                 + GEMM_NICE))
    except OSError as e:  # e.g. a sandbox without setpriority: same values, just slower
        _priority_refused.append(e)


@contextlib.contextmanager
def single_threaded_blas() -> Iterator[int]:
    """Run BLAS single-threaded inside the block (process-wide, restored on exit); yields how
    many threads BLAS had, which is how many parts :class:`GemmRunner` splits each GEMM into.

    Uses threadpoolctl; when it finds no BLAS library to control, BLAS is left alone and the
    GEMMs are not split (yields 1)."""
    from threadpoolctl import ThreadpoolController  # only functional launches need it

    controller = ThreadpoolController().select(user_api="blas")
    infos = controller.info()
    if not infos:
        yield 1
        return
    threads = max(int(i.get("num_threads") or 1) for i in infos)
    limited = controller.limit(limits=1)
    try:
        yield max(1, threads)
    finally:
        limited.restore_original_limits()


class GemmJob:
    """``stationary.T @ moving`` (float32 ``[K, M]`` and ``[K, N]``), whose result blocks go to
    PSUM views.

    Args:
        stationary: ``[K, M]`` float32, not written by anyone while the job is in flight.
        moving: ``[K, N]`` float32, same.
        targets: (PSUM view, how, row start, row end, column start, column end) per result
            block: the block ``result[r0:r1, c0:c1]`` is added into the view (``how`` is
            :data:`ADD`), copied to it (:data:`SET`), or written as ``block + 0.0``
            (:data:`ONTO_ZERO`: the view's memory is +0.0 by a fill not done, ``memory.py``;
            the sum turns -0.0 into +0.0 exactly as the addition would).
        reads: tiles whose live views the operands are (kept unwritten until retired).
        writes: the PSUM tensors the targets belong to.
    """

    __slots__ = ("stationary", "moving", "targets", "reads", "writes", "result", "_parts")

    def __init__(self, stationary: np.ndarray, moving: np.ndarray,
                 targets: list[tuple[np.ndarray, bool, int, int, int, int]],
                 reads: set[TensorDecl], writes: set[TensorDecl]) -> None:
        self.stationary = stationary
        self.moving = moving
        self.targets = targets
        self.reads = reads
        self.writes = writes
        self.result = np.empty((stationary.shape[1], moving.shape[1]), float32)
        self._parts: list[Future] = []

    def start(self, pool: ThreadPoolExecutor | None, ways: int) -> None:
        """Compute the product on ``pool`` in ``ways`` independent blocks (inline when
        ``pool`` is None)."""
        st, m, out = self.stationary.T, self.moving, self.result
        rows, cols = out.shape
        if pool is None:
            np.matmul(st, m, out=out)
            return
        if rows >= cols:
            edges = _edges(rows, ways)
            blocks = [(st[a:b], m, out[a:b]) for a, b in edges]
        else:
            edges = _edges(cols, ways)
            blocks = [(st, m[:, a:b], out[:, a:b]) for a, b in edges]
        self._parts = [pool.submit(_matmul_into, *blk) for blk in blocks]

    def merged(self, later: GemmJob) -> GemmJob | None:
        """One job computing both ``self`` and ``later`` (neither started), when they share
        one operand and ``later``'s other operand continues ``self``'s in the same array (the
        next columns); else None. The merged job's result blocks keep their PSUM targets."""
        if _same_view(self.moving, later.moving):
            stationary = _joined(self.stationary, later.stationary)
            if stationary is None:
                return None
            rows = self.stationary.shape[1]
            moved = [(o, how, r0 + rows, r1 + rows, c0, c1)
                     for o, how, r0, r1, c0, c1 in later.targets]
            return GemmJob(stationary, self.moving, self.targets + moved,
                           self.reads | later.reads, self.writes | later.writes)
        if _same_view(self.stationary, later.stationary):
            moving = _joined(self.moving, later.moving)
            if moving is None:
                return None
            cols = self.moving.shape[1]
            moved = [(o, how, r0, r1, c0 + cols, c1 + cols)
                     for o, how, r0, r1, c0, c1 in later.targets]
            return GemmJob(self.stationary, moving, self.targets + moved,
                           self.reads | later.reads, self.writes | later.writes)
        return None

    def finish(self) -> None:
        """Wait for the product and write its blocks into PSUM (in the calling thread)."""
        for part in self._parts:
            part.result()
        result = self.result
        for out, how, r0, r1, c0, c1 in self.targets:
            block = result[r0:r1, c0:c1]
            if block.shape != out.shape:
                block = block.reshape(out.shape)
            if how is ADD:
                np.add(out, block, out=out)
            elif how is SET:
                np.copyto(out, block)
            else:
                np.add(block, _PLUS_ZERO, out=out)


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def _same_view(a: np.ndarray, b: np.ndarray) -> bool:
    """True when ``a`` and ``b`` are the same elements (both live: no other array has them)."""
    return a is b or (a.shape == b.shape and a.strides == b.strides
                      and _address(a) == _address(b))


def _owner(a: np.ndarray) -> np.ndarray:
    """The array that owns ``a``'s memory."""
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def _joined(left: np.ndarray, right: np.ndarray) -> np.ndarray | None:
    """``[K, F1]`` view ``left`` and ``[K, F2]`` view ``right`` as one ``[K, F1 + F2]`` view,
    when ``right`` holds the columns right after ``left``'s in the same array; else None."""
    owner = _owner(left)
    if (owner is left or _owner(right) is not owner or not owner.flags.c_contiguous
            or left.strides != right.strides or left.shape[0] != right.shape[0]
            or _address(right) != _address(left) + left.shape[1] * left.strides[1]):
        return None
    # (a view of the owner, as the parts are: it joins later parts the same way)
    return np.ndarray((left.shape[0], left.shape[1] + right.shape[1]), left.dtype, owner,
                      _address(left) - _address(owner), left.strides)


def _matmul_into(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    np.matmul(a, b, out=out)


def _edges(n: int, ways: int) -> list[tuple[int, int]]:
    """Split ``range(n)`` into at most ``ways`` near-equal parts of at least MIN_PART."""
    parts = max(1, min(ways, n // MIN_PART))
    bounds = [n * i // parts for i in range(parts + 1)]
    return list(zip(bounds[:-1], bounds[1:]))


class GemmRunner:
    """The launch's GEMM jobs in flight, oldest first, and the staged one (see the module
    docstring: it is started when nothing more merges into it).

    Args:
        ways: threads each job is split over (0: run every job inline at submit, no threads).
        keep: how many started jobs may stay in flight when a new one is started.
        merge_elements: a staged job is started once its result has this many elements.
    """

    def __init__(self, ways: int = 0, keep: int = 1,
                 merge_elements: int = MERGE_ELEMENTS) -> None:
        self._ways = ways
        self._keep = keep
        self._merge_elements = merge_elements
        self._jobs: list[GemmJob] = []  # started, oldest first
        self._staged: GemmJob | None = None
        #: tensors the jobs in flight (and the staged one) write (PSUM) or read through views
        self.writes: set[TensorDecl] = set()
        self.reads: set[TensorDecl] = set()
        #: counts retired jobs: held-back instructions may have become ready when it changes
        self.retired = 0

    def __bool__(self) -> bool:
        return bool(self._jobs) or self._staged is not None

    def submit(self, job: GemmJob) -> None:
        """Stage or start ``job`` (merged into the staged job when it continues it); then
        retire the older jobs beyond ``keep``."""
        if self._ways <= 0:
            job.start(None, 1)
            job.finish()
            self.retired += 1
            return
        staged = self._staged
        merged = staged.merged(job) if staged is not None else None
        if merged is not None:
            self._staged = merged
            if merged.result.size >= self._merge_elements:
                self._start_staged()
        else:
            self._start_staged()
            if self._jobs and job.result.size < self._merge_elements:
                self._staged = job  # something runs meanwhile: wait for jobs that continue it
            else:
                self._start(job)
        self.writes |= job.writes  # (retiring recomputes the sets without the new job)
        self.reads |= job.reads

    def _start_staged(self) -> None:
        job, self._staged = self._staged, None
        if job is not None:
            self._start(job)

    def _start(self, job: GemmJob) -> None:
        self._launch(job)
        self.retire(self._keep)

    def _launch(self, job: GemmJob) -> None:
        job.start(_shared_pool(self._ways), self._ways)
        self._jobs.append(job)

    def retire(self, keep: int = 0) -> None:
        """Finish the oldest started jobs until at most ``keep`` are in flight (``keep=0``
        also starts and finishes the staged job)."""
        if keep == 0 and self._staged is not None:
            job, self._staged = self._staged, None
            self._launch(job)
        done = self._jobs[:max(0, len(self._jobs) - keep)]
        if not done:
            return
        for job in done:
            job.finish()
            self._jobs.remove(job)
            self.retired += 1
        live = self._jobs + ([self._staged] if self._staged is not None else [])
        self.writes = set().union(*(j.writes for j in live))
        self.reads = set().union(*(j.reads for j in live))

    def uses(self, tensor: TensorDecl) -> bool:
        """True while a job in flight (or the staged one) reads or writes ``tensor``."""
        return tensor in self.writes or tensor in self.reads
