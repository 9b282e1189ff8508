"""Timing-only speed of AWS's tutorial matmuls (issue 16's table), run unmodified from a
checkout outside the repository (never copied here).

    python benchmarks/aws_matmuls.py /work/peers [--size small|large|both] [--profile FILE]

Prints, per kernel and size: instructions, events, wall time of ``ncs.simulate(...,
functional=False)`` and instructions per second. The kernels are AWS's
``nki_matmul_fully_optimized_`` and ``nki_matmul_block_free_dimension_`` (bf16) at
[2048 x 4096] x [4096 x 4096] and [4096 x 8192] x [8192 x 8192].
"""

from __future__ import annotations

import argparse
import cProfile
import importlib.util
import sys
import time
from pathlib import Path

import ml_dtypes
import numpy as np

import neuroncore_sim as ncs

KERNELS = ("nki_matmul_fully_optimized_", "nki_matmul_block_free_dimension_")
#: name -> (M, K, N)
SIZES = {"small": (2048, 4096, 4096), "large": (4096, 8192, 8192)}
TUTORIAL = ("nki-samples-pre-beta2/src/nki_samples/tutorials/matrix_multiplication/"
            "matrix_multiplication_nki_kernels.py")


def load_tutorial(parent: Path):
    """Import AWS's matmul tutorial module from the checkout under ``parent``."""
    ncs.install_neuronxcc_alias()
    path = parent / TUTORIAL
    spec = importlib.util.spec_from_file_location("aws_matmul_tutorial", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_one(kernel, m: int, k: int, n: int) -> dict:
    """Simulate one kernel timing-only; its counts and wall time."""
    lhsT = np.zeros((k, m), ml_dtypes.bfloat16)
    rhs = np.zeros((k, n), ml_dtypes.bfloat16)
    start = time.perf_counter()
    res = ncs.simulate(kernel, lhsT, rhs, functional=False)
    wall = time.perf_counter() - start
    instrs = len(res.program.instructions)
    return {"instructions": instrs, "events": len(res.timing.events), "wall_s": wall,
            "instr_per_s": instrs / wall, "latency_ns": res.latency_ns}


def main(argv: list[str]) -> int:
    """Run the table (or profile one kernel); return the exit status."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("peers", type=Path, help="folder holding nki-samples-pre-beta2/")
    ap.add_argument("--size", choices=("small", "large", "both"), default="both")
    ap.add_argument("--kernel", choices=KERNELS, action="append")
    ap.add_argument("--profile", type=Path, help="write a cProfile of the runs to this file")
    args = ap.parse_args(argv)
    module = load_tutorial(args.peers)
    sizes = list(SIZES) if args.size == "both" else [args.size]
    prof = cProfile.Profile() if args.profile else None
    print("| kernel | size | instructions | events | wall s | instructions / s | latency us |")
    print("|---|---|---|---|---|---|---|")
    for name in args.kernel or KERNELS:
        for size in sizes:
            m, k, n = SIZES[size]
            if prof:
                prof.enable()
            r = run_one(getattr(module, name), m, k, n)
            if prof:
                prof.disable()
            print(f"| {name} | [{m} x {k}] x [{k} x {n}] | {r['instructions']:,} | "
                  f"{r['events']:,} | {r['wall_s']:.2f} | {r['instr_per_s']:,.0f} | "
                  f"{r['latency_ns'] / 1000:.1f} |", flush=True)
    if prof:
        prof.dump_stats(str(args.profile))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
