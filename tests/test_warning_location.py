"""Simulator warnings are issued at the kernel line their message names
(neuroncore_sim.errors.warn_at_kernel_lines): Python's warning location (``filename``, ``lineno``,
the ``path:LINE:`` it prints, module filters) is the kernel's file, even when the kernel lives in
another file than the line that launched it; never a line inside the package."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

import neuroncore_sim as ncs
from neuroncore_sim.errors import (InputWriteWarning, SimulatorWarning, SpillWarning,
                                   UninitializedReadWarning, UnwrittenOutputWarning,
                                   warn_at_kernel_lines)
from neuroncore_sim.sweep.run import sweep
from programs import AS_WRITTEN  # (the kernel as written spills; interleaved it need not)

ROOT = Path(__file__).resolve().parents[1]

KERNELS = '''
import numpy as np
import neuroncore_sim.nki.language as nl


def reads_garbage(t):
    out = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.shared_hbm)
    junk = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.sbuf)
    nl.store(out, value=nl.add(nl.load(t), junk))  # READS
    return out


def never_stores(t):  # DEF
    out = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.shared_hbm)
    nl.exp(nl.load(t))
    return out


def holds_too_much(t):
    tiles = [nl.load(t[:, i * 12288:(i + 1) * 12288]) for i in range(5)]  # LOADS
    acc = nl.add(tiles[0], tiles[1])
    for k in range(2, 5):
        acc = nl.add(acc, tiles[k])
    out = nl.ndarray((128, 12288), dtype=t.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=acc)
    return out


def kernel(x, poke=False):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    nl.store(out, value=t)
    if poke:
        nl.store(x, value=t)  # POKE
    return out


def example_inputs():
    return {"x": np.ones((128, 64), np.float32)}
'''


@pytest.fixture
def kernels(tmp_path: Path):
    """The kernels above, imported from their own file (not this test's)."""
    path = tmp_path / "warn_kernels.py"
    path.write_text(textwrap.dedent(KERNELS))
    spec = importlib.util.spec_from_file_location("warn_kernels", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _line(module, marker: str) -> int:
    return next(i for i, text in enumerate(Path(module.__file__).read_text().splitlines(), 1)
                if marker in text)


def _caught(launch) -> list[warnings.WarningMessage]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        launch()
    return [w for w in caught if issubclass(w.category, SimulatorWarning)]


def test_a_read_of_garbage_is_located_at_the_kernel_line(kernels) -> None:
    caught = _caught(lambda: ncs.simulate(kernels.reads_garbage, np.ones((128, 16), np.float32)))
    [w] = caught
    line = _line(kernels, "# READS")
    assert w.category is UninitializedReadWarning
    assert (w.filename, w.lineno) == (kernels.__file__, line)
    # the add keeps the garbage in its output; the store of it warns (naming the add's read)
    assert str(w.message).startswith(f"warn_kernels.py:{line}: dma_copy src")
    assert f"first read at warn_kernels.py:{line}: tensor_tensor" in str(w.message)


def test_an_unwritten_output_is_located_at_the_def_line(kernels) -> None:
    [w] = _caught(lambda: ncs.simulate(kernels.never_stores, np.ones((128, 16), np.float32),
                                       functional=False))
    assert w.category is UnwrittenOutputWarning
    assert (w.filename, w.lineno) == (kernels.__file__, _line(kernels, "# DEF"))


def test_a_spill_is_located_at_the_spilled_allocation_site(kernels) -> None:
    big = np.zeros((128, 5 * 12288), np.float32)  # five 48 KiB tiles live at once
    [w] = _caught(lambda: ncs.simulate(kernels.holds_too_much, big, functional=False,
                                       config=AS_WRITTEN))
    assert w.category is SpillWarning
    assert (w.filename, w.lineno) == (kernels.__file__, _line(kernels, "# LOADS"))


def test_filters_by_module_see_the_kernel_module(kernels) -> None:
    """`-W ignore::...:warn_kernels` style filters match the kernel's module, not ours."""
    x = np.ones((128, 16), np.float32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", category=SimulatorWarning, module="warn_kernels")
        ncs.simulate(kernels.reads_garbage, x)
    assert not caught
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", category=SimulatorWarning, module="neuroncore_sim")
        ncs.simulate(kernels.reads_garbage, x)
    assert len(caught) == 1


def test_a_repeated_launch_warns_once_under_the_default_action(kernels) -> None:
    x = np.ones((128, 16), np.float32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        for _ in range(3):
            ncs.simulate(kernels.reads_garbage, x)
    assert len(caught) == 1


def test_a_message_naming_no_launched_file_falls_back_to_the_launching_line() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        here = sys._getframe().f_lineno + 1
        warn_at_kernel_lines([SimulatorWarning("elsewhere.py:3: made up")], ["/x/kernel.py"])
    [w] = caught
    assert (w.filename, w.lineno) == (__file__, here)


def test_a_sweep_point_warning_keeps_the_kernel_line(kernels) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = sweep(kernels.__file__, {"poke": [True]}, workers=1)
    assert table["error"].isna().all()
    [w] = [w for w in caught if w.category is InputWriteWarning]
    assert (w.filename, w.lineno) == (kernels.__file__, _line(kernels, "# POKE"))


def test_the_command_line_prints_the_kernel_path_and_source_line(tmp_path: Path) -> None:
    path = tmp_path / "k.py"
    path.write_text(textwrap.dedent(KERNELS).replace("def kernel(x, poke=False)",
                                                     "def kernel(x, poke=True)"))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "neuroncore_sim", "profile", str(path),
                           "--timing-only", "--no-progress"], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    line = next(i for i, t in enumerate(path.read_text().splitlines(), 1) if "# POKE" in t)
    assert done.stderr.startswith(f"{path}:{line}: InputWriteWarning: k.py:{line}: kernel "
                                  "writes its input tensor")
    assert "nl.store(x, value=t)  # POKE" in done.stderr  # Python shows the kernel's source
