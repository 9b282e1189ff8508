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
            out.append(Case(f"nkibench/{kernel.stem}", NAME, float(profile["latency"]), "ms",
                            lambda k=kernel, r=reference: (k.read_text(), r.read_text()),
                            _run(kernel, reference),
                            meta={"name": kernel.stem,
                                  "profile": {k: profile.get(k) for k in KEPT}}))
    return sorted(out, key=lambda c: c.id)
