"""Reproduce the fitted fields of the shipped trn1 preset from the published measurements.

    python scripts/calibrate_trn1.py [--out reports/calibration_trn1.toml]

Reads ``scripts/calibration/published_trn1.csv`` (numbers typed in from AWS's performance
guide, each row naming its figure; the arithmetic of a derived row is in its source text), fits
the parameters those rows constrain with the same code as ``neuroncore-sim calibrate fit``
(``neuroncore_sim.calibrate``), and compares each fitted value with the shipped preset. Exit
status 1 when one differs by more than 1 %: the preset and its published sources disagree.

Not reproduced here: ``dge_ns_per_element`` (fitted on the three DMA-bound rows of the SDK 2.20
matmul ladder, whole kernels of 20-50 ms that take minutes to simulate; see
scripts/validate.py --fit) and the DMA fields (documented, not fitted).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's package, not another installed copy

from neuroncore_sim.calibrate.fit import FitReport, fit  # noqa: E402
from neuroncore_sim.calibrate.output import report_text, write_toml  # noqa: E402
from neuroncore_sim.calibrate.results import read_results  # noqa: E402
from neuroncore_sim.config import TRN1  # noqa: E402

DATA = Path(__file__).resolve().parent / "calibration" / "published_trn1.csv"
#: Relative difference from the shipped value past which the preset is not reproduced.
TOLERANCE = 0.01


def reproduce(data: Path = DATA) -> tuple[dict[str, tuple[float, float]], FitReport]:
    """Parameter -> (fitted from ``data``, shipped in TRN1), and the fit (its report printed)."""
    report = fit(read_results(data), TRN1)
    print(report_text(report), end="")
    return {name: (value, getattr(TRN1, name)) for name, value in report.values.items()}, report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None,
                        help="also write the fitted config as TOML")
    args = parser.parse_args(argv)
    values, report = reproduce()
    if args.out is not None:
        write_toml(report, args.out, str(DATA.relative_to(ROOT)))
    print(f"\n{'parameter':32} {'fitted':>10} {'shipped':>10}  difference")
    worst = 0.0
    for name, (fitted, shipped) in values.items():
        diff = fitted / shipped - 1
        worst = max(worst, abs(diff))
        print(f"{name:32} {fitted:10.4g} {shipped:10.4g}  {diff * 100:+.2f} %")
    ok = worst <= TOLERANCE
    print("reproduced: every fitted field within 1 % of the shipped preset" if ok else
          "NOT reproduced: a shipped value differs from its published sources by more than 1 %")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
