"""docs/model.md, "trn1 and inf2": the inf2 preset is trn1 under another name, as the AWS docs
describe one NeuronCore-v2 device for both (issue 27, item 7). If a field starts to differ, this
test and that paragraph change together."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from neuroncore_sim.config import PRESETS

MODEL_DOC = (Path(__file__).resolve().parent.parent / "docs" / "model.md").read_text()


def test_inf2_differs_from_trn1_in_name_only():
    trn1, inf2 = PRESETS["trn1"], PRESETS["inf2"]
    differ = [f.name for f in dataclasses.fields(trn1)
              if getattr(trn1, f.name) != getattr(inf2, f.name)]
    assert differ == ["name"]
    assert "## trn1 and inf2: why the presets time alike" in MODEL_DOC
    assert "tests/test_config_presets.py" in MODEL_DOC
