"""The timing model: a discrete-event simulation (simpy) of one kernel launch.

:func:`simulate_timing` turns a recorded :class:`~neuroncore_sim.program.ir.Program` into
:class:`~neuroncore_sim.timing.events.Event` records and a latency estimate.

* One in-order simpy process per compute engine (tensor, vector, scalar, gpsimd, and sync if
  used), each at its own clock: an instruction starts when its engine is free, its dependencies
  are visible and, where needed, its SRAM port is free; it occupies the engine for its
  :mod:`~neuroncore_sim.timing.cost` formula.
* DMA instructions are issued dataflow-style: each starts as soon as its dependencies are met
  (the compiler schedules DMA triggers early; the buffer rings of :mod:`.schedule` are what
  limit how far ahead loads run) and, where the compile stage ordered its trigger, the DMA
  before it was issued (:mod:`.dma_issue`); then :class:`~neuroncore_sim.timing.dma.DmaEngines`
  places its transfers.
* Visibility of a producer's result to a dependant: its end, plus the producer engine's pipeline
  latency for RAW/WAW (TensorE ``tensor_pipeline_latency_ns``; others
  ``scalar_pipeline_latency_cycles``, ``engine_pipeline_latency_cycles``), plus
  ``semaphore_latency_ns`` (also between two instructions of one Vector/Scalar/GpSimd engine:
  the profile shows them waiting on their own engine's semaphore). WAR waits only for the reader's end (+ semaphore).
  A RAW between two instructions of one in-order engine exposes the pipeline latency and the
  semaphore wait, except on TensorE (PSUM accumulation chains are pipelined) and for a VectorE
  instruction reading the output of the immediately preceding VectorE instruction, which instead
  pays ``vector_dependent_overhead_cycles`` of extra occupancy (the docs' "static overhead").
* TensorE runs nc_matmul as LoadStationary (row "tensor_ls") + MultiplyMoving (row "tensor").
  The LoadStationary of the next matmul runs in the background of the current MultiplyMoving
  (one background slot: it may start when the previous MultiplyMoving starts) and is skipped
  when the stationary is already loaded. MultiplyMoving occupies the documented average cost,
  so a single matmul is busy for exactly the formula and a back-to-back stream issues one
  matmul per formula (LoadStationary never exceeds it).
* Port sharing (arch.md 1.4, NC-v2): VectorE and GpSimd cannot use SBUF at once; VectorE and
  ScalarE cannot use PSUM at once: simpy Resources held for the instruction's duration
  (acquired in the order SBUF, PSUM, so no deadlock).
* SPMD instances run one after another; each starts when the previous one has finished.
* Progress: an optional callback gets the number of instructions finished so far (about 200
  calls per launch), so an entry point can draw a progress bar without this layer knowing how.

Deterministic: processes and events are created in program order and nothing iterates a set.
"""

from __future__ import annotations

from typing import Callable, Generator

import simpy

from ..config import NeuronCoreConfig
from ..errors import InternalError
from .cost import (cycles_to_ns, instruction_cycles, kernel_work, matmul_stage_cycles,
                   pipeline_latency_ns)
from ..compiler.deps import KIND_BITS, KIND_MASK
from .dma import DmaEngines
from .dma_issue import DmaIssue
from .end_times import EndTimes, Ends, new_ends
from .event_log import EventLog
from .ticker import Ticker
from .events import COMPUTE_ROWS, LOAD_STATIONARY, MULTIPLY_MOVING, TENSOR_LS_ROW, TimingResult
from ..program.ir import Engine, Instruction, MemSpace, Opcode, Program
from ..compiler.passes import compile_program
from ..compiler.schedule import DMA_QUEUE, RAW, WAR, InstanceSchedule

_SBUF_SHARERS = (Engine.VECTOR, Engine.GPSIMD)
_PSUM_SHARERS = (Engine.VECTOR, Engine.SCALAR)

Edge = tuple[int, float]  # (producer id, extra latency after its end)


def simulate_timing(program: Program, config: NeuronCoreConfig,
                    progress: Callable[[int], None] | None = None) -> TimingResult:
    """Simulate the timing of ``program`` on ``config``.

    Args:
        progress: called with the number of instructions finished so far, every
            ``len(program.instructions) / 200`` instructions and once at the end.

    Returns:
        A :class:`~neuroncore_sim.timing.events.TimingResult`: every event ordered by start time,
        the latency (end of the last event), busy time per row and completion per instruction.

    Raises:
        CapacityError: the program's tiles do not fit in SBUF/PSUM (from the scheduler).
    """
    schedule = compile_program(program, config)
    instances, warnings = list(schedule.instances), schedule.warnings
    del schedule  # (each instance's schedule is freed once it has run)
    work = kernel_work((i for inst in instances for i in inst.instructions  # as compiled,
                        if not i.attrs.get("spill")), config)  # spill copies aside
    log = EventLog(config.dma_engines)
    t0 = 0.0
    tick = Ticker(progress, len(program.instructions))
    # Instruction id -> instruction, queue name and end, by id and shared by the instances' runs
    # (ids are dense: the program's, then its spill copies'; dicts took ~170 B/instr at peak).
    size = 1 + max((ins.id for inst in instances for ins in inst.instructions), default=-1)
    tables: tuple[list, list] = ([None] * size, [None] * size)
    ends = new_ends(size)
    held: dict[int, float] = {}  # DMA -> time its trigger order held it (dma_issue.py)
    for k in range(len(instances)):
        inst, instances[k] = instances[k], None
        run = _InstanceRun(inst, config, t0, log, ends, tick, tables)
        t0 = run.run()
        held.update(run.trigger_held)
        del inst, run
    del tables  # (before the events' sort needs memory)
    tick.done()
    events, busy, latency = log.finish()
    return TimingResult(events=events, latency_ns=latency, busy_ns=busy,
                        instruction_end_ns=EndTimes(ends), work=work, warnings=warnings,
                        trigger_held_ns=held)


def _nbytes(ins: Instruction) -> int:
    return sum(a.nbytes for a in (*ins.srcs.values(), *ins.dsts.values()))


class _InstanceRun:
    """One simpy run of one SPMD instance, starting at ``t0``."""

    def __init__(self, inst: InstanceSchedule, config: NeuronCoreConfig, t0: float,
                 log: EventLog, ends: Ends, tick: Ticker,
                 tables: tuple[list, list]) -> None:
        self.inst, self.cfg, self.log, self.tick = inst, config, log, tick
        self.env = simpy.Environment(initial_time=t0)
        # (by id, this instance's entries: a producer is always of the same instance)
        self.by_id, self.queue_of = tables
        for ins in inst.instructions:
            self.by_id[ins.id] = ins
        for q, ids in inst.queues.items():
            for iid in ids:
                self.queue_of[iid] = q
        self.end = ends  # instruction id -> end, NaN until it ran (end_times.py)
        self.waiters: dict[int, simpy.Event] = {}
        self.sbuf_port = simpy.Resource(self.env, capacity=1)
        self.psum_port = simpy.Resource(self.env, capacity=1)
        # A port only one engine of the instance uses is never busy when that (in-order)
        # engine asks for it: it is asked for only where two engines share it.
        used = {Engine(q) for q, ids in inst.queues.items() if ids and q != DMA_QUEUE}
        self._sbuf_shared = all(e in used for e in _SBUF_SHARERS)
        self._psum_shared = all(e in used for e in _PSUM_SHARERS)
        self.dma = DmaEngines(config, t0)
        self.overhead: dict[int, float] = {}
        self.sources: dict[object, int] = {}  # SourceLoc -> code of "file.py:LINE" (str() is slow)
        self._last_source: tuple[object, int] = (None, -1)  # the last (loc, code) looked up
        self._pipe: dict[str, float] = {}  # queue name -> pipeline_latency_ns of its engine
        self._matmul_cache: dict[tuple, tuple[float, float]] = {}  # layout -> stage ns
        self._rows: dict[str, int] = {}  # row -> its code in the log
        #: VectorE instruction -> the one before it, whose result it reads without the
        #: pipeline latency (_mark_dependent_vector)
        self.no_latency: dict[int, int] = {}
        #: repeats of loop-invariant instructions: computed once by the compiler (hoist.py)
        self.hoisted = inst.hoisted
        #: DMA -> the DMA whose trigger comes first (dma_triggers.py); and, of each DMA a
        #: trigger waits for, when it was issued and the producer that delayed it (-1: none)
        self.dma_after = inst.dma_after
        self.trigger_firsts = set(inst.dma_after.values())
        self.issued: dict[int, tuple[float, int]] = {}
        self.trigger_held: dict[int, float] = {}  # DMA -> how long the trigger order held it

    # --- setup ------------------------------------------------------------------------------

    def edges(self, iid: int) -> list[Edge]:
        """Dependencies of ``iid`` with the latency each adds after its producer's end (made
        when the instruction's turn comes, once, not kept: a list per instruction for the
        whole run was a tenth of a timing-only run's memory)."""
        q = self.queue_of[iid]
        out = []
        prev = self.no_latency.get(iid)
        # Each instruction's edges are made once: its schedule entry is dropped as it is read
        # (the schedule belongs to this run; freeing it as the run goes lowers peak memory).
        for e in self.inst.deps.take(iid):
            p = e >> KIND_BITS
            out.append((p, 0.0 if p == prev else self.edge_latency(q, p, e & KIND_MASK)))
        return out

    def edge_latency(self, q: str, p: int, kind: int) -> float:
        """The latency an edge of ``kind`` from producer ``p`` adds after its end, for an
        instruction on queue ``q`` (DMAs take it from here as they reach each edge)."""
        qp, cfg = self.queue_of[p], self.cfg
        if qp == DMA_QUEUE:
            return cfg.semaphore_latency_ns
        if qp == q:  # same in-order engine: only RAW edges remain
            # [PERF fig16]: a dependent instruction waits on its own engine's semaphore
            # too, after the producer's result is committed.
            return 0.0 if q == "tensor" else self._pipeline_ns(q) + cfg.semaphore_latency_ns
        if kind == WAR:
            return cfg.semaphore_latency_ns
        return self._pipeline_ns(qp) + cfg.semaphore_latency_ns

    def _pipeline_ns(self, queue: str) -> float:
        """``pipeline_latency_ns`` of a compute queue's engine (computed once per queue)."""
        ns = self._pipe.get(queue)
        if ns is None:
            ns = self._pipe[queue] = pipeline_latency_ns(Engine(queue), self.cfg)
        return ns

    def _mark_dependent_vector(self, ids: tuple[int, ...]) -> None:
        """A VectorE instruction RAW-dependent on the one just before it pays the static
        overhead as occupancy instead of the pipeline latency."""
        for prev, iid in zip(ids, ids[1:]):
            if (prev, RAW) in self.inst.deps.get(iid, ()):
                self.overhead[iid] = cycles_to_ns(
                    Engine.VECTOR, self.cfg.vector_dependent_overhead_cycles, self.cfg)
                self.no_latency[iid] = prev

    def run(self) -> float:
        """Run the instance; return the time its last instruction ends."""
        for name in COMPUTE_ROWS:
            ids = self.inst.queues.get(name)
            if not ids:
                continue
            if name == "vector":
                self._mark_dependent_vector(ids)
            proc = self._tensor(ids) if name == "tensor" else self._compute(Engine(name), ids)
            self.env.process(proc)
        dmas = self.inst.queues.get(DMA_QUEUE, ())
        if dmas:
            # One process starts every DMA, at the point where one process per DMA would
            # have started (their Initialize events, after the engines'); each then goes on
            # as simpy callbacks: no process, generator or end event per DMA.
            self.env.process(self._start_dmas(dmas))
        self.env.run()
        ends = [self.end[ins.id] for ins in self.inst.instructions]
        if any(e != e for e in ends):  # NaN: never ran (the compiled streams wait in a cycle)
            raise InternalError(f"timing: {sum(e != e for e in ends)} of {len(ends)} "
                                "instructions never ran; please report it with the kernel")
        return max(ends, default=self.env.now)

    # --- helpers ----------------------------------------------------------------------------

    def _finish(self, iid: int, end: float) -> None:
        self.end[iid] = end
        self.tick()
        waiter = self.waiters.pop(iid, None)
        if waiter is not None:
            waiter.succeed()

    def finished(self, iid: int) -> simpy.Event:
        """The event that succeeds when instruction ``iid`` finishes (a DMA: is issued)."""
        ev = self.waiters.get(iid)
        if ev is None:
            ev = self.waiters[iid] = self.env.event()
        return ev

    def _wait(self, edges: list[Edge]) -> Generator[simpy.Event, object, str]:
        """Wait until every producer in ``edges`` is visible. Returns the producer that
        delayed the caller ("vector#12"), or "" if none did."""
        env, end = self.env, self.end
        entry = ready = env.now
        why = -1  # the producer that set ready last (its name is made once, at the end)
        for p, extra in edges:
            while end[p] != end[p]:  # (NaN: not run yet)
                yield self.finished(p)
            t = end[p] + extra
            if t > ready:
                ready, why = t, p
        if ready > env.now:
            yield env.timeout(ready - env.now)
        return self._name(why) if ready > entry else ""

    def _ready(self, edges: list[Edge]) -> tuple[float, int] | None:
        """Without simpy: when every producer in ``edges`` is visible and the producer that
        set that time (-1: none is later than now), or None while one has not finished (then
        :meth:`_wait` waits). Most dependencies have finished by the time an instruction's
        turn comes; this saves them a generator."""
        end = self.end
        ready, why = self.env.now, -1
        for p, extra in edges:
            t = end[p]
            if t != t:  # (NaN: not run yet)
                return None
            t += extra
            if t > ready:
                ready, why = t, p
        return ready, why

    def _settled(self, edges: list[Edge]) -> tuple[simpy.Event | None, str] | None:
        """When every producer in ``edges`` has finished (:meth:`_ready`): the timeout to
        yield until they are visible (None: they are now) and the producer that set that time
        ("" if none); None while one has not finished (then :meth:`_wait` waits)."""
        r = self._ready(edges)
        if r is None:
            return None
        if r[0] > self.env.now:
            return self.env.timeout(r[0] - self.env.now), self._name(r[1])
        return None, ""

    def _name(self, iid: int) -> str:
        """How an event names the producer it waited on ("vector#12")."""
        return f"{self.queue_of[iid]}#{iid}"

    def _source(self, ins: Instruction) -> int:
        """The code (:meth:`EventLog.source_code`) of the instruction's kernel line
        "file.py:LINE" ("" without one)."""
        last_loc, source = self._last_source
        if ins.loc is not last_loc:  # (consecutive instructions often share a line)
            source = self.sources.get(ins.loc)
            if source is None:
                source = self.sources[ins.loc] = self.log.source_code(
                    str(ins.loc) if ins.loc is not None else "")
            self._last_source = (ins.loc, source)
        return source

    def _record(self, ins: Instruction, engine: str, opcode: str, start: float, end: float,
                nbytes: int, why: str) -> None:
        code = self._rows.get(engine)
        if code is None:
            code = self._rows[engine] = self.log.row_code(engine)
        self.log.add(ins.id, code, opcode, start, end, nbytes, why, self._source(ins),
                     ins.instance)

    # --- engine processes -------------------------------------------------------------------

    def _ports(self, ins: Instruction) -> list[tuple[simpy.Resource, str]]:
        sbuf = self._sbuf_shared and ins.engine in _SBUF_SHARERS
        psum = self._psum_shared and ins.engine in _PSUM_SHARERS
        if not (sbuf or psum):
            return []
        spaces = {a.tensor.space for a in (*ins.srcs.values(), *ins.dsts.values())}
        ports = []
        if sbuf and MemSpace.SBUF in spaces:
            ports.append((self.sbuf_port, "port:sbuf"))
        if psum and MemSpace.PSUM in spaces:
            ports.append((self.psum_port, "port:psum"))
        return ports

    def _matmul_ns(self, ins: Instruction) -> tuple[float, float]:
        """(LoadStationary, MultiplyMoving) nanoseconds of an nc_matmul, remembered per
        operand layout: :func:`matmul_stage_cycles` depends only on each operand's role,
        memory, pattern and dtype and on the onezero hints (a kernel's matmuls have few
        layouts)."""
        attrs = ins.attrs
        # (a dtype by identity too: tfloat32 equals float32 but costs like bf16)
        key = (tuple((r, a.space, a.pattern, id(a.dtype), a.dtype) for r, a in ins.srcs.items()),
               tuple((r, a.space, a.pattern, id(a.dtype), a.dtype) for r, a in ins.dsts.items()),
               attrs.get("is_stationary_onezero"), attrs.get("is_moving_onezero"))
        ns = self._matmul_cache.get(key)
        if ns is None:
            ls, mm = matmul_stage_cycles(ins, self.cfg)
            ns = self._matmul_cache[key] = (cycles_to_ns(Engine.TENSOR, ls, self.cfg),
                                            cycles_to_ns(Engine.TENSOR, mm, self.cfg))
        return ns

    def _compute(self, engine: Engine, ids: tuple[int, ...]) -> Generator:
        """In-order process of VectorE, ScalarE, GpSimd or Sync."""
        env = self.env
        for iid in ids:
            ins = self.by_id[iid]
            edges = self.edges(iid)
            settled = self._settled(edges)
            if settled is None:  # a producer has not finished: the simpy wait
                why = yield from self._wait(edges)
            else:
                delay, why = settled
                if delay is not None:
                    yield delay
            # Ask for every port at once (queued in program order at this instant).
            held = [(port, port.request(), name) for port, name in self._ports(ins)]
            busy_ports = [name for _, req, name in held if not req.triggered]
            if busy_ports:
                yield env.all_of([req for _, req, _ in held])
                why = busy_ports[0]
            if iid in self.hoisted:
                dur = 0.0
            else:
                dur = cycles_to_ns(engine, instruction_cycles(ins, self.cfg), self.cfg)
                dur += self.overhead.get(iid, 0.0)
            start = env.now
            self._finish(iid, start + dur)
            # a PSUM spill copy (placement.py) shows as such; its Instruction is a tensor_copy
            self._record(ins, engine.value, ins.attrs.get("spill") or ins.opcode.value, start,
                         start + dur, _nbytes(ins), why)
            yield env.timeout(dur)
            for port, req, _ in held:
                port.release(req)

    def _tensor(self, ids: tuple[int, ...]) -> Generator:
        """In-order TensorE process with the background LoadStationary stage."""
        env, cfg = self.env, self.cfg
        mm_free = ls_free = mm_prev_start = env.now
        for iid in ids:
            ins = self.by_id[iid]
            if ins.opcode is not Opcode.NC_MATMUL:
                free_at = max(mm_free, ls_free)
                edges = self.edges(iid)
                settled = self._settled(edges)
                if settled is None:  # a producer has not finished: the simpy wait
                    why = yield from self._wait(edges)
                else:
                    delay, why = settled
                    if delay is not None:
                        yield delay
                start = max(env.now, free_at)
                if start > env.now:
                    yield env.timeout(start - env.now)
                dur = cycles_to_ns(Engine.TENSOR, instruction_cycles(ins, cfg), cfg)
                self._finish(iid, start + dur)
                self._record(ins, "tensor", ins.opcode.value, start, start + dur,
                             _nbytes(ins), why if start > free_at else "")
                mm_free = ls_free = start + dur
                mm_prev_start = start
                continue
            ls_ns, mm_ns = self._matmul_ns(ins)
            edges = self.edges(iid)
            ls_end = 0.0
            if iid not in self.inst.ls_skip:
                st_producers = set(self.inst.ls_deps.get(iid, ()))
                ls_edges = [e for e in edges if e[0] in st_producers]
                settled = self._settled(ls_edges)
                if settled is None:  # a producer has not finished: the simpy wait
                    why = yield from self._wait(ls_edges)
                else:
                    delay, why = settled
                    if delay is not None:
                        yield delay
                ls_start = max(env.now, ls_free, mm_prev_start)
                ls_end = ls_start + ls_ns
                self._record(ins, TENSOR_LS_ROW, LOAD_STATIONARY, ls_start, ls_end,
                             ins.srcs["stationary"].nbytes,
                             why if ls_start > max(ls_free, mm_prev_start) else "")
                ls_free = ls_end
            settled = self._settled(edges)
            if settled is None:  # a producer has not finished: the simpy wait
                why = yield from self._wait(edges)
            else:
                delay, why = settled
                if delay is not None:
                    yield delay
            free_at = max(ls_end, mm_free)
            start = max(env.now, free_at)
            if start > env.now:
                yield env.timeout(start - env.now)
            if start <= free_at:
                why = LOAD_STATIONARY if ls_end > mm_free else ""
            end = start + mm_ns
            self._finish(iid, end)
            self._record(ins, "tensor", MULTIPLY_MOVING, start, end,
                         ins.srcs["moving"].nbytes + ins.out.nbytes, why)
            mm_prev_start, mm_free = start, end

    def _start_dmas(self, ids: tuple[int, ...]) -> Generator:
        """Start every DMA instruction (then wait for nothing: a process must be a
        generator)."""
        for iid in ids:
            DmaIssue(self, iid).step()
        return
        yield  # (unreachable: makes this a generator)

    def issue_dma(self, iid: int, why: str) -> None:
        """Place the transfers of DMA ``iid``, its dependencies met now."""
        ins = self.by_id[iid]
        done, placed = self.dma.issue(ins, self.env.now)
        self._finish(iid, done)
        # a spill save / reload (schedule.py) shows as such; its Instruction is a dma_copy
        self.log.add_transfers(iid, ins.attrs.get("spill") or ins.opcode.value, placed, why,
                               self._source(ins), ins.instance)
