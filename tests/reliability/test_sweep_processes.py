"""Sweep worker processes (issue 19, items 2 and 13): they die with the sweep's process, and
sweeps run with the spawn start method (the default on macOS and Windows)."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from neuroncore_sim.sweep import run as sweep_run
from neuroncore_sim.sweep.run import sweep

SLOW = '''
import time
import numpy as np
import neuroncore_sim.nki as nki
import neuroncore_sim.nki.language as nl


@nki.jit
def kernel(x, nap=0.0):
    time.sleep(nap)  # a point that takes long: the sweep is killed while its workers run
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.multiply(nl.load(x), 2.0))
    return out


def reference(x, nap=0.0):
    return x * 2.0


def example_inputs():
    return {"x": np.ones((128, 64), np.float32)}
'''


@pytest.fixture
def slow_file(tmp_path: Path) -> Path:
    path = tmp_path / "slow.py"
    path.write_text(textwrap.dedent(SLOW))
    return path


def _children(parent: int) -> list[int]:
    """Live processes whose parent is ``parent`` (Linux /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == parent and fields[0] != "Z":
            found.append(int(stat.parent.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM])
def test_workers_die_with_the_sweep_process(slow_file: Path, how: int) -> None:
    code = (f"from neuroncore_sim.sweep import sweep\n"
            f"sweep({str(slow_file)!r}, {{'nap': [60.0, 60.5, 61.0, 61.5]}}, workers=2)\n")
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
    workers: list[int] = []
    try:
        deadline = time.monotonic() + 30
        while len(workers) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
            workers = _children(parent.pid)
        assert len(workers) >= 2, "the sweep did not start its workers"
        time.sleep(1.0)  # the workers are inside their 60 s points now
        parent.send_signal(how)
        parent.wait(timeout=10)
        deadline = time.monotonic() + 5
        while any(_alive(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [w for w in workers if _alive(w)], "sweep workers outlived their parent"
        # and nothing holds the caller's pipe: reading it ends
        parent.stdout.read()
    finally:
        if parent.poll() is None:
            parent.kill()
        for w in workers:  # (only when the test failed: reparented orphans)
            if _alive(w):
                os.kill(w, signal.SIGKILL)


def test_sweep_runs_with_spawn(slow_file: Path, monkeypatch) -> None:
    """Where fork does not exist, workers are spawned: they load the kernel file themselves."""
    monkeypatch.setattr(multiprocessing, "get_all_start_methods", lambda: ["spawn"])
    real_context = multiprocessing.get_context
    used = []
    monkeypatch.setattr(sweep_run.multiprocessing, "get_context",
                        lambda method=None: used.append(method) or real_context(method))
    table = sweep(str(slow_file), {"nap": [0.0, 0.01]}, workers=2, check=True)
    assert used == ["spawn"]
    assert list(table["error"].fillna("")) == ["", ""]
    assert table["latency_ns"].gt(0).all()
