"""scripts/calibrate_trn1.py: the shipped trn1 preset's fitted fields come back from the
published measurements (scripts/calibration/published_trn1.csv) within 1 %.

``dge_ns_per_element`` is fitted on AWS's tutorial matmul kernels, read at run time from the
tutorials folder (``NKI_TUTORIALS``, default the peers checkout next to this repository;
skipped without it) and re-timed at full size: minutes (slow)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

import calibrate_trn1  # noqa: E402
from validation import aws  # noqa: E402

from neuroncore_sim.config import TRN1  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
TUTORIALS = Path(os.environ.get("NKI_TUTORIALS", ROOT.parent / "peers" / "nki-samples-pre-beta2"
                                / "src" / "nki_samples" / "tutorials"))


def test_the_fit_script_reproduces_the_shipped_preset(tmp_path: Path, capsys) -> None:
    out = tmp_path / "trn1_fit.toml"
    assert calibrate_trn1.main(["--out", str(out)]) == 0
    values, _ = calibrate_trn1.reproduce()
    assert set(values) == {"tensor_pipeline_latency_ns", "load_stationary_latency_ns",
                           "semaphore_latency_ns"}
    for name, (fitted, shipped) in values.items():
        assert shipped == getattr(TRN1, name)
        assert fitted == pytest.approx(shipped, rel=0.01), name
    text = capsys.readouterr().out
    assert "reproduced: 3 fitted fields" in text
    assert "dge_ns_per_element not checked (no --tutorials)" in text
    assert 'base = "trn1"' in out.read_text()


@pytest.mark.slow
@pytest.mark.skipif(not (TUTORIALS / aws.TUTORIALS["mm"]).is_file(),
                    reason=f"AWS's tutorial kernels are not at {TUTORIALS} (set NKI_TUTORIALS "
                           "to nki-samples' src/nki_samples/tutorials)")
def test_the_fit_script_reproduces_dge_from_the_matmul_ladder(tmp_path: Path, capsys) -> None:
    out = tmp_path / "trn1_fit.toml"
    assert calibrate_trn1.main(["--tutorials", str(TUTORIALS), "--no-loo",
                                "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "reproduced: 4 fitted fields" in text and "not checked" not in text
    # the comparison table ends the output: parameter, fitted, shipped, difference
    fitted = float(next(line.split()[1] for line in reversed(text.splitlines())
                        if line.startswith("dge_ns_per_element ")))
    assert fitted == pytest.approx(TRN1.dge_ns_per_element, rel=0.01)
    assert "dge_ns_per_element = " in out.read_text()


def test_a_wrong_tutorials_folder_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="expected AWS's tutorials folder"):
        calibrate_trn1.reproduce(tutorials=tmp_path)


def test_a_changed_measurement_is_not_reproduced(tmp_path: Path) -> None:
    text = calibrate_trn1.DATA.read_text().replace("gap_ns:activation,30,", "gap_ns:activation,45,")
    data = tmp_path / "changed.csv"
    data.write_text(text)
    values, _ = calibrate_trn1.reproduce(data)
    fitted, shipped = values["semaphore_latency_ns"]
    assert fitted == pytest.approx(45.0, rel=1e-3) and shipped == 30.0
