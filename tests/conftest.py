"""Shared pytest options and fixtures."""

from __future__ import annotations

import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

GOLDEN_DIR = Path(__file__).parent / "golden"

# Test modules live in folders mirroring the package (tests/values/, tests/timing/, ...); the
# shared helpers (exec_helpers, programs, kernel_checks) stay here, importable from all of them.
sys.path.insert(0, str(Path(__file__).parent))

# The cycle-baseline plugin (fixture ``cycle_baseline``) is registered by the installed
# package's pytest11 entry point. From a checkout whose install predates that entry point (or
# without one), load it here; never both, which pytest would refuse as a double registration.
# (Not imported here to ask: pytest must import it first, to rewrite its asserts.)
_PLUGIN = "neuroncore_sim.pytest_plugin"
if not any(ep.value == _PLUGIN for ep in entry_points(group="pytest11")):
    pytest_plugins = [_PLUGIN]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite tests/golden/* from the current output instead of comparing")


@pytest.fixture
def golden(request: pytest.FixtureRequest):
    """Compare text with tests/golden/NAME (or rewrite it under --update-golden)."""
    update = request.config.getoption("--update-golden")

    def check(name: str, text: str) -> None:
        path = GOLDEN_DIR / name
        if update or not path.exists():
            if not update:
                pytest.fail(f"golden file {path} is missing; run pytest --update-golden")
            path.write_text(text + "\n")
            return
        assert text + "\n" == path.read_text(), f"output differs from {path}"

    return check
