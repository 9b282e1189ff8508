"""Fit ``dma_hbm_read_bytes_per_ns`` on the DMA-bound steps of the trn1 matmul ladder.

    python scripts/fit_dma_read.py --tutorials DIR     # writes reports/dma_read_fit.md

The three first steps of AWS's matmul tutorial (tiled, loads hoisted, free dims blocked;
published 51.80 / 42.96 / 22.07 ms at [4096x8192]x[8192x8192] bf16) are bound by their HBM
loads: rows of 256 B and 1 KiB. The rate of a DMA engine reading HBM is the one parameter
fitted: the value minimising the squared log errors of the three, found by golden-section
search on timing-only launches at 1/16 of the work (M and N a quarter; the kernels' DMA and
TensorE work scale with it, the published figures are divided by 16). Leave-one-out: fit on two
steps, predict the third. The full-size validation is reports/validation.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402

import neuroncore_sim as ncs  # noqa: E402
from neuroncore_sim.config import TRN1  # noqa: E402

sys.path.insert(0, str(ROOT / "scripts"))
from validate import load_module  # noqa: E402

STEPS = (("nki_matmul_tiled_", 51.80), ("nki_matmul_hoist_load_", 42.96),
         ("nki_matmul_block_free_dimension_", 22.07))
SCALE = 16  # M / 4, N / 4
REPORT = ROOT / "reports" / "dma_read_fit.md"


def estimates(module, rate: float) -> dict[str, float]:
    cfg = dataclasses.replace(TRN1, dma_hbm_read_bytes_per_ns=rate)
    bf16 = np.dtype(ml_dtypes.bfloat16)
    lhsT, rhs = np.zeros((8192, 1024), bf16), np.zeros((8192, 2048), bf16)
    return {name: ncs.simulate(getattr(module, name), lhsT, rhs, functional=False,
                               config=cfg).latency_ns * SCALE / 1e6 for name, _ in STEPS}


def fit(module, steps, cache) -> float:
    def loss(rate):
        key = round(rate, 4)
        if key not in cache:
            cache[key] = estimates(module, rate)
        return sum(math.log(cache[key][n] / ms) ** 2 for n, ms in steps)
    lo, hi = 3.0, 12.0
    g = (math.sqrt(5) - 1) / 2
    a, b = hi - g * (hi - lo), lo + g * (hi - lo)
    while hi - lo > 0.02:
        if loss(a) < loss(b):
            hi, b = b, a
            a = hi - g * (hi - lo)
        else:
            lo, a = a, b
            b = lo + g * (hi - lo)
    return round((lo + hi) / 2, 2)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tutorials", type=Path, required=True)
    args = ap.parse_args()
    ncs.install_neuronxcc_alias()
    module = load_module(args.tutorials / "matrix_multiplication"
                         / "matrix_multiplication_nki_kernels.py", "aws_matmul_fit")
    cache: dict[float, dict[str, float]] = {}
    best = fit(module, STEPS, cache)
    full = estimates(module, best)
    lines = ["# Fit of `dma_hbm_read_bytes_per_ns` (scripts/fit_dma_read.py)", "",
             f"Fitted on all three steps: **{best} B/ns** per DMA engine reading HBM "
             f"({best * 16:.0f} B/ns over 16 engines).", "",
             "| step | published | estimate (all three) | error | fitted without it | "
             "estimate left out | leave-one-out error |", "|---|---|---|---|---|---|---|"]
    for name, ms in STEPS:
        others = [s for s in STEPS if s[0] != name]
        loo = fit(module, others, cache)
        pred = estimates(module, loo)[name]
        lines.append(f"| {name} | {ms} ms | {full[name]:.2f} ms | "
                     f"{100 * (full[name] / ms - 1):+.1f} % | {loo} B/ns | {pred:.2f} ms | "
                     f"{100 * (pred / ms - 1):+.1f} % |")
        print(lines[-1], flush=True)
    REPORT.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
