"""Traceback filtering (issue 25, class 5): as JAX does, an error leaving ncs.simulate, a kernel
call or the other public entry points has the package's frames hidden (the user's frames and
the error line kept, with a note saying how to see them all); NEURONCORE_SIM_TRACEBACK_FILTERING
=off or the command line's --debug keeps every frame."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import traceback
from pathlib import Path

import numpy as np
import pytest

import neuroncore_sim as ncs
import neuroncore_sim.nki as nki
import neuroncore_sim.nki.language as nl
from neuroncore_sim import cli
from neuroncore_sim.errors import DEBUG_ENV, TRACEBACK_ENV, ShapeError, is_package_frame

REPO = Path(__file__).resolve().parents[1]
KERNEL_FILE = '''
import numpy as np
import neuroncore_sim.nki as nki
import neuroncore_sim.nki.language as nl


def helper(t):
    return 1 / 0


@nki.jit
def kernel(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=helper(nl.load(x)))
    return out


def example_inputs():
    return {"x": np.ones((128, 64), np.float32)}
'''


def helper(t):
    return t.no_such_method()


@nki.jit
def breaks_rule(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.add(nl.load(x), nl.load(x[:, 0:3])))
    return out


@nki.jit
def calls_helper(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=helper(nl.load(x)))
    return out


X = np.ones((128, 64), np.float32)


def _files(error: BaseException) -> list[str]:
    return [f.filename for f in traceback.extract_tb(error.__traceback__)]


@pytest.mark.parametrize("launch", [lambda: ncs.simulate(breaks_rule, X),
                                    lambda: breaks_rule(X),
                                    lambda: nki.simulate_kernel(breaks_rule, X),
                                    lambda: ncs.simulate(breaks_rule, X, functional=False)])
def test_a_rule_broken_in_a_kernel_shows_only_the_users_frames(launch) -> None:
    with pytest.raises(ShapeError) as info:
        launch()
    files = _files(info.value)
    assert files and not any(is_package_frame(f) for f in files)
    frames = traceback.extract_tb(info.value.__traceback__)
    assert frames[-1].name == "breaks_rule" and "nl.add" in frames[-1].line
    assert "test_tracebacks.py:" in str(info.value)  # the error line names the kernel line
    assert any(TRACEBACK_ENV in note for note in info.value.__notes__)


def test_the_users_own_error_keeps_its_frames_down_to_the_line() -> None:
    with pytest.raises(AttributeError) as info:
        ncs.simulate(calls_helper, X)
    names = [f.name for f in traceback.extract_tb(info.value.__traceback__)]
    assert names[-2:] == ["calls_helper", "helper"]
    assert not any(is_package_frame(f) for f in _files(info.value))


@pytest.mark.parametrize("variable,value", [(TRACEBACK_ENV, "off"), (TRACEBACK_ENV, "0"),
                                            (DEBUG_ENV, "1"), (DEBUG_ENV, "true")])
def test_filtering_off_keeps_every_frame(monkeypatch, variable, value) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ShapeError) as info:
        ncs.simulate(breaks_rule, X)
    assert sum(is_package_frame(f) for f in _files(info.value)) >= 3
    assert not getattr(info.value, "__notes__", None)


def _python(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env=dict(os.environ, PYTHONPATH=str(REPO), **env))


def _package_lines(text: str) -> list[str]:
    package = str(REPO / "neuroncore_sim") + os.sep
    return [line for line in text.splitlines() if package in line]


@pytest.fixture
def kernel_dir(tmp_path: Path) -> Path:
    (tmp_path / "k.py").write_text(textwrap.dedent(KERNEL_FILE))
    (tmp_path / "script.py").write_text("import numpy as np\nfrom k import kernel\n"
                                        "kernel(np.ones((128, 64), np.float32))\n")
    return tmp_path


def test_plain_python_shows_the_users_frames_and_the_error_line(kernel_dir) -> None:
    done = _python("script.py", cwd=kernel_dir)
    assert done.returncode == 1
    assert _package_lines(done.stderr) == []
    assert 'script.py", line 3' in done.stderr and 'k.py", line 8, in helper' in done.stderr
    assert "ZeroDivisionError: division by zero" in done.stderr
    full = _python("script.py", cwd=kernel_dir, **{TRACEBACK_ENV: "off"})
    assert len(_package_lines(full.stderr)) >= 3


@pytest.mark.parametrize("command", [["profile", "k.py"], ["run", "script.py"]])
def test_profile_and_run_hide_the_package_frames_unless_debug(kernel_dir, command) -> None:
    done = _python("-m", "neuroncore_sim", *command, cwd=kernel_dir)
    assert done.returncode == 1
    assert _package_lines(done.stderr) == [], done.stderr
    assert 'k.py", line 14, in kernel' in done.stderr
    assert 'k.py", line 8, in helper' in done.stderr
    assert "ZeroDivisionError: division by zero" in done.stderr
    debug = _python("-m", "neuroncore_sim", *command[:1], "--debug", *command[1:],
                    cwd=kernel_dir)
    assert debug.returncode == 1
    assert any("simulate.py" in line or "kernel.py" in line
               for line in _package_lines(debug.stderr)), debug.stderr


@pytest.mark.parametrize("variable", [f"{TRACEBACK_ENV}=off", f"{DEBUG_ENV}=1"])
def test_the_environment_shows_every_frame_under_the_command_line(kernel_dir, variable):
    name, value = variable.split("=")
    done = _python("-m", "neuroncore_sim", "profile", "k.py", cwd=kernel_dir, **{name: value})
    assert done.returncode == 1
    assert any("simulate.py" in line for line in _package_lines(done.stderr)), done.stderr


def test_debug_is_undone_when_main_returns(kernel_dir, capsys) -> None:
    """``cli.main`` called in a process (tests, notebooks): --debug does not stay on."""
    assert cli.main(["profile", "--debug", str(kernel_dir / "k.py")]) == 1
    with pytest.raises(ShapeError) as info:
        ncs.simulate(breaks_rule, X)
    assert not any(is_package_frame(f) for f in _files(info.value))
