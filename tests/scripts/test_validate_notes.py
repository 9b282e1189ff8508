"""scripts/validate.py keeps the report's hand-written sections when it rewrites the tables."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

from validation import report  # noqa: E402


def test_regenerating_keeps_the_session_notes(tmp_path: Path) -> None:
    path = tmp_path / "validation.md"
    path.write_text("# old tables\n\n## Summary\n\n* old\n\n## Session 3 changes\n\nwhy\n\n"
                    "## Known gaps\n\n* one\n")
    notes = report.kept_notes(path)
    assert notes == "## Session 3 changes\n\nwhy\n\n## Known gaps\n\n* one"
    text = report.write({}, {}, path, notes, [], "header")
    assert text.startswith("# Validation against published")
    assert "# old tables" not in text and text.rstrip().endswith("* one")
    assert report.kept_notes(path) == notes  # a second rewrite keeps them again


def test_a_report_without_notes_or_no_report_keeps_nothing(tmp_path: Path) -> None:
    assert report.kept_notes(tmp_path / "missing.md") == ""
    plain = tmp_path / "plain.md"
    plain.write_text("# tables only\n\n## Summary\n\n* x\n")
    assert report.kept_notes(plain) == ""
