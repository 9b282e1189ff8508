"""Set 3: NKIBench (``zhang677/AccelOpt``): 14 compiler-generated NKI kernels and their profiles.

Kernels: ``NKIBench/kernels/*.py`` (``@nki.jit def kernel``); inputs: the reference's
``transform_to_nki_inputs(get_inputs())`` (``NKIBench/reference/*_numpy_*.py``) with
``np.random.normal`` returning zeros (timing does not depend on values; the references draw
every input from it). Measured: ``experiments/full_complete_local/profile_results.csv``, one
row per kernel, column ``profile`` (JSON: ``latency`` ms, the neuron-profile ``total_time``
mean of 10; ``hbm_read_bytes`` / ``hbm_write_bytes`` (spill traffic included); per-engine
``*_engine_active_time_percent`` as fractions 0-1; ``spill_save_bytes`` /
``spill_reload_bytes``), SDK 2.24/2.25 with ``--disable-dge --auto-cast=none`` on a
trn1.32xlarge. (``experiments/flb_full_complete_local/profile_results.csv`` is another
experiment, FlashInfer-Bench kernels on GPUs: not a NeuronCore set.)

Optimised kernels (secondary cases, outside the set's statistics): AccelOpt's best kernels in
``samples/nki`` measured by the best plan of their NKIBench problem in
``experiments/full_complete_local/results/11110904_best_plan_id.csv`` (column
``kernel_metadata``: the same profile fields), reported beside their baseline: the speedup the
hardware gives an optimisation against ours (:data:`OPTIMISED`).
"""

from __future__ import annotations

import csv
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any, Callable

from .runner import Case, measure

NAME = "nkibench"
CSV = Path("experiments/full_complete_local/profile_results.csv")
#: the profile's fields the report keeps
KEPT = ("latency", "hbm_read_bytes", "hbm_write_bytes", "scalar_engine_active_time_percent",
        "vector_engine_active_time_percent", "gpsimd_engine_active_time_percent",
        "spill_save_bytes", "spill_reload_bytes", "hfu_estimated_percent")


BEST_PLANS = Path("experiments/full_complete_local/results/11110904_best_plan_id.csv")
#: AccelOpt's optimised kernels whose measurement is the best plan of their problem:
#: sample file -> (the best-plan CSV's case_name, the baseline kernel's file stem).
#: ``rope_optimized.py`` is "the best RoPE kernel AccelOpt has discovered" (samples/nki/README)
#: and its problem's best plan is 1.30x the baseline, as the sample's profiling script computes.
#: ``mamba_optimized.py`` is left out: its problem's best plan reads exactly the baseline's
#: non-spill bytes (126,631,936), which that file, loading each input once, cannot.
OPTIMISED = {"rope_optimized.py": ("rope_single_freq_apply_B1_D128_H64_N4096",
                                   "rope_single_freq_apply_B1_H64_N4096_D128_0")}


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _zeros(*args: Any, size: Any = None, **kwargs: Any):
    import numpy as np
    return np.zeros(size if size is not None else (), np.float32)


def _run(kernel: Path, reference: Path) -> Callable[[Any], dict]:
    def run(cfg):
        import numpy as np

        import neuroncore_sim as ncs
        ncs.install_neuronxcc_alias()
        ref = _load(reference, "nkibench_reference")
        real = np.random.normal
        np.random.normal = _zeros
        try:
            inputs = ref.transform_to_nki_inputs(ref.get_inputs())
        finally:
            np.random.normal = real
        mod = _load(kernel, "nkibench_kernel")
        res = ncs.simulate(mod.kernel, *inputs, functional=False, config=cfg)
        return measure(res, res.latency_ns / 1e6)
    return run


def cases(paths: dict[str, str]) -> list[Case]:
    """The kernels of ``profile_results.csv`` under the AccelOpt checkout ``paths["nkibench"]``."""
    root = Path(paths["nkibench"])
    table = root / CSV
    if not table.is_file() or not (root / "NKIBench" / "kernels").is_dir():
        raise SystemExit(f"--nkibench {root}: expected a checkout of zhang677/AccelOpt "
                         f"(with NKIBench/kernels and {CSV})")
    csv.field_size_limit(1 << 30)
    out = []
    with table.open() as f:
        for row in csv.DictReader(f):
            kernel = root / "NKIBench" / "kernels" / Path(row["kernel"]).name
            reference = root / "NKIBench" / "reference" / Path(row["task"]).name
            profile = json.loads(row["profile"])
            out.append(_case(f"nkibench/{kernel.stem}", kernel, reference, profile))
    return sorted(out, key=lambda c: c.id) + _optimised(root, {c.meta["name"]: c for c in out})


def _optimised(root: Path, baselines: dict[str, Case]) -> list[Case]:
    """The :data:`OPTIMISED` kernels whose files, best plan and baseline are all there."""
    table = root / BEST_PLANS
    if not table.is_file():
        return []
    with table.open() as f:
        best = {row["case_name"]: json.loads(row["kernel_metadata"]) for row in csv.DictReader(f)}
    out = []
    for sample, (problem, baseline) in OPTIMISED.items():
        kernel, base = root / "samples" / "nki" / sample, baselines.get(baseline)
        if not kernel.is_file() or problem not in best or base is None:
            continue
        reference = Path(base.meta["reference"])
        profile = best[problem]
        out.append(_case(f"nkibench/optimised/{kernel.stem}", kernel, reference, profile,
                         primary=False, baseline=base.id))
    return out


def _case(cid: str, kernel: Path, reference: Path, profile: dict, primary: bool = True,
          **meta: str) -> Case:
    """A kernel of ``kernel`` on ``reference``'s inputs, measured by ``profile``."""
    return Case(cid, NAME, float(profile["latency"]), "ms",
                lambda: (kernel.read_text(), reference.read_text()), _run(kernel, reference),
                meta={"name": kernel.stem, "reference": str(reference), **meta,
                      "profile": {k: profile.get(k) for k in KEPT}},
                primary=primary)
