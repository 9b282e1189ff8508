"""Write failures (issue 25, classes 2 and 6): a full disk (``ulimit -f``: EFBIG; a small tmpfs:
ENOSPC), a launch folder or points.jsonl that cannot be written give one line naming the path
and exit status 1, checked before the simulation where it can be; a launch's files are written
as a set (all or none); a relative ``--out`` of ``run`` is the folder ``run`` started in."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from .faults import REPO, cli, files_under, kernel_file, open_folder, small_disk

LAUNCH_FILES = {"summary.json", "summary.txt", "events.csv", "trace.json", "timeline.png"}


@pytest.fixture
def folder():
    where = open_folder()
    yield where
    shutil.rmtree(where)


def _one_error_line(stderr: str, path: Path, cwd: Path | None = None) -> None:
    """One line, naming ``path`` (or its path relative to ``cwd``, as the user gave it)."""
    lines = [line for line in stderr.splitlines() if "font_manager" not in line]
    assert len(lines) == 1 and lines[0].startswith("error: cannot write "), stderr
    names = {str(path)} | ({os.path.relpath(path, cwd)} if cwd else set())
    assert any(name in lines[0] for name in names), stderr
    assert "Traceback" not in stderr


@pytest.mark.parametrize("limit", [3000, 40000])  # the first file fails; a later one fails
def test_file_size_limit_under_profile_writes_no_file_of_the_launch(folder, limit: int) -> None:
    k = kernel_file(folder)
    done = cli("profile", str(k), "--out", "out", cwd=folder, file_limit=limit)
    assert done.returncode == 1
    _one_error_line(done.stderr, folder / "out" / "launch1_kernel")
    assert files_under(folder / "out") == []


def test_file_size_limit_under_run_keeps_the_previous_files_whole(folder) -> None:
    k = kernel_file(folder)
    script = folder / "script.py"
    script.write_text("import numpy as np\nfrom k import kernel\n"
                      "kernel(np.ones((128, 512), np.float32))\n")
    assert cli("run", "--out", "out", str(script), cwd=folder).returncode == 0
    launch = folder / "out" / "launch1_kernel"
    before = {p: p.read_bytes() for p in launch.rglob("*") if p.is_file()}
    assert {p.name for p in before} >= LAUNCH_FILES
    done = cli("run", "--out", "out", str(script), cwd=folder, file_limit=3000)
    assert done.returncode == 1
    _one_error_line(done.stderr, launch)
    after = {p: p.read_bytes() for p in launch.rglob("*") if p.is_file()}
    assert after == before  # no new file replaced an old one, no temporary left


def test_a_full_disk_writes_no_file_of_the_launch(folder) -> None:
    k = kernel_file(folder)
    for disk in small_disk("48k"):
        done = cli("profile", str(k), "--out", str(disk / "out"), cwd=folder)
        assert done.returncode == 1, done.stderr
        _one_error_line(done.stderr, disk / "out" / "launch1_kernel")
        assert "No space left on device" in done.stderr
        assert files_under(disk / "out") == []


def test_an_unwritable_launch_folder_fails_before_the_simulation(folder) -> None:
    k = kernel_file(folder)
    launch = folder / "out" / "launch1_kernel"
    launch.mkdir(parents=True)
    os.chmod(folder / "out", 0o777)
    (launch / "summary.json").write_text("{}")
    os.chmod(launch, 0o555)
    for command in (["profile", str(k), "--out", "out"],
                    ["run", "--out", "out", str(folder / "s.py")]):
        (folder / "s.py").write_text("import numpy as np\nfrom k import kernel\n"
                                     "kernel(np.ones((128, 512), np.float32))\n")
        done = cli(*command, cwd=folder, unprivileged=True)
        assert done.returncode == 1, done.stderr
        _one_error_line(done.stderr, launch)
        assert "== launch" not in done.stdout  # refused before the simulation
        assert (launch / "summary.json").read_text() == "{}"


def test_a_read_only_points_file_fails_before_any_point(folder) -> None:
    k = kernel_file(folder)
    out = folder / "out"
    out.mkdir(mode=0o777)
    os.chmod(out, 0o777)
    points = out / "points.jsonl"
    points.write_text("")
    os.chmod(points, 0o444)
    done = cli("sweep", str(k), "--param", "cols=32,64", "--workers", "1", "--out", "out",
               "--no-progress", cwd=folder, unprivileged=True)
    assert done.returncode == 1, done.stderr
    _one_error_line(done.stderr, points, folder)
    assert done.stdout == "" and points.read_text() == ""


def test_a_full_disk_while_a_sweep_saves_points_keeps_the_saved_ones(folder) -> None:
    k = kernel_file(folder)
    args = ("sweep", str(k), "--param", "cols=16,32,48,64,80,96", "--workers", "1",
            "--out", "out", "--no-progress")
    done = cli(*args, cwd=folder, file_limit=1500)  # room for two lines of points.jsonl
    assert done.returncode == 1
    _one_error_line(done.stderr, folder / "out" / "points.jsonl", folder)
    saved = [json.loads(line) for line in (folder / "out" / "points.jsonl").read_text().splitlines()]
    assert len(saved) in (1, 2), saved  # what fit under the limit, each line whole
    again = cli(*args, cwd=folder)  # resumed: only the missing points run
    assert again.returncode == 0, again.stderr
    lines = (folder / "out" / "points.jsonl").read_text().splitlines()
    keys = [json.loads(line)["key"] for line in lines if line.strip()]
    assert len(keys) == len(set(keys)) == 6


def test_run_writes_a_relative_out_where_it_started(folder) -> None:
    k = kernel_file(folder)
    elsewhere = folder / "elsewhere"
    elsewhere.mkdir()
    script = folder / "script.py"
    script.write_text(textwrap.dedent(f'''
        import os
        import numpy as np
        from k import kernel
        os.chdir({str(elsewhere)!r})
        kernel(np.ones((128, 512), np.float32))
    '''))
    done = cli("run", "--out", "out", str(script), cwd=folder)
    assert done.returncode == 0, done.stderr
    assert {p.name for p in (folder / "out" / "launch1_kernel").iterdir()} >= LAUNCH_FILES
    assert files_under(elsewhere) == []
    assert "wrote out/launch1_kernel/" in done.stdout


def test_nki_profile_on_a_full_disk_writes_neither_file(folder) -> None:
    kernel_file(folder)
    (folder / "p.py").write_text(textwrap.dedent('''
        import numpy as np
        import neuroncore_sim.nki as nki
        from k import kernel
        nki.profile(working_directory="prof")(kernel.func)(np.ones((128, 512), np.float32))
    '''))
    done = subprocess.run([shutil.which("prlimit") or "prlimit", "--fsize=600", sys.executable,
                           "p.py"], cwd=folder, capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert done.returncode == 1
    assert "OutputWriteError: p.py:5: cannot write " in done.stderr, done.stderr
    assert f"cannot write {folder}/prof/" in done.stderr
    assert files_under(folder / "prof") == []


@pytest.mark.parametrize("in_the_way", ["summary.json", "parquet"])
def test_a_folder_or_file_in_the_way_of_a_launch_file_is_said_at_once(folder, in_the_way) -> None:
    k = kernel_file(folder)
    launch = folder / "out" / "launch1_kernel"
    launch.mkdir(parents=True)
    if in_the_way == "parquet":
        (launch / "parquet").write_text("not a folder")
    else:
        (launch / in_the_way).mkdir()
    done = cli("profile", str(k), "--out", "out", cwd=folder)
    assert done.returncode == 1
    _one_error_line(done.stderr, launch / in_the_way)
    assert sorted(p.name for p in launch.iterdir()) == [in_the_way]


def test_a_sweep_in_process_writes_a_relative_out_where_it_started(folder, monkeypatch) -> None:
    from neuroncore_sim.sweep.run import sweep

    elsewhere = folder / "elsewhere"
    elsewhere.mkdir()
    (folder / "cd.py").write_text(kernel_file(folder).read_text().replace(
        "    out = nl.ndarray(", f"    __import__('os').chdir({str(elsewhere)!r})\n"
                                "    out = nl.ndarray(", 1))
    monkeypatch.chdir(folder)
    sweep("cd.py", {"cols": [16, 32]}, workers=1, out="out", progress=False)
    assert {p.name for p in (folder / "out").iterdir()} == {"points.jsonl", "sweep.csv",
                                                           "sweep.png"}
    assert files_under(elsewhere) == []
