"""The error band next to an estimate (neuroncore_sim.error_band): its table from validation
ratios, the band of an estimate, and where it shows (summary(), summary.txt)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neuroncore_sim import error_band, report, simulate
from neuroncore_sim.error_band import band_for, build_table, likely_text

ratio = st.floats(0.2, 5.0, allow_nan=False)


@settings(max_examples=30, deadline=None)
@given(st.lists(ratio, min_size=5, max_size=40), st.lists(ratio, min_size=0, max_size=4))
def test_groups_are_central_quantiles_and_thin_ones_fall_back(dma, engine) -> None:
    rows = [("dma", r) for r in dma] + [("vector", r) for r in engine]
    table = build_table(rows, "test", "v")
    g = table["groups"]
    assert g["dma"] == {"low": pytest.approx(np.quantile(dma, 0.1)),
                        "high": pytest.approx(np.quantile(dma, 0.9)), "cases": len(dma)}
    assert g["all"]["cases"] == len(rows)
    assert "engine" not in g  # fewer than MIN_CASES: the pooled band is used
    b = band_for("tensor", 1000.0, table)
    assert b["mechanism"] == "all"
    assert b["low_ns"] == pytest.approx(1000.0 * np.quantile(dma + engine, 0.1))


def test_bottleneck_verdicts_map_to_mechanism_groups() -> None:
    assert [error_band.mechanism(v) for v in ("dma", "latency", "tensor", "vector", "scalar",
                                              "gpsimd")] == \
        ["dma", "dependency", "engine", "engine", "engine", "engine"]


def test_a_band_reads_like_the_issue_asks() -> None:
    table = build_table([("dma", r) for r in (0.85, 0.86, 0.9, 1.0, 1.1, 1.16, 1.17)], "t", "v")
    b = band_for("dma", 4.2e6, table)
    text = likely_text(4.2e6, b)
    lo, hi = np.quantile([0.85, 0.86, 0.9, 1.0, 1.1, 1.16, 1.17], [0.1, 0.9]) * 4.2
    assert text.startswith(f"4.2 ms, likely {lo:.3g}-{hi:.3g} ms (the middle 80 %")
    assert "7 dma-bound validation cases" in text
    assert likely_text(950.0, None).startswith("950 ns (no error band")


def test_bad_ratios_are_refused() -> None:
    with pytest.raises(ValueError, match="positive ratios"):
        build_table([("dma", 0.0)], "t", "v")
    with pytest.raises(ValueError, match="at least one"):
        build_table([], "t", "v")


def test_summary_and_its_text_carry_the_band(monkeypatch) -> None:
    import neuroncore_sim.nki.language as nl

    def kernel(src):
        out = nl.ndarray(src.shape, dtype=src.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.load(src))
        return out

    table = build_table([("dma", r) for r in (0.9, 0.95, 1.0, 1.05, 1.2)]
                        + [("latency", r) for r in (0.5, 0.7, 1.0, 1.1, 1.3)], "t", "v")
    monkeypatch.setattr(error_band, "_shipped", lambda: table)
    res = simulate(kernel, np.zeros((128, 64), np.float32), functional=False)
    s = res.summary()
    want = band_for(s["bottleneck"], s["latency_ns"], table)
    assert s["latency_band"] == want and want is not None
    assert want["low_ns"] < s["latency_ns"] < want["high_ns"]
    assert f"likely {want['low_ns'] / 1000:.3g}-" in report.summary_text(res)
    monkeypatch.setattr(error_band, "_shipped", lambda: None)
    assert res.summary()["latency_band"] is None
