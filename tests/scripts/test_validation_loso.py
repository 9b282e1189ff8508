"""The error bands' basis: the shipped preset's leave-one-set-out residuals
(scripts/validation/loso.py). The refit of the AWS ladder rows runs AWS's tutorial kernels:
that test needs the tutorials folder (``NKI_TUTORIALS``, default the peers checkout next to
this repository) and takes minutes (slow)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

from validation import aws, loso  # noqa: E402
from validation.cache import Cache  # noqa: E402
from validation.runner import Case  # noqa: E402

from neuroncore_sim.config import TRN1  # noqa: E402

#: AWS's tutorials folder (nki-samples src/nki_samples/tutorials), never copied here.
TUTORIALS = Path(os.environ.get("NKI_TUTORIALS", ROOT.parent / "peers" / "nki-samples-pre-beta2"
                                / "src" / "nki_samples" / "tutorials"))


def _case(cid: str, s: str, published: float, **kw) -> Case:
    return Case(cid, s, published, "ms", lambda: (), lambda cfg: {}, **kw)


def test_basis_rows_take_the_refit_where_there_is_one() -> None:
    tiled = aws.ladder_case_id("nki_matmul_tiled_")
    cases = [_case(tiled, "aws", 51.8), _case("aws/AWS/mamba", "aws", 2.0),
             _case("nkibench/x", "nkibench", 4.0),
             _case("aws/probe/p", "aws", 1.0, meta={"key": "probe"}),
             _case("aws/ours/y", "aws", 1.0, primary=False)]
    results = {c.id: {"ok": True, "estimate": 10.0, "bottleneck": "dma"} for c in cases}
    rows = loso.basis_rows(cases, results, {tiled: 52.3})
    assert rows == [("aws", "dma", 52.3, 51.8), ("aws", "dma", 10.0, 2.0),
                    ("nkibench", "dma", 10.0, 4.0)]
    text = loso.basis_text({tiled: 52.3}, 3, "")
    assert "refitted on the other two" in text and "3 cases" in text
    assert "no --tutorials" in loso.basis_text({}, 2, "mamba")


def test_the_published_csv_has_the_validation_sets_ladder_figures() -> None:
    import calibrate_trn1
    from neuroncore_sim.calibrate.results import read_results
    rows = {r["case"]: float(r["value_ns"]) for r in read_results(calibrate_trn1.DATA)}
    published = {name: ms for name, _, _, ms, _ in aws.LADDER}
    for case, name in aws.LADDER_FIT_CASES.items():
        assert rows[case] == pytest.approx(published[name] * 1e6, rel=1e-12), case


@pytest.mark.slow
@pytest.mark.skipif(not (TUTORIALS / aws.TUTORIALS["mm"]).is_file(),
                    reason=f"AWS's tutorial kernels are not at {TUTORIALS} (set NKI_TUTORIALS "
                           "to nki-samples' src/nki_samples/tutorials)")
def test_ladder_rows_are_predicted_by_refits_on_the_other_two(tmp_path: Path) -> None:
    cache = Cache(tmp_path)
    got = loso.ladder_leave_one_out(TUTORIALS, {"toolchain": "2.20"}, TRN1, cache, "test")
    published = {aws.ladder_case_id(name): ms for name, _, _, ms, _ in aws.LADDER[:3]}
    assert set(got) == set(published)
    for case, ms in published.items():
        # the three rows agree on one generator rate to a few per cent
        assert got[case] == pytest.approx(ms, rel=0.05), case
        assert got[case] != ms
    # cached: the second call runs nothing
    assert loso.ladder_leave_one_out(TUTORIALS, {"toolchain": "2.20"}, TRN1, cache,
                                     "test") == got
