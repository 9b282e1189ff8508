"""Issue 19 fault tests: a sweep killed at any moment (SIGKILL, SIGTERM, SIGINT) resumes, by
running the same command again, to the table an uninterrupted sweep gives; the points file
never holds a point twice."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest

from neuroncore_sim.sweep.run import POINTS_FILE, sweep

KERNEL = '''
import time
import numpy as np
import neuroncore_sim.nki as nki
import neuroncore_sim.nki.language as nl


@nki.jit
def kernel(x, cols=64):
    time.sleep(0.4)  # each point takes a while: the kill lands between and inside points
    out = nl.ndarray((128, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.multiply(nl.load(x[:, 0:cols]), 2.0))
    return out


def example_inputs(cols=64):
    return {"x": np.ones((128, 512), np.float32), "cols": cols}
'''
GRID = {"cols": [32, 64, 96, 128, 192, 256]}
#: columns that do not depend on the run (wall time does)
STABLE = ["point", "cols", "latency_ns"]


@pytest.fixture(scope="module")
def kernel_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("faults") / "k.py"
    path.write_text(textwrap.dedent(KERNEL))
    return path


@pytest.fixture(scope="module")
def uninterrupted(kernel_file: Path, tmp_path_factory) -> pd.DataFrame:
    table = sweep(str(kernel_file), GRID, workers=1, out=tmp_path_factory.mktemp("full"))
    return table[STABLE].sort_values("point").reset_index(drop=True)


def _command(kernel_file: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "neuroncore_sim", "sweep", str(kernel_file), "--param",
            "cols=" + ",".join(map(str, GRID["cols"])), "--workers", "1", "--out", str(out),
            "--no-progress"]


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT])
def test_a_killed_sweep_resumes_to_the_uninterrupted_table(kernel_file, uninterrupted, tmp_path,
                                                          sig) -> None:
    out = tmp_path / "out"
    delay = random.Random(int(sig)).uniform(1.2, 2.2)  # after start-up, while points run
    proc = subprocess.Popen(_command(kernel_file, out), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=dict(os.environ, PYTHONHASHSEED="0"))
    time.sleep(delay)
    proc.send_signal(sig)
    proc.wait(timeout=30)
    points = out / POINTS_FILE
    saved = points.read_text().count("\n") if points.exists() else 0
    assert saved < len(GRID["cols"])  # the kill did interrupt the sweep
    done = subprocess.run(_command(kernel_file, out), capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    resumed = sweep(str(kernel_file), GRID, workers=1, out=out)  # all saved: runs nothing
    table = resumed[STABLE].sort_values("point").reset_index(drop=True)
    pd.testing.assert_frame_equal(table, uninterrupted)
    keys = [json.loads(line)["key"] for line in (out / POINTS_FILE).read_text().splitlines()
            if line.endswith("}")]
    assert len(keys) == len(set(keys)) == len(GRID["cols"])
