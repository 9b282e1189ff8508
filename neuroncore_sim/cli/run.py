"""``neuroncore-sim run SCRIPT.py [ARGS...]``: run a user script with the ``neuronxcc`` alias
installed and time every kernel launch it makes."""

from __future__ import annotations

import argparse
import runpy
import sys
from pathlib import Path
from types import TracebackType

from ..alias import install_neuronxcc_alias
from ..config import NeuronCoreConfig
from ..errors import EXIT_FAILED, EXIT_OK, SimulatorError
from ..frameworks.device_alias import install_device_aliases
from ..frameworks.profile import profile_session
from ..report.launch_files import check_launch_folder, write_files
from ..sweep.kernel_file import UsageError
from .common import check_window, print_traceback, progress, report_launch
from .launch_index import INDEX_FILE, distinct_launches, index_markdown, launch_table


def script_position(tokens: list[str], run_options: dict[str, str | None]) -> int | None:
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


def note_run_options_given_to_script(script: str, script_args: list[str],
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


def run(args: argparse.Namespace, cfg: NeuronCoreConfig | None) -> int:
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
    try:  # identical launches are timed once (neuroncore_sim/launches.py)
        with profile_session(config=cfg, functional=not args.timing_only,
                             progress=progress(args), reuse_timing=True,
                             max_distinct=args.max_launches) as session:
            ending = _run_script(script)
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
    distinct = distinct_launches(session)
    if args.out is not None:  # every launch's folder checked before the first is written
        for d in distinct:
            check_launch_folder(d.folder(args.out))
            check_window(d.first.result, args)
    for d in distinct:
        report_launch(d.first.result, d.number, args, trace_max_events=args.trace_max_events,
                      heading=d.heading(), quiet=args.quiet)
    launches = len(session.launches)
    if args.out is not None and distinct:
        text = index_markdown(distinct, args.out, script.name, launches)
        write_files(args.out, {INDEX_FILE: lambda p: p.write_text(text)})
    if launches > 1 or (args.quiet and launches):  # the launches, and where the time went
        print(f"== all launches: {launches} launch{'es' if launches != 1 else ''}, "
              f"{len(distinct)} distinct (estimated device time of one launch and of all)")
        print(launch_table(distinct, args.out))
        print(session.totals_text(len(distinct)))
        if args.out is not None:
            print(f"   wrote {args.out_shown}/{INDEX_FILE}")
    skipped = session.recorder.skipped
    if skipped:
        print(f"neuroncore-sim: note: {skipped} more launch{'es' if skipped != 1 else ''} ran "
              f"without being profiled: --max-launches {args.max_launches} profiles the first "
              f"{args.max_launches} distinct launches only", file=sys.stderr)
    return _script_ending(script, ending, launches, args.debug)


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
        print_traceback(ending, debug)
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

