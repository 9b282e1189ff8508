"""docs/frameworks.md stays true: every file of this repository it names exists (numbers it
quotes are checked by the tests that produce them, e.g. test_frameworks_example.py)."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "frameworks.md").read_text()
#: Where a short path in the doc is relative to: `frameworks/specs.py` is in the package.
BASES = ("", "neuroncore_sim/")


def _expand(path: str) -> list[str]:
    """`test_{a,b}.py` -> [`test_a.py`, `test_b.py`] (shell brace expansion, one level)."""
    parts = re.split(r"\{([^}]*)\}", path)
    choices = [[p] if i % 2 == 0 else p.split(",") for i, p in enumerate(parts)]
    return ["".join(c) for c in itertools.product(*choices)]


def test_every_repository_file_the_doc_names_exists():
    named = set(re.findall(r"`((?:\.ci|tests|examples|kernels|docs|scripts|neuroncore_sim|"
                           r"frameworks|frontend)/[\w./{},-]*)`", DOC))
    named |= set(re.findall(r"\b((?:tests|examples|kernels)/[\w/{},-]+\.py)\b", DOC))
    assert len(named) > 10, "the doc's file references were not found"
    named = {n for n in named if not re.search(r"[A-Z]{3,}", n)}  # placeholders: NAME.py
    missing = [p for name in sorted(named) for p in _expand(name)
               if not any((ROOT / base / p).exists() for base in BASES)]
    assert missing == []


def test_the_absent_test_files_are_no_longer_cited():
    assert "test_gemm_threads" not in DOC
