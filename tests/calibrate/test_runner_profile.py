"""The emitted runner's ``--profile``: neuron-profile's JSON summary parsed into rows, a
missing neuron-profile said and skipped, and the fit keeping those rows as checks."""

from __future__ import annotations

import csv
import json
import os
import stat
import sys
from pathlib import Path

import pytest

from neuroncore_sim import cli
from neuroncore_sim.alias import install_neuronxcc_alias
from neuroncore_sim.calibrate.emit import RUNNER_FILE, emit
from neuroncore_sim.calibrate.fit import fit
from neuroncore_sim.calibrate.measure import measure
from neuroncore_sim.calibrate.output import report_text
from neuroncore_sim.calibrate.results import read_results, write_rows

sys.path.insert(0, str(Path(__file__).resolve().parent))
import profile_fixture  # noqa: E402


@pytest.fixture(scope="module")
def suite(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("suite")
    emit(folder)
    return folder


@pytest.fixture(scope="module")
def runner(suite: Path) -> dict:
    """The runner's functions (its module body run with the ``neuronxcc`` alias, not main)."""
    install_neuronxcc_alias()
    path = suite / RUNNER_FILE
    space: dict = {"__name__": "runner_under_test", "__file__": str(path)}
    exec(compile(path.read_text(), str(path), "exec"), space)
    return space


def _write(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data))
    return path


def test_the_summary_of_a_profile_json_becomes_rows(runner: dict, tmp_path: Path) -> None:
    summary = runner["profile_summary"](_write(tmp_path / "p.json", profile_fixture.PROFILE))
    metrics = runner["profile_metrics"](summary)
    assert [m for m, _ in metrics] == [m for m, _ in profile_fixture.EXPECTED]
    for (_, got), (_, want) in zip(metrics, profile_fixture.EXPECTED):
        assert got == pytest.approx(want)


def test_a_json_without_a_summary_is_refused_by_name(runner: dict, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="expected neuron-profile's JSON output with a "
                                         "'summary' list"):
        runner["profile_summary"](_write(tmp_path / "bad.json", {"instruction": []}))
    with pytest.raises(ValueError, match="total_time"):
        runner["profile_metrics"]({"event_count": 3})


def _fake_neuron_profile(folder: Path, fail_view: bool = False) -> Path:
    """A ``neuron-profile`` stand-in: ``capture`` writes the NTFF, ``view`` the fixture's JSON
    to ``--output-file`` (or fails)."""
    folder.mkdir(parents=True, exist_ok=True)
    tool = folder / "neuron-profile"
    tool.write_text(f"""#!{sys.executable}
import json, sys
args = sys.argv[1:]
if args[0] == "capture":
    open(args[args.index("-s") + 1], "w").write("ntff")
elif {fail_view!r}:
    sys.stderr.write("view: cannot read the session file")
    sys.exit(3)
else:
    json.dump({profile_fixture.PROFILE!r}, open(args[args.index("--output-file") + 1], "w"))
""")
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    return folder


def test_profile_case_runs_capture_then_view(runner: dict, tmp_path: Path, monkeypatch,
                                             capsys) -> None:
    bin_dir = _fake_neuron_profile(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    neff = tmp_path / "case.neff"
    neff.write_text("neff")
    metrics = runner["profile_case"](str(neff), str(tmp_path), "dma_copy_512")
    assert metrics == runner["profile_metrics"](profile_fixture.SUMMARY)
    assert (tmp_path / "dma_copy_512.ntff").read_text() == "ntff"
    failing = _fake_neuron_profile(tmp_path / "bin_fail", fail_view=True)
    monkeypatch.setenv("PATH", f"{failing}{os.pathsep}{os.environ['PATH']}")
    assert runner["profile_case"](str(neff), str(tmp_path), "dma_copy_512") is None
    out = capsys.readouterr().out
    assert "dma_copy_512: `neuron-profile view" in out and "exit 3" in out
    assert "cannot read the session file" in out


def test_without_neuron_profile_the_runner_says_so_and_benchmarks(suite: Path, tmp_path: Path,
                                                                  monkeypatch, capsys) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no neuron-profile anywhere
    out = tmp_path / "hw.csv"
    assert cli.main(["run", "--timing-only", str(suite / RUNNER_FILE), "--out", str(out),
                     "--profile"]) == 0
    assert "--profile: neuron-profile is not on PATH" in capsys.readouterr().out
    with open(out, newline="") as f:
        metrics = {r["metric"] for r in csv.DictReader(f)}
    assert metrics == {"latency_ns"}


def test_the_fit_keeps_profile_rows_as_checks(suite: Path, tmp_path: Path) -> None:
    sim = tmp_path / "sim.csv"
    rows = measure(suite, "trn1", sim)
    latency = next(float(r["value_ns"]) for r in rows
                   if (r["case"], r["metric"]) == ("dma_copy_512", "latency_ns"))
    extra = [dict(rows[0], case="dma_copy_512", metric=m, value_ns=v) for m, v in
             (("profile:total_ns", latency * 1.5), ("profile:hbm_read_bytes", 262144.0),
              ("profile:active_ns:dma", 1000.0))]
    write_rows(sim, rows + extra)
    report = fit(read_results(sim), "trn1", leave_one_out=False)
    profile_keys = {("dma_copy_512", m) for m, _ in
                    (("profile:total_ns", 0), ("profile:hbm_read_bytes", 0),
                     ("profile:active_ns:dma", 0))}
    assert profile_keys <= report.checks
    # the simulator's values: its latency, the bytes the [128, 512] fp32 load reads
    assert report.rows[("dma_copy_512", "profile:total_ns")][1] == pytest.approx(latency,
                                                                                 rel=1e-6)
    assert report.rows[("dma_copy_512", "profile:hbm_read_bytes")][1] == 128 * 512 * 4
    assert 0 < report.rows[("dma_copy_512", "profile:active_ns:dma")][1] < latency
    # a 50 % off total time pulls no parameter: the fit is the one without the rows
    plain = fit(rows_of(rows), "trn1", leave_one_out=False)
    assert report.values == pytest.approx(plain.values, rel=1e-9)
    assert "profile: rows (marked 'check')" in report_text(report)


def rows_of(rows: list[dict]) -> list[dict[str, str]]:
    """Rows as read from a CSV (strings)."""
    return [{k: str(v) for k, v in r.items()} for r in rows]
