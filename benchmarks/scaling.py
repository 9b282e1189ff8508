"""How the simulator's cost grows with kernel size (issue 16): reports/scaling.md and
reports/scaling.png.

Four kernel families of our own, each at four sizes spanning at least 10x in instruction
count, simulated timing-only (``functional=False``) and functional (values and timing):

* blocked matmul with an fp32 result block accumulated in SBUF (kernels/matmul_ladder.py
  ``blocked_all``, bf16);
* flash-attention-like (kernels/flash_attention.py: many small tiles, transposes, PSUM);
* element-wise, DMA-heavy (kernels/elementwise.py: [128, 64] tiles, six instructions each);
* a scan (kernels/mamba.py ``mamba_v3``: tensor_tensor_scan chains in ``nl.sequential_range``).

Every point runs in a fresh process (``--point``), so its peak RSS is its own: the growth of
the process's peak resident memory over its resident memory just before the call (inputs
already made). Wall time is the best of ``--repeat`` calls. The ratio of time per instruction
between the largest and the smallest size of a family is taken within this one run (the
machine is shared: compare sizes measured together, not across runs).

    python benchmarks/scaling.py                  # the four families -> reports/scaling.*
    python benchmarks/scaling.py --aws /work/peers  # also AWS's tutorial matmuls (timing-only),
                                                  # run from that checkout, never copied

Not a test: nothing here is asserted; the goals are reported.
"""

from __future__ import annotations

import argparse
import json
import os
import gc
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: family -> (kernel file stem, kernel name, [example_inputs kwargs per size], kernel kwargs)
FAMILIES: dict[str, tuple[str, str, list[dict], dict]] = {
    "blocked matmul, SBUF accumulation": (
        "matmul_ladder", "blocked_all",
        [{"M": 1024, "K": 2048, "N": 2048}, {"M": 2048, "K": 2048, "N": 2048},
         {"M": 4096, "K": 2048, "N": 4096}, {"M": 4096, "K": 4096, "N": 4096}],
        {"BLOCK_M": 4, "BLOCK_N": 2, "BLOCK_K": 4}),
    "flash attention": (
        "flash_attention", "kernel",
        [{"seq_q": 1024, "seq_k": 2048}, {"seq_q": 1024, "seq_k": 8192},
         {"seq_q": 2048, "seq_k": 8192}, {"seq_q": 4096, "seq_k": 8192}], {}),
    "element-wise, small DMAs": (
        "elementwise", "kernel",
        [{"rows": 1024, "cols": 2048}, {"rows": 2048, "cols": 4096},
         {"rows": 4096, "cols": 4096}, {"rows": 4096, "cols": 8192}], {}),
    "scan (sequential_range)": (
        "mamba", "mamba_v3",
        [{"batch": 1, "channels": 256, "seq_len": 8192, "state_size": 4},
         {"batch": 1, "channels": 256, "seq_len": 8192, "state_size": 8},
         {"batch": 2, "channels": 256, "seq_len": 8192, "state_size": 8},
         {"batch": 4, "channels": 256, "seq_len": 8192, "state_size": 10}], {}),
}
MODES = ("timing-only", "functional")
AWS_KERNELS = ("nki_matmul_fully_optimized_", "nki_matmul_block_free_dimension_")
AWS_SIZES = ((2048, 4096, 4096), (4096, 8192, 8192))

# Goals of issue 16 (reported, not asserted).
GOAL_INSTR_PER_S = 15_000
GOAL_RATIO = 1.3
GOAL_KIB_PER_INSTR = 2.0


def _status_kib(field: str) -> int:
    """A memory field of /proc/self/status ("VmRSS", "VmHWM"), KiB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def _measure(call, repeat: int) -> dict:
    """Run ``call`` ``repeat`` times: best wall time, the first result, peak RSS growth."""
    gc.collect()
    # Reset the peak RSS (VmHWM) to the current RSS, so the peak of making the inputs (float64
    # draws) does not count (Linux >= 4.0).
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    before = _status_kib("VmRSS")
    best, best_cpu, result = float("inf"), float("inf"), None
    for i in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        r = call()
        best = min(best, time.perf_counter() - start)
        best_cpu = min(best_cpu, time.process_time() - start_cpu)
        if i == 0:
            peak = _status_kib("VmHWM")
            result = r
        del r
    return {"wall_s": best, "cpu_s": best_cpu, "rss_growth_kib": max(0, peak - before),
            "result": result}


def point(family: str, index: int, mode: str, repeat: int) -> dict:
    """Measure one family at one size in one mode (in this process)."""
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "tests"))
    import event_listings  # the kernels/ loader the listings use
    import neuroncore_sim as ncs
    stem, kname, sizes, extra = FAMILIES[family]
    module = event_listings.load_sample(stem)
    kernel = getattr(module, "KERNELS", {"kernel": getattr(module, "kernel", None)})[kname]
    inputs = module.example_inputs(**sizes[index])
    m = _measure(lambda: ncs.simulate(kernel, **inputs, functional=(mode == "functional"),
                                      **extra), repeat)
    res = m.pop("result")
    return {**m, "instructions": len(res.program.instructions), "events": len(res.timing.events)}


def aws_point(peers: str, name: str, index: int, repeat: int) -> dict:
    """One of AWS's tutorial matmuls, timing-only, from the checkout under ``peers``."""
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import ml_dtypes
    import numpy as np

    import aws_matmuls
    import neuroncore_sim as ncs
    kernel = getattr(aws_matmuls.load_tutorial(Path(peers)), name)
    m, k, n = AWS_SIZES[index]
    lhsT, rhs = np.zeros((k, m), ml_dtypes.bfloat16), np.zeros((k, n), ml_dtypes.bfloat16)
    r = _measure(lambda: ncs.simulate(kernel, lhsT, rhs, functional=False), repeat)
    res = r.pop("result")
    return {**r, "instructions": len(res.program.instructions), "events": len(res.timing.events)}


def _child(args: list[str]) -> dict:
    """Run ``scaling.py ARGS`` in a fresh process; its JSON line."""
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = subprocess.run([sys.executable, str(Path(__file__).resolve()), *args], env=env,
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def _size_label(sizes: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in sizes.items())


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description="simulator cost against kernel size")
    ap.add_argument("--point", nargs=3, metavar=("FAMILY", "INDEX", "MODE"))
    ap.add_argument("--aws-point", nargs=3, metavar=("PEERS", "KERNEL", "INDEX"))
    ap.add_argument("--aws", metavar="PEERS", help="also AWS's matmuls, from PEERS/nki-samples-*")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--family", action="append", help="only these families (default all)")
    ap.add_argument("--out", type=Path, default=ROOT / "reports")
    args = ap.parse_args(argv)
    if args.point:
        fam, idx, mode = args.point
        print(json.dumps(point(fam, int(idx), mode, args.repeat)))
        return 0
    if args.aws_point:
        peers, name, idx = args.aws_point
        print(json.dumps(aws_point(peers, name, int(idx), args.repeat)))
        return 0
    rows: dict[str, list[dict]] = {}
    load_before = os.getloadavg()[0]
    for fam in args.family or FAMILIES:
        rows[fam] = []
        for i, sizes in enumerate(FAMILIES[fam][2]):
            row = {"size": _size_label(sizes)}
            for mode in MODES:
                row[mode] = _child(["--point", fam, str(i), mode, "--repeat", str(args.repeat)])
            rows[fam].append(row)
            t, f = row["timing-only"], row["functional"]
            print(f"{fam} {row['size']}: {t['instructions']} instructions, timing-only "
                  f"{t['wall_s']:.2f} s, functional {f['wall_s']:.2f} s", flush=True)
    aws = []
    if args.aws:
        for name in AWS_KERNELS:
            for i, (m, k, n) in enumerate(AWS_SIZES):
                r = _child(["--aws-point", args.aws, name, str(i), "--repeat", str(args.repeat)])
                aws.append({"kernel": name, "size": f"[{m} x {k}] x [{k} x {n}]", **r})
                print(f"{name} {aws[-1]['size']}: {r['wall_s']:.2f} s", flush=True)
    load_after = os.getloadavg()[0]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "scaling.md").write_text(report(rows, aws, load_before, load_after))
    plot(rows, args.out / "scaling.png")
    print(f"wrote {args.out / 'scaling.md'} and scaling.png")
    return 0


def _ratio(fam_rows: list[dict], mode: str, clock: str = "wall_s") -> float:
    """Time per instruction at the largest size over that at the smallest."""
    first, last = fam_rows[0][mode], fam_rows[-1][mode]
    return (last[clock] / last["instructions"]) / (first[clock] / first["instructions"])


def report(rows: dict, aws: list[dict], load_before: float, load_after: float) -> str:
    """reports/scaling.md."""
    out = ["# Simulator cost against kernel size", "",
           "Written by `benchmarks/scaling.py` (issue 16). Each point is a fresh process; wall "
           "time is the best of the repeats of `ncs.simulate` (tracing + scheduling + the simpy "
           "run + events); RSS growth is the process's peak resident memory over its resident "
           "memory just before the call. Ratios compare sizes measured in this one run. "
           "instr/CPU s divides by the process's CPU time (all its threads), which other jobs "
           "on the shared machine disturb less than wall time.",
           f"Machine: {os.cpu_count()} CPUs shared with other jobs (1-minute load average "
           f"{load_before:.1f} before, {load_after:.1f} after).", "",
           f"Goals: >= {GOAL_INSTR_PER_S:,} instructions/s timing-only; time per instruction at "
           f"the largest size <= {GOAL_RATIO}x the smallest; RSS growth timing-only <= "
           f"{GOAL_KIB_PER_INSTR:g} KiB per instruction.", ""]
    for fam, fam_rows in rows.items():
        stem, kname, _, extra = FAMILIES[fam]
        kw = f" ({', '.join(f'{k}={v}' for k, v in extra.items())})" if extra else ""
        out += [f"## {fam}: `kernels/{stem}.py` `{kname}`{kw}", "",
                "| size | instructions | events | timing-only s | instr/s | instr/CPU s | RSS MiB "
                "| KiB/instr | functional s | instr/s | instr/CPU s | RSS MiB |",
                "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for r in fam_rows:
            t, f = r["timing-only"], r["functional"]
            n = t["instructions"]
            out.append(f"| {r['size']} | {n:,} | {t['events']:,} | {t['wall_s']:.2f} | "
                       f"{n / t['wall_s']:,.0f} | {n / t['cpu_s']:,.0f} | "
                       f"{t['rss_growth_kib'] / 1024:.0f} | {t['rss_growth_kib'] / n:.2f} | "
                       f"{f['wall_s']:.2f} | {n / f['wall_s']:,.0f} | {n / f['cpu_s']:,.0f} | "
                       f"{f['rss_growth_kib'] / 1024:.0f} |")
        span = fam_rows[-1]["timing-only"]["instructions"] / fam_rows[0]["timing-only"]["instructions"]
        out += ["", f"Instruction span {span:.1f}x; time per instruction, largest / smallest: "
                f"timing-only {_ratio(fam_rows, 'timing-only'):.2f} (CPU "
                f"{_ratio(fam_rows, 'timing-only', 'cpu_s'):.2f}), functional "
                f"{_ratio(fam_rows, 'functional'):.2f} (CPU "
                f"{_ratio(fam_rows, 'functional', 'cpu_s'):.2f}).", ""]
    if aws:
        out += ["## AWS's tutorial matmuls (bf16, timing-only, run from the nki-samples "
                "checkout)", "",
                "| kernel | size | instructions | events | wall s | instr/s | instr/CPU s | RSS MiB "
                "| KiB/instr |",
                "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
        for r in aws:
            n = r["instructions"]
            out.append(f"| `{r['kernel']}` | {r['size']} | {n:,} | {r['events']:,} | "
                       f"{r['wall_s']:.2f} | {n / r['wall_s']:,.0f} | {n / r['cpu_s']:,.0f} | "
                       f"{r['rss_growth_kib'] / 1024:.0f} | {r['rss_growth_kib'] / n:.2f} |")
        out.append("")
    out += ["![time per instruction against instructions](scaling.png)", ""]
    return "\n".join(out)


def plot(rows: dict, path: Path) -> None:
    """Time per instruction against instruction count, one line per family and mode."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 5))
    for i, (fam, fam_rows) in enumerate(rows.items()):
        color = f"C{i}"
        for mode, style in zip(MODES, ("-o", "--s")):
            xs = [r[mode]["instructions"] for r in fam_rows]
            ys = [r[mode]["wall_s"] / r[mode]["instructions"] * 1e6 for r in fam_rows]
            ax.plot(xs, ys, style, color=color, label=f"{fam}, {mode}")
    ax.axhline(1e6 / GOAL_INSTR_PER_S, color="grey", lw=0.8, ls=":",
               label=f"{GOAL_INSTR_PER_S:,} instructions/s")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("instructions")
    ax.set_ylabel("wall time per instruction (us)")
    ax.set_title("neuroncore_sim cost per instruction (flat = linear)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
