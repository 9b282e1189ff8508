"""docs/architecture.md stays true: every path it names exists, each "where does ... go?"
question is answered with at least one path, and the symbols it names are defined there."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOC = (ROOT / "docs" / "architecture.md").read_text()

QUESTIONS = ("A new `nisa` instruction.", "A new `nl` function.", "A new hardware parameter.",
             "A new report field.", "A new CLI command.")


def _paths(text: str) -> set[str]:
    return set(re.findall(r"`((?:neuroncore_sim|tests|docs|reports)/[\w./]*|README\.md)`", text))


def test_every_named_path_exists() -> None:
    paths = _paths(DOC)
    assert len(paths) > 20
    missing = sorted(p for p in paths if not (ROOT / p).exists())
    assert not missing, f"docs/architecture.md names paths that do not exist: {missing}"


@pytest.mark.parametrize("question", QUESTIONS)
def test_each_question_has_an_answer_with_paths(question: str) -> None:
    start = DOC.index(f"**{question}**")
    end = DOC.find("\n\n**", start + 1)
    answer = DOC[start:end if end > 0 else None]
    assert any(p.startswith("neuroncore_sim/") for p in _paths(answer)), question


@pytest.mark.parametrize("path, symbol", [
    ("neuroncore_sim/program/opcodes.py", "OPCODE_DOC"),
    ("neuroncore_sim/values/semantics/core.py", "CORE_SEMANTICS"),
    ("neuroncore_sim/values/semantics/__init__.py", "SEMANTICS"),
    ("neuroncore_sim/timing/cost.py", "_FORMULAS"),
    ("neuroncore_sim/config.py", "NeuronCoreConfig"),
    ("neuroncore_sim/result.py", "summary"),
    ("neuroncore_sim/report/tables.py", "summary_text"),
    ("neuroncore_sim/cli/__init__.py", "_parser"),
])
def test_named_symbols_are_where_the_doc_says(path: str, symbol: str) -> None:
    assert f"`{symbol}" in DOC, f"the doc no longer names {symbol}"
    defined = re.search(rf"^(?:def |class |){symbol}\b", (ROOT / path).read_text(), re.M)
    method = re.search(rf"^    def {symbol}\(", (ROOT / path).read_text(), re.M)
    assert defined or method, f"{symbol} is no longer defined in {path}"
