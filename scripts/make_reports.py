"""Regenerate reports/<kernel>/summary.txt and timeline.png for every sample kernel.

    python scripts/make_reports.py            # all kernels/*.py with example_inputs()
    python scripts/make_reports.py dma_rows tiled   # only these files (stem) or kernels

A kernel file with several kernels (a KERNELS dict) gets one folder per kernel.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's package, not another installed copy

import neuroncore_sim as ncs  # noqa: E402
from neuroncore_sim import report  # noqa: E402
from neuroncore_sim.report import plot  # noqa: E402


def kernels_of(path: Path) -> dict[str, object]:
    """name -> kernel for one sample file ({} when it is not a kernel file)."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if not hasattr(module, "example_inputs"):
        return {}
    found = dict(getattr(module, "KERNELS", {}) or {})
    if not found and hasattr(module, "kernel"):
        found = {path.stem: module.kernel}
    return {name: (k, module) for name, k in found.items()}


def main(only: list[str]) -> int:
    """Write the reports of every sample kernel, or of those whose kernel name or file stem is
    in ``only``; return the process exit status (1 when a kernel failed or a name is unknown)."""
    sys.path.insert(0, str(ROOT / "kernels"))  # samples import their siblings
    status, seen = 0, set()
    for path in sorted((ROOT / "kernels").glob("*.py")):
        for name, (kernel, module) in kernels_of(path).items():
            if only and name not in only and path.stem not in only:
                continue
            seen.update((name, path.stem))
            inputs = module.example_inputs()
            pos, kw = ((), dict(inputs)) if isinstance(inputs, dict) else (tuple(inputs), {})
            try:
                res = ncs.simulate(kernel, *pos, grid=getattr(module, "GRID", ()), **kw)
            except ncs.SimulatorError as e:
                print(f"{name}: FAILED: {e}")
                status = 1
                continue
            out = ROOT / "reports" / name
            out.mkdir(parents=True, exist_ok=True)
            (out / "summary.txt").write_text(report.full_text(res))
            plot.save_timeline(res, out / "timeline.png")
            print(f"{name}: {res.latency_ns / 1000:.2f} us -> {out.relative_to(ROOT)}/")
    for name in sorted(set(only) - seen):
        print(f"{name}: no sample kernel or kernel file of that name in kernels/")
        status = 1
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
