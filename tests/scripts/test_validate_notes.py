"""scripts/validate.py keeps the report's hand-written sections when it rewrites the tables."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "validate.py"


def _validate_module():
    spec = importlib.util.spec_from_file_location("ncs_validate_script", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (its dataclasses look their module up)
    spec.loader.exec_module(module)
    return module


def test_regenerating_keeps_the_session_notes(tmp_path: Path) -> None:
    validate = _validate_module()
    report = tmp_path / "validation.md"
    report.write_text("# old tables\n\n## Summary\n\n* old\n\n## Session 3 changes\n\nwhy\n\n"
                      "## Known gaps\n\n* one\n")
    notes = validate.kept_notes(report)
    assert notes == "## Session 3 changes\n\nwhy\n\n## Known gaps\n\n* one"
    text = validate.write_report([], ["ours"], report, notes)
    assert text.startswith("# Validation against published")
    assert "# old tables" not in text and text.rstrip().endswith("* one")
    assert validate.kept_notes(report) == notes  # a second rewrite keeps them again


def test_a_report_without_notes_or_no_report_keeps_nothing(tmp_path: Path) -> None:
    validate = _validate_module()
    assert validate.kept_notes(tmp_path / "missing.md") == ""
    plain = tmp_path / "plain.md"
    plain.write_text("# tables only\n\n## Summary\n\n* x\n")
    assert validate.kept_notes(plain) == ""
