"""Helpers of the fault tests (issue 25): the command line in a subprocess, with a file size
limit (``ulimit -f``: writes past it fail with EFBIG), without the capabilities that bypass
file permissions (so that they hold when the tests run as root), and a real full disk (a small
tmpfs, where this process may mount one)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Iterator

import pytest

REPO = Path(__file__).resolve().parents[2]

#: A small kernel file: one load, one multiply, one store (about 0.1 s to simulate).
KERNEL = '''
import numpy as np
import neuroncore_sim.nki as nki
import neuroncore_sim.nki.language as nl


@nki.jit
def kernel(x, cols=64):
    out = nl.ndarray((128, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.multiply(nl.load(x[:, 0:cols]), 2.0))
    return out


def reference(x, cols=64):
    return x[:, 0:cols] * 2.0


def example_inputs(cols=64):
    return {"x": np.ones((128, 512), np.float32), "cols": cols}
'''



def kernel_file(folder: Path) -> Path:
    path = folder / "k.py"
    path.write_text(textwrap.dedent(KERNEL))
    return path


def open_folder() -> Path:
    """A fresh folder every user may enter and write (for commands run as nobody)."""
    folder = Path(tempfile.mkdtemp(prefix="ncs-faults-"))
    os.chmod(folder, 0o777)
    return folder


def cli(*args: str, cwd: Path | None = None, file_limit: int | None = None,
        unprivileged: bool = False, timeout: float = 120) -> subprocess.CompletedProcess:
    """``python -m neuroncore_sim ARGS`` in a subprocess; ``file_limit``: the largest file it
    may write, in bytes (``prlimit --fsize``, as ``ulimit -f``); ``unprivileged``: file
    permissions hold even when this process is root (``setpriv`` takes the capabilities that
    bypass them out of the bounding set, so the new process never has them)."""
    command = [sys.executable, "-m", "neuroncore_sim", *args]
    if file_limit is not None:
        command = [_tool("prlimit"), f"--fsize={file_limit}", *command]
    if unprivileged and os.geteuid() == 0:
        command = [_tool("setpriv"), "--bounding-set=-dac_override,-dac_read_search",
                   *command]
    env = dict(os.environ, PYTHONPATH=str(REPO), MPLCONFIGDIR=tempfile.gettempdir(),
               NUMBA_CACHE_DIR=tempfile.gettempdir())
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env=env)


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} (util-linux) is not installed")
    return path


def small_disk(size: str = "96k") -> Iterator[Path]:
    """A tmpfs of ``size`` mounted for the test (skipped where this process cannot mount)."""
    where = Path(tempfile.mkdtemp(prefix="ncs-disk-"))
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0777", "tmpfs",
                              str(where)], capture_output=True)
    if mounted.returncode != 0:
        where.rmdir()
        pytest.skip("cannot mount a small tmpfs here (not root)")
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=True)
        where.rmdir()


def files_under(folder: Path) -> list[str]:
    """Every file and folder under ``folder``, relative to it, hidden ones included."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))
