"""Cycle regression tests: every sample kernel's estimated latency against its baseline.

Each kernel of kernels/ runs timing-only on its example inputs; the ``cycle_baseline`` fixture
(neuroncore_sim.pytest_plugin) compares the estimate with tests/kernels/cycle_baselines.json. After an
intended change of the timing model or of a kernel, rewrite the baselines with::

    python -m pytest tests/kernels/test_cycle_baselines.py --update-cycle-baselines
"""

from __future__ import annotations

import pytest

import neuroncore_sim as ncs
from test_kernels import CASES, kernels_of, load_sample


@pytest.mark.parametrize("name, kernel_name", CASES, ids=[f"{n}.{k}" for n, k in CASES])
def test_kernel_cycles(cycle_baseline, name: str, kernel_name: str) -> None:
    module = load_sample(name)
    kernel = kernels_of(module)[kernel_name]
    launch = {"grid": module.GRID} if hasattr(module, "GRID") else {}
    res = ncs.simulate(kernel, **module.example_inputs(), functional=False, **launch)
    cycle_baseline(res)
