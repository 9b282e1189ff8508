"""Reproduce the fitted fields of the shipped trn1 preset from the published measurements.

    python scripts/calibrate_trn1.py --tutorials DIR [--out reports/calibration_trn1.toml]

Reads ``scripts/calibration/published_trn1.csv`` (numbers typed in from AWS's documents, each
row naming its figure or table; the arithmetic of a derived row is in its source text) and fits
with the same code as ``neuroncore-sim calibrate fit`` (``neuroncore_sim.calibrate``), in two
steps, then compares each fitted value with the shipped preset. Exit status 1 when one differs
by more than 1 %: the preset and its published sources disagree.

1. The instruction-level fields (``tensor_pipeline_latency_ns``,
   ``load_stationary_latency_ns``, ``semaphore_latency_ns``) from the performance guide's
   profile rows, on the suite's own probe kernels (seconds).
2. ``dge_ns_per_element`` from the three DMA-bound rows of the SDK 2.20 matmul ladder (tiled,
   loads hoisted, free dimension blocked: published 51.80 / 42.96 / 22.07 ms), run as AWS's
   tutorial kernels unmodified at full size under the AWS set's compile options
   (``scripts/validate.py``'s ``SET_OPTIONS["aws"]``: toolchain 2.20, DGE on), from step 1's
   config. The kernels are read at run time from ``--tutorials`` (the ``tutorials`` folder of
   aws-neuron/nki-samples, as ``scripts/validate.py --tutorials`` takes), never copied here.
   Each of the three is traced once and re-timed per trial value (about 20 s per evaluation of
   the three; a few minutes in all, ten with the leave-one-out refits). Without
   ``--tutorials`` this step is skipped and said so.

Not fitted: the DMA fields (documented values, docs/model.md).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's package, not another installed copy
sys.path.insert(0, str(ROOT / "scripts"))  # validation/ (AWS's kernels and their options)

from neuroncore_sim.calibrate.fit import FitReport, fit  # noqa: E402
from neuroncore_sim.calibrate.output import report_text, write_toml  # noqa: E402
from neuroncore_sim.calibrate.results import read_results  # noqa: E402
from neuroncore_sim.config import TRN1  # noqa: E402
from validate import SET_OPTIONS  # noqa: E402
from validation import aws  # noqa: E402

DATA = Path(__file__).resolve().parent / "calibration" / "published_trn1.csv"
#: Relative difference from the shipped value past which the preset is not reproduced.
TOLERANCE = 0.01
#: Case id of each DMA-bound ladder row in the CSV -> AWS's tutorial kernel it names.
LADDER_CASES = aws.LADDER_FIT_CASES
#: The parameter step 2 fits.
DGE = "dge_ns_per_element"


def check_tutorials(tutorials: Path) -> None:
    """Refuse a folder that is not AWS's tutorials folder, naming the file looked for."""
    wanted = tutorials / aws.TUTORIALS["mm"]
    if not wanted.is_file():
        raise SystemExit(f"--tutorials {tutorials}: expected AWS's tutorials folder "
                         f"(nki-samples src/nki_samples/tutorials) with {aws.TUTORIALS['mm']}")


def reproduce(data: Path = DATA, tutorials: Path | None = None, leave_one_out: bool = True
              ) -> tuple[dict[str, tuple[float, float]], FitReport]:
    """Parameter -> (fitted from ``data``, shipped in TRN1), and the fit (its reports printed;
    the returned report's config holds every fitted value). Step 2 runs with ``tutorials``."""
    if tutorials is not None:
        check_tutorials(tutorials)
    rows = read_results(data)
    first = fit([r for r in rows if r["case"] not in LADDER_CASES], TRN1,
                leave_one_out=leave_one_out)
    print("step 1: instruction-level fields, from the performance guide's profiles")
    print(report_text(first), end="")
    report = first
    if tutorials is None:
        print(f"\nstep 2 skipped: {DGE} is fitted on AWS's tutorial matmul kernels; give "
              "--tutorials DIR (nki-samples src/nki_samples/tutorials)")
    else:
        second = fit([r for r in rows if r["case"] in LADDER_CASES], first.config, [DGE],
                     leave_one_out=leave_one_out,
                     extra=aws.ladder_fit_cases(tutorials, SET_OPTIONS["aws"]))
        print(f"\nstep 2: {DGE}, from the SDK 2.20 matmul ladder's DMA-bound rows")
        print(report_text(second), end="")
        report = dataclasses.replace(second, base=TRN1, values={**first.values, **second.values},
                                     uncertainty={**first.uncertainty, **second.uncertainty},
                                     start={**first.start, **second.start},
                                     rows={**first.rows, **second.rows},
                                     leave_one_out={**first.leave_one_out,
                                                    **second.leave_one_out})
    return {name: (value, getattr(TRN1, name)) for name, value in report.values.items()}, report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tutorials", type=Path, default=None,
                        help="AWS's tutorials folder (nki-samples/src/nki_samples/tutorials): "
                             f"its matmul kernels fit {DGE} (step 2; skipped without it)")
    parser.add_argument("--out", type=Path, default=None,
                        help="also write the fitted config as TOML")
    parser.add_argument("--no-loo", action="store_true",
                        help="skip the leave-one-out refits (step 2 takes a third of the time)")
    args = parser.parse_args(argv)
    values, report = reproduce(tutorials=args.tutorials, leave_one_out=not args.no_loo)
    if args.out is not None:
        write_toml(report, args.out, str(DATA.relative_to(ROOT)),
                   "python scripts/calibrate_trn1.py"
                   + (" --tutorials DIR" if args.tutorials is not None else "") + " on")
    print(f"\n{'parameter':32} {'fitted':>10} {'shipped':>10}  difference")
    worst = 0.0
    for name, (fitted, shipped) in values.items():
        diff = fitted / shipped - 1
        worst = max(worst, abs(diff))
        print(f"{name:32} {fitted:10.4g} {shipped:10.4g}  {diff * 100:+.2f} %")
    ok = worst <= TOLERANCE
    print(f"reproduced: {len(values)} fitted fields, each within 1 % of the shipped preset"
          if ok else "NOT reproduced: a shipped value differs from its published sources by "
          "more than 1 %")
    if DGE not in values:
        print(f"{DGE} not checked (no --tutorials)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
