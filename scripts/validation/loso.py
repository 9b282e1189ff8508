"""Leave-one-set-out residuals of the shipped trn1 preset: the error bands' basis.

The LOSO residual of a case is measured / estimate with the model refitted without the case's
set. What "refitted" means for this preset: its fitted fields come from
``scripts/calibrate_trn1.py`` (the calibrate fit, ``neuroncore_sim.calibrate.fit``), and every
row it fits is in the ``aws`` set: ``tensor_pipeline_latency_ns``,
``load_stationary_latency_ns`` and ``semaphore_latency_ns`` from the performance guide's
instruction profiles (the set's probes, which are no band case), ``dge_ns_per_element`` from
the three DMA-bound rows of the SDK 2.20 matmul ladder. Every other field is a documented value
or a named assumption, fitted to no case. Hence, per held-out set:

* ``autocomp``, ``nkibench``: no fit row is theirs, so the refit without them is the preset
  itself and their residuals are the report's (out of sample as they stand; ``dge`` does not
  even act on them: both run with DGE off).
* ``aws``: without the set no row is left for any fitted field (no other set runs DGE or has
  instruction profiles), so a refit without the whole set is undetermined and the fit
  machinery refuses it. Where ``dge_ns_per_element`` was fitted on the set's own band cases,
  the three ladder rows, each is predicted with it refitted by the calibrate fit on the other
  two (the fit's leave-one-out); the other AWS kernels keep the preset (they are no fit row:
  out of sample at the row level, not the set level; the report says so).

Without ``--tutorials`` (AWS's kernels absent) the ladder rows keep the preset too, and the
basis says so. The ladder refits take minutes (whole 20-50 ms kernels re-timed per trial value):
they are cached with the cases' results.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .aws import LADDER, LADDER_FIT_CASES, TUTORIALS, ladder_case_id, ladder_fit_cases
from .bands import band_cases
from .cache import Cache, cache_key, config_fingerprint, text_hash
from .runner import Case

#: The calibrated field the held-out ``aws`` set's ladder rows are refitted for.
DGE = "dge_ns_per_element"
_KEY = "calibrate/leave-one-out/dge_ns_per_element"


def ladder_leave_one_out(tutorials: Path, options: dict[str, object], base: Any, cache: Cache,
                         source: str) -> dict[str, float]:
    """Set case id of each DMA-bound ladder row -> its estimate in ms with
    ``dge_ns_per_element`` refitted (calibrate fit, from ``base``) on the other two rows."""
    from neuroncore_sim.calibrate.fit import fit
    published = {name: ms for name, _, _, ms, _ in LADDER}
    texts = ((tutorials / TUTORIALS["mm"]).read_text(), repr(sorted(options.items())),
             repr(sorted(published.items())))
    key = cache_key(_KEY, text_hash(*texts), config_fingerprint(base), source)
    stored = cache.get(key)
    if stored is None:
        rows = [{"case": case, "metric": "latency_ns", "value_ns": str(published[name] * 1e6)}
                for case, name in LADDER_FIT_CASES.items()]
        report = fit(rows, base, [DGE], extra=ladder_fit_cases(tutorials, options))
        loo = {}
        for case, name in LADDER_FIT_CASES.items():
            error = report.leave_one_out.get((case, "latency_ns"))
            if error is None:
                raise RuntimeError(f"the calibrate fit gave no leave-one-out error for {case}")
            loo[ladder_case_id(name)] = published[name] * (1 + error)
        stored = {"ok": True, "estimate_ms": loo, "fitted": report.values[DGE]}
        cache.put(key, stored)
    return dict(stored["estimate_ms"])


def basis_rows(cases: list[Case], results: dict[str, dict], refitted: dict[str, float]
               ) -> list[tuple[str, str, float, float]]:
    """(set, bottleneck, LOSO estimate, published) of each band case that ran: the report's
    estimate (the preset), or the estimate under the refit without the case where ``refitted``
    has one (the ladder rows). The bottleneck verdict is the preset's run."""
    out = []
    for c in band_cases(cases):
        r = results.get(c.id, {})
        if r.get("ok") and r.get("estimate", 0) > 0 and "bottleneck" in r:
            estimate = refitted.get(c.id, float(r["estimate"]))
            out.append((c.set, r["bottleneck"], estimate, float(c.published)))
    return out


def basis_text(refitted: dict[str, float], n_rows: int, pattern: str) -> str:
    """The band table's basis, said in one line."""
    ladder = (f"the AWS ladder's 3 DMA-bound rows with {DGE} refitted on the other two by the "
              "calibrate fit (nothing outside the AWS set constrains it)" if refitted else
              f"the AWS ladder rows under the preset too (no --tutorials: {DGE} not refitted)")
    return (f"leave-one-set-out residuals of the trn1 preset (scripts/validation/loso.py): "
            f"every fitted field's rows are AWS's, so Autocomp and NKIBench under the preset; "
            f"{ladder}; the other AWS kernels under the preset (no fit row); {n_rows} cases"
            + (f", -k {pattern!r}" if pattern else ""))
