"""Running a kernel launch end to end: trace (with values), then time.

This is the one module that knows the whole pipeline::

    kernel(*args) --frontend.Tracer (+ execute.Executor for values)--> Program, outputs
    Program --timing.simulate_timing--> events, latency
    -> result.SimResult

It also owns the launch objects users hold (:class:`Kernel`, what ``nki.jit`` returns).

Progress. Long launches can report progress (``simulate(..., progress=True)``): tracing counts
recorded instructions, timing counts finished ones. This module only calls the hooks; how a bar
is drawn (tqdm) is decided at the edge: ``progress=True`` uses the factory an entry point
registered with :func:`set_progress_factory` (the package's ``__init__`` registers
:func:`neuroncore_sim.report.progress.tqdm_bar`), and any :data:`ProgressFactory` may be passed
instead.
"""

from __future__ import annotations

import contextlib
import gc
import inspect
import itertools
import warnings
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Protocol

import numpy as np

from .timing.placement import check_capacity
from .config import NeuronCoreConfig, load_config
from .dtypes import to_dtype
from .errors import KernelError, SimulatorError, SimulatorWarning, UnsupportedError
from .values.execute import Executor
from .values.fast.pipeline import PipelinedExecutor
from .frontend import tracer as _tracer
from .frontend.tensor import NkiTensor
from .frontend.typing import TensorType
from .values.fast.gemm_jobs import single_threaded_blas
from .program.ir import MemSpace, Program
from .result import SimResult
from .timing.engines import simulate_timing
from .frontend.torch_io import TorchArgs


class ProgressBar(Protocol):
    """One progress bar: ``update(done)`` with the count so far, ``close()`` at the end."""

    def update(self, done: int) -> None: ...

    def close(self) -> None: ...


#: (description, total or None when unknown) -> a :class:`ProgressBar`.
ProgressFactory = Callable[[str, "int | None"], ProgressBar]
_PROGRESS_FACTORY: list[ProgressFactory] = []


def set_progress_factory(factory: ProgressFactory) -> None:
    """Make ``factory`` draw the bars of ``progress=True`` (called by an entry point)."""
    _PROGRESS_FACTORY[:] = [factory]


def _progress_factory(progress: bool | ProgressFactory) -> ProgressFactory | None:
    if progress is False or progress is None:
        return None
    if progress is True:
        if not _PROGRESS_FACTORY:
            raise UnsupportedError("progress=True: expected a registered progress bar factory "
                                   "(import neuroncore_sim registers tqdm), found none")
        return _PROGRESS_FACTORY[0]
    if not callable(progress):
        raise UnsupportedError(f"progress: expected True, False or a factory "
                               f"(description, total) -> bar, found {progress!r}")
    return progress


@contextlib.contextmanager
def _bar(bars: ProgressFactory | None, description: str, total: int | None
         ) -> Iterator[ProgressBar | None]:
    """A bar from ``bars`` (None without one), closed when the block ends."""
    if bars is None:
        yield None
        return
    bar = bars(description, total)
    try:
        yield bar
    finally:
        bar.close()


@dataclass
class Launch:
    """What tracing one kernel launch produced (before timing)."""

    program: Program
    outputs: tuple[Any, ...]
    warnings: list[str] = field(default_factory=list)


def _grid(grid: Any) -> tuple[int, ...]:
    if grid is None or grid == ():
        return ()
    dims = tuple(grid) if isinstance(grid, (tuple, list)) else (grid,)
    out = []
    for d in dims:
        size = getattr(d, "size", d)  # nl.spmd_dim-like objects carry a size
        if not isinstance(size, (int, np.integer)) or int(size) < 1:
            raise KernelError(f"grid: expected positive integers, found {d!r}")
        out.append(int(size))
    return tuple(out)


def _bind_inputs(tr: _tracer.Tracer, fn: Callable[..., Any], args: tuple[Any, ...],
                 kwargs: dict[str, Any], functional: bool) -> tuple[list[Any], dict[str, Any],
                                                                    dict[int, np.ndarray]]:
    """Turn numpy arrays and nt.tensor placeholders into HBM input tensors."""
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
    except TypeError as e:
        raise KernelError(f"{fn.__name__}: arguments do not match the kernel's signature: {e}",
                          _def_loc(fn)) from e
    user_arrays: dict[int, np.ndarray] = {}

    def convert(name: str, value: Any) -> Any:
        if isinstance(value, TensorType):
            if functional:
                raise KernelError(
                    f"argument {name!r}: an nt.tensor placeholder has no values; pass a numpy "
                    "array, or run timing-only (functional=False / nki.benchmark)", _def_loc(fn))
            decl = tr.new_tensor(MemSpace.HBM, value.shape, value.dtype, kind="input", name=name)
            return NkiTensor.whole(decl)
        if isinstance(value, np.ndarray):
            try:
                dt = to_dtype(value.dtype, f"argument {name!r} dtype")
            except SimulatorError as e:
                e.locate(_def_loc(fn))
                raise
            if value.ndim == 0:
                raise KernelError(f"argument {name!r}: expected an array with at least 1 dim, "
                                  "found a 0-d array (pass a Python scalar instead)", _def_loc(fn))
            decl = tr.new_tensor(MemSpace.HBM, value.shape, dt, kind="input", name=name,
                                 values=value if functional else None)
            user_arrays[decl.id] = value
            return NkiTensor.whole(decl)
        return value

    new_args: list[Any] = []
    new_kwargs: dict[str, Any] = {}
    for name, value in bound.arguments.items():
        kind = bound.signature.parameters[name].kind
        if kind is inspect.Parameter.VAR_POSITIONAL:
            new_args.extend(convert(f"{name}{i}", v) for i, v in enumerate(value))
        elif kind is inspect.Parameter.VAR_KEYWORD:
            new_kwargs.update({k: convert(k, v) for k, v in value.items()})
        elif kind is inspect.Parameter.KEYWORD_ONLY or name in kwargs:
            # Given by keyword: stays a keyword, so a skipped default before it keeps its value.
            new_kwargs[name] = convert(name, value)
        else:
            new_args.append(convert(name, value))
    return new_args, new_kwargs, user_arrays


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector (reference counting still frees everything).

    Tracing and timing build hundreds of thousands of long-lived objects (instructions,
    accesses, events) and no reference cycles; the collector would rescan all of them each
    time the heap grows by a quarter, about a quarter of the run time of a 50,000-instruction
    launch, and find nothing. It is enabled again on exit (if it was), also after an error.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _def_loc(fn: Callable[..., Any]) -> str | None:
    code = getattr(fn, "__code__", None)
    return f"{code.co_filename.rsplit('/', 1)[-1]}:{code.co_firstlineno}" if code else None


def trace(kernel: Any, *args: Any, grid: Any = (), config: Any = None, functional: bool = True,
          on_record: Callable[[int], None] | None = None, **kwargs: Any) -> Launch:
    """Run a kernel once per SPMD instance, recording its Program and computing its outputs.

    Args:
        kernel: a plain function or an ``nki.jit`` kernel.
        grid: the SPMD grid (``()`` for one instance).
        config: preset name, TOML path or NeuronCoreConfig.
        functional: compute values (False: record only, no numpy work).
        on_record: progress hook, called with the count of recorded instructions.
    """
    fn = getattr(kernel, "func", kernel)
    torch_args = TorchArgs(args, kwargs)  # torch tensors -> numpy views of their memory
    args, kwargs = torch_args.args, torch_args.kwargs
    grid = _grid(grid if grid != () else getattr(kernel, "grid", ()))
    cfg = load_config(config)
    program = Program(getattr(fn, "__name__", "kernel"), grid)
    with contextlib.ExitStack() as stack:
        # Values are computed by a worker thread while the kernel goes on tracing (pipeline.py),
        # their GEMMs by a thread pool with BLAS single-threaded (gemm_jobs.py).
        executor = None
        if functional:
            threads = stack.enter_context(single_threaded_blas())
            executor = PipelinedExecutor(Executor(cfg, gemm_threads=threads))
            stack.callback(executor.close)
        outputs, found = _run_launch(fn, args, kwargs, grid, cfg, program, executor, on_record)
    for w in found:
        warnings.warn(w, stacklevel=3)
    return Launch(program, outputs, [str(w) for w in found])


def _run_launch(fn: Callable[..., Any], args: tuple, kwargs: dict, grid: tuple[int, ...],
                cfg: NeuronCoreConfig, program: Program, executor: PipelinedExecutor | None,
                on_record: Callable[[int], None] | None
                ) -> tuple[tuple[Any, ...], list[SimulatorWarning]]:
    """Trace (and with ``executor``, compute) one launch: its outputs and warnings."""
    tr = _tracer.Tracer(program, cfg, executor, on_record)
    with tr.active(), _gc_paused():
        new_args, new_kwargs, user_arrays = _bind_inputs(tr, fn, args, kwargs,
                                                         executor is not None)
        returned: Any = None
        for instance, pid in enumerate(itertools.product(*(range(g) for g in grid))):
            tr.start_instance(instance, pid)
            try:
                result = fn(*new_args, **new_kwargs)
            except Exception as e:
                _raise_first(executor, e)
                raise
            returned = result if instance == 0 else returned
        tr.finish(returned)
    outputs = _collect(tr, executor, returned, user_arrays, _def_loc(fn))
    return outputs, tr.warnings + (executor.checks.warnings if executor is not None else [])


def _raise_first(executor: PipelinedExecutor | None, error: Exception) -> None:
    """The kernel raised ``error``: raise instead the error of an instruction recorded before it
    that had already failed in the values worker, if any (the first error in program order is
    the one a user sees, as if values were computed in line); give a simulator error without a
    location the kernel line it came from."""
    earlier = executor.first_error() if executor is not None else None
    if earlier is not None and earlier is not error:
        raise earlier.with_traceback(None) from None
    if isinstance(error, SimulatorError):
        _tracer.locate_in_kernel(error)


def _collect(tr: _tracer.Tracer, executor: PipelinedExecutor | None, returned: Any,
             user_arrays: dict[int, np.ndarray], def_loc: str | None) -> tuple[Any, ...]:
    """Outputs: the returned tensors' values; written argument arrays are updated in place.
    ``def_loc`` (the kernel's ``def`` line) locates a bad return value."""
    # Only argument arrays can need the written-tensor set; skip the scan otherwise (large
    # programs record tens of thousands of instructions).
    written = {a.tensor.id for ins in tr.program.instructions for a in ins.dsts.values()
               if a.tensor.id in user_arrays} if user_arrays else set()
    taken: dict[int, np.ndarray] = {}

    def values(decl):  # the end of the launch: storage is handed over, copied only if repeated
        if decl.id in taken:
            return taken[decl.id].copy()
        taken[decl.id] = executor.take(decl)
        return taken[decl.id]

    if executor is not None:
        for tid, arr in user_arrays.items():
            if tid in written:
                np.copyto(arr, values(tr.program.tensors[tid]), casting="unsafe")
    items = returned if isinstance(returned, (tuple, list)) else (
        () if returned is None else (returned,))
    outs: list[Any] = []
    for item in items:
        if isinstance(item, NkiTensor):
            if item.space is not MemSpace.HBM:
                made = item.tensor.site
                raise KernelError(
                    f"kernel return value: expected HBM tensors (nl.ndarray(..., "
                    f"buffer=nl.shared_hbm), written with nl.store), found a tile in "
                    f"{item.space.value}" + (f" made at {made}" if made else ""), def_loc)
            outs.append(values(item.tensor) if executor is not None else None)
        else:
            outs.append(item)
    if not items:
        outs = [user_arrays[t] for t in sorted(user_arrays) if t in written]
    return tuple(outs)


def simulate(kernel: Any, *args: Any, grid: Any = (), config: Any = None,
             functional: bool = True, timing: bool = True,
             progress: bool | ProgressFactory = False, **kwargs: Any) -> SimResult:
    """Run a kernel launch: its values (unless ``functional=False``) and its estimated timing.

    Args:
        kernel: an NKI kernel (plain function or ``nki.jit`` object).
        *args, **kwargs: the kernel's arguments; numpy arrays become HBM inputs.
        grid: SPMD launch grid, e.g. ``(2, 2)``.
        config: "trn1" (default), "inf2", a TOML file path or a NeuronCoreConfig.
        functional: compute output values with the hardware's dtype behaviour.
        timing: run the timing model.
        progress: True shows progress bars for tracing and timing (tqdm on stderr); or a
            :data:`ProgressFactory` drawing them some other way. Off by default.

    Returns:
        SimResult with ``outputs``, ``latency_ns``, ``events`` and ``summary()``.

    Raises:
        SimulatorError: a subclass naming the kernel line for a broken rule, including
            ``CapacityError`` when the tiles do not fit, with or without ``timing``.
    """
    cfg = load_config(config)
    bars = _progress_factory(progress)
    name = getattr(kernel, "__name__", "kernel")
    with _bar(bars, f"{name}: tracing", None) as bar:
        launch = trace(kernel, *args, grid=grid, config=cfg, functional=functional,
                       on_record=bar.update if bar is not None else None, **kwargs)
        if bar is not None:
            bar.update(len(launch.program.instructions))
    times = None
    if timing:
        with _bar(bars, f"{name}: timing", len(launch.program.instructions)) as bar, \
                _gc_paused():
            times = simulate_timing(launch.program, cfg,
                                    bar.update if bar is not None else None)
    # (the timing model checks capacity while scheduling)
    found = times.warnings if times is not None else check_capacity(launch.program, cfg)
    for w in found:  # SpillWarnings: tiles spilled to the next memory
        warnings.warn(w, stacklevel=2)
    result = SimResult(program=launch.program, outputs=launch.outputs, config=cfg, timing=times)
    session = _SESSION.get()
    if session is not None:
        session.results.append(result)
    return result


# --- launch objects ----------------------------------------------------------------------------
@dataclass
class LaunchRecorder:
    """Kernel launches made inside :func:`record_launches`, and how to run them."""

    config: Any = None
    functional: bool = True
    progress: bool | ProgressFactory = False
    results: list[SimResult] = field(default_factory=list)

    def __iter__(self) -> Iterator[SimResult]:
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)

    def __getitem__(self, i: int) -> SimResult:
        return self.results[i]


_SESSION: ContextVar[LaunchRecorder | None] = ContextVar("neuroncore_sim_session", default=None)


@contextlib.contextmanager
def record_launches(config: Any = None, functional: bool = True,
                    progress: bool | ProgressFactory = False) -> Iterator[LaunchRecorder]:
    """Inside this block every ``nki.jit`` kernel call is also timed and its result collected.

    Args:
        config: hardware config for those launches (default trn1).
        functional: False runs them timing-only (outputs are None).
        progress: progress bars for each launch, as in :func:`simulate`.
    """
    recorder = LaunchRecorder(load_config(config), functional, progress)
    token = _SESSION.set(recorder)
    try:
        yield recorder
    finally:
        _SESSION.reset(token)


class Kernel:
    """What ``nki.jit`` returns: call it like the function; ``kernel[grid](...)`` for SPMD.

    A call runs the kernel on the simulator and returns its outputs as numpy arrays (like
    ``nki.simulate_kernel``), or as torch tensors when it was given torch tensors. Inside a
    running kernel it is inlined as a sub-kernel call.
    """

    def __init__(self, func: Callable[..., Any], grid: tuple[int, ...] = (),
                 options: dict[str, Any] | None = None) -> None:
        self.func = func
        self.grid = grid
        self.options = options or {}
        self.__name__ = getattr(func, "__name__", "kernel")
        self.__doc__ = getattr(func, "__doc__", None)
        self.__wrapped__ = func

    def __getitem__(self, grid: Any) -> Kernel:
        return Kernel(self.func, _grid(grid), self.options)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if _tracer.active_or_none() is not None:
            return self.func(*args, **kwargs)  # a sub-kernel: inline it
        session = _SESSION.get()
        targs = TorchArgs(args, kwargs)  # torch arguments give torch results
        if session is None:
            res = simulate(self, *targs.args, grid=self.grid, timing=False, **targs.kwargs)
        else:
            res = simulate(self, *targs.args, grid=self.grid, config=session.config,
                           functional=session.functional, progress=session.progress,
                           **targs.kwargs)
        return targs.results(_unwrap(res.outputs))

    def __repr__(self) -> str:
        return f"<nki kernel {self.__name__} grid={list(self.grid)}>"


def _unwrap(outputs: tuple[Any, ...]) -> Any:
    if not outputs:
        return None
    return outputs[0] if len(outputs) == 1 else outputs
