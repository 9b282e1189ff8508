"""Set 2: UC Berkeley Autocomp's Trainium1 optimisation traces (``ucb-bar/autocomp``).

Every version of every trace that ``scripts/validate_traces.py`` knows (its ``TRACES``, and its
``versions`` / ``harness_module`` helpers, reused here) is a case: the version's code put in its
harness, the harness's ``benchmark_nki`` run through our ``nki.benchmark`` (timing-only) under
the set's config. Published: Autocomp's measured P99 latency (ms) on a trn1.2xlarge, SDK 2.26.
"""

from __future__ import annotations

import importlib.util
import re
import tempfile
from pathlib import Path
from typing import Any, Callable

import validate_traces as traces  # scripts/validate_traces.py (scripts/ is on sys.path)

from .runner import Case, measure

NAME = "autocomp"


def _run(harness: Path, code: str) -> Callable[[Any], dict]:
    def run(cfg):
        import neuroncore_sim as ncs
        ncs.install_neuronxcc_alias()
        with tempfile.TemporaryDirectory() as tmp:
            path = traces.harness_module(harness, code, Path(tmp))
            spec = importlib.util.spec_from_file_location("autocomp_version", path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            with ncs.record_launches(config=cfg, functional=False) as launches:
                mod.benchmark_nki(mod.solution)
        if not len(launches):
            raise RuntimeError("benchmark_nki launched no kernel")
        res = launches[-1]
        return measure(res, res.latency_ns / 1e6)
    return run


def cases(paths: dict[str, str]) -> list[Case]:
    """Every version of every trace of the checkout ``paths["autocomp"]``, root first."""
    root = Path(paths["autocomp"])
    if not (root / "examples").is_dir() or not (root / "harnesses").is_dir():
        raise SystemExit(f"--autocomp {root}: expected a checkout of ucb-bar/autocomp "
                         "(with examples/ and harnesses/)")
    out = []
    for trace_file, harness_file in traces.TRACES.items():
        harness = root / "harnesses" / harness_file
        name = Path(trace_file).stem.removesuffix("_trace")
        for index, (code, published) in enumerate(traces.versions(root / "examples" / trace_file)):
            out.append(Case(f"autocomp/{name}/v{index}", NAME, published, "ms",
                            lambda c=code, h=harness: (c, h.read_text()), _run(harness, code),
                            meta={"trace": name, "version": index,
                                  "ref": re.search(r"test_nki\((\w+),", harness.read_text())
                                  .group(1)}))
    return out
