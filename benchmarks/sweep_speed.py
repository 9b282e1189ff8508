"""Wall time of a timing-only sweep, serial (workers=1) against two local worker processes.

The sweep: kernels/matmul_blocked.py, n_block in {1, 2, 4, 8} x two shapes of the bf16 matmul
[M x 8192] x [8192 x 8192] with M = 1024 and M = 4096 (the big one: 32768 nc_matmul per point).
Writes reports/sweep_speed.txt (times and the ranked table) and the sweep's table and plot to
reports/sweep_matmul_blocked/.

Run:  python benchmarks/sweep_speed.py
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

from neuroncore_sim.sweep.run import PLOT_FILE, TABLE_FILE, sweep
from neuroncore_sim.sweep.cli import format_table

ROOT = Path(__file__).resolve().parent.parent
TARGET = str(ROOT / "kernels" / "matmul_blocked.py")
GRID = {"n_block": [1, 2, 4, 8], "M": [1024, 4096], "K": [8192], "N": [8192]}


def main() -> None:
    """Run the sweep serially and with two workers; write the report."""
    times = {}
    tables = {}
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        for workers in (1, 2):
            start = time.perf_counter()
            tables[workers] = sweep(TARGET, GRID, workers=workers, progress=False,
                                    out=Path(tmp) / f"w{workers}")
            times[workers] = time.perf_counter() - start
            print(f"workers={workers}: {times[workers]:.1f} s")
        keep = ROOT / "reports" / "sweep_matmul_blocked"
        keep.mkdir(parents=True, exist_ok=True)
        for name in (TABLE_FILE, PLOT_FILE):
            shutil.copy(Path(tmp) / "w2" / name, keep / name)
    load_after = os.getloadavg()[0]
    same = tables[1].equals(tables[2])
    n = len(tables[1])
    text = (
        f"Sweep speed: {TARGET.rsplit('/', 1)[-1]}, {n} timing-only points "
        f"(n_block 1,2,4,8 x M 1024,4096; K = N = 8192, bf16)\n"
        f"machine: {os.cpu_count()} CPUs, shared with other jobs: 1-minute load average "
        f"{load_before:.1f} before, {load_after:.1f} after\n\n"
        f"workers=1 (in process) : {times[1]:6.1f} s  ({times[1] / n:.1f} s a point)\n"
        f"workers=2 (processes)  : {times[2]:6.1f} s  (speed-up {times[1] / times[2]:.2f}x)\n"
        f"tables identical       : {same}\n\n"
        + format_table(tables[2], list(GRID), n) + "\n")
    (ROOT / "reports" / "sweep_speed.txt").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
