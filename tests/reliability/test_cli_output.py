"""Issue 19 items 4, 5 and 9: ``--out`` is checked before any work, files are written whole or
not at all, a bad TOML config or an empty ``--config`` is a usage error naming the file, and a
reader that stops early (``| head``) is not a failure."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from neuroncore_sim import cli
from neuroncore_sim.report import launch_files

KERNEL = str(Path(__file__).resolve().parents[2] / "kernels" / "matmul_blocked.py")


def _fail_if_simulated(monkeypatch):
    """Any simulation would be work done before the output place was checked."""
    def boom(*_, **__):
        raise AssertionError("simulated before checking --out")
    monkeypatch.setattr(cli, "simulate", boom)


def test_out_that_is_a_file_fails_at_once(tmp_path, capsys, monkeypatch):
    _fail_if_simulated(monkeypatch)
    target = tmp_path / "taken.txt"
    target.write_text("keep me")
    assert cli.main(["profile", KERNEL, "--out", str(target)]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [
        f"neuroncore-sim: error: --out {target}: expected a directory (it is created if "
        "missing), found an existing file"]
    assert target.read_text() == "keep me"


def test_out_under_a_file_fails_at_once(tmp_path, capsys, monkeypatch):
    _fail_if_simulated(monkeypatch)
    (tmp_path / "f").write_text("")
    assert cli.main(["profile", KERNEL, "--out", str(tmp_path / "f" / "sub")]) == 2
    assert "cannot write there" in capsys.readouterr().err


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes to read-only directories")
def test_out_in_a_read_only_directory_fails_at_once(tmp_path, capsys, monkeypatch):
    _fail_if_simulated(monkeypatch)
    ro = tmp_path / "ro"
    ro.mkdir(mode=0o555)
    assert cli.main(["profile", KERNEL, "--out", str(ro / "x")]) == 2
    assert "cannot write there" in capsys.readouterr().err


def test_atomic_path_leaves_the_old_file_when_writing_fails(tmp_path):
    path = tmp_path / "summary.json"
    path.write_text("old")
    with pytest.raises(RuntimeError):
        with launch_files.atomic_path(path) as tmp:
            tmp.write_text("half")
            raise RuntimeError("interrupted")
    assert path.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summary.json"]
    with launch_files.atomic_path(path) as tmp:
        tmp.write_text("new")
    assert path.read_text() == "new"
    assert oct(path.stat().st_mode & 0o777) == oct(0o666 & ~launch_files._UMASK)


def test_profile_out_writes_every_file_and_no_temporary(tmp_path, capsys):
    assert cli.main(["profile", KERNEL, "--out", str(tmp_path), "--timing-only"]) == 0
    folder, = [p for p in tmp_path.iterdir() if p.is_dir()]
    assert sorted(p.name for p in folder.iterdir()) == [
        "events.csv", "parquet", "summary.json", "summary.txt", "timeline.png", "trace.json"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_empty_config_is_a_usage_error(capsys):
    assert cli.main(["profile", KERNEL, "--config", ""]) == 2
    assert "expected a preset name (trn1, inf2) or a .toml file, found ''" in \
        capsys.readouterr().err


def test_config_that_is_not_utf8_names_the_file(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_bytes(b'name = "\xff"\n')
    assert cli.main(["profile", KERNEL, "--config", str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"config {bad}: expected UTF-8 text" in err and "Traceback" not in err


def test_output_piped_to_a_reader_that_stops_is_not_an_error(monkeypatch):
    # A pipe whose reader is gone: every write raises BrokenPipeError (Python ignores SIGPIPE).
    read_end, write_end = os.pipe()
    os.close(read_end)
    stdout = os.fdopen(write_end, "w", buffering=1)
    monkeypatch.setattr(sys, "stdout", stdout)
    try:
        assert cli.main(["profile", KERNEL, "--timing-only"]) == 0
        print("x" * 100000)  # stdout now goes to /dev/null: no second BrokenPipeError
        stdout.flush()
    finally:
        monkeypatch.undo()
        stdout.close()
