"""Reliability of cycle_baselines.json (issue 19, items 3 and 11): broken files give a clear
error naming the file, --update-cycle-baselines replaces them, writes are atomic, recording under
xdist is refused, and a changed timing model is told apart from a regression."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from neuroncore_sim.pytest_plugin import (BaselineFileError, check_entry, compare,
                                          read_baselines, registered_by_entry_point,
                                          write_atomically)

pytest_plugins = ["pytester"]

INNER = '''
import numpy as np
import neuroncore_sim as ncs
import neuroncore_sim.nki as nki
import neuroncore_sim.nki.language as nl


@nki.jit
def add(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.add(nl.load(a), nl.load(b)))
    return out


def test_add(cycle_baseline):
    a = np.ones((128, 256), np.float32)
    cycle_baseline(ncs.simulate(add, a, a, functional=False))
'''

BROKEN = {
    "conflict": ('{\n<<<<<<< HEAD\n  "a": {"latency_ns": 1.0}\n=======\n  "a": {"latency_ns": 2.0}'
                 '\n>>>>>>> other\n}\n', ":2: git merge conflict markers"),
    "list": ("[1, 2]\n", "expected a JSON object of baseline entries, found a list"),
    "not json": ('{"a": \n', "cycle baselines are not valid JSON"),
    "empty entry": ('{"test_k.py::test_add": {}}', "expected an object with a numeric latency_ns"),
    "string value": ('{"test_k.py::test_add": "fast"}', "found a str"),
    "string latency": ('{"test_k.py::test_add": {"latency_ns": "12"}}', "latency_ns '12'"),
    "bad busy": ('{"test_k.py::test_add": {"latency_ns": 1.0, "busy_ns": [1]}}',
                 "expected busy_ns to map engines to numbers"),
}


def _inner(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    plugin = () if registered_by_entry_point() else ("-p", "neuroncore_sim.pytest_plugin")
    pytester.makepyfile(test_k=INNER)
    return pytester.runpytest(*plugin, "-p", "no:hypothesispytest", "-p", "no:cacheprovider",
                              *args)


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_broken_file_fails_with_its_path_and_what_is_wrong(pytester, case: str) -> None:
    text, message = BROKEN[case]
    path = pytester.path / "cycle_baselines.json"
    path.write_text(text)
    result = _inner(pytester)
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert str(path) in out and message in out, out
    for name in ("JSONDecodeError", "AttributeError", "KeyError", "TypeError", "Traceback"):
        assert name not in out


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_update_replaces_a_broken_file(pytester, case: str) -> None:
    path = pytester.path / "cycle_baselines.json"
    path.write_text(BROKEN[case][0])
    result = _inner(pytester, "--update-cycle-baselines")
    result.assert_outcomes(passed=1)
    entries = json.loads(path.read_text())
    assert list(entries) == ["test_k.py::test_add"]
    check_entry(path, "test_k.py::test_add", entries["test_k.py::test_add"])
    assert _inner(pytester).ret == 0  # and it now compares clean


def test_write_is_atomic_when_interrupted(tmp_path: Path, monkeypatch) -> None:
    """A run killed while writing leaves the old file whole and no temporary behind."""
    path = tmp_path / "cycle_baselines.json"
    path.write_text('{"old": {"latency_ns": 1.0}}\n')

    def killed(fd: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", killed)
    with pytest.raises(KeyboardInterrupt):
        write_atomically(path, '{"new": {"latency_ns": 2.0}}\n')
    assert json.loads(path.read_text()) == {"old": {"latency_ns": 1.0}}
    assert [p.name for p in tmp_path.iterdir()] == ["cycle_baselines.json"]
    monkeypatch.undo()
    write_atomically(path, '{"new": {"latency_ns": 2.0}}\n')
    assert json.loads(path.read_text()) == {"new": {"latency_ns": 2.0}}


def test_missing_file_is_empty_and_unreadable_bytes_are_an_error(tmp_path: Path) -> None:
    assert read_baselines(tmp_path / "none.json") == {}
    bad = tmp_path / "cycle_baselines.json"
    bad.write_bytes(b"\xff\xfe{")
    with pytest.raises(BaselineFileError, match="cannot read cycle baselines"):
        read_baselines(bad)


def test_recording_under_xdist_is_refused(pytester) -> None:
    """An xdist worker (it has ``workerinput``) refuses --update-cycle-baselines at once."""
    pytester.makeconftest('''
def pytest_configure(config):
    config.workerinput = {"workerid": "gw0"}
''')
    result = _inner(pytester, "--update-cycle-baselines")
    assert result.ret != 0
    result.stderr.fnmatch_lines(["*cannot run under pytest-xdist*run it without -n*"])
    assert not (pytester.path / "cycle_baselines.json").exists()


def test_model_change_is_told_apart_from_a_regression() -> None:
    old = {"latency_ns": 100.0, "tensor_cycles": 280, "busy_ns": {"dma": 50.0},
           "model": "2026.01.01", "config": "abc"}
    new = dict(old, latency_ns=150.0, tensor_cycles=420, model="2026.11.25")
    message = compare("k", Path("b.json"), old, new, 0.02)
    assert message is not None
    assert "timing model changed from 2026.01.01 to 2026.11.25" in message
    assert "re-record" in message and "(slower)" not in message
    config_changed = compare("k", Path("b.json"), old, dict(old, latency_ns=150.0, config="x"),
                             0.02)
    assert "hardware config (fingerprint) changed from abc to x" in config_changed
    regression = compare("k", Path("b.json"), old, dict(old, latency_ns=150.0), 0.02)
    assert "+50.00% (slower)" in regression and "model" not in regression
    # within tolerance, a model change alone passes
    assert compare("k", Path("b.json"), old, dict(new, latency_ns=101.0), 0.02) is None



MANY = INNER + '''

import pytest


@pytest.mark.parametrize("cols", [64 * k for k in range(1, 13)])
def test_many(cycle_baseline, cols):
    a = np.ones((128, cols), np.float32)
    cycle_baseline(ncs.simulate(add, a, a, functional=False))
'''


def test_a_killed_update_leaves_the_old_file_or_the_new_one(tmp_path: Path) -> None:
    """SIGKILL a real `pytest --update-cycle-baselines` at several moments: the file is always
    valid JSON and either the old content or a complete new one, never a mix."""
    import signal
    import subprocess
    import sys
    import time

    (tmp_path / "test_k.py").write_text(MANY)
    path = tmp_path / "cycle_baselines.json"
    old = {"test_k.py::test_add": {"latency_ns": 1.0}}
    plugin = [] if registered_by_entry_point() else ["-p", "neuroncore_sim.pytest_plugin"]
    cmd = [sys.executable, "-m", "pytest", "-q", *plugin, "-p", "no:cacheprovider",
           "--update-cycle-baselines", "test_k.py"]
    seen = set()
    for delay in (0.8, 1.6, 30.0):
        path.write_text(json.dumps(old) + "\n")
        proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        try:
            proc.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
        data = json.loads(path.read_text())
        if data == old:
            seen.add("old")
        else:
            assert len(data) == 13 and "test_k.py::test_add" in data  # complete
            seen.add("new")
        assert [p.name for p in tmp_path.iterdir()
                if "cycle_baselines" in p.name and p != path] == []  # no temporary left
    assert "new" in seen  # the last run (30 s) finishes
