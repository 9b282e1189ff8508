"""Parameter sweeps: run one kernel over a grid of parameters and rank the points.

    import neuroncore_sim.sweep.run as sw
    table = sw.sweep("kernels/matmul_blocked.py", {"n_block": [1, 2, 4], "N": [2048, 4096]},
                     out="out/sweep")          # pandas DataFrame, fastest point first

Each point is simulated by :func:`neuroncore_sim.sweep.point.run_point` (parameter routing and
the measured columns are documented there and in docs/sweeps.md). Points run in parallel in local
processes (``workers``), or on a Dask cluster (``executor="dask"``). With ``out=DIR`` every
finished point is appended to ``DIR/points.jsonl`` at once, so a sweep that is interrupted (or
whose worker dies) loses nothing: run it again with the same ``out`` and only the missing points
run. The table never depends on how many workers ran it or in which order points finished.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import sys
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator

from .. import config as _config_module
from ..config import NeuronCoreConfig, load_config
from ..errors import UnsupportedError, caller_loc, expected, public_entry
from ..report.launch_files import OutputPlaceError, check_out_dir, write_files
from .kernel_file import UsageError
from .point import SweepError, load_target, remember, run_point
from .dask_connect import DEFAULT_CONNECT_TIMEOUT_S, check_timeout, connect
from .points_file import PointsWriter, check_appendable, read_points
from .table import INDEX_COLUMNS, RESULT_COLUMNS, rank

if TYPE_CHECKING:
    import pandas as pd

POINTS_FILE, TABLE_FILE, PLOT_FILE = "points.jsonl", "sweep.csv", "sweep.png"
EXECUTORS = ("local", "dask")
_RESERVED = frozenset(RESULT_COLUMNS) | frozenset(INDEX_COLUMNS)


def expand(params: dict[str, Any] | Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The sweep's points, in a stable order.

    A dict ``name -> list of values`` gives the cartesian product (the last name varies fastest);
    a value that is not a list, tuple or range is one fixed value. A list of dicts is taken as
    the points themselves. Values must be JSON values (numbers, strings, booleans, None, lists).
    """
    if isinstance(params, dict):
        choices = {n: (list(v) if isinstance(v, (list, tuple, range)) else [v])
                   for n, v in params.items()}
        empty = [n for n, v in choices.items() if not v]
        if empty:
            raise SweepError(expected(f"sweep parameter {empty[0]!r}", "at least one value",
                                      "an empty list"))
        points: list[dict[str, Any]] = [{}]
        for name, values in choices.items():
            points = [{**p, name: v} for p in points for v in values]
    elif isinstance(params, (list, tuple)) or _is_iterator(params):
        points = list(params)
    else:
        raise SweepError(expected("sweep parameters", "a dict of name -> values, or a list of "
                                  "points (dicts)", f"{type(params).__name__} {params!r}"),
                         loc=caller_loc())
    for p in points:
        _check_point(p)
    if not points:
        raise SweepError(expected("sweep parameters", "at least one point", "none"))
    return [{n: _plain(v) for n, v in p.items()} for p in points]


def _is_iterator(value: Any) -> bool:
    return hasattr(value, "__next__") and hasattr(value, "__iter__")


def _check_point(point: Any) -> None:
    if not isinstance(point, dict) or not all(isinstance(n, str) for n in point):
        raise SweepError(expected("sweep point", "a dict of parameter name -> value", point))
    taken = sorted(set(point) & _RESERVED)
    if taken:
        raise SweepError(expected(f"sweep parameter {taken[0]!r}", "a name that is not a column "
                                  "of the sweep table", "a reserved column name"))


def _plain(value: Any) -> Any:
    """A JSON value: numpy scalars become Python numbers, tuples lists."""
    if isinstance(value, tuple):
        value = list(value)
    if hasattr(value, "item") and not isinstance(value, (str, list)):
        value = value.item()  # a numpy scalar
    try:
        text = json.dumps(value)
    except (TypeError, ValueError) as e:
        raise SweepError(expected("sweep parameter value", "a number, string, boolean, None or "
                                  "a list of them", repr(value))) from e
    return json.loads(text) if isinstance(value, list) else value


def point_key(kernel: str, config: NeuronCoreConfig, point: dict[str, Any]) -> str:
    """Identity of a point in ``points.jsonl``: a hash of the canonical JSON of the kernel
    (file name, kernel name and file contents: ``KernelTarget.identity``), every config field,
    the point's parameters and the timing model's version (``config.MODEL_VERSION``: a point
    saved by another version of the model is run again, not mixed into the table)."""
    text = json.dumps({"target": kernel, "config": asdict(config), "params": point,
                       "model": _config_module.MODEL_VERSION},
                      sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


@public_entry
def sweep(target: str, params: dict[str, Any] | Iterable[dict[str, Any]], *,
          config: Any = "trn1", check: bool | int = False, workers: int | None = None,
          out: str | Path | None = None, executor: str = "local", scheduler: str | None = None,
          progress: bool | None = None,
          connect_timeout: float = DEFAULT_CONNECT_TIMEOUT_S) -> "pd.DataFrame":
    """Run ``target`` (``"file.py::kernel"`` or ``"file.py"``) at every point of ``params``.

    Args:
        config: hardware of every point (preset, TOML file or config); ``config.<field>``
            parameters override fields of it per point.
        check: False (default): timing only, no numpy work. True: also compute every point's
            values and compare them with the file's ``reference``. An int: check the points
            whose inputs hold at most that many elements, time the others only.
        workers: local processes (default: one per CPU); 1 runs the points in this process.
        out: folder for ``points.jsonl`` (appended as points finish; resumed from),
            ``sweep.csv`` and ``sweep.png``.
        executor: "local" (processes on this machine) or "dask" (a dask.distributed cluster
            at ``scheduler``, e.g. "tcp://10.0.0.5:8786"; the kernel file's path must exist on
            the workers).
        progress: show a progress bar on stderr (default: when stderr is a terminal).
        connect_timeout: seconds the Dask scheduler has to answer (a malformed address, one
            that does not answer in time or that is not a Dask scheduler is a SweepError).

    Returns:
        One row per point: ``point`` (its index in the grid), ``problem`` (points with the same
        ``example_inputs`` parameters solve the same problem: numbered in grid order), the
        parameters, the measured columns (:data:`~neuroncore_sim.sweep.table.RESULT_COLUMNS`)
        and ``best`` (True on each problem's fastest point without error or flag, whose result,
        if checked, matched). Sorted by problem, then by latency, flagged points (no
        instruction recorded, an output left unwritten) and failed points last.
    """
    if not isinstance(target, (str, Path)):
        raise SweepError(expected(
            "sweep target", '"file.py::kernel" (a path: each worker loads the kernel file)',
            f"{type(target).__name__} {getattr(target, '__name__', target)!r}"),
            loc=caller_loc())
    if executor not in EXECUTORS:
        raise SweepError(expected("executor", " or ".join(EXECUTORS), repr(executor)))
    if scheduler is not None and executor != "dask":  # an address that would be ignored
        raise SweepError(expected("scheduler", 'executor="dask" with it',
                                  f"executor={executor!r}"), loc=caller_loc())
    connect_timeout = check_timeout(connect_timeout)
    cfg = load_config(config)
    kt = load_target(target)  # a wrong file or kernel name fails here, not once per point
    remember(kt)
    if check is not False and not callable(getattr(kt.module, "reference", None)):
        raise UsageError(f"{kt.target}: check needs a reference() in the kernel file; "
                         "found none")
    grid = expand(params)
    kt.check(grid, cfg)  # a bad name or config value fails here, before any point runs
    keys = [point_key(kt.identity, cfg, p) for p in grid]
    # absolute now: a kernel that changes directory (workers=1) does not move the files
    out = Path(os.path.abspath(out)) if out is not None else None
    if out is not None:
        _check_out(out)  # a place that cannot hold the files fails before any point runs
    results = read_points(out / POINTS_FILE, set(keys)) if out else {}
    todo = {k: p for k, p in zip(keys, grid) if k not in results}  # equal points run once
    # Points sharing their example inputs run next to each other, so workers reuse them.
    order = sorted(todo, key=lambda k: json.dumps(
        {n: v for n, v in todo[k].items() if n in kt.input_names}, sort_keys=True))
    tasks = [(k, todo[k]) for k in order]
    with PointsWriter(out, kt.identity, cfg.name) as write, _bar(progress, len(set(keys)),
                                                           len(set(keys)) - len(tasks)) as bar:
        for key, row in _execute(tasks, kt.target, cfg, check, workers, executor, scheduler,
                                 connect_timeout):
            results[key] = {c: row[c] for c in RESULT_COLUMNS}
            write(key, todo[key], row)
            bar.update(1)
    table = rank(grid, [results[k] for k in keys], kt.input_names)
    if out is not None:
        from .plot import save_sweep_plot

        # whole files or none: an interrupted sweep leaves the previous table and plot
        write_files(out, {
            TABLE_FILE: lambda tmp: table.to_csv(tmp, index=False),
            PLOT_FILE: lambda tmp: save_sweep_plot(table, tmp,
                                                   title=kt.target.rsplit("/", 1)[-1])})
    return table


def _check_out(out: Path) -> None:
    """``out`` is (or can be made) a folder we can write, whose ``points.jsonl``, if any, is a
    file.

    Raises:
        UsageError: it is not.
    """
    try:
        check_out_dir(out)
    except OutputPlaceError as e:
        raise UsageError(str(e)) from None
    for name in (POINTS_FILE, TABLE_FILE, PLOT_FILE):
        path = out / name
        if path.exists() and not path.is_file():
            raise UsageError(f"--out {out}: expected {name} to be a file the sweep writes "
                             f"(or none yet), found a directory {path}")
    check_appendable(out / POINTS_FILE)  # appended to (the table and plot are replaced)


# --- running the points --------------------------------------------------------------------------

Task = tuple[str, dict[str, Any]]


def _execute(tasks: list[Task], target: str, cfg: NeuronCoreConfig, check: bool | int,
             workers: int | None, executor: str, scheduler: str | None,
             connect_timeout: float = DEFAULT_CONNECT_TIMEOUT_S
             ) -> Iterator[tuple[str, dict[str, Any]]]:
    """(key, row) of every task, in the order they finish."""
    if executor == "dask":
        return _on_dask(tasks, target, cfg, check, scheduler, connect_timeout)
    n = (os.cpu_count() or 1) if workers is None else workers
    if not isinstance(n, int) or n < 1:
        raise SweepError(expected("workers", "a positive number of processes", repr(workers)))
    if min(n, len(tasks)) <= 1:
        return ((key, run_point(target, p, cfg, check)) for key, p in tasks)
    return _in_processes(tasks, target, cfg, check, min(n, len(tasks)))


def _in_processes(tasks: list[Task], target: str, cfg: NeuronCoreConfig, check: bool | int,
                  n: int) -> Iterator[tuple[str, dict[str, Any]]]:
    # fork (Linux): a worker starts in milliseconds with numpy, pandas, this package and the
    # already loaded kernel file in memory, where spawn re-imports all of them (~1 s a worker).
    # Workers only run run_point on picklable arguments, so nothing else of the parent matters.
    # spawn (macOS, Windows) works too: a worker then imports the package and loads the kernel
    # file by its path in run_point.
    # JAX runs threads of its own: forking a process that has imported it may deadlock, so such
    # a process spawns its workers.
    methods = multiprocessing.get_all_start_methods()
    fork = "fork" in methods and "jax" not in sys.modules
    ctx = multiprocessing.get_context("fork" if fork else "spawn")
    pool = ProcessPoolExecutor(max_workers=n, mp_context=ctx, initializer=_die_with_parent,
                               initargs=(os.getpid(),))
    lost: list[dict[str, Any]] = []
    try:
        futures = {pool.submit(run_point, target, p, cfg, check): (key, p) for key, p in tasks}
        for fut in as_completed(futures):
            try:
                row = fut.result()
            except BrokenProcessPool:
                lost.append(futures[fut][1])
                continue
            yield futures[fut][0], row
    except BaseException:  # Ctrl-C, an error: stop now (saved points stay)
        workers = list((getattr(pool, "_processes", None) or {}).values())  # before shutdown
        manager = getattr(pool, "_executor_manager_thread", None)  # (shutdown forgets it too)
        pool.shutdown(wait=False, cancel_futures=True)  # queued points never start
        _stop_workers(workers)  # running points stop too, instead of being waited for
        # The pool's manager thread sees its workers gone and closes its wake-up pipe: wait for
        # it (quick, nothing is left to run), or the interpreter's exit hook may write to that
        # pipe while it closes and print a traceback (a race in concurrent.futures, 3.11).
        if manager is not None:
            manager.join(1.0)
        raise
    pool.shutdown(wait=True)
    if lost:
        raise SweepError(_lost_message(lost, "a worker process died (killed, or out of memory)"))


def _stop_workers(processes: list[Any]) -> None:
    """End a pool's worker ``processes`` (taken before its shutdown, which forgets them) now (SIGTERM, then SIGKILL for any still alive after
    half a second): the points they were running are not saved, and run again on resume."""
    for process in processes:
        if process.is_alive():
            process.terminate()
    for process in processes:
        process.join(0.5)
        if process.is_alive():
            process.kill()
            process.join(0.5)


def _die_with_parent(parent: int) -> None:
    """Worker initializer: end this worker when the sweep's process dies (SIGKILL included),
    so no orphan keeps running or holds the caller's stdout. Linux: the kernel sends SIGKILL on
    the parent's death (prctl PR_SET_PDEATHSIG). Elsewhere a daemon thread checks once a second
    whether the parent is gone (no event tells a process that its parent died there).
    Ctrl-C is the sweep's to handle: a worker ignores SIGINT (a terminal sends it to the whole
    process group), and the sweep ends its workers (:func:`_stop_workers`)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        if libc.prctl(pr_set_pdeathsig, int(signal.SIGKILL), 0, 0, 0) == 0:
            if os.getppid() != parent:  # the parent died before prctl took effect
                os._exit(1)
            return
    import threading
    import time

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, name="ncs-sweep-parent-watch", daemon=True).start()


def _on_dask(tasks: list[Task], target: str, cfg: NeuronCoreConfig, check: bool | int,
             scheduler: str | None, connect_timeout: float
             ) -> Iterator[tuple[str, dict[str, Any]]]:
    try:
        from distributed import as_completed as dask_completed
    except ImportError as e:
        raise UnsupportedError("executor='dask' needs the optional dask.distributed package; "
                               "install it with: pip install 'neuroncore_sim[dask]'") from e
    if not scheduler:
        raise SweepError(expected("executor='dask'", "scheduler=ADDRESS of a running Dask "
                                  "scheduler (e.g. tcp://10.0.0.5:8786)", "no scheduler"))
    client = connect(scheduler, connect_timeout)
    lost: list[dict[str, Any]] = []
    with client:
        futures = {client.submit(run_point, target, p, cfg, check, key=f"ncs-sweep-{key}",
                                 pure=False): (key, p) for key, p in tasks}
        try:
            for fut in dask_completed(futures):
                try:
                    row = fut.result()
                except Exception:  # KilledWorker and the like: the cluster lost the point
                    lost.append(futures[fut][1])
                    continue
                yield futures[fut][0], row
        except BaseException:  # Ctrl-C, an error: the cluster drops the points not done
            client.cancel(list(futures))
            raise
    if lost:
        raise SweepError(_lost_message(lost, "the Dask cluster lost the worker running them"))


def _lost_message(lost: list[dict[str, Any]], why: str) -> str:
    return (f"{len(lost)} point(s) did not finish: {why}; first: {lost[0]}. Finished points "
            "are kept when the sweep has an out folder: run it again with the same out to "
            "resume, or with workers=1 to see the failing point's error")


# --- files, progress and the table ---------------------------------------------------------------

def _bar(progress: bool | None, total: int, initial: int) -> Any:
    from tqdm import tqdm

    show = sys.stderr.isatty() if progress is None else progress
    return tqdm(total=total, initial=initial, disable=not show, unit="point", desc="sweep",
                file=sys.stderr, dynamic_ncols=True)
