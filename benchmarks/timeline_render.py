"""Timeline and Perfetto trace of a large kernel: render time, file sizes, and the PNG itself.

kernels/matmul_blocked.py scaled up to lhsT [8192, 2048] x rhs [8192, 8192] bf16, timing only
(nt.tensor placeholders, no values): 25,344 instructions, about 156k events. Writes
reports/timeline_render.txt and reports/matmul_blocked_large/timeline.png.

Run:  python benchmarks/timeline_render.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "kernels"))

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matmul_blocked  # noqa: E402

import neuroncore_sim as ncs  # noqa: E402
import neuroncore_sim.nki.language as nl  # noqa: E402
from neuroncore_sim.report import chrome_trace, plot  # noqa: E402
from neuroncore_sim.nki import typing as nt  # noqa: E402

K, M, N = 8192, 2048, 8192
REPEATS = 3


def best_of(fn, repeats: int = REPEATS) -> float:
    """Fastest of ``repeats`` wall-clock runs of ``fn()`` (the machine is shared)."""
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> int:
    t = time.perf_counter()
    res = ncs.simulate(matmul_blocked.kernel, nt.tensor[[K, M], nl.bfloat16],
                       nt.tensor[[K, N], nl.bfloat16], functional=False)
    sim_s = time.perf_counter() - t
    out = ROOT / "reports" / "matmul_blocked_large"
    out.mkdir(parents=True, exist_ok=True)
    png = out / "timeline.png"
    render_s = best_of(lambda: plt.close(plot.timeline(res, png)))
    trace_path = Path("/tmp") / "neuroncore_sim_timeline_render_trace.json"
    lines = [f"matmul_blocked lhsT [{K}, {M}] x rhs [{K}, {N}] bf16, timing only",
             f"instructions {len(res.program.instructions):,}, events "
             f"{len(res.timing.events):,}, estimated latency {res.latency_ns / 1e6:.3f} ms",
             f"simulate (trace + timing): {sim_s:.2f} s",
             f"timeline PNG (lanes + busy + memory panels), best of {REPEATS}: {render_s:.2f} s"]
    for cap in (None, 20_000):
        s = best_of(lambda: chrome_trace.write(res, trace_path, max_events=cap), 1)
        size = trace_path.stat().st_size / 1e6
        lines.append(f"Perfetto trace, max_events={cap}: {size:.1f} MB in {s:.2f} s")
    trace_path.unlink()
    text = "\n".join(lines) + "\n"
    (ROOT / "reports" / "timeline_render.txt").write_text(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
