"""The ``neuroncore-sim`` command line: profile NKI kernels without hardware.

Four subcommands::

    neuroncore-sim run my_script.py [ARGS...]          # time every kernel launch of a script
    neuroncore-sim profile kernels/tensor_add.py::kernel   # time one sample kernel
    neuroncore-sim sweep kernels/matmul_blocked.py --param n_block=1,2,4   # rank a grid
    neuroncore-sim calibrate emit suite/     # fit the model to your hardware (docs/calibrate.md)

``--out DIR`` writes, per launch, ``summary.json``, ``summary.txt``, ``events.csv``,
``timeline.png``, ``trace.json`` (open in https://ui.perfetto.dev) and ``parquet/``: the profile
as Neuron Explorer's Parquet tables (``neuroncore_sim.report.explorer``; needs pyarrow). Exit status: 0 success,
1 the kernel (or the script) failed, 2 the command line was wrong; ``run`` passes on the
status a script gives ``sys.exit``. Options of ``run`` go before the script name: the words
after it are the script's.
"""

from __future__ import annotations

import argparse
import os
import runpy
import sys
import traceback
from pathlib import Path
from types import TracebackType
from typing import Any, Sequence

from . import report
from .report import explorer
from .report.progress import log_lines
from .report.launch_files import (OutputPlaceError, check_launch_folder, check_out_dir,
                                  launch_folder, write_launch_files)
from .sweep import cli as sweep_cli
from .calibrate import cli as calibrate_cli
from .alias import install_neuronxcc_alias
from .frameworks.device_alias import install_device_aliases
from .config import NeuronCoreConfig, load_config, with_compile_options
from .errors import (EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, ConfigError,
                     SimulatorError, debug_from_environment, filtering_tracebacks,
                     hide_package_frames, show_full_tracebacks)
from .sweep.kernel_file import (UsageError, example_inputs, find_kernel, load_kernel_file,
                                max_abs_error, split_target)
from .result import SimResult
from .frameworks.profile import profile_session
from .simulate import simulate



#: Folder of each launch's --out folder that holds Neuron Explorer's Parquet tables.
EXPLORER_FOLDER = "parquet"


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
    shared.append(common.add_argument("--no-progress", action="store_true",
                        help="no progress bars (they are drawn on stderr when it is a terminal "
                             "and a launch takes more than half a second)"))
    p = argparse.ArgumentParser(
        prog="neuroncore-sim",
        description="Simulate NKI kernels on a NeuronCore-v2 (Trainium1 / Inferentia2) and "
                    "report how long they would take and where the time goes.")
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
    run.add_argument("script", metavar="SCRIPT.py", help="the Python script to run")
    # main() hands the words after SCRIPT.py to the script itself (argparse would drop a "--").
    run.add_argument("args", nargs="*", metavar="ARGS",
                     help="arguments passed to the script (its sys.argv[1:]), all of them, "
                          "also those that look like options of run")
    prof = sub.add_parser(
        "profile", parents=[common], help="time one kernel of a kernel file on its example inputs",
        description="Load FILE.py, call its example_inputs(), launch KERNEL on them (with the "
                    "file's GRID, if any) and print where the time goes.")
    prof.add_argument("target", metavar="FILE.py[::KERNEL]",
                      help="kernel file and kernel name, e.g. kernels/tensor_add.py::kernel "
                           "(KERNEL may be left out when the file has a `kernel`)")
    sweep_cli.add_parser(sub, base)
    calibrate_cli.add_calibrate_parser(sub, base)
    run_options: dict[str, str | None] = {"-h": None, "--help": None}
    for action in shared:
        for option in action.option_strings:
            run_options[option] = action.metavar if action.nargs != 0 else None
    return p, run_options


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``neuroncore-sim`` and ``python -m neuroncore_sim``; returns the exit
    status."""
    try:
        return _main(argv)
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


def _main(argv: Sequence[str] | None) -> int:
    parser, run_options = _parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    script_args = None
    if argv[:1] == ["run"]:  # the script's arguments are its own: keep them from argparse
        at = _script_position(argv[1:], run_options)
        if at is not None:
            argv, script_args = argv[:at + 2], argv[at + 2:]
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # argparse exits on --help (0) and on bad usage (2)
        return int(e.code or 0)
    args.debug = args.debug or debug_from_environment()  # NEURONCORE_SIM_DEBUG=1
    show_full_tracebacks(args.debug)
    if script_args is not None:
        args.args = script_args
        _note_run_options_given_to_script(args.script, script_args, run_options)
    try:
        # (an empty --config is an error too, not a silent trn1)
        cfg = load_config(args.config) if args.config is not None else None
        if args.compiler_options:
            cfg = with_compile_options(cfg, args.compiler_options)
        args.resolved_config = cfg  # (a sweep takes the options too)
        if args.command in ("run", "profile") and args.out is not None:
            check_out_dir(args.out)  # before any work: a bad place fails at once
            # against the folder the command started in, even if a script changes directory
            args.out_shown, args.out = args.out, Path(os.path.abspath(args.out))
    except (ConfigError, OutputPlaceError) as e:  # usage errors
        print(f"neuroncore-sim: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    try:
        if args.command == "run":
            return _run(args, cfg)
        if args.command == "sweep":
            return sweep_cli.run(args)
        if args.command == "calibrate":
            return calibrate_cli.run(args)
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
        _print_traceback(e, args.debug)
        return EXIT_FAILED
    except KeyboardInterrupt:
        if args.debug:
            traceback.print_exc()
        print("neuroncore-sim: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        show_full_tracebacks(False)


def _print_traceback(error: BaseException, debug: bool) -> None:
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


def _progress(args: argparse.Namespace) -> Any:
    """Progress bars on a terminal, a line now and then on a log or pipe (a launch running
    long), nothing with --no-progress."""
    if args.no_progress:
        return False
    return True if sys.stderr.isatty() else log_lines


# --- run -----------------------------------------------------------------------------------------

def _script_position(tokens: list[str], run_options: dict[str, str | None]) -> int | None:
    """Index in ``tokens`` (the words after ``run``) of the script name: the first word that is
    neither an option of run nor an option's value (``--`` ends the options). None: no script.

    argparse alone cannot be trusted with this: it drops a ``--`` meant for the script."""
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token == "--":
            return i + 1 if i + 1 < len(tokens) else None
        if not token.startswith("-") or token == "-":
            return i
        name = token.split("=", 1)[0]
        # argparse accepts unambiguous prefixes of long options: so must this scan.
        matches = [o for o in run_options if o == name] or \
            [o for o in run_options if name.startswith("--") and o.startswith(name)]
        takes_value = len(matches) == 1 and run_options[matches[0]] is not None
        i += 2 if takes_value and "=" not in token else 1
    return None


def _note_run_options_given_to_script(script: str, script_args: list[str],
                                      run_options: dict[str, str | None]) -> None:
    """Say on stderr when an argument after the script name is also an option of run: it went
    to the script (as ``python SCRIPT.py ARGS`` would give it), and how to give it to run."""
    noted: set[str] = set()
    for arg in script_args:
        if arg == "--":  # what follows is plainly meant for the script
            break
        name = arg.split("=", 1)[0]
        if name not in run_options or name in noted:
            continue
        noted.add(name)
        metavar = run_options[name]
        usage = f"{name} {metavar} " if metavar else f"{name} "
        print(f"neuroncore-sim: note: {arg} after {script} was passed to the script (its "
              f"sys.argv), not to run; to give it to run, put it before the script name: "
              f"neuroncore-sim run {usage}{script} ...", file=sys.stderr)


def _run(args: argparse.Namespace, cfg: NeuronCoreConfig | None) -> int:
    script = Path(args.script)
    if script.is_dir():
        raise UsageError(f"{script}: expected a Python script (SCRIPT.py), found a directory")
    if not script.is_file():
        raise UsageError(f"script not found: {script}")
    install_neuronxcc_alias()
    install_device_aliases()  # torch_xla / torch_neuronx stand-ins, where PyTorch has none
    if args.out is not None:  # a launch folder left unwritable fails now, not after the run
        for folder in sorted(args.out.glob("launch*_*")):
            if folder.is_dir():  # (a file of that name is said if a launch needs the name)
                check_launch_folder(folder)
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [str(script)] + list(args.args)
    sys.path.insert(0, str(script.resolve().parent))  # as `python SCRIPT.py` would
    try:
        with profile_session(config=cfg, functional=not args.timing_only,
                             progress=_progress(args)) as session:
            ending = _run_script(script)
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
    launches = session.results
    if args.out is not None:  # every launch's folder checked before the first is written
        for n, res in enumerate(launches, 1):
            check_launch_folder(launch_folder(args.out, n, res.program.name))
    for n, res in enumerate(launches, 1):
        _report(res, n, args, trace_max_events=args.trace_max_events)
    if len(launches) > 1:  # where the device time of the whole run went, per kernel and layer
        print("== all launches (estimated device time per launch, kernel and layer)")
        print(session.table())
    return _script_ending(script, ending, len(launches), args.debug)


def _run_script(script: Path) -> BaseException | None:
    """Run the script as ``__main__``; what ended it early (None: it ran to its end)."""
    try:
        runpy.run_path(str(script), run_name="__main__")
    except (SystemExit, Exception) as e:  # reported after the launches that did finish
        return e
    return None


def _script_ending(script: Path, ending: BaseException | None, launches: int,
                   debug: bool) -> int:
    """Report how the script ended (after its launches' reports); the exit status."""
    done = (f"after {launches} kernel launch{'es' if launches != 1 else ''} (reported above)"
            if launches else "before any kernel launch finished")
    if isinstance(ending, SystemExit):  # sys.exit(...): the script's own exit status is ours
        code = ending.code
        if code is None or code == 0:
            ending = None
        else:
            if isinstance(code, int):
                code = int(code)  # sys.exit(True) is status 1
            else:  # sys.exit("message"): Python prints it, and the status is 1
                print(code, file=sys.stderr)
                code = EXIT_FAILED
            print(f"neuroncore-sim: {script.name} exited with status {code} {done}",
                  file=sys.stderr)
            return code
    if isinstance(ending, SimulatorError):  # a launch broke a rule: main() prints one line
        raise ending
    if ending is not None:  # a bug in the script: show it as Python would
        print(f"neuroncore-sim: {script.name} raised {type(ending).__name__} {done}; "
              "its traceback:", file=sys.stderr)
        if not debug:
            ending.__traceback__ = _from_script(ending, script)
        _print_traceback(ending, debug)
        return EXIT_FAILED
    if not launches:
        print(f"no kernel launches recorded: {script.name} ran to its end without launching a "
              "kernel (no call of an nki.jit / nki.trace / nki.baremetal / nki.benchmark / "
              "nki.profile kernel, nki.simulate_kernel or neuroncore_sim.simulate)")
    return EXIT_OK


def _from_script(error: BaseException, script: Path) -> TracebackType | None:
    """``error``'s traceback from the script's first frame on (runpy's and ours left out, as
    `python SCRIPT.py` would show it); None when no frame is the script's (a SyntaxError)."""
    tb = error.__traceback__
    target = script.resolve()
    while tb is not None and Path(tb.tb_frame.f_code.co_filename).resolve() != target:
        tb = tb.tb_next
    return tb


# --- profile -------------------------------------------------------------------------------------

def _profile(args: argparse.Namespace, cfg: NeuronCoreConfig | None) -> int:
    file, kname = split_target(args.target)
    module = load_kernel_file(file)
    name, kernel = find_kernel(module, kname)
    pos, kw = example_inputs(module, file)
    if args.out is not None:  # an unwritable launch folder fails before the simulation
        check_launch_folder(launch_folder(args.out, 1, name))
    res = simulate(kernel, *pos, grid=getattr(module, "GRID", ()), config=cfg,
                   functional=not args.timing_only, progress=_progress(args), **kw)
    _report(res, 1, args, label=name, trace_max_events=args.trace_max_events)
    reference = getattr(module, "reference", None)
    if args.timing_only or not callable(reference) or not res.outputs:
        return EXIT_OK
    error = max_abs_error(res.outputs, reference(*pos, **kw))
    print(f"result check: max abs error vs {file}'s reference = {error:.3g}")
    return EXIT_OK


# --- output --------------------------------------------------------------------------------------

def _report(res: SimResult, n: int, args: argparse.Namespace, label: str | None = None,
            trace_max_events: int | None = None) -> None:
    """Print one launch's summary; with ``--out``, write its files (as a set: all or none)."""
    name = label or res.program.name
    print(f"== launch {n}: {name}" + ("" if label else f" ({res.entry})"))
    print(report.summary_text(res), end="")
    if args.out is None:
        return
    folder = launch_folder(args.out, n, name)
    extra = {}
    if explorer.available():  # Neuron Explorer's tables: optional (pyarrow)
        extra[EXPLORER_FOLDER + "/"] = lambda tmp: explorer.write_tables(res, tmp)
    write_launch_files(res, folder, trace_max_events, extra)
    if trace_max_events is not None and len(res.timing.events) > trace_max_events:
        print(f"   trace.json: first {trace_max_events:,} of {len(res.timing.events):,} events "
              "(--trace-max-events)")
    shown = launch_folder(args.out_shown, n, name)  # as the user gave --out
    if not extra:
        print(f"neuroncore-sim: note: {shown}/{EXPLORER_FOLDER}/ not written: "
              f"{explorer.MISSING_PYARROW}", file=sys.stderr)
    print(f"   wrote {shown}/")
