"""The critical path of a simulated launch: the chain of events and waits that sets its latency.

Read backwards from the event that ends last. Each event started either as soon as its row was
free (its predecessor is the event before it on that row, or on another row that freed what it
needed), or later, because of what its ``Event.waited_on`` names:

- ``"<row>#<id>"``: a producer instruction; the predecessor is that instruction's last event
  to end, and the time between its end and this start is a *wait* (pipeline latency plus the
  semaphore, see docs/model.md);
- ``"load_stationary"``: the matmul's own LoadStationary stage;
- ``"port:sbuf"`` / ``"port:psum"``: a shared SRAM port held by another engine; the predecessor
  is the event that released it (the one ending when this one started);
- ``"dma_engine"``: every DMA engine was busy; the predecessor is the transfer that freed this
  one's engine.

The walk stops at an event that started at the launch's start or after an idle gap nothing
explains (``"start"``). Every segment of the path is charged to a row (the engine or DMA row of
an event, and for a wait, the row that waited) so the per-row, per-opcode and per-line times
add up to the latency.

**Root causes.** A wait on the path was caused by its producer, but the producer may itself have
waited: in a DMA-bound matmul ScalarE waits on VectorE, which waited on the DMA. The root cause
of a wait is found by following the path further back from the producer through events that
themselves waited, to the first one that did not wait for a producer (it was busy-bound on its
own row: the engine or DMA queue that was actually late).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any

from .events import LOAD_STATIONARY, TENSOR_LS_ROW, Event, TimingResult, is_dma_row

#: Two times closer than this (ns) are the same instant (event times are sums of floats).
_EPS = 1e-6
#: How many lines, opcodes and stalls the summary keeps.
TOP = 5


@dataclass(frozen=True)
class Step:
    """One event of the critical path and the wait before it.

    Attributes:
        event: the event.
        wait_ns: time between the predecessor's end and this event's start (0 when it started
            as soon as its predecessor ended).
        why: what it waited on: ``Event.waited_on``, or "engine" (its row was busy until it
            started), "instance" (it started its SPMD instance) or "start" (the first step;
            its wait is from the launch's start).
        root: for a wait on a producer, the event the delay comes from (see the module
            docstring); None otherwise.
    """

    event: Event
    wait_ns: float
    why: str
    root: Event | None = None


@dataclass
class CriticalPath:
    """The critical path, first step first, and its totals."""

    steps: list[Step] = field(default_factory=list)
    latency_ns: float = 0.0

    def by_row(self) -> dict[str, float]:
        """Row -> time on the path (its events' durations plus the waits before them; DMA rows
        summed as "dma")."""
        out: dict[str, float] = {}
        for s in self.steps:
            row = "dma" if is_dma_row(s.event.engine) else s.event.engine
            out[row] = out.get(row, 0.0) + _duration(s.event) + s.wait_ns
        return out

    def busy_ns(self) -> float:
        return sum(_duration(s.event) for s in self.steps)

    def waits_ns(self) -> float:
        return sum(s.wait_ns for s in self.steps)

    def by_key(self, key: str) -> dict[str, float]:
        """Event ``opcode`` or ``source`` -> busy time on the path."""
        out: dict[str, float] = {}
        for s in self.steps:
            k = getattr(s.event, key) or "?"
            out[k] = out.get(k, 0.0) + _duration(s.event)
        return out


def _duration(e: Event) -> float:
    return e.end_ns - e.start_ns


class _Index:
    """Events by instruction, by row and by end time, for the backward walk."""

    def __init__(self, events: tuple[Event, ...]) -> None:
        self.last_of: dict[int, Event] = {}  # (instance-unique) instruction id -> last to end
        self.stage_of: dict[tuple[int, str], Event] = {}  # (id, opcode) -> event
        rows: dict[str, list[Event]] = {}
        for e in events:
            cur = self.last_of.get(e.instr_id)
            if cur is None or e.end_ns > cur.end_ns:
                self.last_of[e.instr_id] = e
            self.stage_of[(e.instr_id, e.opcode)] = e
            rows.setdefault(e.engine, []).append(e)
        self.rows = {r: sorted(evs, key=_row_key) for r, evs in rows.items()}
        self.row_ends = {r: [e.end_ns for e in evs] for r, evs in self.rows.items()}
        self.by_end = sorted(events, key=lambda e: e.end_ns)
        self._by_start: dict[str, tuple[list[Event], list[float]]] = {}
        self.ends = [e.end_ns for e in self.by_end]
        #: SPMD instance -> its last event to end (the next instance starts after it)
        self.instance_last: dict[int, Event] = {}
        for e in events:
            cur = self.instance_last.get(e.instance)
            if cur is None or e.end_ns > cur.end_ns:
                self.instance_last[e.instance] = e

    def before_on_row(self, e: Event) -> Event | None:
        """The event of ``e``'s row that ended last at or before ``e`` started."""
        ends = self.row_ends[e.engine]
        i = bisect.bisect_right(ends, e.start_ns + _EPS) - 1
        # Zero-length events (instructions the timing model hoists, hoist.py) can share one
        # instant: only those ordered before ``e`` precede it (else two would point at each
        # other and the walk would stop).
        key = _row_key(e)
        while i >= 0 and (self.rows[e.engine][i] is e or _row_key(self.rows[e.engine][i]) >= key):
            i -= 1
        return self.rows[e.engine][i] if i >= 0 else None

    def starting_at(self, t: float, row: str) -> Event | None:
        """An event of ``row`` that starts at ``t`` (the first of its row's order)."""
        by_start = self._by_start.get(row)
        if by_start is None:  # built on first use: only LoadStationary steps ask
            evs = sorted(self.rows.get(row, ()), key=lambda e: (e.start_ns, _row_key(e)))
            by_start = self._by_start[row] = (evs, [e.start_ns for e in evs])
        evs, starts = by_start
        i = bisect.bisect_left(starts, t - _EPS)
        return evs[i] if i < len(evs) and starts[i] <= t + _EPS else None

    def ending_at(self, t: float, rows: tuple[str, ...] | None = None,
                  exclude: Event | None = None) -> Event | None:
        """An event (of ``rows``, if given) that ends at ``t``; the longest such one."""
        lo = bisect.bisect_left(self.ends, t - _EPS)
        hi = bisect.bisect_right(self.ends, t + _EPS)
        found = [e for e in self.by_end[lo:hi] if e is not exclude
                 and (rows is None or e.engine in rows)]
        return max(found, key=_duration, default=None)


_PORT_ROWS = {"port:sbuf": ("vector", "gpsimd"), "port:psum": ("vector", "scalar")}


def _row_key(e: Event) -> tuple[float, float, int]:
    """Order of the events of one row: by end, then start, then instruction."""
    return (e.end_ns, e.start_ns, e.instr_id)


def _predecessor(e: Event, idx: _Index, producer_row_id: tuple[str, int] | None
                 ) -> tuple[Event | None, str]:
    """The event ``e`` waited for, and why (see the module docstring)."""
    why = e.waited_on
    if producer_row_id is not None:
        return idx.last_of.get(producer_row_id[1]), why
    if why == LOAD_STATIONARY:
        return idx.stage_of.get((e.instr_id, LOAD_STATIONARY)), why
    if why in _PORT_ROWS:
        return idx.ending_at(e.start_ns, _PORT_ROWS[why], exclude=e), why
    prev = idx.before_on_row(e)
    if prev is not None and prev.end_ns >= e.start_ns - _EPS:
        return prev, why or "engine"
    if e.engine == TENSOR_LS_ROW:
        # A LoadStationary waits for the PE array: for the TensorE instruction before it to end
        # (a transpose or other non-matmul frees both stages), or for the matmul before it to
        # start its MultiplyMoving (the two stages overlap): then it started with that matmul,
        # for that matmul's reason.
        ended = idx.ending_at(e.start_ns, ("tensor",), exclude=e)
        if ended is not None:
            return ended, "engine"
        started = idx.starting_at(e.start_ns, "tensor")
        if started is not None:
            return _predecessor(started, idx, _producer(started.waited_on))
    # Nothing on its row: it started with its SPMD instance (instances run one after another),
    # after the instance's start latency (a DMA's fixed cost before its first transfer).
    boundary = idx.instance_last.get(e.instance - 1)
    if boundary is not None and boundary.end_ns <= e.start_ns + _EPS:
        return boundary, "instance"
    return None, "start"


def _producer(waited_on: str) -> tuple[str, int] | None:
    row, sep, iid = waited_on.partition("#")
    return (row, int(iid)) if sep and iid.isdigit() else None


def critical_path(timing: TimingResult) -> CriticalPath:
    """The critical path of ``timing`` (see the module docstring)."""
    events = timing.events
    if not events:
        return CriticalPath([], timing.latency_ns)
    idx = _Index(events)
    current: Event | None = max(events, key=lambda e: (e.end_ns, _duration(e)))
    steps: list[Step] = []
    seen: set[int] = set()
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        prod = _producer(current.waited_on)
        prev, why = _predecessor(current, idx, prod)
        if prev is None:  # the launch starts at 0: the wait is e.g. a DMA's fixed latency
            wait, why = max(0.0, current.start_ns), "start"
        else:
            wait = max(0.0, current.start_ns - prev.end_ns)
        steps.append(Step(current, wait, why))
        current = prev
    steps.reverse()
    return CriticalPath(_with_roots(steps), timing.latency_ns)


def _with_roots(steps: list[Step]) -> list[Step]:
    """Attach to every wait on a producer the event its delay comes from: walking back along
    the path from the producer, the first event that did not itself wait on a producer."""
    out: list[Step] = []
    root: Event | None = None  # root of the chain ending at the previous step
    for s in steps:
        waited = _producer(s.why) is not None or s.why in _PORT_ROWS or s.why == "dma_engine"
        if not waited:
            root = s.event  # busy-bound (or the start): the delay starts here
        out.append(Step(s.event, s.wait_ns, s.why, root if waited and s.wait_ns > 0 else None))
    return out


def summary(path: CriticalPath, top: int = TOP) -> dict[str, Any]:
    """The ``critical_path`` entry of ``SimResult.summary()`` (JSON-ready)."""
    def ranked(d: dict[str, float]) -> list[dict[str, Any]]:
        return [{"name": k, "ns": round(v, 3)} for k, v in
                sorted(d.items(), key=lambda kv: (-kv[1], kv[0]))[:top]]

    stalls = sorted((s for s in path.steps if s.root is not None),
                    key=lambda s: -s.wait_ns)[:top]
    return {
        "length_ns": round(sum(_duration(s.event) + s.wait_ns for s in path.steps), 3),
        "steps": len(path.steps),
        "busy_ns": round(path.busy_ns(), 3),
        "wait_ns": round(path.waits_ns(), 3),
        "by_engine_ns": {k: round(v, 3) for k, v in sorted(path.by_row().items())},
        "top_opcodes": ranked(path.by_key("opcode")),
        "top_lines": ranked(path.by_key("source")),
        "top_stalls": [{
            "engine": s.event.engine, "opcode": s.event.opcode, "source": s.event.source,
            "wait_ns": round(s.wait_ns, 3), "waited_on": s.why,
            "root_engine": "dma" if is_dma_row(s.root.engine) else s.root.engine,
            "root_opcode": s.root.opcode, "root_source": s.root.source,
        } for s in stalls],
    }
