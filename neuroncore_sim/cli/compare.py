"""``neuroncore-sim compare A B``: two kernels, or one kernel under two settings, side by side.

    neuroncore-sim compare kernels/matmul_ladder.py::tiled kernels/matmul_ladder.py::blocked_all
    neuroncore-sim compare kernels/matmul_bf16.py --config-b inf2
    neuroncore-sim compare kernels/matmul_bf16.py --compiler-option-b dge=false --out out/cmp

prints :meth:`neuroncore_sim.report.comparison.Comparison.text` (latency of each and the change
in %, per-engine busy time, bottleneck and bounds of each, the source lines whose time changed
most) and, with ``--out DIR``, writes ``comparison.txt``, ``comparison.json`` and
``comparison.png`` (both timelines stacked on one time axis). Both launches are timed only (no
values): timing does not depend on input values.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ..config import NeuronCoreConfig, load_config, with_compile_options
from ..errors import EXIT_OK, ConfigError
from ..report import plot
from ..report.comparison import compare
from ..report.launch_files import write_files
from ..result import SimResult
from ..simulate import simulate
from ..sweep.cli import at_least
from ..sweep.kernel_file import UsageError
from ..sweep.point import load_target, point_launch
from .common import one_value_params, progress

#: Files ``--out`` writes.
TEXT_FILE, JSON_FILE, PLOT_FILE = "comparison.txt", "comparison.json", "comparison.png"


def add_parser(sub: Any, base: argparse.ArgumentParser) -> None:
    """Register the ``compare`` subcommand (``base``: the --config/--compiler-option/--debug
    options, which apply to both sides)."""
    p = sub.add_parser(
        "compare", parents=[base], help="time two kernels (or one kernel under two settings) "
                                        "and show what changed",
        description="Time A and B on their kernel files' example inputs and print the latency "
                    "of each and the change in %, per-engine busy time, bottleneck and bounds, "
                    "and the source lines whose time changed most. Give two targets, or one "
                    "target and a setting for a side (--config-b inf2, --compiler-option-b "
                    "dge=false). --config and --compiler-option apply to both sides; the -a / -b "
                    "forms to one side only (a side's --config-X replaces --config, its "
                    "--compiler-option-X adds to --compiler-option).")
    p.add_argument("a", metavar="A", help="FILE.py[::KERNEL]: the kernel before the change")
    p.add_argument("b", metavar="B", nargs="?", default=None,
                   help="FILE.py[::KERNEL]: the kernel after it (default: A again, under B's "
                        "settings)")
    for side in "ab":
        p.add_argument(f"--config-{side}", metavar="NAME|FILE.toml", default=None,
                       help=f"hardware of side {side.upper()} only (a preset or a TOML file)")
        p.add_argument(f"--compiler-option-{side}", metavar="NAME=VALUE", action="append",
                       default=[], help=f"a compile option for side {side.upper()} only "
                                        "(repeatable)")
    p.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                   help="a parameter of both launches, as for profile (M=4096, a kernel keyword "
                        "or config.<field>); repeatable")
    p.add_argument("--out", metavar="DIR", type=Path, default=None,
                   help=f"also write {TEXT_FILE}, {JSON_FILE} and {PLOT_FILE} (both timelines "
                        "on one time axis) under DIR")
    p.add_argument("--top", type=at_least(1), default=5, metavar="N",
                   help="source lines to show (default 5)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")


def run(args: argparse.Namespace) -> int:
    """Run the comparison the parsed command line describes; print it; return the status."""
    settings = {s: (getattr(args, f"config_{s}"), getattr(args, f"compiler_option_{s}"))
                for s in "ab"}
    if args.b is None and not any(c or o for c, o in settings.values()):
        raise UsageError(f"compare: expected two targets (A B), or one target and a setting "
                         f"for a side (--config-b NAME, --compiler-option-b NAME=VALUE), found "
                         f"only {args.a!r}: A and B would be the same launch")
    targets = {"a": args.a, "b": args.b if args.b is not None else args.a}
    configs = {s: _side_config(args, *settings[s]) for s in "ab"}
    point = one_value_params(args.param)
    given = ", ".join(f"{k}={v}" for k, v in point.items())
    labels = tuple(_label(targets[s], configs[s], settings[s][1]) + (f" ({given})" if given else "")
                   for s in "ab")
    results = [_time(targets[s], configs[s], point, args) for s in "ab"]
    comparison = compare(results[0], results[1], labels=labels)  # type: ignore[arg-type]
    text = comparison.text(top_lines=args.top)
    print(text, end="")
    if args.out is not None:
        write_files(args.out, {
            TEXT_FILE: lambda p: p.write_text(text),
            JSON_FILE: lambda p: p.write_text(json.dumps(comparison.to_dict(), indent=2) + "\n"),
            PLOT_FILE: lambda p: plot.comparison_timeline(*results, p, labels=labels)})
        print(f"wrote {args.out_shown}/{TEXT_FILE}, {JSON_FILE} and {PLOT_FILE}")
    return EXIT_OK


def _side_config(args: argparse.Namespace, config: str | None,
                 options: list[str]) -> NeuronCoreConfig | None:
    """One side's hardware: its own --config-X, else --config; then --compiler-option and its
    own --compiler-option-X."""
    try:
        cfg = load_config(config) if config is not None else getattr(args, "resolved_config",
                                                                     None)
        if config is not None and args.compiler_options:
            cfg = with_compile_options(cfg, args.compiler_options)
        return with_compile_options(cfg, options) if options else cfg
    except ConfigError as e:  # a wrong name or file on the command line: a usage error
        raise UsageError(str(e)) from None


def _label(target: str, cfg: NeuronCoreConfig | None, options: list[str]) -> str:
    """What a side is: its target, config and own compile options."""
    name = cfg.name if cfg is not None else "trn1"
    return f"{target} on {name}" + (f" with {', '.join(options)}" if options else "")


def _time(target: str, cfg: NeuronCoreConfig | None, point: dict[str, Any],
          args: argparse.Namespace) -> SimResult:
    """Time the target's kernel on its file's example inputs, with ``point``'s parameters
    (routed as a sweep routes them); no values: timing only."""
    kt = load_target(target)
    pos, kw, kernel_kw, cfg = point_launch(kt, point, cfg or load_config("trn1"))
    return simulate(kt.kernel, *pos, grid=getattr(kt.module, "GRID", ()), config=cfg,
                    functional=False, progress=progress(args), **kw, **kernel_kw)
