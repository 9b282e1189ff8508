"""The cycle-baseline pytest plugin (neuroncore_sim.pytest_plugin), run in inner pytest sessions.

Each test writes a small test file using the ``cycle_baseline`` fixture and, where needed, a
``cycle_baselines.json`` derived from the real estimate of the same kernel, then checks the
inner session's outcome and output.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from neuroncore_sim import pytest_plugin
from neuroncore_sim.pytest_plugin import record_of, registered_by_entry_point

pytest_plugins = ["pytester"]

KERNEL_TEST = '''
import numpy as np
import neuroncore_sim as ncs
import neuroncore_sim.nki as nki
import neuroncore_sim.nki.language as nl
import pytest


@nki.jit
def add(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.add(nl.load(a), nl.load(b)))
    return out


def launch():
    a = np.ones((128, 512), np.float32)
    return ncs.simulate(add, a, a, functional=False)


def test_add(cycle_baseline):
    cycle_baseline(launch(){call_args})
'''
KEY = "test_k.py::test_add"


@pytest.fixture(scope="module")
def actual() -> dict:
    """The baseline record of the inner test's launch, computed here."""
    ns: dict = {}
    exec(compile(KERNEL_TEST.replace("{call_args}", ""), "inner.py", "exec"), ns)
    return record_of(ns["launch"]())


def _pytest(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """An in-process inner session with the plugin (loaded by hand unless installed through the
    entry point) and without hypothesis's plugin (its summary alone costs ~1 s a session)."""
    plugin = () if registered_by_entry_point() else ("-p", "neuroncore_sim.pytest_plugin")
    return pytester.runpytest(*plugin, "-p", "no:hypothesispytest", "-p", "no:cacheprovider",
                              *args)


def _run(pytester: pytest.Pytester, *args: str, call_args: str = "", baseline=None,
         ini: str = "") -> pytest.RunResult:
    pytester.makepyfile(test_k=KERNEL_TEST.replace("{call_args}", call_args))
    if baseline is not None:
        (pytester.path / "cycle_baselines.json").write_text(json.dumps(baseline))
    if ini:
        pytester.makeini(f"[pytest]\n{ini}\n")
    return _pytest(pytester, *args)


def _scaled(record: dict, factor: float, engine: str = "dma") -> dict:
    """``record`` as if the latency and one engine's busy time had been ``factor`` times."""
    busy = dict(record["busy_ns"])
    busy[engine] = busy[engine] * factor
    return dict(record, latency_ns=record["latency_ns"] * factor,
                tensor_cycles=round(record["tensor_cycles"] * factor), busy_ns=busy)


def test_within_tolerance_passes(pytester, actual) -> None:
    result = _run(pytester, baseline={KEY: _scaled(actual, 1 / 1.015)})
    result.assert_outcomes(passed=1)


def test_beyond_tolerance_fails_with_the_numbers_and_engines(pytester, actual) -> None:
    base = _scaled(actual, 1 / 1.10, engine="dma")
    result = _run(pytester, baseline={KEY: base})
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert f"estimated latency of {KEY} is +10.00% (slower)" in out
    assert "tolerance 2.00%" in out
    assert f"baseline: {base['latency_ns']:.1f} ns = {base['tensor_cycles']} TensorE cycles" in out
    assert f"now:      {actual['latency_ns']:.1f} ns = {actual['tensor_cycles']}" in out
    changed = [line for line in out.splitlines() if line.strip().startswith("dma ")]
    assert changed and "+10.00%" in changed[0]
    assert "--update-cycle-baselines" in out


def test_much_faster_also_fails(pytester, actual) -> None:
    result = _run(pytester, baseline={KEY: _scaled(actual, 1.5)})
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*is -33.33% (faster)*"])


@pytest.mark.parametrize("how, call_args, ini", [
    ("argument", ", rel=0.2", ""),
    ("ini option", "", "cycle_baseline_rel = 0.2"),
])
def test_tolerance_can_be_widened(pytester, actual, how, call_args, ini) -> None:
    result = _run(pytester, baseline={KEY: _scaled(actual, 1 / 1.10)}, call_args=call_args,
                  ini=ini)
    result.assert_outcomes(passed=1)


def test_marker_sets_the_tolerance(pytester, actual) -> None:
    pytester.makepyfile(test_k=KERNEL_TEST.replace("{call_args}", "").replace(
        "def test_add", "@pytest.mark.cycle_baseline(rel=0.2)\ndef test_add"))
    (pytester.path / "cycle_baselines.json").write_text(
        json.dumps({KEY: _scaled(actual, 1 / 1.10)}))
    _pytest(pytester, "--strict-markers").assert_outcomes(passed=1)


def test_missing_baseline_fails_and_says_how_to_record_it(pytester) -> None:
    result = _run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"*no cycle baseline for {KEY} in *cycle_baselines.json*"
                                 "record it with: pytest --update-cycle-baselines*"])


def test_update_writes_the_baseline_then_it_passes(pytester, actual) -> None:
    result = _run(pytester, "--update-cycle-baselines",
                  baseline={"other.py::test_kept": _scaled(actual, 2.0)})
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["cycle baselines: 1 written to *cycle_baselines.json"])
    stored = json.loads((pytester.path / "cycle_baselines.json").read_text())
    assert stored[KEY] == actual
    assert "other.py::test_kept" in stored  # entries of tests that did not run are kept
    _run(pytester).assert_outcomes(passed=1)


def test_two_checks_need_names(pytester, actual) -> None:
    body = KERNEL_TEST.replace("{call_args}", ")\n    cycle_baseline(launch(), name='again'")
    pytester.makepyfile(test_k=body)
    (pytester.path / "cycle_baselines.json").write_text(json.dumps(
        {KEY: actual, f"{KEY}::again": actual}))
    _pytest(pytester).assert_outcomes(passed=1)

    pytester.makepyfile(test_k=KERNEL_TEST.replace("{call_args}", ")\n    cycle_baseline(launch()"))
    result = _pytest(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*checked twice in one test; give each check its own name=*"])


@pytest.mark.parametrize("bad", ["-0.1", "lots"])
def test_bad_tolerance_is_refused(pytester, actual, bad) -> None:
    result = _run(pytester, baseline={KEY: actual}, ini=f"cycle_baseline_rel = {bad}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"*expected a relative tolerance >= 0 (0.02 = 2%), "
                                 f"found '{bad}'*"])


def test_compare_lists_the_engines_that_moved_most() -> None:
    old = {"latency_ns": 1000.0, "tensor_cycles": 2800,
           "busy_ns": {"vector": 500.0, "dma": 900.0, "scalar": 100.0, "tensor": 10.0}}
    new = {"latency_ns": 1100.0, "tensor_cycles": 3080,
           "busy_ns": {"vector": 400.0, "dma": 1000.0, "scalar": 100.0, "gpsimd": 50.0}}
    message = pytest_plugin.compare("t.py::x", pytest_plugin.Path("b.json"), old, new, 0.05)
    engines = [line.split()[0] for line in message.splitlines()[4:7]]
    assert engines == ["dma", "vector", "gpsimd"]  # |+100|, |-100| (name order), |+50|
    assert pytest_plugin.compare("t.py::x", pytest_plugin.Path("b.json"), old, new, 0.1) is None


def test_the_fixture_wants_a_sim_result(cycle_baseline) -> None:
    with pytest.raises(TypeError, match="expected the SimResult"):
        cycle_baseline(np.zeros(3))


def test_record_holds_ns_cycles_and_busy_engines(actual) -> None:
    from neuroncore_sim.config import MODEL_VERSION, TRN1

    assert set(actual) == {"latency_ns", "tensor_cycles", "busy_ns", "model", "config"}
    assert actual["model"] == MODEL_VERSION and actual["config"] == TRN1.fingerprint()
    assert actual["tensor_cycles"] == round(actual["latency_ns"] * 2.8)  # TensorE at 2.8 GHz
    assert {"dma", "vector"} <= set(actual["busy_ns"])
    assert all(ns > 0 for ns in actual["busy_ns"].values())  # idle engines are left out
