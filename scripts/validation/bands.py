"""The error bands of the estimates (``neuroncore_sim.error_band``) from this report's cases,
and the report's coverage section.

Basis: leave-one-set-out residuals (errors of kernels the fit has not seen): with ``--fit``,
each set's fit cases under that fit's refit without the set; without it, the shipped preset's
(:mod:`.loso`: what its refit without a set is). Instruction probes are left out (their estimate is one instruction's duration, not a
kernel's latency, and their bottleneck is not theirs). The report checks the shipped bands on
every set (how many measured values fall inside their band) and, as a stricter check, bands
built from the other sets only.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from neuroncore_sim import error_band

from .runner import Case


def band_cases(cases: list[Case]) -> list[Case]:
    """The cases a band is about: primary whole-kernel latencies (no instruction probes)."""
    return [c for c in cases if c.primary and c.meta.get("key") != "probe"]


def ratios(cases: list[Case], results: dict[str, dict]) -> list[tuple[str, str, float, float]]:
    """(set, bottleneck, estimate, published) of each band case that ran."""
    out = []
    for c in band_cases(cases):
        r = results.get(c.id, {})
        if r.get("ok") and r.get("estimate", 0) > 0 and "bottleneck" in r:
            out.append((c.set, r["bottleneck"], float(r["estimate"]), float(c.published)))
    return out


def loso_rows(run: Callable[[list[Case], dict], dict[str, dict]], fit_cases: list[Case],
              loso: dict[str, tuple[Any, Any]]) -> list[tuple[str, str, float, float]]:
    """Each held-out set's fit cases under the refit without it (cached runs)."""
    out = []
    for held, (refit, _) in loso.items():
        held_cases = [c for c in fit_cases if c.set == held]
        out += ratios(held_cases, run(held_cases, refit.values))
    return out


def table(rows: list[tuple[str, str, float, float]], basis: str, model_version: str
          ) -> dict[str, Any] | None:
    """The band table of ``rows`` (None when there is none)."""
    if not rows:
        return None
    return error_band.build_table([(b, pub / est) for _, b, est, pub in rows], basis,
                                  model_version)


def write_table(data: dict[str, Any], path: Path = error_band.BAND_FILE) -> None:
    """Write the band table the package ships."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


def coverage(rows: list[tuple[str, str, float, float]], data: dict[str, Any]
             ) -> dict[str, tuple[int, int]]:
    """Per set: (measured values inside their band, band cases)."""
    out: dict[str, tuple[int, int]] = {}
    for s, bottleneck, est, pub in rows:
        hit, total = out.get(s, (0, 0))
        out[s] = (hit + error_band.inside(data, bottleneck, est, pub), total + 1)
    return out


def section(rows: list[tuple[str, str, float, float]], data: dict[str, Any] | None,
            basis_rows: list[tuple[str, str, float, float]], model_version: str) -> list[str]:
    """The report's "Error bands" section: the table, then coverage per set."""
    lines = ["## Error bands", ""]
    if data is None:
        return lines + ["* n/a: no band case ran.", ""]
    lines += [f"Method: `neuroncore_sim/error_band.py` (docs/model.md, 'Error band'); basis: "
              f"{data['basis']}. Band = the middle {data['coverage'] * 100:.0f} % of "
              "measured / estimate per mechanism group (`all` where a group has fewer than "
              f"{error_band.MIN_CASES} cases); shipped in `neuroncore_sim/data/error_bands.json`.",
              "", "| group | cases | low | high |", "|---|---|---|---|"]
    for name, g in data["groups"].items():
        lines.append(f"| {name} | {g['cases']} | x{g['low']:.3f} | x{g['high']:.3f} |")
    lines += ["", "Coverage: measured values of each set inside the band around the report's "
              "estimate (the preset, what a user sees): (a) the shipped band; (b) a band built "
              "the same way from the other sets' basis cases only (the set's own residuals "
              "left out).", "",
              "| set | (a) inside the shipped band | (b) inside a band without the set |",
              "|---|---|---|"]
    shipped = coverage(rows, data)
    for s, (hit, total) in shipped.items():
        others = [r for r in basis_rows if r[0] != s]
        held = table(others, "others", model_version)
        if held is None:
            strict = "n/a (no other set)"
        else:
            h, t = coverage([r for r in rows if r[0] == s], held)[s]
            strict = f"{h} of {t}"
        lines.append(f"| {s} | {hit} of {total} | {strict} |")
    return lines + [""]
