"""Chrome / Perfetto trace export: structure per the trace-event format, and content."""

from __future__ import annotations

import json
import sys
from numbers import Real
from pathlib import Path

import numpy as np
import pytest

import neuroncore_sim as ncs
from neuroncore_sim.report import chrome_trace
from neuroncore_sim.errors import UnsupportedError

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "kernels"))
import tensor_add  # noqa: E402  (kernels/ is a folder of scripts)

#: Required keys and their types per phase (Trace Event Format, "JSON Object Format").
REQUIRED = {
    "X": {"name": str, "ph": str, "pid": int, "tid": int, "ts": Real, "dur": Real},
    "M": {"name": str, "ph": str, "pid": int, "args": dict},
    "s": {"name": str, "ph": str, "pid": int, "tid": int, "ts": Real, "id": int},
    "f": {"name": str, "ph": str, "pid": int, "tid": int, "ts": Real, "id": int},
}


def validate(trace: dict) -> list[str]:
    """Problems with ``trace`` as a trace-event JSON object; [] when it is well formed."""
    problems = []
    if not isinstance(trace.get("traceEvents"), list):
        return ["traceEvents missing or not a list"]
    flows: dict[int, list[str]] = {}
    for i, ev in enumerate(trace["traceEvents"]):
        ph = ev.get("ph")
        if ph not in REQUIRED:
            problems.append(f"event {i}: unexpected phase {ph!r}")
            continue
        for key, typ in REQUIRED[ph].items():
            if not isinstance(ev.get(key), typ) or isinstance(ev.get(key), bool):
                problems.append(f"event {i} ({ph}): key {key!r} missing or not {typ.__name__}")
        if ph == "X" and isinstance(ev.get("dur"), Real) and ev["dur"] < 0:
            problems.append(f"event {i}: negative duration")
        if ph in "sf" and isinstance(ev.get("id"), int):
            flows.setdefault(ev["id"], []).append(ph)
    problems += [f"flow {k}: phases {v}, expected one s then one f"
                 for k, v in flows.items() if v != ["s", "f"]]
    return problems


@pytest.fixture(scope="module")
def result():
    """tensor_add on a 1x2 grid: 6 DMA instructions and 2 vector adds."""
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal((128, 1024)).astype(np.float32) for _ in range(2))
    return ncs.simulate(tensor_add.kernel, a, b, grid=(1, 2))


def test_trace_is_well_formed_and_json(result, tmp_path):
    trace = chrome_trace.to_chrome_trace(result)
    assert validate(trace) == []
    path = chrome_trace.write(result, tmp_path / "sub" / "trace.json")
    assert json.loads(path.read_text()) == json.loads(json.dumps(trace))


def test_validator_catches_broken_events():
    """The checker above can fail: a string ts, a missing dur, an unmatched flow."""
    bad = {"traceEvents": [
        {"ph": "X", "name": "a", "pid": 0, "tid": 1, "ts": "1", "dur": 1},
        {"ph": "X", "name": "a", "pid": 0, "tid": 1, "ts": 1},
        {"ph": "s", "name": "d", "pid": 0, "tid": 1, "ts": 1, "id": 7},
    ]}
    assert len(validate(bad)) == 3


def test_one_named_track_per_row(result):
    trace = chrome_trace.to_chrome_trace(result)
    names = {e["tid"]: e["args"]["name"] for e in trace["traceEvents"]
             if e["ph"] == "M" and e["name"] == "thread_name"}
    rows = set(result.events["engine"])
    assert set(names.values()) == rows
    assert "vector" in rows and {f"dma{i}" for i in range(16)} <= rows
    assert len(set(names)) == len(names)  # distinct tids
    # Compute engines come before the DMA engines, dma2 before dma10.
    order = [names[t] for t in sorted(names)]
    assert order.index("vector") < order.index("dma0") < order.index("dma2") < order.index("dma10")


def test_complete_events_match_simulation(result):
    trace = chrome_trace.to_chrome_trace(result)
    xs = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    events = result.timing.events
    assert len(xs) == len(events)
    tid_name = {e["tid"]: e["args"]["name"] for e in trace["traceEvents"]
                if e["ph"] == "M" and e["name"] == "thread_name"}
    for x, ev in zip(xs, events):
        assert x["name"] == ev.opcode
        assert tid_name[x["tid"]] == ev.engine
        assert x["ts"] == pytest.approx(ev.start_ns / 1000)
        assert x["dur"] == pytest.approx((ev.end_ns - ev.start_ns) / 1000)
        assert x["args"]["instr_id"] == ev.instr_id
        assert x["args"]["source"].startswith("tensor_add.py:")
        assert x["args"]["nbytes"] == ev.nbytes
    # Last event ends at the latency.
    assert max(x["ts"] + x["dur"] for x in xs) == pytest.approx(result.latency_ns / 1000)


def test_flows_point_from_producer_to_waiter(result):
    trace = chrome_trace.to_chrome_trace(result)
    waiting = [e for e in result.timing.events if "#" in e.waited_on]
    assert waiting, "the add waits on its loads"
    flows = [e for e in trace["traceEvents"] if e["ph"] in "sf" and e["cat"] == "dependency"]
    assert len(flows) == 2 * len(waiting)
    for s, f in zip(flows[::2], flows[1::2]):
        assert s["id"] == f["id"] and s["ts"] <= f["ts"]
    assert not [e for e in chrome_trace.to_chrome_trace(result, flows=False)["traceEvents"]
                if e["ph"] in "sf"]


def test_critical_path_is_marked_and_linked(result):
    from neuroncore_sim.timing.critical_path import critical_path

    path = critical_path(result.timing)
    trace = chrome_trace.to_chrome_trace(result)
    marked = [e for e in trace["traceEvents"] if e["ph"] == "X" and e["args"]["critical_path"]]
    assert len(marked) == len(path.steps) > 1
    links = [e for e in trace["traceEvents"] if e.get("cat") == "critical_path"]
    assert len(links) == 2 * (len(path.steps) - 1)
    ids = [e["id"] for e in trace["traceEvents"] if e["ph"] in "sf"]
    assert len(set(ids)) == len(ids) // 2  # every arrow has its own id
    first, last = path.steps[0].event, path.steps[-1].event
    assert links[0]["ts"] == first.start_ns / 1000 and links[-1]["ts"] == last.start_ns / 1000
    assert validate(trace) == []


def test_untimed_launch_is_refused():
    a = np.zeros((128, 512), np.float32)
    res = ncs.simulate(tensor_add.kernel, a, a, grid=(1, 1), timing=False)
    with pytest.raises(UnsupportedError, match="timing"):
        chrome_trace.to_chrome_trace(res)


def test_max_events_keeps_the_start_of_the_launch(result):
    events = result.timing.events
    full = chrome_trace.to_chrome_trace(result)
    assert "truncated" not in full["otherData"]
    assert chrome_trace.to_chrome_trace(result, max_events=len(events)) == full
    trace = chrome_trace.to_chrome_trace(result, max_events=10)
    assert validate(trace) == []
    xs = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert len(xs) == 10
    assert [x["ts"] for x in xs] == pytest.approx([e.start_ns / 1000 for e in events[:10]])
    assert trace["otherData"]["truncated"] == {"kept": 10, "total": len(events),
                                               "until_ns": events[10].start_ns}
    assert all(x["ts"] * 1000 <= events[10].start_ns for x in xs)
