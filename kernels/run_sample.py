"""Quick start: simulate the tensor-add sample kernel and report what the simulator found.

Run from anywhere after ``pip install .``::

    python kernels/run_sample.py

It checks the simulated output against numpy, then prints the number of instructions the kernel
issued and the estimated NeuronCore-v2 latency. The exit status is non-zero when the result is
wrong, so the script doubles as a smoke test.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import neuroncore_sim as ncs

# kernels/ is a folder of scripts, not a package: make its modules importable by name.
sys.path.insert(0, str(Path(__file__).resolve().parent))
import tensor_add  # noqa: E402  (needs the path entry above)


def instruction_count(res) -> int | None:
    """Instructions the launch executed (DMA transfers of one load/store count once)."""
    program = getattr(res, "program", None)
    if program is not None:
        return len(program.instructions)
    events = getattr(res, "events", None)
    if events is not None and "instr_id" in getattr(events, "columns", ()):
        return int(events["instr_id"].nunique())
    return None


def main() -> int:
    """Simulate, check, print; return the process exit status."""
    inputs = tensor_add.example_inputs()
    res = ncs.simulate(tensor_add.kernel, *inputs.values(), grid=tensor_add.GRID)

    (out,) = res.outputs
    expected = tensor_add.reference(**inputs)
    error = float(np.max(np.abs(out.astype(np.float64) - expected.astype(np.float64))))
    shapes = " + ".join(str(list(a.shape)) for a in inputs.values())
    print(f"tensor_add {shapes} on grid {list(tensor_add.GRID)} (trn1 NeuronCore-v2)")
    print(f"  result check : max abs error vs numpy = {error:.3g}")

    count = instruction_count(res)
    print(f"  instructions : {count if count is not None else 'n/a'}")
    latency_ns = getattr(res, "latency_ns", None)
    if latency_ns is not None:
        print(f"  latency      : {latency_ns / 1000:.2f} us estimated")
    # Addition is exact in fp32 only up to rounding of the sum itself: allow one ulp.
    ok = np.allclose(out, expected, rtol=1e-6, atol=0.0)
    print("  status       : " + ("OK" if ok else "MISMATCH"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
