"""The ``neuroncore-sim`` command line: profile NKI kernels without hardware.

Three subcommands::

    neuroncore-sim run my_script.py [ARGS...]          # time every kernel launch of a script
    neuroncore-sim profile kernels/tensor_add.py::kernel   # time one sample kernel
    neuroncore-sim sweep kernels/matmul_blocked.py --param n_block=1,2,4   # rank a grid

``--out DIR`` writes, per launch, ``summary.json``, ``summary.txt``, ``events.csv``,
``timeline.png`` and ``trace.json`` (open in https://ui.perfetto.dev). Exit status: 0 success,
1 the kernel (or the script) failed, 2 the command line was wrong.
"""

from __future__ import annotations

import argparse
import json
import re
import runpy
import sys
import traceback
from pathlib import Path
from typing import Sequence

from . import report
from .report import chrome_trace, plot
from .sweep import cli as sweep_cli
from .alias import install_neuronxcc_alias
from .config import NeuronCoreConfig, load_config
from .errors import ConfigError, SimulatorError
from .sweep.kernel_file import (UsageError, example_inputs, find_kernel, load_kernel_file,
                                max_abs_error, split_target)
from .result import SimResult
from .simulate import record_launches, simulate

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def _parser() -> argparse.ArgumentParser:
    base = argparse.ArgumentParser(add_help=False)
    base.add_argument("--config", metavar="NAME|FILE.toml", default=None,
                      help="hardware to time on: a preset (trn1 = Trainium1, the default; "
                           "inf2 = Inferentia2) or a TOML file overriding config fields")
    base.add_argument("--debug", action="store_true",
                      help="show the full Python traceback when a kernel fails")
    common = argparse.ArgumentParser(add_help=False, parents=[base])
    common.add_argument("--timing-only", action="store_true",
                        help="skip computing output values (faster; timing does not depend on "
                             "input values; a script's kernels then return None)")
    common.add_argument("--out", metavar="DIR", type=Path, default=None,
                        help="also write per launch: summary.json, summary.txt, events.csv, "
                             "timeline.png and trace.json (Perfetto/Chrome trace) under DIR")
    common.add_argument("--trace-max-events", metavar="N", type=sweep_cli.at_least(0),
                        default=None,
                        help="with --out: keep only the first N events (in time) in trace.json "
                             "(about 220 bytes each; default: all)")
    common.add_argument("--no-progress", action="store_true",
                        help="no progress bars (they are drawn on stderr when it is a terminal "
                             "and a launch takes more than half a second)")
    p = argparse.ArgumentParser(
        prog="neuroncore-sim",
        description="Simulate NKI kernels on a NeuronCore-v2 (Trainium1 / Inferentia2) and "
                    "report how long they would take and where the time goes.")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    run = sub.add_parser(
        "run", parents=[common], help="run a Python script and time every kernel it launches",
        description="Run SCRIPT.py as if with `python SCRIPT.py ARGS...`, with `neuronxcc.nki` "
                    "imports pointing to the simulator. Every call of an @nki.jit kernel is "
                    "simulated and timed; a short summary per launch is printed at the end.")
    run.add_argument("script", metavar="SCRIPT.py", help="the Python script to run")
    run.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS",
                     help="arguments passed to the script (its sys.argv[1:])")
    prof = sub.add_parser(
        "profile", parents=[common], help="time one kernel of a kernel file on its example inputs",
        description="Load FILE.py, call its example_inputs(), launch KERNEL on them (with the "
                    "file's GRID, if any) and print where the time goes.")
    prof.add_argument("target", metavar="FILE.py[::KERNEL]",
                      help="kernel file and kernel name, e.g. kernels/tensor_add.py::kernel "
                           "(KERNEL may be left out when the file has a `kernel`)")
    sweep_cli.add_parser(sub, base)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``neuroncore-sim`` and ``python -m neuroncore_sim``; returns the exit
    status."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # argparse exits on --help (0) and on bad usage (2)
        return int(e.code or 0)
    try:
        cfg = load_config(args.config) if args.config else None
    except ConfigError as e:  # --config names no preset or a bad TOML file: a usage error
        print(f"neuroncore-sim: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    try:
        if args.command == "run":
            return _run(args, cfg)
        if args.command == "sweep":
            return sweep_cli.run(args)
        return _profile(args, cfg)
    except UsageError as e:
        print(f"neuroncore-sim: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except SimulatorError as e:
        if args.debug:
            traceback.print_exc()
        print(f"error: {e}", file=sys.stderr)
        return EXIT_FAILED


def _progress(args: argparse.Namespace) -> bool:
    """Progress bars on unless --no-progress or stderr is not a terminal (logs, pipes)."""
    return not args.no_progress and sys.stderr.isatty()


# --- run -----------------------------------------------------------------------------------------

def _run(args: argparse.Namespace, cfg: NeuronCoreConfig | None) -> int:
    script = Path(args.script)
    if not script.is_file():
        raise UsageError(f"script not found: {script}")
    install_neuronxcc_alias()
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [str(script)] + list(args.args)
    sys.path.insert(0, str(script.resolve().parent))  # as `python SCRIPT.py` would
    status = EXIT_OK
    failure: SimulatorError | None = None
    try:
        with record_launches(config=cfg, functional=not args.timing_only,
                             progress=_progress(args)) as launches:
            try:
                runpy.run_path(str(script), run_name="__main__")
            except SystemExit as e:  # the script's own exit status is ours
                status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            except SimulatorError as e:  # reported last, after the launches that did finish
                failure = e
            except Exception:  # a bug in the user's script: show it as Python would
                traceback.print_exc()
                status = EXIT_FAILED
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
    for n, res in enumerate(launches, 1):
        _report(res, n, args.out, trace_max_events=args.trace_max_events)
    if failure is not None:
        raise failure
    if not launches:
        print("no kernel launches recorded (the script called no @nki.jit kernel)")
    return status


# --- profile -------------------------------------------------------------------------------------

def _profile(args: argparse.Namespace, cfg: NeuronCoreConfig | None) -> int:
    file, kname = split_target(args.target)
    module = load_kernel_file(file)
    name, kernel = find_kernel(module, kname)
    pos, kw = example_inputs(module, file)
    res = simulate(kernel, *pos, grid=getattr(module, "GRID", ()), config=cfg,
                   functional=not args.timing_only, progress=_progress(args), **kw)
    _report(res, 1, args.out, label=name, trace_max_events=args.trace_max_events)
    reference = getattr(module, "reference", None)
    if args.timing_only or not callable(reference) or not res.outputs:
        return EXIT_OK
    error = max_abs_error(res.outputs, reference(*pos, **kw))
    print(f"result check: max abs error vs {file}'s reference = {error:.3g}")
    return EXIT_OK


# --- output --------------------------------------------------------------------------------------

def _report(res: SimResult, n: int, out: Path | None, label: str | None = None,
            trace_max_events: int | None = None) -> None:
    """Print one launch's summary; with ``out``, write its files."""
    name = label or res.program.name
    print(f"== launch {n}: {name}")
    print(report.summary_text(res), end="")
    if out is None:
        return
    folder = out / f"launch{n}_{re.sub(r'[^A-Za-z0-9_.-]', '_', name)}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "summary.json").write_text(json.dumps(res.summary(), indent=2) + "\n")
    (folder / "summary.txt").write_text(report.full_text(res))
    res.events.to_csv(folder / "events.csv", index=False)
    chrome_trace.write(res, folder / "trace.json", max_events=trace_max_events)
    if trace_max_events is not None and len(res.timing.events) > trace_max_events:
        print(f"   trace.json: first {trace_max_events:,} of {len(res.timing.events):,} events "
              "(--trace-max-events)")
    plot.save_timeline(res, folder / "timeline.png")
    print(f"   wrote {folder}/")
