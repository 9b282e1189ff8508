"""What the commands of ``neuroncore-sim`` share: a launch's report on stdout and under
``--out``, tracebacks shown as Python would, progress bars."""

from __future__ import annotations

import argparse
import sys
import traceback
from typing import Any

from .. import report
from ..errors import filtering_tracebacks, hide_package_frames
from ..report import explorer
from ..report.launch_files import launch_folder, write_launch_files
from ..report.plot import TimelineWindowError, window_span
from ..report.progress import log_lines
from ..sweep import cli as sweep_cli
from ..result import SimResult
from ..sweep.kernel_file import UsageError

#: Folder of each launch's --out folder that holds Neuron Explorer's Parquet tables.
EXPLORER_FOLDER = "parquet"


def print_traceback(error: BaseException, debug: bool) -> None:
    """``error`` as Python shows it: with ``debug`` every frame, else the frames outside this
    package (the user's code and the error line)."""
    debug = debug or not filtering_tracebacks()  # NEURONCORE_SIM_TRACEBACK_FILTERING=off
    tb = error.__traceback__
    if not debug:
        hide_package_frames(error)
        tb = error.__traceback__
    traceback.print_exception(type(error), error, tb)
    if tb is None and not debug:  # nothing of the user's raised it
        print("neuroncore-sim: this is an internal error of neuroncore_sim; --debug shows "
              "where it was raised", file=sys.stderr)

def progress(args: argparse.Namespace) -> Any:
    """Progress bars on a terminal, a line now and then on a log or pipe (a launch running
    long), nothing with --no-progress."""
    if args.no_progress:
        return False
    return True if sys.stderr.isatty() else log_lines


def parse_window(text: str) -> tuple[float | None, float | None]:
    """An argparse ``type=``: ``START:END`` in µs (either may be left out) -> ns."""
    start, sep, end = text.partition(":")
    try:
        if not sep:
            raise ValueError
        bounds = tuple(float(v) * 1000 if v.strip() else None for v in (start, end))
    except ValueError:
        bounds = ()
    if len(bounds) != 2 or any(b is not None and not (0 <= b < float("inf")) for b in bounds) \
            or (None not in bounds and bounds[0] >= bounds[1]) or bounds == (None, None):
        raise argparse.ArgumentTypeError(
            f"expected START:END in µs with 0 <= START < END (either may be left out, as in "
            f"20: or :35.5), found {text!r}")
    return bounds  # type: ignore[return-value]


def check_window(res: SimResult, args: argparse.Namespace) -> None:
    """A ``--window`` that starts at or after the launch's end is a usage error (said before
    any file of the launch is written)."""
    if getattr(args, "window", None) is not None:
        try:
            window_span(args.window, res.latency_ns)
        except TimelineWindowError as e:
            raise UsageError(f"--window: {e}") from None


def report_launch(res: SimResult, n: int, args: argparse.Namespace, label: str | None = None,
                  trace_max_events: int | None = None, heading: str | None = None,
                  quiet: bool = False) -> None:
    """Print one launch's summary (``quiet``: nothing on stdout); with ``--out``, write its
    files (as a set: all or none). ``heading`` replaces the kernel and entry point after
    ``== launch N:``."""
    name = label or res.program.name
    say = (lambda *_a, **_k: None) if quiet else print
    say(f"== launch {n}: " + (heading or (name if label else f"{name} ({res.entry})")))
    say(report.summary_text(res), end="")
    if args.out is None:
        return
    folder = launch_folder(args.out, n, name)
    extra = {}
    if explorer.available():  # Neuron Explorer's tables: optional (pyarrow)
        extra[EXPLORER_FOLDER + "/"] = lambda tmp: explorer.write_tables(res, tmp)
    write_launch_files(res, folder, trace_max_events, extra, window=getattr(args, "window", None))
    if trace_max_events is not None and len(res.timing.events) > trace_max_events:
        say(f"   trace.json: first {trace_max_events:,} of {len(res.timing.events):,} events "
            "(--trace-max-events)")
    shown = launch_folder(args.out_shown, n, name)  # as the user gave --out
    if not extra:
        print(f"neuroncore-sim: note: {shown}/{EXPLORER_FOLDER}/ not written: "
              f"{explorer.MISSING_PYARROW}", file=sys.stderr)
    say(f"   wrote {shown}/")


def one_value_params(specs: list[str]) -> dict:
    """``--param`` values of profile and compare: one value per name (several are a sweep)."""
    if not specs:
        return {}
    params = sweep_cli.parse_params(specs)
    for name, values in params.items():
        if len(values) != 1:
            raise UsageError(f"--param {name}: expected one value (NAME=VALUE), found "
                             f"{len(values)}; to time several, use `neuroncore-sim sweep`")
    return {name: values[0] for name, values in params.items()}
