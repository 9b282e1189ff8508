"""Issue 16 item 4: a 20-point timing-only sweep of AWS's block-free matmul tutorial kernel at
[4096 x 8192] x [8192 x 8192] bf16 on 2 workers, against the time of one point.

    python benchmarks/sweep_aws.py /work/peers

AWS's kernel is imported from the checkout under the given folder (never copied): a kernel
file written to a temporary folder imports it and adds the ``example_inputs`` a sweep needs.
The points vary ``config.semaphore_latency_ns`` (20 values), so every point is a full
simulation of the same kernel. Prints one point's wall time (a point run in this process, after
a warm-up of the same point), the sweep's wall time, and their ratio (ideal: 20 / 2 = 10).
"""

from __future__ import annotations

import sys
import tempfile
import textwrap
import time
from pathlib import Path

from neuroncore_sim.config import load_config
from neuroncore_sim.sweep.point import run_point
from neuroncore_sim.sweep.run import sweep

ROOT = Path(__file__).resolve().parent.parent
M, K, N = 4096, 8192, 8192
POINTS = 20


def kernel_file(folder: Path, peers: Path) -> Path:
    """A sweepable kernel file that imports AWS's block-free matmul from ``peers``."""
    tutorial = peers / ("nki-samples-pre-beta2/src/nki_samples/tutorials/"
                        "matrix_multiplication/matrix_multiplication_nki_kernels.py")
    path = folder / "aws_block_free.py"
    path.write_text(textwrap.dedent(f'''
        import importlib.util
        import ml_dtypes
        import numpy as np
        import neuroncore_sim as ncs

        ncs.install_neuronxcc_alias()
        _spec = importlib.util.spec_from_file_location("aws_mm", {str(tutorial)!r})
        _mod = importlib.util.module_from_spec(_spec)
        _spec.loader.exec_module(_mod)
        kernel = _mod.nki_matmul_block_free_dimension_

        def example_inputs(M={M}, K={K}, N={N}):
            return {{"lhsT": np.zeros((K, M), ml_dtypes.bfloat16),
                     "rhs": np.zeros((K, N), ml_dtypes.bfloat16)}}

        def reference(lhsT, rhs):
            return lhsT.astype(np.float32).T @ rhs.astype(np.float32)
        '''))
    return path


def main(argv: list[str]) -> int:
    peers = Path(argv[0]) if argv else Path("/work/peers")
    with tempfile.TemporaryDirectory() as tmp:
        target = str(kernel_file(Path(tmp), peers)) + "::kernel"
        cfg = load_config(None)
        run_point(target, {}, cfg)  # warm-up: imports, kernel file, inputs
        start = time.perf_counter()
        row = run_point(target, {}, cfg)
        one = time.perf_counter() - start
        assert row.get("error") is None, row.get("error")
        grid = {"config.semaphore_latency_ns": [50.0 + 5.0 * i for i in range(POINTS)]}
        start = time.perf_counter()
        table = sweep(target, grid, workers=2, progress=False, out=Path(tmp) / "out")
        total = time.perf_counter() - start
    errors = int(table["error"].notna().sum()) if "error" in table else 0
    print(f"one point: {one:.1f} s; {POINTS} points on 2 workers: {total:.1f} s "
          f"({total / one:.1f} x one point; ideal {POINTS / 2:.0f}); failed points: {errors}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
