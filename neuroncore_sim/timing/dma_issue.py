"""When a DMA instruction is issued: once its producers' results are visible and, where the
compile stage ordered its trigger (:mod:`~neuroncore_sim.compiler.dma_triggers`), once the DMA
before it in that order was issued.

DMAs are issued dataflow-style (their transfers then go to the DMA engines, :mod:`.dma`): each
waits for its dependencies as simpy callbacks; each used to be a simpy process of its own, and
the callbacks run in the same order as that process's steps (a process resumes by a callback
appended to the event it waits on), so every DMA is issued at the same time and in the same
order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..compiler.deps import EDGE_BYTES, KIND_BITS, KIND_MASK, edge_code
from ..compiler.schedule import DMA_QUEUE

if TYPE_CHECKING:
    from .engines import _InstanceRun


class DmaIssue:
    """One DMA instruction waiting for its dependencies and its trigger's turn, then issued
    (:meth:`_InstanceRun.issue_dma`)."""

    __slots__ = ("run", "iid", "edges", "count", "next", "entry", "ready", "why")

    def __init__(self, run: _InstanceRun, iid: int) -> None:
        # Its edges stay packed (deps.py) until it reaches them: every DMA starts waiting at
        # once, and all their edges as lists were ~170 B/instr of an element-wise run's peak.
        self.run, self.iid, self.edges, self.next = run, iid, run.inst.deps.take_packed(iid), 0
        self.count = len(self.edges) // EDGE_BYTES
        self.entry = self.ready = run.env.now
        self.why = -1  # the producer that set ready last

    def step(self, _event: object = None) -> None:
        """Go through the producers, then the trigger before this one; wait on the first not
        yet done, else issue (after the latency of the last visible result)."""
        run = self.run
        env, end, edges = run.env, run.end, self.edges
        while self.next < self.count:
            e = edge_code(edges, self.next)
            p = e >> KIND_BITS
            if end[p] != end[p]:  # (NaN: not run yet)
                run.finished(p).callbacks.append(self.step)
                return
            t = end[p] + run.edge_latency(DMA_QUEUE, p, e & KIND_MASK)
            if t > self.ready:
                self.ready, self.why = t, p
            self.next += 1
        first = run.dma_after.get(self.iid)
        if first is not None:
            issued = run.issued.pop(first, None)  # (read once: a trigger has one successor)
            if issued is None:  # (a DMA finishes, for its waiters, when it is issued)
                run.finished(first).callbacks.append(self.step)
                return
            # Held up by the trigger before it: what delayed that one delayed this one (so
            # the critical path reads on through a producer, never a DMA still running).
            if issued[0] > self.ready:
                run.trigger_held[self.iid] = issued[0] - self.ready
                self.ready, self.why = issued
        if self.ready > env.now:
            env.timeout(self.ready - env.now).callbacks.append(self.issue)
        else:
            self.issue()

    def issue(self, _event: object = None) -> None:
        """Issue the DMA now, naming what delayed it."""
        run = self.run
        if self.iid in run.trigger_firsts:
            run.issued[self.iid] = (run.env.now, self.why if self.ready > self.entry else -1)
        run.issue_dma(self.iid, run._name(self.why) if self.ready > self.entry else "")
