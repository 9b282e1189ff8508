"""The validation report's error bands and coverage section (scripts/validation/bands.py), on
a small synthetic set: the code path the full report runs, without its seven minutes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

from validation import bands  # noqa: E402
from validation.runner import Case  # noqa: E402

from neuroncore_sim import error_band  # noqa: E402


def _case(i: int, s: str, published: float, **kw) -> Case:
    return Case(f"{s}/{i}", s, published, "us", lambda: (), lambda cfg: {}, **kw)


def _synthetic() -> tuple[list[Case], dict[str, dict]]:
    cases, results = [], {}
    for s, scale in (("a", 1.0), ("b", 1.3)):
        for i in range(8):
            c = _case(i, s, 100.0 * scale * (0.9 + 0.03 * i))
            cases.append(c)
            results[c.id] = {"ok": True, "estimate": 100.0, "bottleneck": "dma" if i % 2
                             else "vector"}
    probe = _case(99, "a", 5.0, meta={"key": "probe"})
    secondary = _case(98, "a", 5.0, primary=False)
    failed = _case(97, "b", 5.0)
    cases += [probe, secondary, failed]
    results[probe.id] = results[secondary.id] = {"ok": True, "estimate": 1.0,
                                                 "bottleneck": "dma"}
    results[failed.id] = {"ok": False, "error": "x"}
    return cases, results


def test_ratios_keep_primary_kernel_cases_that_ran() -> None:
    cases, results = _synthetic()
    rows = bands.ratios(cases, results)
    assert len(rows) == 16 and all(est == 100.0 for _, _, est, _ in rows)


def test_coverage_counts_measured_values_inside_their_band(tmp_path: Path) -> None:
    cases, results = _synthetic()
    rows = bands.ratios(cases, results)
    table = bands.table(rows, "synthetic", "v")
    assert set(table["groups"]) == {"all", "dma", "engine"}
    cov = bands.coverage(rows, table)
    expect = {s: sum(error_band.inside(table, b, e, p) for s2, b, e, p in rows if s2 == s)
              for s in ("a", "b")}
    assert cov == {"a": (expect["a"], 8), "b": (expect["b"], 8)}
    # the 10th-90th percentile band leaves out about a fifth of its own cases
    assert 10 <= expect["a"] + expect["b"] <= 14
    lines = bands.section(rows, table, rows, "v")
    text = "\n".join(lines)
    assert "## Error bands" in text and f"| a | {expect['a']} of 8 |" in text
    # set b is 30 % slower than a: a band built from a alone misses most of b
    assert "| b |" in text and "without the set" in text
    held = bands.table([r for r in rows if r[0] == "a"], "a only", "v")
    assert f"| {bands.coverage([r for r in rows if r[0] == 'b'], held)['b'][0]} of 8 |" in text
    out = tmp_path / "bands.json"
    bands.write_table(table, out)
    assert json.loads(out.read_text()) == table


def test_leave_one_set_out_rows_run_each_set_under_its_refit() -> None:
    cases, _ = _synthetic()
    seen = []

    class Refit:
        def __init__(self, v):
            self.values = {"f": v}

    def run(cs, overrides):
        seen.append((sorted({c.set for c in cs}), overrides))
        return {c.id: {"ok": True, "estimate": 50.0 * overrides["f"], "bottleneck": "dma"}
                for c in cs}

    fit_cases = [c for c in cases if c.primary and c.meta.get("key") != "probe"]
    rows = bands.loso_rows(run, fit_cases, {"a": (Refit(1.0), None), "b": (Refit(2.0), None)})
    assert seen == [(["a"], {"f": 1.0}), (["b"], {"f": 2.0})]
    assert {(s, est) for s, _, est, _ in rows} == {("a", 50.0), ("b", 100.0)}


def test_no_case_no_table() -> None:
    assert bands.table([], "none", "v") is None
    assert bands.section([], None, [], "v")[-2] == "* n/a: no band case ran."
