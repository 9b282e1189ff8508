"""``neuroncore-sim calibrate emit | measure | fit`` end to end, and their usage errors."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from neuroncore_sim import cli
from neuroncore_sim.calibrate.measure import SuiteModel, load_suite_dir
from neuroncore_sim.calibrate.output import config_toml
from neuroncore_sim.calibrate.params import PARAMETERS, with_values
from neuroncore_sim.calibrate.suite import CASES
from neuroncore_sim.config import TRN1, load_config, override


@pytest.fixture(scope="module")
def suite(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("suite")
    assert cli.main(["calibrate", "emit", str(folder)]) == 0
    return folder


def _read(path: Path) -> dict[tuple[str, str], float]:
    with open(path, newline="") as f:
        return {(r["case"], r["metric"]): float(r["value_ns"]) for r in csv.DictReader(f)}


def test_emit_writes_one_kernel_file_per_case_and_the_runner(suite: Path) -> None:
    assert sorted(p.stem for p in (suite / "cases").glob("*.py")) == sorted(CASES)
    assert (suite / "run_on_hardware.py").is_file()
    text = (suite / "cases" / "matmul_chain_16.py").read_text()
    assert "import neuronxcc.nki.isa as nisa" in text and "import neuroncore_sim" not in text


def test_measure_writes_the_suite_under_a_toml_config(suite: Path, tmp_path: Path) -> None:
    toml = tmp_path / "slow_sem.toml"
    toml.write_text('base = "trn1"\nsemaphore_latency_ns = 50.0\n')
    base_csv, slow_csv = tmp_path / "base.csv", tmp_path / "slow.csv"
    assert cli.main(["calibrate", "measure", str(suite), "--out", str(base_csv)]) == 0
    assert cli.main(["calibrate", "measure", str(suite), "--config", str(toml),
                     "--out", str(slow_csv)]) == 0
    base, slow = _read(base_csv), _read(slow_csv)
    assert len(base) == sum(len(c.metrics) for c in CASES.values())
    assert slow[("profile_activation", "gap_ns:activation")] == pytest.approx(50.0)
    # 31 more dependent ScalarE steps in the 32-step chain than ... in the 4-step one: 28 more
    # semaphore waits of 20 ns more each
    grow = (slow[("scalar_chain_32", "latency_ns")] - slow[("scalar_chain_4", "latency_ns")]) \
        - (base[("scalar_chain_32", "latency_ns")] - base[("scalar_chain_4", "latency_ns")])
    assert grow == pytest.approx(28 * 20.0)
    model = SuiteModel(load_suite_dir(suite), TRN1)
    assert model.evaluate(load_config(toml)) == pytest.approx(slow, rel=1e-9)


def test_closed_loop_through_the_command_line(suite: Path, tmp_path: Path, capsys) -> None:
    truth = {p.name: p.value(TRN1) * f for p, f in zip(PARAMETERS, (1.3, 0.75, 1.2, 0.85,
                                                                     1.4, 0.65, 1.15))}
    perturbed = tmp_path / "perturbed.toml"
    perturbed.write_text(config_toml(with_values(TRN1, truth), "trn1", "perturbed"))
    results, fitted = tmp_path / "results.csv", tmp_path / "mine.toml"
    assert cli.main(["calibrate", "measure", str(suite), "--config", str(perturbed),
                     "--out", str(results)]) == 0
    assert cli.main(["calibrate", "fit", str(results), "--out", str(fitted), "--no-loo"]) == 0
    out = capsys.readouterr().out
    assert "uncertainty" in out and "scalar_chain_32" in out
    cfg = load_config(fitted)
    for name, value in truth.items():
        assert getattr(cfg, name) == pytest.approx(value, rel=0.02), name


def test_the_emitted_runner_runs_under_the_alias(suite: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "hw.csv"
    assert cli.main(["run", "--timing-only", str(suite / "run_on_hardware.py"),
                     "--out", str(out)]) == 0
    rows = _read(out)
    latency_cases = {c.id for c in CASES.values() if "latency_ns" in c.metrics}
    assert {case for case, _ in rows} == latency_cases
    assert "come from neuron-profile" in capsys.readouterr().out
    with open(out, newline="") as f:
        first = next(csv.DictReader(f))
    assert first["toolchain"].startswith("neuronx-cc") and first["suite"] == "1"


def test_fitted_toml_round_trips_through_load_config(tmp_path: Path) -> None:
    cfg = override(TRN1, {"name": "mine", "semaphore_latency_ns": 31.25,
                          "compiler": {"dge": True}}, "test")
    text = config_toml(cfg, "trn1", "a note\non two lines")
    assert text.startswith("# a note\n# on two lines\nbase = \"trn1\"")
    assert "semaphore_latency_ns = 31.25" in text and "[compiler]\ndge = true" in text
    path = tmp_path / "mine.toml"
    path.write_text(text)
    assert load_config(path) == cfg


def test_a_case_file_of_another_suite_version_is_refused(suite: Path, tmp_path: Path,
                                                        capsys) -> None:
    old = tmp_path / "old"
    (old / "cases").mkdir(parents=True)
    text = (suite / "cases" / "dma_copy_1.py").read_text().replace("SUITE = '1'", "SUITE = '0'")
    (old / "cases" / "dma_copy_1.py").write_text(text)
    (old / "cases" / "broken.py").write_text("SUITE = '1'\n")
    assert cli.main(["calibrate", "measure", str(old), "--out", str(tmp_path / "x.csv")]) == 2
    assert "broken.py: expected a calibration case file" in capsys.readouterr().err
    (old / "cases" / "broken.py").unlink()
    assert cli.main(["calibrate", "measure", str(old), "--out", str(tmp_path / "x.csv")]) == 2
    assert "suite 0, expected suite 1" in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["calibrate", "measure", "{tmp}", "--out", "{tmp}/x.csv"], "expected a suite folder"),
    (["calibrate", "fit", "{tmp}/missing.csv", "--out", "{tmp}/m.toml"], "cannot read"),
    (["calibrate", "fit", "{tmp}/bad.csv", "--out", "{tmp}/m.toml"],
     "value_ns must be a positive number"),
    (["calibrate", "fit", "{tmp}/nocols.csv", "--out", "{tmp}/m.toml"], "missing case"),
    (["calibrate", "fit", "{tmp}/empty.csv", "--out", "{tmp}/m.toml"], "found none"),
    (["calibrate", "fit", "{tmp}/bad.csv", "--out", "{tmp}/m.json"], "expected a .toml"),
    (["calibrate", "fit", "{tmp}/good.csv", "--out", "{tmp}/m.toml", "--param", "nope"],
     "calibrated parameter"),
    (["calibrate", "emit", "{tmp}/good.csv"], "found a file"),
])
def test_bad_input_is_a_usage_error(argv, message, tmp_path: Path, capsys) -> None:
    (tmp_path / "bad.csv").write_text("case,metric,value_ns\ndma_copy_1,latency_ns,fast\n")
    (tmp_path / "good.csv").write_text("case,metric,value_ns\ndma_copy_1,latency_ns,2700\n")
    (tmp_path / "nocols.csv").write_text("name,value\na,1\n")
    (tmp_path / "empty.csv").write_text("case,metric,value_ns\n")
    assert cli.main([a.format(tmp=tmp_path) for a in argv]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


@pytest.mark.parametrize("metric, message", [
    ("duration_ns:activation", "needs one 'activation' instruction(s), found 0"),
    ("gap_ns:activation", "needs two 'activation' instruction(s), found 0"),
    ("speed", "expected a metric latency_ns, duration_ns:OPCODE or gap_ns:OPCODE"),
])
def test_a_case_metric_the_kernel_cannot_give_is_named(metric, message, suite: Path,
                                                       tmp_path: Path, capsys) -> None:
    edited = tmp_path / "edited"
    (edited / "cases").mkdir(parents=True)
    text = (suite / "cases" / "dma_copy_1.py").read_text()
    (edited / "cases" / "dma_copy_1.py").write_text(
        text.replace("METRICS = ['latency_ns']", f"METRICS = [{metric!r}]"))
    assert cli.main(["calibrate", "measure", str(edited), "--out", str(tmp_path / "x.csv")]) == 2
    err = capsys.readouterr().err
    assert "case dma_copy_1" in err and message in err
