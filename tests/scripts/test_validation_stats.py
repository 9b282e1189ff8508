"""The validation report's pure parts: error statistics, Spearman, step signs, busy and HBM
agreement, the results cache and its key, and the fit's overrides (scripts/validation/)."""

from __future__ import annotations

import dataclasses
import json
import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

from validation import cache, fit, report, runner, stats  # noqa: E402


def test_error_stats_are_median_and_max_of_absolute_percent_errors() -> None:
    assert stats.error_stats([(110, 100), (95, 100), (100, 50)]) == (10.0, 100.0)
    assert stats.error_stats([]) is None
    assert stats.pct_error(90, 100) == pytest.approx(-10.0)


def test_spearman_uses_tie_averaged_ranks() -> None:
    assert stats.spearman([1, 2, 3], [10, 20, 30]) == pytest.approx(1.0)
    assert stats.spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    # ranks of y: 1, 2, 3.5, 5, 3.5 -> 8 / sqrt(10 * 9.5)
    assert stats.spearman([1, 2, 3, 4, 5], [5, 6, 7, 8, 7]) == pytest.approx(8 / math.sqrt(95))
    assert stats.spearman([1, 2], [4, 4]) is None
    assert stats.spearman([1], [2]) is None
    with pytest.raises(ValueError):
        stats.spearman([1, 2], [1])


def test_step_signs_count_published_steps_over_the_threshold() -> None:
    published = [10, 10.2, 8, 9, 4]  # steps: +2 % (skipped), down, up, down
    assert stats.step_signs(published, [5, 1, 4, 3, 2]) == (1, 3)
    assert stats.step_signs(published, [5, 5, 4, 5, 2]) == (3, 3)
    assert stats.step_signs(published, [5, 5, 5, 5, 5]) == (0, 3)  # no move is no agreement
    assert stats.step_signs(published, [5, 5, 4, 5, 2], threshold=0.5) == (1, 1)


def test_weighted_busy_error_and_hbm_tolerance() -> None:
    assert stats.weighted_abs_error([(0.1, 0.2), (0.5, 0.4)]) == pytest.approx(100 * 0.2 / 0.6)
    assert stats.weighted_abs_error([(0.3, 0.0)]) is None
    assert stats.within(129, 100) and not stats.within(131, 100) and stats.within(71, 100)


def _case(cid: str, published: float, **meta) -> runner.Case:
    return runner.Case(cid, "nkibench", published, "ms", lambda: ("",), lambda cfg: {}, meta)


def test_nkibench_stats_count_spills_as_hbm_traffic() -> None:
    prof = {"scalar_engine_active_time_percent": 0.2, "vector_engine_active_time_percent": 0.6,
            "hbm_read_bytes": 300, "hbm_write_bytes": 100}
    case = _case("nkibench/k", 1.0, profile=prof)
    res = {"ok": True, "estimate": 1.0, "busy_percent": {"scalar": 10.0, "vector": 70.0},
           "hbm_read_bytes": 100, "hbm_write_bytes": 50, "spill_save_bytes": 50,
           "spill_reload_bytes": 600}
    out = report.nkibench_stats([case], {"nkibench/k": res})
    assert out["busy_error"] == pytest.approx(100 * 0.2 / 0.8)
    assert (out["hbm_within"], out["hbm_of"]) == (0, 1)  # ours 800 against 400 measured
    res["spill_reload_bytes"] = 150  # 350 against 400: within 30 %
    assert report.nkibench_stats([case], {"nkibench/k": res})["hbm_within"] == 1


def test_optimised_kernels_are_reported_beside_their_baseline_outside_the_statistics() -> None:
    prof = {"scalar_engine_active_time_percent": 0.2, "vector_engine_active_time_percent": 0.6,
            "gpsimd_engine_active_time_percent": 0.0, "hbm_read_bytes": 300,
            "hbm_write_bytes": 100, "spill_save_bytes": 0, "spill_reload_bytes": 0}
    base = _case("nkibench/k", 4.0, name="k", profile=prof)
    opt = dataclasses.replace(_case("nkibench/optimised/k_opt", 2.0, name="k_opt", profile=prof,
                                    baseline="nkibench/k"), primary=False)
    res = {"ok": True, "busy_percent": {"scalar": 20.0, "vector": 60.0, "gpsimd": 0.0},
           "hbm_read_bytes": 300, "hbm_write_bytes": 100, "spill_save_bytes": 0,
           "spill_reload_bytes": 0}
    results = {base.id: dict(res, estimate=4.4), opt.id: dict(res, estimate=4.0)}
    assert report.optimised_speedups([base, opt], results) == [("k_opt", "1.10x", "2.00x")]
    # the optimised case is not one of the set's kernels: a far-off estimate changes nothing
    assert report.nkibench_stats([base, opt], results) == report.nkibench_stats([base], results)
    assert report.set_stats([base, opt], results)["max"] == pytest.approx(10.0)
    lines = report.nkibench_section([base, opt], results)
    assert sum(line.startswith("| k_opt | 2.000 | 4.000 | +100.0 % |") for line in lines) == 1
    assert any("k_opt 1.10x ours, 2.00x measured" in line for line in lines)
    assert "k_opt over its baseline: 1.10x ours, 2.00x measured" in "".join(
        report.top_table({"nkibench": [base, opt]}, results))


@dataclasses.dataclass(frozen=True)
class _Options:
    dge: bool = True
    passes: tuple = ("a",)


@dataclasses.dataclass(frozen=True)
class _Config:
    name: str = "trn1"
    rate: float = 1.0
    count: int = 4
    options: _Options = _Options()

    def fingerprint(self) -> str:  # like NeuronCoreConfig's: top-level fields only
        return "same"


def test_cache_key_changes_with_each_part_and_nested_options() -> None:
    fp = cache.config_fingerprint(_Config())
    assert fp == cache.config_fingerprint(_Config(name="other"))  # the name is left out
    assert fp != cache.config_fingerprint(_Config(options=_Options(dge=False)))
    assert fp != cache.config_fingerprint(_Config(rate=1.01))
    key = cache.cache_key("c", "k", fp, "s")
    assert len({key, cache.cache_key("d", "k", fp, "s"), cache.cache_key("c", "l", fp, "s"),
                cache.cache_key("c", "k", fp + "x", "s"), cache.cache_key("c", "k", fp, "t")}) == 5
    assert key == cache.cache_key("c", "k", fp, "s")


def test_cache_keeps_successes_and_survives_a_torn_line(tmp_path: Path) -> None:
    store = cache.Cache(tmp_path)
    store.put("a", {"ok": True, "estimate": 1.5})
    store.put("b", {"ok": False, "error": "boom"})  # failures run again next time
    with store.path.open("a") as f:
        f.write('{"key": "c", "res')  # an interrupted run
    again = cache.Cache(tmp_path)
    assert again.get("a") == {"ok": True, "estimate": 1.5} and again.get("b") is None
    assert cache.Cache(tmp_path, enabled=False).get("a") is None
    assert json.loads(store.path.read_text().splitlines()[0])["key"] == "a"


def test_source_hash_follows_the_python_files(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "m.py").write_text("x = 1\n")
    before = cache.source_hash(tmp_path)
    (tmp_path / "notes.txt").write_text("not source")
    assert cache.source_hash(tmp_path) == before
    (tmp_path / "sub" / "m.py").write_text("x = 2\n")
    assert cache.source_hash(tmp_path) != before


def test_overrides_reach_nested_fields_and_keep_ints() -> None:
    cfg = fit.apply_overrides(_Config(), {"rate": 2.5, "count": 5.6, "options.dge": False})
    assert (cfg.rate, cfg.count, cfg.options.dge) == (2.5, 6, False)
    assert fit.get_field(cfg, "options.dge") is False
    with pytest.raises(SystemExit, match="'nope' is not a field"):
        fit.get_field(cfg, "options.nope")
    (p,) = fit.parse_params("rate", _Config())
    assert (p.lo, p.hi) == (0.25, 4.0)
    with pytest.raises(SystemExit, match="positive number"):
        fit.parse_params("options", _Config())


def test_a_case_that_raises_is_a_failed_result() -> None:
    def boom(cfg):
        raise RuntimeError("missing\nsecond line")
    case = runner.Case("x", "aws", 1.0, "ns", lambda: ("",), boom)
    out = runner.child({"id": "x"}, [case], None)
    assert out == {"ok": False, "error": "RuntimeError: missing"}
    assert runner.child({"id": "y"}, [case], None)["ok"] is False
