"""Sweep the matmul ladder and its block factors, and two kernel pairs; write the tiling report.

    python scripts/matmul_tiling.py          # a few minutes on 2 cores; resumes when interrupted
    python scripts/matmul_tiling.py --workers 1   # one process (on a shared machine)

Every point runs timing-only through :func:`neuroncore_sim.sweep.run.sweep` (2 workers), each sweep
saving its points under ``reports/matmul_tiling/<kernel>/`` so a second run only simulates what
is missing. The ladder (kernels/matmul_single_tile.py, kernels/matmul_ladder.py) runs at
[4096 x 8192] x [8192 x 8192] bf16, except step 1, a single TensorE tile, at its only possible
shape [128 x 128] x [128 x 512]. The fastest point of every step is simulated once more to
quote its summary (bottleneck evidence, largest stalls, SBUF peak, MFU); those summaries are
cached in ``reports/matmul_tiling/evidence.json``. Writes ``reports/matmul_tiling.md`` and
``reports/matmul_tiling/ladder.png``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's package, not another installed copy

import pandas as pd  # noqa: E402

import neuroncore_sim as ncs  # noqa: E402
from neuroncore_sim.timing import analysis  # noqa: E402
from neuroncore_sim.compiler.capacity import plan_buffers  # noqa: E402
from neuroncore_sim.config import load_config  # noqa: E402
from neuroncore_sim.program.ir import MemSpace  # noqa: E402
from neuroncore_sim.sweep.kernel_file import example_inputs  # noqa: E402
from neuroncore_sim.sweep.run import point_key, sweep  # noqa: E402
from neuroncore_sim.sweep.plot import save_sweep_plot  # noqa: E402
from neuroncore_sim.sweep.point import load_target  # noqa: E402
from neuroncore_sim.sweep.table import RESULT_COLUMNS, rank  # noqa: E402

OUT = ROOT / "reports" / "matmul_tiling"
REPORT = ROOT / "reports" / "matmul_tiling.md"
WORKERS = 2
BIG = {"M": 4096, "K": 8192, "N": 8192, "dtype": "bfloat16"}
ONE_TILE = {"M": 128, "K": 128, "N": 512, "dtype": "bfloat16"}

# blocked_free: BLOCK_M * BLOCK_N PSUM accumulators (at most the 8 banks); (4, 4) asks for 16
# and shows the kernel's own guard. blocked_all: PSUM no longer limits the block, SBUF does
# (per partition: lhsT block BLOCK_K*BLOCK_M*256 B, rhs block BLOCK_K*BLOCK_N*1 KiB, fp32 result
# block BLOCK_M*BLOCK_N*2 KiB, of 176 KiB usable); the last three cannot fit.
FREE_BLOCKS = [(1, 1), (2, 1), (1, 2), (2, 2), (4, 1), (2, 4), (4, 2), (8, 1), (1, 8), (4, 4)]
ALL_BLOCKS = [(4, 2, 8), (8, 1, 8), (8, 2, 4), (8, 2, 8), (8, 2, 16), (8, 4, 8), (16, 2, 8),
              (16, 2, 16), (16, 4, 8), (8, 8, 8), (32, 2, 8)]

#: (step, kernel file, kernel, points)
LADDER = [
    (1, "matmul_single_tile", "kernel", [ONE_TILE]),
    (2, "matmul_ladder", "tiled", [BIG]),
    (3, "matmul_ladder", "hoisted", [BIG]),
    (4, "matmul_ladder", "blocked_free",
     [{**BIG, "BLOCK_M": m, "BLOCK_N": n} for m, n in FREE_BLOCKS]),
    (5, "matmul_ladder", "blocked_all",
     [{**BIG, "BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": k} for m, n, k in ALL_BLOCKS]),
]
#: (pair, kernel file, kernel, points): the same inputs for both kernels of a pair.
PAIRS = [
    ("layernorm", "layernorm", "layernorm_nl", [{"N": 256, "F": 1024}, {"N": 4096, "F": 2048}]),
    ("layernorm", "layernorm", "layernorm_bn", [{"N": 256, "F": 1024}, {"N": 4096, "F": 2048}]),
    ("dma_rows", "dma_rows", "row_per_partition", [{"R": 4096}, {"R": 65536}]),
    ("dma_rows", "dma_rows", "rows_grouped",
     [{"R": 4096, "ROWS_PER_PARTITION": 16},
      *({"R": 65536, "ROWS_PER_PARTITION": r} for r in (1, 2, 4, 8, 16, 32))]),
]
SHAPE_KEYS = ("M", "K", "N", "dtype", "F", "R")


def target(file: str, kernel: str) -> str:
    return f"{ROOT / 'kernels' / file}.py::{kernel}"


def run_sweeps(specs: list[tuple], workers: int) -> pd.DataFrame:
    """One sweep per kernel (its own out folder, so it resumes); their tables stacked, with the
    spec's first field and the kernel name as columns."""
    tables = []
    for head, file, kernel, points in specs:
        print(f"sweep {kernel}: {len(points)} point(s)", flush=True)
        folder = file if kernel == "kernel" else kernel
        t = sweep(target(file, kernel), points, workers=workers, out=OUT / folder)
        tables.append(t.assign(group=head, kernel=kernel, file=file))
    return pd.concat(tables, ignore_index=True)


def blocks_of(row: pd.Series) -> str:
    names = [c for c in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "ROWS_PER_PARTITION")
             if c in row and pd.notna(row[c])]
    return ", ".join(str(int(row[c])) for c in names) or "-"


def shape_of(row: pd.Series) -> str:
    if "R" in row and pd.notna(row["R"]):
        return f"{int(row['R'])} x 32"
    if "F" in row and pd.notna(row["F"]):
        return f"{int(row['N'])} x {int(row['F'])}"
    return f"{int(row['M'])} x {int(row['K'])} x {int(row['N'])}"


def evidence(file: str, kernel: str, point: dict[str, Any], cache: dict[str, Any]
             ) -> dict[str, Any]:
    """Parts of the summary of one point (simulated timing-only again, or read from ``cache``)."""
    kt = load_target(target(file, kernel))
    key = point_key(kt.identity, load_config("trn1"), point)
    if key not in cache:
        print(f"summary of {kernel} {point}", flush=True)
        shape, _, kernel_kw = kt.route(point)
        pos, kw = example_inputs(kt.module, kt.target, **shape)
        res = ncs.simulate(kt.kernel, *pos, **kw, **kernel_kw, functional=False)
        s = res.summary()
        sbuf = s["memory"]["sbuf"]
        plan = plan_buffers(list(res.program.instructions), res.config)
        cache[key] = {
            "reason": s["bottleneck_evidence"]["reason"],
            "stalls": [analysis.stall_text(x) for x in s["top_stalls"][:3]],
            "mfu_percent": s["mfu_percent"],
            "tensor_flops_ns": s["roofline_terms_ns"]["tensor_flops"],
            "roofline_limit": s["roofline_limit"], "roofline_percent": s["roofline_percent"],
            "sbuf_peak_kib": sbuf["peak_bytes_per_partition"] / 1024,
            "rings": {r.site: f"{r.buffers} x {r.slot_bytes / 1024:g} KiB" for r in plan.rings
                      if r.space is MemSpace.SBUF}}
    return cache[key]


def _plain(v: Any) -> Any:
    return v.item() if hasattr(v, "item") else v


def pct(v: Any) -> str:
    return "" if pd.isna(v) else f"{v:.0f}%"


def ms(v: Any) -> str:
    return "" if pd.isna(v) else f"{v / 1e6:.4g}" if v >= 1e5 else f"{v / 1e3:.3g} us"


def ladder_rows(table: pd.DataFrame, floor_ns: dict[str, float]) -> list[str]:
    """Markdown rows of the ladder table; ``floor_ns``: the TensorE FLOPs bound per shape."""
    lines = []
    for _, r in table.iterrows():
        ok = pd.isna(r["error"])
        floor = floor_ns.get(shape_of(r))
        mfu = pct(100 * floor / r["latency_ns"]) if ok and floor else ""
        verdict = (r["bottleneck"] if ok
                   else f"**{r['error'].split(':')[0]}**: " + _short(r["error"]))
        lines.append(f"| {r['group']} | `{r['kernel']}` | {blocks_of(r)} | {shape_of(r)} | "
                     f"{ms(r['latency_ns'])} | {pct(r['tensor_busy_pct'])} | {mfu} | "
                     f"{pct(r['vector_busy_pct'])} | {pct(r['dma_busy_pct'])} | "
                     f"{pct(r['dma_pct_of_peak'])} | "
                     f"{'' if not ok else round(r['dma_bytes'] / 2**20)} | {verdict} |")
    return lines


def _short(error: str) -> str:
    """The first sentence of an error message, with its kernel location."""
    text = error.split(": ", 1)[-1].replace("|", "/")
    return text if len(text) < 180 else text[:177] + "..."


def pair_rows(table: pd.DataFrame) -> list[str]:
    return [f"| `{r['kernel']}` | {blocks_of(r)} | {shape_of(r)} | {ms(r['latency_ns'])} | "
            f"{pct(r['vector_busy_pct'])} | {pct(r['scalar_busy_pct'])} | {pct(r['dma_busy_pct'])} "
            f"| {pct(r['dma_pct_of_peak'])} | "
            f"{r['bottleneck'] if pd.isna(r['error']) else _short(r['error'])} |"
            for _, r in table.iterrows()]


def ladder_plot(table: pd.DataFrame) -> Path:
    """Every large-shape ladder point in one sweep plot (step 1 runs on another shape)."""
    big = table[table["kernel"] != "kernel"]
    points = [{"kernel": r["kernel"], "blocks": blocks_of(r)} for _, r in big.iterrows()]
    rows = [{c: _plain(r[c]) if not pd.isna(r[c]) else None for c in RESULT_COLUMNS}
            for _, r in big.iterrows()]
    return save_sweep_plot(rank(points, rows), OUT / "ladder.png",
                           title="matmul ladder, [4096 x 8192] x [8192 x 8192] bf16")


def render(ladder: pd.DataFrame, pairs: pd.DataFrame, quoted: list[tuple]) -> str:
    """The report's markdown."""
    floor_ns = {shape_of(point): ev["tensor_flops_ns"] for _, _, point, ev in quoted}
    big = ladder[(ladder["kernel"] != "kernel") & ladder["error"].isna()]
    top = big.sort_values("latency_ns", kind="stable").iloc[0]
    summaries = [f"| {step} | `{kernel}` | {blocks_of(point)} | {ev['mfu_percent']:.0f}% | "
                 f"{ev['reason']} | {'; '.join(ev['stalls']) or '-'} | "
                 f"{ev['sbuf_peak_kib']:.0f} KiB; " + ", ".join(
                     f"{site.split(':')[-1]}: {ring}" for site, ring in ev["rings"].items()) + " |"
                 for step, kernel, point, ev in quoted]
    return "\n".join([
        HEADER, "## The results", "",
        "| step | kernel | blocks | M x K x N | latency ms | TensorE busy | MFU | VectorE busy "
        "| DMA queues busy | DMA bw of peak | DMA MiB | bottleneck |",
        "|---:|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|",
        *ladder_rows(ladder, floor_ns), "", TABLE_NOTES,
        "![every large-shape ladder point](matmul_tiling/ladder.png)", "", PLOT_NOTES,
        "## The best configuration and why", "",
        f"Fastest: `{top['kernel']}` with blocks ({blocks_of(top)}), {top['latency_ns'] / 1e6:.3f}"
        f" ms, against a TensorE floor of {floor_ns[shape_of(top)] / 1e6:.3f} ms (every matmul "
        "back to back at the bf16 peak). " + order_sentence(ladder), "",
        "The summary (`SimResult.summary()`) of the fastest point of every step, and of two "
        "points that show what bigger blocks cost. Last column: SBUF peak per partition, then "
        "the buffer ring of every SBUF allocation line of the kernel file (buffers x bytes per "
        "partition of one buffer, after the capacity model shrank them to fit 176 KiB):", "",
        "| step | kernel | blocks | MFU | bottleneck evidence | largest stalls | SBUF |",
        "|---:|---|---|---:|---|---|---|", *summaries, "", WHY,
        "## Two kernel pairs", "", PAIRS_INTRO,
        "| kernel | ROWS_PER_PARTITION | shape | latency ms | VectorE busy | ScalarE busy "
        "| DMA queues busy | DMA bw of peak | bottleneck |",
        "|---|---|---|---:|---:|---:|---:|---:|---|", *pair_rows(pairs), "", PAIRS_NOTES,
        REGENERATE])


def order_sentence(ladder: pd.DataFrame) -> str:
    """Whether the fastest points of steps 2 to 5 get faster at every step."""
    best = ladder[ladder["error"].isna() & (ladder["kernel"] != "kernel")].groupby(
        "group", sort=True)["latency_ns"].min()
    text = " > ".join(f"step {step} {ns / 1e6:.3f} ms" for step, ns in best.items())
    slower = [int(s) for s, prev in zip(best.index[1:], best.to_numpy()[:-1])
              if best[s] >= prev]
    return (f"Fastest point of each step: {text}: "
            + (f"**not monotone** (step {', '.join(map(str, slower))} is no faster than the "
               "step before)." if slower else "each step is faster than the one before."))


HEADER = """# Matmul tiling: the ladder, its block factors, and two kernel pairs

Generated by `python scripts/matmul_tiling.py` (see [Regenerating](#regenerating)): timing-only
estimates of the `trn1` NeuronCore-v2 model, every point run through
`neuroncore_sim.sweep.run.sweep`. It replaces the former `reports/matmul_ladder.md`.

The problem: `out[M, N] = lhsT[K, M].T @ rhs[K, N]` with M = 4096, K = 8192, N = 8192, bf16
inputs and output, fp32 accumulation in PSUM: 32 x 64 x 16 = 32768 TensorE matmuls of
[128 x 128] x [128 x 512], 0.55 TFLOP. Step 1 is one TensorE instruction and cannot run at this
shape: it runs at its only shape, [128 x 128] x [128 x 512] (M x K x N = 128 x 128 x 512).

## What each step changes

1. `matmul_single_tile.py::kernel`: load both operands, one `nc_matmul`, copy PSUM to SBUF,
   store. Nothing overlaps: the latency is the chain of the four.
2. `matmul_ladder.py::tiled`: loop over the 32 x 16 output tiles and accumulate the 64 K tiles
   in one PSUM bank. Both operand tiles are loaded in the innermost loop: two DMAs per matmul,
   256 B (lhsT) and 1 KiB (rhs) per partition, far below the ~2 KiB per partition where a DMA
   gets efficient. lhsT is read 16 times and rhs 32 times: 5 GiB of traffic.
3. `hoisted`: the lhsT column block of an M tile (all of K, 16 KiB per partition) is loaded
   once per M tile, outside the N and K loops: one DMA per matmul, lhsT read once.
4. `blocked_free(BLOCK_M, BLOCK_N)`: BLOCK_M x BLOCK_N output tiles at a time, one PSUM bank
   each, so BLOCK_M * BLOCK_N <= 8. An rhs K tile, BLOCK_N * 512 wide, is loaded once and feeds
   BLOCK_M * BLOCK_N matmuls: rhs is read 32 / BLOCK_M times. (1, 1) is step 3 again.
5. `blocked_all(BLOCK_M, BLOCK_N, BLOCK_K)`: the fp32 result block lives in SBUF; K is walked
   in blocks of BLOCK_K tiles, each block's PSUM partial sums added into the result by VectorE.
   PSUM no longer caps the block, SBUF does: per partition the lhsT block takes
   BLOCK_K * BLOCK_M * 256 B, the rhs block BLOCK_K * BLOCK_N * 1 KiB and the result
   BLOCK_M * BLOCK_N * 2 KiB, of 176 KiB usable. lhsT is read 16 / BLOCK_N times, rhs
   32 / BLOCK_M times.

The grids: for `blocked_free`, the power-of-two blocks with BLOCK_M * BLOCK_N <= 8 but (1, 4),
plus (4, 4), which the kernel's own guard rejects (16 PSUM accumulators); for `blocked_all`,
blocks around (8, 2, 8) varying one factor at a time, plus three that do not fit SBUF with a
buffer per allocation line (the compiler spills).
"""
TABLE_NOTES = """Latency in ms unless marked us; failed points last. *TensorE busy*: share of the
latency TensorE executes matmuls. *MFU*: the TensorE FLOPs bound (every matmul at the documented
bf16 peak, the summary's `roofline_terms_ns["tensor_flops"]`) over the latency, the summary's
`mfu_percent`; it is TensorE busy times `tensor_sustained_fraction` (0.8524: the model streams
matmuls at the 85 % of the documented rate that AWS's fully optimized matmul reaches), since every
matmul here is a full 128 x 128 x 512 tile. *DMA queues busy*: mean busy share of the 16 DMA
queues (fixed costs included); *DMA bw of peak*: the kernel's own DMA bytes over the latency
against the 16 engines' peak (17 B/ns each, reading or writing HBM; the summary's
`dma_bandwidth_percent_of_peak`), i.e. the DMA floor over the latency: below *DMA queues busy*
when the queues also move spill traffic. *Bottleneck*: the busiest engine when it is busy more
than half the latency, else "latency". Failed points: an `AssertionError` is the kernel's guard.
"""
PLOT_NOTES = """Left: the latency of every point at the large shape (step 1 is left out: other
shape). Right: every engine's busy time stacked, the latency as a black tick. Steps 2 and 3 are
almost all DMA time; TensorE (blue, the same 7.03 ms of busy time in every row) fills the
latency only where the traffic is small enough for the DMA engines to keep up with it.
"""
WHY = """**What bounds every point** is the larger of two floors. TensorE's: 5.99 ms at the
documented bf16 peak, 7.03 ms at the rate the model sustains (`tensor_sustained_fraction`). The DMA
engines': the point's traffic at 272 B/ns (16 engines x 17 B/ns, loads and stores alike, AWS's
DMA bandwidth guide); 1,820 MiB take as long as TensorE's floor. These are the defaults of the
SDK 2.26 toolchain (DGE off); under `toolchain=2.20` (DGE on) the loads of steps 2 and 3 are
limited by the descriptor generator instead (reports/validation.md compares AWS's 2.20 table).

**Steps 2 and 3** sit on the DMA floor: 5,184 MiB in 20.0 ms and 4,224 MiB in 17.2 ms (95 % of
the peak; the per-DMA fixed costs show a little at 1 KiB per partition). TensorE waits on the
loads, once per matmul (the `tensor waited ... on dma` stall).

**Step 4**: the gain is reuse. Each rhs tile feeds BLOCK_M matmuls, so rhs (128 MiB) is read
32 / BLOCK_M times while lhsT (64 MiB) is read once whatever the block: the traffic falls from
4,224 MiB at (1, 1) to 640 MiB at (8, 1). BLOCK_N changes nothing ((2, 1), (2, 2) and (2, 4)
all move 2,176 MiB, 8.4-9.6 ms, DMA-bound): a wider BLOCK_N only makes each rhs DMA bigger.
From BLOCK_M = 4 (1,152 MiB, 4.4 ms of DMA time) the points reach TensorE's floor, 97 % busy,
7.2 ms. The `memset` of `acc = nl.zeros(..., buffer=nl.psum)` costs nothing: the compile stage
folds it into the matmuls that start each bank's accumulation group (docs/model.md).

**Step 5** keeps the fp32 result block in SBUF, so PSUM no longer caps the block, but lhsT is
now read 16 / BLOCK_N times. Its best points, (8, 1, 8), (4, 2, 8) and (8, 2, 8) (1,088 to
1,600 MiB), keep TensorE 100 % busy: 7.04 ms, the fastest of the ladder, a little ahead of
step 4, whose TensorE waits now and then for an rhs load or a copy out of PSUM (97 % busy).
Larger blocks move less but are slower: fewer buffers of each larger operand block fit, so
TensorE waits for the next K block's loads (at (16, 2, 16) 2.5 ms of `tensor waited ... on
dma`), while VectorE adds each block's PSUM partial sums into the SBUF result (the
`tensor_tensor` stalls); and (16, 4, 8), (32, 2, 8) and (8, 8, 8)
do not fit SBUF with a buffer per allocation line, so the compiler spills (compiler/spill.py;
their *DMA bw of peak* falls below *DMA queues busy*) and they end at 9.0 to 10.6 ms. AWS's own
fully optimized kernel keeps a bf16 result strip per N block instead (kernels/matmul_strip.py;
reports/validation.md compares it with AWS's measurement).
"""

PAIRS_INTRO = """The same sweep machinery on the two other kernel pairs, at their example shapes
(`example_inputs()` defaults) and at a larger one. `layernorm.py`: `layernorm_nl` (only
`nl.mean` / `nl.var` / element-wise `nl`) versus `layernorm_bn` (`nisa.bn_stats` per 512-element
chunk, one `nisa.bn_aggr`, one two-operator `tensor_scalar`), fp32 [N, F]. `dma_rows.py`:
`x * 0.5` on a tall fp32 [R, 32] tensor, one 128 B row per partition (`row_per_partition`)
versus ROWS_PER_PARTITION consecutive rows per partition (`rows_grouped`).
"""
PAIRS_NOTES = """**layernorm**: the `nl` version lowers `nl.mean` and `nl.var` to full-tile
reductions and element-wise passes (the variance recomputes the mean, subtracts, squares and
reduces); the compile stage moves the element-wise passes it can between VectorE and ScalarE
(both are busy). The `bn_stats` version reads the tile twice: one `bn_stats` per 512-element
chunk and one two-operator `tensor_scalar`, plus a small `bn_aggr`. At the example shape the
`bn_stats` version is about a third faster; at the large shape both are DMA-bound (97-99 % of
the DMA peak) and within 3 % of each other: the loads and stores, not the arithmetic, set the
time.
**dma_rows**: each tile is one load, one multiply and one store. With one 128 B row per
partition (`row_per_partition`) every DMA is small and pays its fixed cost: the DMA queues are
busy under a third of the time and the kernel is latency-bound. Grouping puts
ROWS_PER_PARTITION rows in each partition of a tile, so there are that many times fewer DMAs,
each that many times larger per partition: at 2 rows the latency halves, from 4 rows the kernel
is on the DMA floor (94-98 % of the DMA peak), and more rows per partition change little (8 to
32: 63 us, 3.3x faster than one row per partition).

"""
REGENERATE = """## Regenerating

    python scripts/matmul_tiling.py [--workers N]

takes a few minutes on 2 cores (each large point 10-60 s of simulation). Every sweep saves its
points in `reports/matmul_tiling/<kernel>/points.jsonl` as they finish (plus `sweep.csv` and
`sweep.png` of that kernel alone); a point is keyed by the kernel file's absolute path, every
hardware config field and its parameters, so an interrupted run resumes and a second run only
re-renders, while a change of the timing model's config or a different checkout path runs the
points again. The summaries quoted above are cached in `reports/matmul_tiling/evidence.json`
under the same keys. After a change of the timing model itself (code, not config), delete
`reports/matmul_tiling/` first.
"""


#: Points besides each step's best whose summary the report quotes (why bigger blocks lose).
EXPLAIN = [("matmul_ladder", "blocked_free", {**BIG, "BLOCK_M": 4, "BLOCK_N": 2}),
           ("matmul_ladder", "blocked_all", {**BIG, "BLOCK_M": 16, "BLOCK_N": 2, "BLOCK_K": 16})]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, default=WORKERS, choices=range(1, 65),
                        metavar="N", help=f"sweep processes (default {WORKERS})")
    workers = parser.parse_args().workers
    OUT.mkdir(parents=True, exist_ok=True)
    ladder = run_sweeps(LADDER, workers)
    pairs = run_sweeps(PAIRS, workers)
    cache_file = OUT / "evidence.json"
    cache = json.loads(cache_file.read_text()) if cache_file.is_file() else {}
    picks = []  # (step, file, kernel, point) of every summary the report quotes
    for step, file, kernel, points in LADDER:
        ok = ladder[(ladder["kernel"] == kernel) & ladder["error"].isna()]
        if len(ok):  # each sweep's table is sorted by latency: its first row is its best
            picks.append((step, file, kernel, points[int(ok.iloc[0]["point"])]))
    for file, kernel, point in EXPLAIN:
        picks.append((next(s for s, _, k, _ in LADDER if k == kernel), file, kernel, point))
    quoted = [(step, kernel, point, evidence(file, kernel, point, cache))
              for step, file, kernel, point in picks]
    # Keep only what the report quotes (keys follow the kernel files' contents).
    used = {point_key(load_target(target(file, kernel)).identity, load_config("trn1"), point)
            for _, file, kernel, point in picks}
    cache_file.write_text(json.dumps({k: v for k, v in cache.items() if k in used}, indent=1,
                                     sort_keys=True) + "\n")
    ladder_plot(ladder)
    REPORT.write_text(render(ladder, pairs, quoted))
    print(f"wrote {REPORT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
