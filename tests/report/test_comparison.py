"""report.compare: two launches side by side (issue 27, item 5)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

import neuroncore_sim as ncs
from neuroncore_sim import report
from neuroncore_sim.report import plot
from neuroncore_sim.report.comparison import ComparisonError
from neuroncore_sim.result import SimResult
from neuroncore_sim.sweep.kernel_file import find_kernel, load_kernel_file

#: Two versions of one kernel: B adds an exp, so its lines after the first shift by two.
BEFORE = '''
import numpy as np
import neuroncore_sim.nki as nki
import neuroncore_sim.nki.language as nl

@nki.jit
def kernel(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a)
    u = nl.add(t, 1.0)
    nl.store(out, value=u)
    return out

def example_inputs():
    return {"a": np.ones((128, 512), np.float32)}
'''
AFTER = BEFORE.replace("    u = nl.add(t, 1.0)\n",
                       "    # a second pass over the tile\n    t = nl.exp(t)\n"
                       "    u = nl.add(t, 1.0)\n")


def _launch(tmp_path: Path, name: str, text: str, config: str = "trn1") -> ncs.SimResult:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    module = load_kernel_file(path)
    kernel = find_kernel(module, None)[1]
    return ncs.simulate(kernel, **module.example_inputs(), functional=False, config=config)


@pytest.fixture(scope="module")
def launches(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cmp")
    return _launch(tmp, "before.py", BEFORE), _launch(tmp, "after.py", AFTER)


def test_a_launch_against_itself_changes_nothing(launches):
    a, _ = launches
    c = report.compare(a, a)
    assert c.latency_ns == (a.latency_ns, a.latency_ns)
    assert c.change_percent == 0.0 and c.speedup == 1.0
    assert (c.engines["change_ns"] == 0).all() and (c.lines["change_ns"] == 0).all()
    assert list(c.lines["source_a"]) == list(c.lines["source_b"])  # matched by file:line
    assert "(no change)" in c.text()


def test_latency_engines_and_bounds_are_each_launchs_summary(launches):
    a, b = launches
    c = report.compare(a, b, labels=("before", "after"))
    sa, sb = a.summary(), b.summary()
    assert c.latency_ns == (a.latency_ns, b.latency_ns)
    assert c.change_percent == pytest.approx(100 * (b.latency_ns - a.latency_ns) / a.latency_ns)
    assert b.latency_ns > a.latency_ns  # the exp costs time
    for row in ("tensor", "vector", "scalar", "gpsimd", "dma"):
        assert c.engines.loc[row, "busy_ns_a"] == pytest.approx(sa["busy_ns"][row])
        assert c.engines.loc[row, "busy_ns_b"] == pytest.approx(sb["busy_ns"][row])
        assert c.engines.loc[row, "busy_percent_b"] == pytest.approx(sb["busy_percent"][row])
    # the exp ran on a compute engine: its time is more in B
    assert c.engines.loc[["tensor", "vector", "scalar", "gpsimd"], "change_ns"].sum() > 0
    assert c.bounds.loc["memory_bound", "a"] == pytest.approx(sa["memory_bound"])
    assert c.bounds.loc["compute_bound", "b"] == pytest.approx(sb["compute_bound"])
    assert c.bottleneck == (sa["bottleneck"], sb["bottleneck"])
    text = c.text()
    assert "A          : before" in text and "B          : after" in text
    assert f"{c.change_percent:+.1f}%" in text and "slower" in text


def test_lines_that_moved_are_matched_by_their_code(launches):
    a, b = launches
    lines = report.compare(a, b).lines
    by_code = {code: row for code, row in zip(lines["code"], lines.to_dict("records"))}
    # The same statements at other line numbers of another file: matched, not added/removed.
    store = by_code["nl.store(out, value=u)"]
    assert store["source_a"] == "before.py:11" and store["source_b"] == "after.py:13"
    add = by_code["u = nl.add(t, 1.0)"]
    assert add["source_a"] == "before.py:10" and add["source_b"] == "after.py:12"
    # The new line ran in B only, and it is the largest change.
    new = by_code["t = nl.exp(t)"]
    assert new["source_a"] == "" and new["busy_ns_a"] == 0 and new["busy_ns_b"] > 0
    assert lines.iloc[0]["code"] == "t = nl.exp(t)"
    assert list(lines["change_ns"].abs()) == sorted(lines["change_ns"].abs(), reverse=True)


def test_to_dict_is_json_with_the_same_numbers(launches):
    a, b = launches
    c = report.compare(a, b)
    d = json.loads(json.dumps(c.to_dict()))
    assert d["latency_ns"] == {"a": a.latency_ns, "b": b.latency_ns}
    assert d["change_percent"] == pytest.approx(c.change_percent)
    assert d["engines"]["vector"]["busy_ns_b"] == pytest.approx(b.summary()["busy_ns"]["vector"])
    assert d["lines"][0]["code"] == "t = nl.exp(t)"
    assert d["a"] == "kernel (trn1)"  # default labels: kernel and config


def test_an_untimed_launch_is_refused(launches):
    a, _ = launches
    untimed = SimResult(program=a.program, outputs=(), config=a.config, timing=None)
    with pytest.raises(ComparisonError, match="launch B .*expected a timed launch"):
        report.compare(a, untimed)


def test_comparison_timeline_draws_both_on_one_axis(launches, tmp_path):
    a, b = launches
    path = plot.comparison_timeline(a, b, tmp_path / "sub" / "cmp.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    import matplotlib.image
    height, width = matplotlib.image.imread(path).shape[:2]
    assert width == 1200 and height > 400  # two stacked panels
