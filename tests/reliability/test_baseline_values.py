"""Cycle baselines whose numbers cannot be compared (issue 25, class 7): an infinite, NaN, zero
or negative latency is reported as corrupt (1e999 is infinity in JSON and would pass every
comparison), and --update-cycle-baselines refuses a cycle_baselines.json it cannot replace."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from neuroncore_sim.pytest_plugin import BaselineFileError, check_entry

from .test_baseline_files import _inner

pytest_plugins = ["pytester"]

KEY = "test_k.py::test_add"
CORRUPT = {
    "infinite": '{"%s": {"latency_ns": 1e999}}' % KEY,
    "minus infinite": '{"%s": {"latency_ns": -1e999}}' % KEY,
    "nan": '{"%s": {"latency_ns": NaN}}' % KEY,
    "zero": '{"%s": {"latency_ns": 0}}' % KEY,
    "negative": '{"%s": {"latency_ns": -5.0}}' % KEY,
    "infinite busy": '{"%s": {"latency_ns": 5.0, "busy_ns": {"dma": 1e999}}}' % KEY,
    "negative busy": '{"%s": {"latency_ns": 5.0, "busy_ns": {"dma": -1}}}' % KEY,
}


@pytest.mark.parametrize("case", sorted(CORRUPT))
def test_non_finite_or_non_positive_baseline_is_corrupt(pytester, case: str) -> None:
    path = pytester.path / "cycle_baselines.json"
    path.write_text(CORRUPT[case])
    result = _inner(pytester)
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert str(path) in out and "re-record" in out, out
    assert "Traceback" not in out


@pytest.mark.parametrize("latency", [float("inf"), float("nan"), 0.0, -1.0])
def test_check_entry_refuses(latency: float) -> None:
    with pytest.raises(BaselineFileError, match="latency_ns|busy_ns"):
        check_entry(Path("b.json"), "k", {"latency_ns": latency})


def test_update_over_a_directory_is_refused_with_its_path(pytester) -> None:
    path = pytester.path / "cycle_baselines.json"
    path.mkdir()
    result = _inner(pytester, "--update-cycle-baselines")
    assert result.ret != 0
    out = result.stdout.str()
    assert f"{path} is not a file" in out, out
    assert "Traceback" not in out and "os.replace" not in out and "IsADirectory" not in out
    assert path.is_dir() and not list(path.iterdir())


def test_update_in_a_read_only_folder_is_refused(pytester, monkeypatch) -> None:
    pytester.makepyfile(test_k="")  # made by _inner; the folder is locked after it
    folder = pytester.path
    (folder / "cycle_baselines.json").write_text("{}")
    real_access = os.access  # root may write anywhere: the folder is made to look read-only
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if Path(p) == folder
                        else real_access(p, mode, **kw))
    result = _inner(pytester, "--update-cycle-baselines")
    assert result.ret != 0
    assert "cannot record cycle baselines" in result.stdout.str()
