"""Export a simulated launch as a Chrome / Perfetto trace (trace-event JSON).

Open the written file in https://ui.perfetto.dev or chrome://tracing. Layout:

* one process (pid 0) named after the kernel and the hardware config;
* one track (tid) per row of the timing model: the compute engines, ``tensor_ls`` (the
  LoadStationary stage of nc_matmul) and each DMA engine ``dma0`` .. ``dma15``;
* one complete event (``"ph": "X"``) per :class:`~neuroncore_sim.timing.events.Event`, named by
  opcode, with ``ts`` / ``dur`` in microseconds (the format's unit) and the instruction id,
  kernel source line, bytes and what it waited on in ``args``;
* a flow arrow (``"ph": "s"`` then ``"f"``) from a producer to the event that waited on it, when
  the event's ``waited_on`` names an instruction ("vector#12");
* the critical path (:mod:`~neuroncore_sim.timing.critical_path`): its events carry
  ``args.critical_path = true``, and flow arrows named "critical path" link each of its events
  to the next.

Only :mod:`json` from the standard library is needed; the trace is a plain dict first so tests
and other tools can inspect it without a file.

Size: about 220 bytes of JSON per event, so a launch with 150k events (a 25k-instruction blocked
matmul, 16 DMA transfers per load) writes a 35 MB file. ``max_events`` keeps only the first
events in time (the start of the launch, complete up to a cut-off time) and says so in
``otherData``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..timing.critical_path import critical_path
from ..timing.events import COMPUTE_ROWS, TENSOR_LS_ROW, Event, is_dma_row
from ..result import SimResult

#: Trace time unit is the microsecond; events are in nanoseconds.
_NS_PER_US = 1000.0
_PID = 0


def row_order(rows: set[str] | list[str]) -> list[str]:
    """Display order of timing rows: compute engines, tensor_ls, DMA engines by number, then
    anything else alphabetically (so an unknown future row still gets a track)."""
    def key(row: str) -> tuple[int, int, str]:
        if row in COMPUTE_ROWS:
            return (0, COMPUTE_ROWS.index(row), row)
        if row == TENSOR_LS_ROW:
            return (1, 0, row)
        if is_dma_row(row):
            return (2, int(row[3:]), row)
        return (3, 0, row)
    return sorted(set(rows), key=key)


def _producer(waited_on: str) -> tuple[str, int] | None:
    """("vector", 12) for "vector#12"; None for ports, "dma_engine" or ""."""
    row, sep, ident = waited_on.partition("#")
    if not sep or not ident.isdigit():
        return None
    return row, int(ident)


def _metadata(result: SimResult, tids: dict[str, int]) -> list[dict[str, Any]]:
    name = f"{result.program.name} on {result.config.name}"
    out: list[dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": _PID, "tid": 0, "args": {"name": name}}]
    for row, tid in tids.items():
        out.append({"ph": "M", "name": "thread_name", "pid": _PID, "tid": tid,
                    "args": {"name": row}})
        # Without a sort index viewers order tracks by tid anyway, but Perfetto honours this.
        out.append({"ph": "M", "name": "thread_sort_index", "pid": _PID, "tid": tid,
                    "args": {"sort_index": tid}})
    return out


def _path_flows(steps: list[Event], tids: dict[str, int], first_id: int
                ) -> list[dict[str, Any]]:
    """Flow arrows along the critical path, each event to the next."""
    out: list[dict[str, Any]] = []
    for i, (a, b) in enumerate(zip(steps, steps[1:])):
        fid = first_id + i
        out.append({"ph": "s", "id": fid, "name": "critical path", "cat": "critical_path",
                    "pid": _PID, "tid": tids[a.engine], "ts": a.start_ns / _NS_PER_US})
        out.append({"ph": "f", "bp": "e", "id": fid, "name": "critical path",
                    "cat": "critical_path", "pid": _PID, "tid": tids[b.engine],
                    "ts": b.start_ns / _NS_PER_US})
    return out


def _complete(ev: Event, tid: int, critical: bool = False) -> dict[str, Any]:
    return {
        "ph": "X", "name": ev.opcode, "cat": "dma" if is_dma_row(ev.engine) else "compute",
        "pid": _PID, "tid": tid,
        "ts": ev.start_ns / _NS_PER_US, "dur": (ev.end_ns - ev.start_ns) / _NS_PER_US,
        "args": {"instr_id": ev.instr_id, "source": ev.source, "nbytes": ev.nbytes,
                 "waited_on": ev.waited_on, "instance": ev.instance,
                 "critical_path": critical},
    }


def _flows(events: tuple[Event, ...], tids: dict[str, int]) -> list[dict[str, Any]]:
    """Flow arrows producer -> waiting event. One dict pass: cheap even for 100k events."""
    # The producer's last event on the named row (a DMA instruction has many; the waiting
    # instruction depends on the last one to finish).
    last: dict[tuple[str, int], Event] = {}
    for ev in events:
        k = (ev.engine, ev.instr_id)
        if k not in last or ev.end_ns >= last[k].end_ns:
            last[k] = ev
    # DMA producers are named by instruction only in some models ("dma#3"): index by id too.
    by_id: dict[int, Event] = {}
    for (_, ident), ev in last.items():
        if ident not in by_id or ev.end_ns >= by_id[ident].end_ns:
            by_id[ident] = ev
    out: list[dict[str, Any]] = []
    for ev in events:
        named = _producer(ev.waited_on)
        if named is None:
            continue
        src = last.get(named) or by_id.get(named[1])
        if src is None:
            continue
        fid = len(out) // 2 + 1
        # "s" binds to the slice enclosing its ts; the producer's start is inside it for sure.
        out.append({"ph": "s", "id": fid, "name": "dependency", "cat": "dependency",
                    "pid": _PID, "tid": tids[src.engine], "ts": src.start_ns / _NS_PER_US})
        out.append({"ph": "f", "bp": "e", "id": fid, "name": "dependency", "cat": "dependency",
                    "pid": _PID, "tid": tids[ev.engine], "ts": ev.start_ns / _NS_PER_US})
    return out


def to_chrome_trace(result: SimResult, flows: bool = True,
                    max_events: int | None = None) -> dict[str, Any]:
    """The launch's events as a trace-event JSON object (``{"traceEvents": [...], ...}``).

    Args:
        result: a timed launch (``simulate(..., timing=True)``).
        flows: add dependency arrows for events that waited on another instruction.
        max_events: keep only the first this many events by start time (None: all). The
            trace's ``otherData["truncated"]`` then gives ``kept``, ``total`` and
            ``until_ns`` (the start of the first event left out).

    Returns:
        dict ready for :func:`json.dump`; ``displayTimeUnit`` is "ns" so viewers show
        nanosecond precision although ``ts`` / ``dur`` are microseconds.
    """
    latency_ns = result.latency_ns  # raises UnsupportedError for an untimed launch
    events = result.timing.events if result.timing is not None else ()
    other: dict[str, Any] = {"kernel": result.program.name, "config": result.config.name,
                             "latency_ns": latency_ns}
    if max_events is not None and len(events) > max_events:
        # events are ordered by start time: the first max_events are the launch's beginning.
        other["truncated"] = {"kept": max_events, "total": len(events),
                              "until_ns": events[max_events].start_ns}
        events = events[:max_events]
    tids = {row: i + 1 for i, row in enumerate(row_order({e.engine for e in events}))}
    trace = _metadata(result, tids)
    path = critical_path(result.timing) if result.timing is not None else None
    on_path = {id(s.event) for s in path.steps} if path is not None else set()
    trace += [_complete(ev, tids[ev.engine], id(ev) in on_path) for ev in events]
    if flows:
        trace += _flows(events, tids)
        if path is not None:
            trace += _path_flows([s.event for s in path.steps if s.event.engine in tids],
                                 tids, first_id=len(trace) + 1)
    return {"traceEvents": trace, "displayTimeUnit": "ns", "otherData": other}


def write(result: SimResult, path: str | Path, flows: bool = True,
          max_events: int | None = None) -> Path:
    """Write :func:`to_chrome_trace` of ``result`` to ``path`` (JSON); return the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as f:
        json.dump(to_chrome_trace(result, flows=flows, max_events=max_events), f,
                  separators=(",", ":"))
    return path
