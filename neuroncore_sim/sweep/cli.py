"""``neuroncore-sim sweep``: the command line of :func:`neuroncore_sim.sweep.run.sweep`.

    neuroncore-sim sweep kernels/matmul_blocked.py --param n_block=1,2,4,8 --param N=2048,4096 \\
        --workers 2 --out out/sweep

prints the ranked table (per problem, i.e. per value of the example_inputs parameters: fastest
first, best marked ``*``) and writes ``points.jsonl``, ``sweep.csv`` and ``sweep.png`` under
``--out``, with ``best/``: the best point's full report (summary, events, timeline, trace).
Exit status: 0 when at least one point ran,
1 when every point failed (or the sweep could not run), 2 when the command line is wrong, 130
when interrupted (Ctrl-C; the finished points stay saved).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path
from typing import Any, Callable

from ..errors import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK
from .kernel_file import UsageError
from .dask_connect import DEFAULT_CONNECT_TIMEOUT_S, check_timeout
from .point import SweepError
from .points_file import DamagedPointsWarning
from ..config import load_config
from ..report.launch_files import write_launch_files
from ..simulate import simulate
from .point import load_target, point_launch
from .run import PLOT_FILE, POINTS_FILE, TABLE_FILE, expand, sweep
from .table import ENGINES

#: Folder of ``--out`` holding the best point's full report.
BEST_FOLDER = "best"
#: Characters of an error message shown in the table (the full text is in sweep.csv).
_ERROR_WIDTH = 60


def at_least(minimum: int) -> Callable[[str], int]:
    """An argparse ``type=``: an integer >= ``minimum`` (else a usage error, exit status 2)."""
    def parse(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            n = minimum - 1
        if n < minimum:
            raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}, found {text!r}")
        return n
    return parse


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """Register the ``sweep`` subcommand (``common``: the --config/--debug options)."""
    p = sub.add_parser(
        "sweep", parents=[common], help="time one kernel over a grid of parameters and rank them",
        description="Simulate FILE.py's KERNEL at every combination of the --param values "
                    "(names of example_inputs() parameters, config.<field> hardware fields, or "
                    "kernel keywords), in parallel, and print the points fastest first. Timing "
                    "only unless --check is given.")
    p.add_argument("target", metavar="FILE.py[::KERNEL]",
                   help="kernel file and kernel name (KERNEL may be left out when the file has "
                        "one default kernel)")
    p.add_argument("--param", action="append", default=[], metavar="NAME=V1,V2,...",
                   help="a parameter and its values (repeatable); numbers are parsed as int or "
                        "float, anything else is a string")
    p.add_argument("--check", action="store_true",
                   help="also compute every point's values and compare them with the file's "
                        "reference() (slow for large shapes)")
    p.add_argument("--check-max-elements", type=at_least(0), default=None, metavar="N",
                   help="check only points whose inputs hold at most N elements in all")
    p.add_argument("--workers", type=at_least(1), default=None, metavar="N",
                   help="local worker processes (default: one per CPU; 1 = in this process)")
    p.add_argument("--executor", choices=("local", "dask"), default="local",
                   help="where points run: local processes, or a Dask cluster (--scheduler)")
    p.add_argument("--scheduler", metavar="ADDRESS", default=None,
                   help="Dask scheduler address for --executor dask, e.g. tcp://10.0.0.5:8786")
    p.add_argument("--connect-timeout", metavar="SECONDS", type=_seconds,
                   default=DEFAULT_CONNECT_TIMEOUT_S,
                   help="with --executor dask: seconds the scheduler has to answer (default "
                        f"{DEFAULT_CONNECT_TIMEOUT_S:g})")
    p.add_argument("--out", metavar="DIR", type=Path, default=None,
                   help=f"write {POINTS_FILE} (one line per finished point; a second run with "
                        f"the same DIR resumes), {TABLE_FILE}, {PLOT_FILE} and {BEST_FOLDER}/ "
                        "(the best point's full report: summary, timeline, trace) under DIR")
    p.add_argument("--top", type=at_least(1), default=20, metavar="N",
                   help="rows of the table to print per problem (points with the same "
                        "example_inputs parameters; default 20)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def _seconds(text: str) -> float:
    """An argparse ``type=``: a finite number of seconds > 0."""
    try:
        return check_timeout(text)
    except SweepError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds > 0, found {text!r}")


def parse_params(specs: list[str]) -> dict[str, list[Any]]:
    """``["n_block=1,2", "dtype=bfloat16"]`` -> ``{"n_block": [1, 2], "dtype": ["bfloat16"]}``."""
    params: dict[str, list[Any]] = {}
    for spec in specs:
        name, sep, values = spec.partition("=")
        name = name.strip()
        if not sep or not name or not values.strip():
            raise UsageError(f"--param: expected NAME=V1,V2,..., found {spec!r}")
        if name in params:
            raise UsageError(f"--param {name}: given twice; list all its values in one --param")
        items = [v.strip() for v in values.split(",")]
        if "" in items:  # `n=1,,2` or `n=1,`: a typo, not an empty-string point
            raise UsageError(f"--param {name}: expected values separated by single commas, "
                             f"found an empty value in {values!r}")
        params[name] = [_value(v) for v in items]
    if not params:
        raise UsageError("sweep: expected at least one --param NAME=V1,V2,...")
    return params


def _value(text: str) -> Any:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def run(args: argparse.Namespace) -> int:
    """Run the sweep the parsed command line describes; print the table; return the status."""
    params = parse_params(args.param)
    if args.check and args.check_max_elements is not None:
        raise UsageError("give --check or --check-max-elements, not both")
    check = args.check_max_elements if args.check_max_elements is not None else args.check
    if args.executor == "dask" and not args.scheduler:
        raise UsageError("--executor dask: expected --scheduler ADDRESS of a running Dask "
                         "scheduler (e.g. tcp://10.0.0.5:8786), found none")
    if args.scheduler and args.executor != "dask":  # not silently ignored
        raise UsageError(f"--scheduler {args.scheduler}: expected with --executor dask, found "
                         f"--executor {args.executor} (points run on this machine)")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", DamagedPointsWarning)
            table = sweep(args.target, params,
                          config=getattr(args, "resolved_config", None) or args.config or "trn1",
                          check=check, workers=args.workers, out=args.out,
                          executor=args.executor, scheduler=args.scheduler,
                          progress=False if args.no_progress else None,
                          connect_timeout=args.connect_timeout)
        _show(caught)
    except KeyboardInterrupt:
        saved = (f"; finished points are saved in {args.out}/{POINTS_FILE}: run the same "
                 "command again to resume" if args.out else "")
        print(f"neuroncore-sim: sweep interrupted{saved}", file=sys.stderr)
        return EXIT_INTERRUPTED
    print(format_table(table, list(params), args.top))
    flagged = table[table["flag"].notna()]
    if len(flagged):
        first = flagged.iloc[0]
        print(f"{len(flagged)} of {len(table)} point(s) flagged, never ranked best; point "
              f"{first['point']}: {first['flag']}")
    failed = table[table["error"].notna()]
    if len(failed):
        first = failed.iloc[0]
        print(f"{len(failed)} of {len(table)} point(s) failed; point {first['point']}: "
              f"{first['error']}")
    if args.out is not None:
        print(f"wrote {args.out}/{POINTS_FILE}, {TABLE_FILE} and {PLOT_FILE}")
        write_best(args, table, params)
    return EXIT_FAILED if len(failed) == len(table) else EXIT_OK


def write_best(args: argparse.Namespace, table: Any, params: dict[str, list[Any]]) -> None:
    """Under ``--out``, the full report of each problem's best point (the files of
    ``profile --out``: summary, events, timeline, trace) in ``best/`` (``best_problem<N>/``
    when the sweep holds several problems). The point is timed again in this process: a sweep
    keeps only its measured numbers."""
    best = table[table["best"]]
    grid = expand(params)
    kt = load_target(args.target)
    base = load_config(getattr(args, "resolved_config", None) or args.config or "trn1")
    several = table["problem"].nunique() > 1
    for _, row in best.iterrows():
        point = grid[int(row["point"])]
        pos, kw, kernel_kw, cfg = point_launch(kt, point, base)
        res = simulate(kt.kernel, *pos, grid=getattr(kt.module, "GRID", ()), config=cfg,
                       functional=False, **kw, **kernel_kw)
        folder = Path(args.out) / (f"{BEST_FOLDER}_problem{int(row['problem'])}" if several
                                   else BEST_FOLDER)
        write_launch_files(res, folder)
        given = ", ".join(f"{k}={v}" for k, v in point.items())
        print(f"wrote {folder}/: the full report of the best point ({given})")


def _show(caught: list[warnings.WarningMessage]) -> None:
    """Warnings the sweep gave: a damaged points file as one line of ours, others as Python
    shows them."""
    for w in caught:
        if issubclass(w.category, DamagedPointsWarning):
            print(f"neuroncore-sim: warning: {w.message}", file=sys.stderr)
        else:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno, w.file, w.line)


def format_table(table: Any, params: list[str], top: int) -> str:
    """The first ``top`` rows of each problem (points with the same input parameters) as text:
    parameters, latency, busy %, DMA use, bottleneck, the result check when there was one, and
    the flag and error (cut short) of flagged and failed points. Problems are separated by a
    blank line."""
    shown = table.groupby("problem", sort=False).head(top).copy()
    shown.insert(0, "", ["*" if b else "" for b in shown["best"]])
    cols = ["", "point", *params, "latency_us", *(f"{e}_busy_pct" for e in ENGINES),
            "dma_pct_of_peak", "bottleneck", "instructions"]
    if shown["match"].notna().any():
        cols += ["match", "max_abs_err"]
    for col in ("flag", "error"):
        if shown[col].notna().any():
            shown[col] = [e if not isinstance(e, str) or len(e) <= _ERROR_WIDTH
                          else e[:_ERROR_WIDTH - 3] + "..." for e in shown[col]]
            cols.append(col)
    problems = shown["problem"].tolist()
    shown = shown[cols].rename(columns={f"{e}_busy_pct": f"{e}%" for e in ENGINES}
                               | {"dma_pct_of_peak": "dma_bw%"})
    one_decimal = {c: "{:,.1f}".format for c in shown.columns
                   if c.endswith("%") or c == "latency_us"}
    lines = shown.to_string(index=False, na_rep="", formatters={
        **one_decimal, "max_abs_err": "{:.3g}".format}).splitlines()
    text = [lines[0]]
    for i, line in enumerate(lines[1:]):
        if i and problems[i] != problems[i - 1]:
            text.append("")
        text.append(line)
    hidden = len(table) - len(shown)
    more = (f"\n({hidden} more rows; --top N to show N rows per problem)" if hidden else "")
    return "\n".join(text) + more
