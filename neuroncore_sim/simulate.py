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
import dataclasses
import inspect
import itertools
import os
import threading
import math
import traceback
import warnings
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Protocol

import numpy as np

from .compiler.placement import check_capacity
from .config import NeuronCoreConfig, load_config
from .environment import check_fits, launch_environment, values_do_not_fit
from .launch_outputs import collect_outputs
from .launches import LaunchRecorder, launch_key, program_fingerprint
from .dtypes import to_dtype
from .errors import (ConfigError, KernelError, SimulatorError, SimulatorWarning,
                     UnsupportedError, caller_loc, expected, public_entry,
                     warn_at_kernel_lines)
from .values.execute import Executor
from .values.fast.executor import FastExecutor
from .values.fast.pipeline import PipelinedExecutor
from .frontend import tracer as _tracer
from .frontend.tensors.tensor import NkiTensor
from .frontend.typing import TensorType
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


def _config(config: Any) -> NeuronCoreConfig:
    """``load_config(config)``, its error naming the caller's line (a preset name or a TOML
    file given in the user's code)."""
    try:
        return load_config(config)
    except ConfigError as e:
        e.locate(caller_loc())
        raise


#: The most SPMD instances one launch may have. The reference sets no limit; every instance is
#: traced in Python (a few ms each at best), so a grid beyond this would run for hours before
#: saying anything: refused up front instead (docs/frontend.md).
MAX_GRID_INSTANCES = 2 ** 20


def launch_grid(grid: Any) -> tuple[int, ...]:
    """An SPMD grid as a tuple of positive sizes (``()`` for one instance); a KernelError for
    anything else, or for more than :data:`MAX_GRID_INSTANCES` instances."""
    if grid is None or grid == ():
        return ()
    dims = tuple(grid) if isinstance(grid, (tuple, list)) else (grid,)
    out = []
    for d in dims:
        size = getattr(d, "size", d)  # nl.spmd_dim-like objects carry a size
        if (not isinstance(size, (int, np.integer)) or isinstance(size, bool)
                or int(size) < 0):
            raise KernelError(f"grid: expected positive integers, found {d!r}",
                              caller_loc())
        out.append(int(size))
    if 0 in out:
        # Published kernels launch ``kernel[0](...)`` and check a full result, so the
        # toolchain runs them once; we do the same and say so (docs/frontend.md).
        warnings.warn(f"launch grid {list(out)} has a dimension of 0: simulated as one "
                      "instance along it, as NKI runs such kernels", SimulatorWarning,
                      stacklevel=3)
        out = [max(1, d) for d in out]
    if math.prod(out) > MAX_GRID_INSTANCES:
        raise KernelError(f"grid {list(out)}: expected at most {MAX_GRID_INSTANCES:,} SPMD "
                          f"instances, found {math.prod(out):,} (each instance is traced; "
                          f"simulate a smaller grid)", caller_loc())
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
            if functional:  # copied into the launch: refused now if it cannot be
                check_fits(name, value.nbytes, value.shape, _def_loc(fn))
            try:
                decl = tr.new_tensor(MemSpace.HBM, value.shape, dt, kind="input", name=name,
                                     values=value if functional else None)
            except MemoryError:
                raise values_do_not_fit(f"argument {name!r} (shape {list(value.shape)})",
                                        _def_loc(fn)) from None
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


def _def_loc(fn: Callable[..., Any]) -> str | None:
    code = getattr(fn, "__code__", None)
    return f"{code.co_filename.rsplit('/', 1)[-1]}:{code.co_firstlineno}" if code else None


@public_entry
def trace(kernel: Any, *args: Any, grid: Any = (), config: Any = None,
          functional: bool | str = True, on_record: Callable[[int], None] | None = None,
          kernel_kwargs: dict[str, Any] | None = None, **kwargs: Any) -> Launch:
    """Run a kernel once per SPMD instance, recording its Program and computing its outputs.

    Args:
        kernel: a plain function or an ``nki.jit`` kernel.
        grid: the SPMD grid (``()`` for one instance).
        config: preset name, TOML path or NeuronCoreConfig.
        functional: compute values (False: record only, no numpy work; "reference": with the
            reference executor, the spec run one instruction at a time in this thread).
        on_record: progress hook, called with the count of recorded instructions.
        kernel_kwargs: keyword arguments for the kernel whose names may be the simulator's own
            (a kernel parameter called ``config`` or ``grid``); merged with ``kwargs``.
    """
    if not callable(getattr(kernel, "func", kernel)):
        raise KernelError(expected("kernel", "an NKI kernel (a function, or an nki.jit kernel)",
                                   f"{type(kernel).__name__} {kernel!r}"), loc=caller_loc())
    if not (isinstance(functional, bool) or functional == "reference"):
        raise ConfigError(expected("functional", 'True, False or "reference"',
                                   repr(functional)), loc=caller_loc())
    if kernel_kwargs:
        kwargs = {**kwargs, **kernel_kwargs}
    fn = getattr(kernel, "func", kernel)
    torch_args = TorchArgs(args, kwargs)  # torch tensors -> numpy views of their memory
    args, kwargs = torch_args.args, torch_args.kwargs
    grid = launch_grid(grid if grid != () else getattr(kernel, "grid", ()))
    cfg = _config(config)
    program = Program(getattr(fn, "__name__", "kernel"), grid)
    fast = bool(functional) and functional != "reference"
    with contextlib.ExitStack() as stack:
        # GC paused, BLAS single-threaded for the fast executor (environment.py); values are
        # computed by a worker thread while the kernel goes on tracing (pipeline.py), their
        # GEMMs by a thread pool (gemm_jobs.py).
        threads = stack.enter_context(launch_environment(blas_single_threaded=fast))
        executor: PipelinedExecutor | Executor | None = None
        if functional == "reference":
            executor = Executor(cfg)
        elif functional:
            executor = PipelinedExecutor(FastExecutor(cfg, gemm_threads=threads))
            stack.callback(executor.close)
        try:
            outputs, found = _run_launch(fn, args, kwargs, grid, cfg, program, executor,
                                         on_record)
        except MemoryError:
            if executor is None:
                raise
            raise values_do_not_fit(f"kernel {program.name}", _def_loc(fn)) from None
    _warn(found, program, fn)
    return Launch(program, outputs, [str(w) for w in found])


def _warn(found: list[SimulatorWarning], program: Program, fn: Callable[..., Any]) -> None:
    """Show a launch's warnings at the kernel lines they name (``errors.warn_at_kernel_lines``):
    Python then prints the kernel's ``path:LINE`` and its source line, and filters by the
    kernel's module."""
    if not found:
        return
    code = getattr(fn, "__code__", None)
    files = {ins.loc.filename for ins in program.instructions if ins.loc is not None}
    files |= {d.site.filename for d in program.tensors if d.site is not None}
    if code is not None:
        files.add(code.co_filename)
    warn_at_kernel_lines(found, files, getattr(fn, "__globals__", None))


def _run_launch(fn: Callable[..., Any], args: tuple, kwargs: dict, grid: tuple[int, ...],
                cfg: NeuronCoreConfig, program: Program, executor: PipelinedExecutor | Executor | None,
                on_record: Callable[[int], None] | None
                ) -> tuple[tuple[Any, ...], list[SimulatorWarning]]:
    """Trace (and with ``executor``, compute) one launch: its outputs and warnings."""
    tr = _tracer.Tracer(program, cfg, executor, on_record)
    tr.keeps_order = tr.program.keeps_order = bool(getattr(fn, "_ncs_keeps_order", False))
    with tr.active():
        new_args, new_kwargs, user_arrays = _bind_inputs(tr, fn, args, kwargs,
                                                         executor is not None)
        returned: Any = None
        for instance, pid in enumerate(itertools.product(*(range(g) for g in grid))):
            tr.start_instance(instance, pid)
            try:
                result = fn(*new_args, **new_kwargs)
            except Exception as e:
                _raise_first(executor, e)
                _explain_constant_argument(e, fn, args, kwargs)
                raise
            returned = result if instance == 0 else returned
        tr.finish(returned)
    outputs = collect_outputs(tr, executor, returned, user_arrays, _def_loc(fn))
    return outputs, tr.warnings + (executor.checks.warnings if executor is not None else [])


#: This package's folder (frames inside it are not the kernel's).
_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _explain_constant_argument(error: Exception, fn: Callable[..., Any], args: tuple,
                               kwargs: dict) -> None:
    """The kernel's own code failed with ``'list' object has no attribute 'shape'`` (or the
    like) on an argument that is not an array: raise a KernelError at that line saying so.
    NKI takes numpy arrays (or torch / jax tensors) as tensor arguments and passes any other
    value through as a compile-time constant, so such a kernel fails where it uses it."""
    if not isinstance(error, AttributeError) or isinstance(error, SimulatorError):
        return
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs).arguments
    except TypeError:
        return
    for name, value in bound.items():
        kind = type(value).__name__
        if f"'{kind}' object has no attribute" in str(error) and \
                not isinstance(value, (np.ndarray, TensorType)):
            tb = traceback.extract_tb(error.__traceback__)
            user = [f for f in tb if not os.path.abspath(f.filename).startswith(_PACKAGE)]
            loc = (f"{os.path.basename(user[-1].filename)}:{user[-1].lineno}" if user
                   else _def_loc(fn))
            raise KernelError(
                f"argument {name!r} is a Python {kind}, not a tensor ({error}): NKI kernels "
                "take numpy arrays (or torch / jax tensors) as tensor arguments; any other "
                f"value is passed through as a compile-time constant", loc) from error


def _raise_first(executor: PipelinedExecutor | Executor | None, error: Exception) -> None:
    """The kernel raised ``error``: raise instead the error of an instruction recorded before it
    that had already failed in the values worker, if any (the first error in program order is
    the one a user sees, as if values were computed in line); give a simulator error without a
    location the kernel line it came from."""
    earlier = executor.first_error() if executor is not None else None
    if earlier is not None and earlier is not error:
        raise earlier.with_traceback(None) from None
    if isinstance(error, SimulatorError):
        _tracer.locate_in_kernel(error)


@public_entry
def simulate(kernel: Any, *args: Any, grid: Any = (), config: Any = None,
             functional: bool | str = True, timing: bool = True,
             progress: bool | ProgressFactory = False,
             kernel_kwargs: dict[str, Any] | None = None, **kwargs: Any) -> SimResult:
    """Run a kernel launch: its values (unless ``functional=False``) and its estimated timing.

    Args:
        kernel: an NKI kernel (plain function or ``nki.jit`` object).
        *args, **kwargs: the kernel's arguments; numpy arrays become HBM inputs.
        grid: SPMD launch grid, e.g. ``(2, 2)``.
        config: "trn1" (default), "inf2", a TOML file path or a NeuronCoreConfig.
        functional: compute output values with the hardware's dtype behaviour; "reference"
            computes them with the reference executor (the spec alone, one instruction at a
            time: slower; to check a result of the fast path).
        timing: run the timing model.
        progress: True shows progress bars for tracing and timing (tqdm on stderr); or a
            :data:`ProgressFactory` drawing them some other way. Off by default.
        kernel_kwargs: keyword arguments for the kernel whose names may be the simulator's own
            (``config=`` of a kernel that takes a config); merged with ``kwargs``.

    Inside :func:`record_launches` (``neuroncore-sim run``) the launch is always timed, and the
    block's config, timing-only choice and progress bars apply where the call leaves them at
    their defaults.

    Returns:
        SimResult with ``outputs``, ``latency_ns``, ``events`` and ``summary()``.

    Raises:
        SimulatorError: a subclass naming the kernel line for a broken rule, including
            ``CapacityError`` when the tiles do not fit, with or without ``timing``.
    """
    return simulate_launch(kernel, args, {**kwargs, **(kernel_kwargs or {})}, grid=grid,
                           config=config, functional=functional, timing=timing,
                           progress=progress, entry=SIMULATE_ENTRY)


#: ``SimResult.entry`` of launches made by :func:`simulate` itself.
SIMULATE_ENTRY = "neuroncore_sim.simulate"


@public_entry
def simulate_launch(kernel: Any, args: tuple[Any, ...], kwargs: dict[str, Any], *,
                    entry: str, grid: Any = (), config: Any = None, functional: bool = True,
                    timing: bool = True, progress: bool | ProgressFactory = False) -> SimResult:
    """:func:`simulate` for every entry point: ``entry`` names the one the user called
    (``"nki.simulate_kernel"``, ``"nki.jit"``, ...), kept on the result for reports and for the
    message of a timing request on an untimed launch.

    Inside :func:`record_launches` every launch is timed and collected, whichever entry point
    made it: ``timing=False`` (the fast values-only default of ``nki.simulate_kernel`` and
    kernel calls) is overridden there, because the block exists to time the launches.
    """
    session = _session()
    asked_timing = timing  # (what the entry point needs: nki.benchmark reads the latency)
    if session is not None:
        timing = True
        config = session.config if config is None else config
        functional = functional and session.functional
        progress = progress or session.progress
    cfg = _config(config)
    key = None  # which launches are the same (launches.py): in a block that tells them apart
    if session is not None and session.keeps_keys:
        key = launch_key(kernel, args, kwargs, grid, cfg, functional, entry)
        if not session.profiles(key):  # past the block's max_distinct: run, do not profile
            timing, session, key = asked_timing, None, None
        elif (earlier := session.earlier(key)) is not None and not functional:
            result = dataclasses.replace(earlier, entry=entry)  # no values: the same launch
            session.collect(result)
            return result
    bars = _progress_factory(progress)
    name = getattr(kernel, "__name__", "kernel")
    with _bar(bars, f"{name}: tracing", None) as bar:
        launch = trace(kernel, *args, grid=grid, config=cfg, functional=functional,
                       on_record=bar.update if bar is not None else None,
                       kernel_kwargs=kwargs)
        if bar is not None:
            bar.update(len(launch.program.instructions))
    times = None
    if key is not None and session is not None:
        times, key = session.timing_for(key, launch.program)
    if timing and times is None:
        with _bar(bars, f"{name}: timing", len(launch.program.instructions)) as bar, \
                launch_environment(blas_single_threaded=False):
            times = simulate_timing(launch.program, cfg,
                                    bar.update if bar is not None else None)
    # (the timing model checks capacity while scheduling)
    found = times.warnings if times is not None else check_capacity(launch.program, cfg)
    _warn(found, launch.program, getattr(kernel, "func", kernel))  # SpillWarnings
    result = SimResult(program=launch.program, outputs=launch.outputs, config=cfg, timing=times,
                       entry=entry, kernel_loc=_def_loc(getattr(kernel, "func", kernel)),
                       launch_key=key)
    if session is not None:
        session.collect(result)
    return result


# --- launch objects ----------------------------------------------------------------------------
_SESSION: ContextVar[LaunchRecorder | None] = ContextVar("neuroncore_sim_session", default=None)
#: Every open record_launches block of the process, innermost last: threads the user's code
#: starts inside a block do not inherit its context, yet their launches belong to it.
_OPEN: list[LaunchRecorder] = []
_OPEN_LOCK = threading.Lock()


def _session() -> LaunchRecorder | None:
    """The record_launches block a launch made now belongs to: this context's own, else the
    innermost one open in the process (a launch from a thread the block's code started)."""
    own = _SESSION.get()
    if own is not None:
        return own
    with _OPEN_LOCK:
        return _OPEN[-1] if _OPEN else None


@contextlib.contextmanager
def record_launches(config: Any = None, functional: bool = True,
                    progress: bool | ProgressFactory = False, reuse_timing: bool = False,
                    max_distinct: int | None = None) -> Iterator[LaunchRecorder]:
    """Inside this block every kernel launch is timed and its result collected, whichever entry
    point made it (``nki.jit`` / ``nki.trace`` / ``nki.baremetal`` kernel calls, ``kernel[grid]``,
    ``nki.simulate_kernel``, ``nki.benchmark``, ``nki.profile``, :func:`simulate`).

    Launches from threads started inside the block are collected too (by the innermost block
    open in the process when the launching thread has none of its own); launches in other
    processes are not.

    Args:
        config: hardware config for those launches (default trn1); a :func:`simulate` call
            that names its own ``config`` keeps it.
        functional: False runs them timing-only (outputs are None).
        progress: progress bars for each launch, as in :func:`simulate`.
        reuse_timing, max_distinct: time identical launches once; profile at most
            ``max_distinct`` distinct launches (:class:`~neuroncore_sim.launches.LaunchRecorder`).
    """
    recorder = LaunchRecorder(_config(config), functional, progress,
                              reuse_timing=reuse_timing, max_distinct=max_distinct)
    token = _SESSION.set(recorder)
    with _OPEN_LOCK:
        _OPEN.append(recorder)
    try:
        yield recorder
    finally:
        _SESSION.reset(token)
        with _OPEN_LOCK:
            _OPEN.remove(recorder)
