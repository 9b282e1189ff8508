"""scripts/calibrate_trn1.py: the shipped trn1 preset's fitted fields come back from the
published measurements (scripts/calibration/published_trn1.csv) within 1 %."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

import calibrate_trn1  # noqa: E402

from neuroncore_sim.config import TRN1  # noqa: E402


def test_the_fit_script_reproduces_the_shipped_preset(tmp_path: Path, capsys) -> None:
    out = tmp_path / "trn1_fit.toml"
    assert calibrate_trn1.main(["--out", str(out)]) == 0
    values, _ = calibrate_trn1.reproduce()
    assert set(values) == {"tensor_pipeline_latency_ns", "load_stationary_latency_ns",
                           "semaphore_latency_ns"}
    for name, (fitted, shipped) in values.items():
        assert shipped == getattr(TRN1, name)
        assert fitted == pytest.approx(shipped, rel=0.01), name
    assert "reproduced" in capsys.readouterr().out
    assert 'base = "trn1"' in out.read_text()


def test_a_changed_measurement_is_not_reproduced(tmp_path: Path) -> None:
    text = calibrate_trn1.DATA.read_text().replace("gap_ns:activation,30,", "gap_ns:activation,45,")
    data = tmp_path / "changed.csv"
    data.write_text(text)
    values, _ = calibrate_trn1.reproduce(data)
    fitted, shipped = values["semaphore_latency_ns"]
    assert fitted == pytest.approx(45.0, rel=1e-3) and shipped == 30.0
