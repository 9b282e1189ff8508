"""Damaged points.jsonl lines (issue 25, class 3): bytes that are not UTF-8, JSON that is not a
saved point (a key that is a list, measured columns of the wrong type), lines cut short. They
are skipped with one warning that counts them; every point the file holds whole is reused, the
others run once, and the command line says it in one line."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from neuroncore_sim import cli
from neuroncore_sim.sweep.points_file import DamagedPointsWarning, read_points
from neuroncore_sim.sweep.run import POINTS_FILE, sweep

from .faults import kernel_file

GRID = {"cols": [16, 32, 48, 64]}
DAMAGED = [
    b"\xff\xfe\x00 not utf-8 \x80\n",
    b'{"key": ["x"]}\n',
    b'{"key": {"a": 1}, "latency_ns": 1.0}\n',
    b'{"key": 7}\n',
    b"[1, 2, 3]\n",
    b'"just a string"\n',
    b'{"key": "abc", "latency_ns": "fast"}\n',
    b'{"key": "abc", "match": 3}\n',
    b'{"key": "abc", "error": 5}\n',
    b'{"key": "abc", "latency_ns": NaN}\n',
    b'{"key": "abc", "latency_us": Infinity}\n',
    b'{"key": "abc", "dma_bytes": 1e999}\n',
    b"[" * 100_000 + b"\n",
    b'{"key": "cut sho',
]


@pytest.fixture
def full(tmp_path: Path) -> tuple[Path, list[bytes]]:
    k = kernel_file(tmp_path)
    out = tmp_path / "full"
    sweep(str(k), GRID, workers=1, out=out)
    return k, (out / POINTS_FILE).read_bytes().splitlines(keepends=True)


def test_damaged_lines_are_skipped_counted_and_nothing_is_lost_or_run_twice(tmp_path, full):
    k, lines = full
    marked = json.loads(lines[0])
    marked["latency_ns"] = 1.0  # can only come from the file
    part = tmp_path / "part"
    part.mkdir()
    body = json.dumps(marked).encode() + b"\n" + b"".join(DAMAGED[:-1]) + lines[1] + \
        DAMAGED[-1]
    (part / POINTS_FILE).write_bytes(body)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = sweep(str(k), GRID, workers=1, out=part)
    found = [w for w in caught if issubclass(w.category, DamagedPointsWarning)]
    assert len(found) == 1
    assert f"{len(DAMAGED)} damaged lines skipped" in str(found[0].message)
    assert str(part / POINTS_FILE) in str(found[0].message)
    assert found[0].filename == __file__  # located at the caller's line
    assert table.loc[table["latency_ns"] == 1.0, "cols"].tolist() == [marked["params"]["cols"]]
    saved = [json.loads(line) for line in (part / POINTS_FILE).read_bytes().splitlines()
             if line.startswith(b'{"key": "') and line.endswith(b"}")]
    keys = [r["key"] for r in saved if len(r["key"]) == 32]
    assert len(keys) == len(set(keys)) == len(GRID["cols"])  # two kept, two ran once


def test_read_points_of_a_clean_file_warns_nothing(tmp_path, full) -> None:
    _, lines = full
    path = tmp_path / POINTS_FILE
    path.write_bytes(b"".join(lines) + b"\n\n")  # blank lines are not damage
    keys = {json.loads(line)["key"] for line in lines}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert set(read_points(path, keys)) == keys


def test_the_command_line_says_it_in_one_line(tmp_path, full, capsys) -> None:
    k, lines = full
    out = tmp_path / "cli"
    out.mkdir()
    (out / POINTS_FILE).write_bytes(b"".join(lines) + DAMAGED[0] + DAMAGED[1])
    assert cli.main(["sweep", str(k), "--param", "cols=16,32,48,64", "--workers", "1",
                     "--out", str(out), "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert err.splitlines() == [f"neuroncore-sim: warning: {out / POINTS_FILE}: 2 damaged "
                                "lines skipped (cut short, not UTF-8 or not a saved point); the "
                                "points they held run again"]
