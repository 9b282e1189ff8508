"""The ``neuroncore-sim`` command line: profile NKI kernels without hardware.

Five subcommands, each a module of this package but ``profile``, which lives here::

    neuroncore-sim run my_script.py [ARGS...]          # time every kernel launch of a script
    neuroncore-sim profile kernels/tensor_add.py::kernel   # time one sample kernel
    neuroncore-sim sweep kernels/matmul_blocked.py --param n_block=1,2,4   # rank a grid
    neuroncore-sim compare kernels/matmul_bf16.py --config-b inf2   # what changed, A vs B
    neuroncore-sim calibrate emit suite/     # fit the model to your hardware (docs/calibrate.md)

``--out DIR`` writes, per launch, ``summary.json``, ``summary.txt``, ``events.csv``,
``timeline.png``, ``trace.json`` (open in https://ui.perfetto.dev) and ``parquet/``: the profile
as Neuron Explorer's Parquet tables (``neuroncore_sim.report.explorer``; needs pyarrow). Exit status: 0 success,
1 the kernel (or the script) failed, 2 the command line was wrong; ``run`` passes on the
status a script gives ``sys.exit``. Options of ``run`` go before the script name: the words
after it are the script's.
"""

from __future__ import annotations

import _thread
import argparse
import functools
import os
import sys
import threading
import traceback
from pathlib import Path
from typing import Sequence

from .. import __version__ as package_version
from ..config import MODEL_VERSION, NeuronCoreConfig, load_config, with_compile_options
from ..errors import (EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, ConfigError,
                      SimulatorError, debug_from_environment, show_full_tracebacks)
from ..report.launch_files import OutputPlaceError, check_launch_folder, check_out_dir, launch_folder
from ..simulate import simulate
from ..calibrate import cli as calibrate_cli
from ..sweep import cli as sweep_cli
from ..sweep.kernel_file import (UsageError, example_inputs, find_kernel, load_kernel_file,
                                 max_abs_error, split_target)
from ..sweep.point import load_target, point_launch, reference_kwargs
from . import compare as compare_command
from . import run as run_command
from .common import (EXPLORER_FOLDER, check_window, one_value_params, parse_window,
                     print_traceback, progress, report_launch)

__all__ = ["main", "EXPLORER_FOLDER"]


def _parser() -> tuple[argparse.ArgumentParser, dict[str, str | None]]:
    """The parser, and the options of ``run`` (option string -> its value's metavar, None for
    a flag) for telling them apart from the script's arguments."""
    base = argparse.ArgumentParser(add_help=False)
    shared = [base.add_argument("--config", metavar="NAME|FILE.toml", default=None,
                      help="hardware to time on: a preset (trn1 = Trainium1, the default; "
                           "inf2 = Inferentia2) or a TOML file overriding config fields"),
              base.add_argument("--compiler-option", metavar="NAME=VALUE", action="append",
                                default=[], dest="compiler_options",
                                help="a compile option, like neuronx-cc's flags: dge=false "
                                     "(neuronx-cc disable-dge), auto_cast=none, or a pass switch "
                                     "(fold_psum_zeros, hoist_invariants, ...); repeatable; "
                                     "see docs/model.md, 'Compile stage'"),
              base.add_argument("--debug", action="store_true",
                                help="show the full Python traceback when a kernel or the "
                                     "script fails")]
    common = argparse.ArgumentParser(add_help=False, parents=[base])
    shared.append(common.add_argument("--timing-only", action="store_true",
                        help="skip computing output values (faster; timing does not depend on "
                             "input values; a script's kernels then return None)"))
    shared.append(common.add_argument("--out", metavar="DIR", type=Path, default=None,
                        help="also write per launch: summary.json, summary.txt, events.csv, "
                             "timeline.png, trace.json (Perfetto/Chrome trace) and parquet/ "
                             "(Neuron Explorer's tables, with pyarrow) under DIR"))
    shared.append(common.add_argument("--trace-max-events", metavar="N", type=sweep_cli.at_least(0),
                        default=None,
                        help="with --out: keep only the first N events (in time) in trace.json "
                             "(about 220 bytes each; default: all)"))
    shared.append(common.add_argument("--window", metavar="START:END", type=parse_window,
                        default=None,
                        help="with --out: draw only this part of each launch in timeline.png, "
                             "in µs from the launch's start (20:35.5; 20: to the end; :5 from "
                             "the start), at the image's full resolution"))
    shared.append(common.add_argument("--no-progress", action="store_true",
                        help="no progress bars (they are drawn on stderr when it is a terminal "
                             "and a launch takes more than half a second)"))
    p = argparse.ArgumentParser(
        prog="neuroncore-sim",
        description="Simulate NKI kernels on a NeuronCore-v2 (Trainium1 / Inferentia2) and "
                    "report how long they would take and where the time goes.")
    p.add_argument("--version", action="version",
                   version=f"neuroncore-sim {package_version} (timing model {MODEL_VERSION}; "
                           "NeuronCore-v2: trn1, inf2)")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    run = sub.add_parser(
        "run", parents=[common], help="run a Python script and time every kernel it launches",
        description="Run SCRIPT.py as if with `python SCRIPT.py ARGS...`, with `neuronxcc.nki` "
                    "imports pointing to the simulator. Every kernel launch is simulated and "
                    "timed, whichever entry point made it (an nki.jit / nki.trace / "
                    "nki.baremetal kernel call, kernel[grid](...), nki.simulate_kernel, "
                    "nki.benchmark, nki.profile); a short summary per launch is printed at the "
                    "end. Options of run go before SCRIPT.py: everything after it is the "
                    "script's.")
    shared.append(run.add_argument(
        "--quiet", action="store_true",
        help="print only the final table of launches (not each launch's summary)"))
    shared.append(run.add_argument(
        "--max-launches", metavar="N", type=sweep_cli.at_least(1), default=None,
        help="profile only the first N distinct launches; later ones still run (with their "
             "values, unless --timing-only) but are not timed or reported"))
    run.add_argument("script", metavar="SCRIPT.py", help="the Python script to run")
    # main() hands the words after SCRIPT.py to the script itself (argparse would drop a "--").
    run.add_argument("args", nargs="*", metavar="ARGS",
                     help="arguments passed to the script (its sys.argv[1:]), all of them, "
                          "also those that look like options of run")
    prof = sub.add_parser(
        "profile", parents=[common], help="time one kernel of a kernel file on its example inputs",
        description="Load FILE.py, call its example_inputs() (with the --param values it "
                    "takes), launch KERNEL on them (with the file's GRID, if any) and print "
                    "where the time goes.")
    prof.add_argument("target", metavar="FILE.py[::KERNEL]",
                      help="kernel file and kernel name, e.g. kernels/tensor_add.py::kernel "
                           "(KERNEL may be left out when the file has a `kernel`)")
    prof.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                      help="a parameter of the launch, as for sweep but one value: a parameter "
                           "of example_inputs (M=4096), config.<field>, or a kernel keyword; "
                           "repeatable")
    sweep_cli.add_parser(sub, base)
    compare_command.add_parser(sub, base)
    calibrate_cli.add_calibrate_parser(sub, base)
    run_options: dict[str, str | None] = {"-h": None, "--help": None}
    for action in shared:
        for option in action.option_strings:
            run_options[option] = action.metavar if action.nargs != 0 else None
    return p, run_options


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``neuroncore-sim`` and ``python -m neuroncore_sim``; returns the exit
    status."""
    previous_hook = sys.unraisablehook
    redeliveries: list[threading.Timer] = []
    sys.unraisablehook = functools.partial(_redeliver_interrupt, previous_hook, redeliveries)
    try:
        status = _main(argv)
    except KeyboardInterrupt:  # Ctrl-C: one line; files under --out are whole sets or absent
        print("neuroncore-sim: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # stdout was piped to a reader that stopped early (`| head`): not a failure of ours.
        # Point stdout at /dev/null so the interpreter's final flush does not raise again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return EXIT_OK
    finally:
        sys.unraisablehook = previous_hook
        for timer in redeliveries:
            timer.cancel()
    if redeliveries:  # a Ctrl-C was ignored and the command ended before it came again
        print("neuroncore-sim: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    return status


def _redeliver_interrupt(previous_hook, redeliveries: list, unraisable) -> None:
    """``sys.unraisablehook`` while the command runs: a Ctrl-C that lands in a callback whose
    exceptions Python ignores (a weakref callback, a ``__del__``: "Exception ignored in ...")
    is delivered again to the main thread, where the command stops as for any Ctrl-C; before
    this, the command went on and could end with status 0. Other unraisable exceptions go to
    the hook that was in place (``previous_hook``)."""
    if issubclass(unraisable.exc_type, KeyboardInterrupt):
        # From another thread, a moment later: raised here (or in the callback still
        # running), it would be ignored again.
        timer = threading.Timer(0.05, _thread.interrupt_main)
        redeliveries.append(timer)
        timer.start()
        return
    previous_hook(unraisable)


def _main(argv: Sequence[str] | None) -> int:
    parser, run_options = _parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    script_args = None
    if argv[:1] == ["run"]:  # the script's arguments are its own: keep them from argparse
        at = run_command.script_position(argv[1:], run_options)
        if at is not None:
            argv, script_args = argv[:at + 2], argv[at + 2:]
    try:
        args, unknown = parser.parse_known_args(argv)
        if unknown:  # said with the usage of the command they were given to, not the top's
            commands = next(a for a in parser._actions if a.dest == "command").choices
            commands[args.command].error(f"unrecognized arguments: {' '.join(unknown)}")
    except SystemExit as e:  # argparse exits on --help (0) and on bad usage (2)
        return int(e.code or 0)
    if getattr(args, "window", None) is not None and args.out is None:
        print("neuroncore-sim: error: --window: expected with --out (it sets the part of each "
              "launch that timeline.png draws), found no --out", file=sys.stderr)
        return EXIT_USAGE
    args.debug = args.debug or debug_from_environment()  # NEURONCORE_SIM_DEBUG=1
    show_full_tracebacks(args.debug)
    if script_args is not None:
        args.args = script_args
        run_command.note_run_options_given_to_script(args.script, script_args, run_options)
    try:
        # (an empty --config is an error too, not a silent trn1)
        cfg = load_config(args.config) if args.config is not None else None
        if args.compiler_options:
            cfg = with_compile_options(cfg, args.compiler_options)
        args.resolved_config = cfg  # (a sweep takes the options too)
        if args.command in ("run", "profile", "compare") and args.out is not None:
            check_out_dir(args.out)  # before any work: a bad place fails at once
            # against the folder the command started in, even if a script changes directory
            args.out_shown, args.out = args.out, Path(os.path.abspath(args.out))
    except (ConfigError, OutputPlaceError) as e:  # usage errors
        print(f"neuroncore-sim: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    try:
        if args.command == "run":
            return run_command.run(args, cfg)
        if args.command == "sweep":
            return sweep_cli.run(args)
        if args.command == "calibrate":
            return calibrate_cli.run(args)
        if args.command == "compare":
            return compare_command.run(args)
        return _profile(args, cfg)
    except UsageError as e:
        print(f"neuroncore-sim: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except SimulatorError as e:
        if args.debug:
            traceback.print_exc()
        print(f"error: {e}", file=sys.stderr)
        return EXIT_FAILED
    except BrokenPipeError:  # main() handles it: stdout's reader stopped early
        raise
    except Exception as e:  # the kernel's own code failed (or a bug of ours): its frames only
        print_traceback(e, args.debug)
        return EXIT_FAILED
    except KeyboardInterrupt:
        if args.debug:
            traceback.print_exc()
        print("neuroncore-sim: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        show_full_tracebacks(False)



# --- profile -------------------------------------------------------------------------------------

def _profile(args: argparse.Namespace, cfg: NeuronCoreConfig | None) -> int:
    file, kname = split_target(args.target)
    point = one_value_params(args.param)
    kernel_kw: dict = {}
    if point:  # routed as a sweep routes a point: example_inputs, config.<field>, kernel keyword
        kt = load_target(args.target)
        module, kernel, name = kt.module, kt.kernel, kt.target.rpartition("::")[2]
        pos, kw, kernel_kw, cfg = point_launch(kt, point, cfg or load_config("trn1"))
    else:
        module = load_kernel_file(file)
        name, kernel = find_kernel(module, kname)
        pos, kw = example_inputs(module, file)
    if args.out is not None:  # an unwritable launch folder fails before the simulation
        check_launch_folder(launch_folder(args.out, 1, name))
    res = simulate(kernel, *pos, grid=getattr(module, "GRID", ()), config=cfg,
                   functional=not args.timing_only, progress=progress(args), **kw, **kernel_kw)
    check_window(res, args)
    given = ", ".join(f"{k}={v}" for k, v in point.items())
    report_launch(res, 1, args, label=name, trace_max_events=args.trace_max_events,
                  heading=f"{name} ({given})" if point else None)
    reference = getattr(module, "reference", None)
    if args.timing_only or not callable(reference) or not res.outputs:
        return EXIT_OK
    ref_kw = reference_kwargs(kt, kernel_kw) if point else {}
    error = max_abs_error(res.outputs, reference(*pos, **kw, **ref_kw))
    print(f"result check: max abs error vs {file}'s reference = {error:.3g}")
    return EXIT_OK
