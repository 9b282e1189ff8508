"""``neuroncore-sim calibrate emit | measure | fit``: the command line of this package.

    neuroncore-sim calibrate emit suite/           # then on hardware: suite/run_on_hardware.py
    neuroncore-sim calibrate measure suite/ --config trn1 --out sim.csv
    neuroncore-sim calibrate fit results.csv --out mine.toml [--param NAME ...] [--no-loo]
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..errors import EXIT_OK
from ..sweep.kernel_file import UsageError
from .emit import RUNNER_FILE, emit
from .fit import fit
from .measure import measure
from .output import report_text, write_toml
from .params import PARAMETERS
from .results import CalibrationError, read_results


def add_calibrate_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """Register ``calibrate`` and its three subcommands (``common``: --config and the rest)."""
    p = sub.add_parser("calibrate", help="fit the model to your own Trn1 / Inf2 measurements",
                       description="Emit a microbenchmark suite, measure it (on hardware with "
                                   "the emitted runner, or in the simulator), fit the global "
                                   "parameters. See docs/calibrate.md.")
    steps = p.add_subparsers(dest="calibrate_command", required=True, metavar="STEP")
    e = steps.add_parser("emit", parents=[common],
                         help="write the suite's kernels and hardware runner to DIR",
                         description=f"Write DIR/cases/*.py (one kernel per case, neuronxcc.nki "
                                     f"API) and DIR/{RUNNER_FILE}: on a Trn1 / Inf2 host, "
                                     f"`python DIR/{RUNNER_FILE} --out results.csv` times each "
                                     "case with nki.benchmark; add --profile to also capture "
                                     "each with neuron-profile (engine active times, HBM "
                                     "bytes). --config plays no part here.")
    e.add_argument("dir", metavar="DIR", type=Path, help="folder to write the suite in "
                   "(created if needed)")
    m = steps.add_parser("measure", parents=[common],
                         help="run an emitted suite in the simulator; write the results CSV",
                         description="Run every case of an emitted suite in the simulator "
                                     "under --config and write the results CSV the hardware "
                                     "runner writes (the closed loop: fitting it gives back "
                                     "--config's values).")
    m.add_argument("dir", metavar="DIR", type=Path, help="a folder written by `calibrate emit`")
    m.add_argument("--out", metavar="RESULTS.csv", type=Path, required=True,
                   help="results CSV to write")
    f = steps.add_parser("fit", parents=[common],
                         help="fit the parameters to a results CSV; write a config TOML",
                         description="Fit by bounded least squares from --config's values "
                                     "(trn1 by default; they also stand for every field not "
                                     "fitted); print each value with its uncertainty, the "
                                     "residual per case and leave-one-out errors. Rows of the "
                                     "runner's --profile (profile: metrics) are shown beside "
                                     "the simulator's values, never fitted. Parameters: "
                                     + ", ".join(p.name for p in PARAMETERS))
    f.add_argument("results", metavar="RESULTS.csv", type=Path,
                   help="results of the hardware runner (several files' rows may be "
                        "concatenated: repeated rows are averaged)")
    f.add_argument("--out", metavar="FILE.toml", type=Path, required=True,
                   help="fitted config to write (base = the --config preset, then every "
                        "field that differs); use it with --config FILE.toml")
    f.add_argument("--param", action="append", default=[], metavar="NAME",
                   help="fit only this parameter (repeatable; default: every parameter the "
                        "results constrain)")
    f.add_argument("--no-loo", action="store_true", help="skip the leave-one-out refits")


def run(args: argparse.Namespace) -> int:
    """Run a ``calibrate`` step; bad input is a usage error (exit status 2)."""
    try:
        if args.calibrate_command == "emit":
            emit(args.dir)
            print(f"wrote the suite to {args.dir}/: on a Trn1 / Inf2 host run "
                  f"`python {args.dir}/{RUNNER_FILE} --out results.csv`")
        elif args.calibrate_command == "measure":
            rows = measure(args.dir, args.resolved_config, args.out)
            print(f"wrote {len(rows)} rows to {args.out}")
        else:
            if args.out.suffix != ".toml":
                raise CalibrationError(f"--out: expected a .toml file (for --config), found "
                                       f"{str(args.out)!r}")
            report = fit(read_results(args.results), args.resolved_config, args.param or None,
                         leave_one_out=not args.no_loo)
            print(report_text(report), end="")
            write_toml(report, args.out, str(args.results))
            print(f"wrote {args.out}: use it with --config {args.out}")
    except CalibrationError as e:
        raise UsageError(str(e)) from None
    return EXIT_OK
