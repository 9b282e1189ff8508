"""README.md stays true: its first kernel runs as printed, the files and command-line flags it
names exist."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from neuroncore_sim import cli

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def test_first_kernel_snippet_runs(capsys):
    code = re.findall(r"```python\n(.*?)```", README, re.S)[0]
    namespace: dict = {"__name__": "readme_snippet"}
    exec(compile(code, "README.md", "exec"), namespace)
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "0.0"  # the max error the comment promises
    assert re.fullmatch(r"\d+\.\d\d us", printed[1])
    res, x, scale = namespace["res"], namespace["x"], namespace["scale"]
    np.testing.assert_array_equal(res.outputs[0], x * scale)
    assert {"engine", "opcode", "start_ns", "end_ns", "source"} <= set(res.events.columns)


def test_framework_snippet_runs(capsys):
    """The "In JAX and PyTorch programs" snippet: the kernel inside jax.jit gives the loss
    numpy gives, and the session names its launch by the jax.named_scope."""
    pytest.importorskip("jax", reason='jax is not installed; pip install ".[jax]"')
    code = [c for c in re.findall(r"```python\n(.*?)```", README, re.S)
            if "profile_session" in c]
    assert len(code) == 1, "the README's framework snippet is missing"
    namespace: dict = {"__name__": "readme_framework_snippet"}
    exec(compile(code[0], "README.md", "exec"), namespace)
    x = np.asarray(namespace["x"], dtype=np.float64)
    printed = capsys.readouterr().out
    assert float(printed.splitlines()[0]) == pytest.approx((2 * np.tanh(x) * x).sum(), rel=1e-5)
    session = namespace["session"]
    assert [(layer, n) for layer, n, _ in session.by_layer()] == [("act", 1)]
    assert session.device_ns > 0 and "per layer" in printed


def test_named_files_exist():
    named = set(re.findall(r"`((?:kernels|docs|examples|neuroncore_sim)/[\w./]+)`", README))
    named |= {f"kernels/{f}" for f in re.findall(r"^\| `(\w+\.py)` \|", README, re.M)}
    assert named, "the README names no files?"
    assert [n for n in sorted(named) if not (ROOT / n).exists()] == []


def test_documented_flags_exist(capsys):
    flags = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", README))
    helps = ""
    for command in ("run", "profile", "sweep", "compare"):
        assert cli.main([command, "--help"]) == 0
        helps += capsys.readouterr().out
    assert cli.main(["--help"]) == 0  # the top level's own: --version
    helps += capsys.readouterr().out
    # pytest options the cycle-regression plugin registers count too
    helps += (ROOT / "neuroncore_sim" / "pytest_plugin.py").read_text()
    assert {"--out", "--config", "--timing-only", "--workers"} <= flags
    assert [f for f in sorted(flags) if f not in helps] == []
