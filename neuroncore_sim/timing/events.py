"""What the timing model produced: one :class:`Event` per executed instruction stage or DMA
transfer, and the :class:`TimingResult` of a whole launch.

Rows (``Event.engine``):

* ``"tensor"``, ``"vector"``, ``"scalar"``, ``"gpsimd"``, ``"sync"``: the compute engines (nki.isa
  engine names). On ``"tensor"`` an ``nc_matmul`` appears as its MultiplyMoving stage
  (opcode ``"multiply_moving"``, the profiler's ``MATMUL`` on the TensorMatrixE row).
* ``"tensor_ls"``: the LoadStationary stage of ``nc_matmul`` (opcode ``"load_stationary"``, the
  profiler's ``LDWEIGHTS`` on the TensorE row). It has its own row because a LoadStationary runs
  in the background of the previous MultiplyMoving; on one row the two would overlap.
* ``"dma0"`` .. ``"dma15"``: one event per DMA transfer (the part of a ``dma_copy`` or
  ``dma_transpose`` that one DMA engine moves); several events share one ``instr_id``.

Every other opcode is the ``nki.isa`` function name. Times are float nanoseconds from the start
of the launch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Iterator, overload

import numpy as np

from ..compiler.spill import (PSUM_SPILL_RELOAD, PSUM_SPILL_SAVE, SPILL_RELOAD,  # noqa: F401
                              SPILL_REMAT, SPILL_SAVE)
from ..program.layout import slot_setters

#: Opcode of the LoadStationary stage of nc_matmul (row :data:`TENSOR_LS_ROW`).
LOAD_STATIONARY = "load_stationary"
#: Opcode of the MultiplyMoving stage of nc_matmul (row "tensor").
MULTIPLY_MOVING = "multiply_moving"
#: Row of the LoadStationary stages.
TENSOR_LS_ROW = "tensor_ls"
#: Prefix of the DMA engine rows ("dma0" .. "dma15").
DMA_ROW_PREFIX = "dma"
#: The four compute engines, in display order.
MAIN_ENGINES = ("tensor", "vector", "scalar", "gpsimd")
#: The rows of the engines that run instruction streams, in display order.
COMPUTE_ROWS = MAIN_ENGINES + ("sync",)


def dma_row(engine_index: int) -> str:
    """Row name of DMA engine ``engine_index`` ("dma0", "dma1", ...)."""
    return f"{DMA_ROW_PREFIX}{engine_index}"


def is_dma_row(engine: str) -> bool:
    """True for the rows of the DMA engines ("dma0" .. "dma15")."""
    return engine.startswith(DMA_ROW_PREFIX) and engine[len(DMA_ROW_PREFIX):].isdigit()


@dataclass(frozen=True, slots=True, init=False)
class Event:
    """One executed instruction stage or DMA transfer.

    Attributes:
        instr_id: ``Instruction.id`` of the instruction this belongs to.
        engine: the row it ran on (see the module docstring).
        opcode: the nki.isa name, or "load_stationary" / "multiply_moving" for nc_matmul stages.
        start_ns: when the engine started it.
        end_ns: when the engine finished it (results may become visible later: pipeline latency).
        nbytes: bytes moved (DMA transfer) or read plus written (compute instruction).
        waited_on: what delayed the start beyond the engine becoming free: "vector#12" (a
            producer instruction on that row), "port:sbuf" / "port:psum" (a shared SRAM port),
            "dma_engine" (all DMA engines busy) or "" (started as soon as its engine was free).
        source: the kernel line that issued it ("file.py:LINE"), or "".
        instance: the SPMD program instance.
    """

    instr_id: int
    engine: str
    opcode: str
    start_ns: float
    end_ns: float
    nbytes: int = 0
    waited_on: str = ""
    source: str = ""
    instance: int = 0

    def __init__(self, instr_id: int, engine: str, opcode: str, start_ns: float,
                 end_ns: float, nbytes: int = 0, waited_on: str = "", source: str = "",
                 instance: int = 0) -> None:
        # Hand-written with slot setters (program/layout.py): a launch makes one Event per
        # transfer, hundreds of thousands; the generated frozen __init__ is twice as slow.
        (set_id, set_engine, set_opcode, set_start, set_end, set_nbytes, set_waited,
         set_source, set_instance) = _EVENT_SETTERS
        set_id(self, instr_id)
        set_engine(self, engine)
        set_opcode(self, opcode)
        set_start(self, start_ns)
        set_end(self, end_ns)
        set_nbytes(self, nbytes)
        set_waited(self, waited_on)
        set_source(self, source)
        set_instance(self, instance)

    @property
    def duration_ns(self) -> float:
        """``end_ns - start_ns``."""
        return self.end_ns - self.start_ns


_EVENT_SETTERS = slot_setters(
    Event, "instr_id engine opcode start_ns end_ns nbytes waited_on source instance")


class EventTable(Sequence):
    """The events of a launch, stored by column (numpy arrays), read as :class:`Event` records.

    A launch makes hundreds of thousands of events; as objects they were about a third of a
    timing-only run's memory. Here an event is about 32 bytes of columns: ``instr_id`` (int32),
    ``start_ns``, ``end_ns`` (float64), ``nbytes`` (int64) and ``instance`` (int32; no column
    at all for a launch of one instance, whose events are all of instance 0) as numbers, and
    each string field (``engine``, ``opcode``, ``waited_on``, ``source``) as a code into a
    tuple of its distinct strings.

    Reading it as a sequence (indexing, slicing, iterating, as on a tuple of Events) makes the
    :class:`Event` objects (Python ints, floats and strs) once, the first time, and keeps them:
    reports compare events by identity, so every read gives the same objects. :meth:`column`
    reads one field without making them. A table equals any sequence of the same Events.

    Args:
        numbers: field -> array, for ``instr_id``, ``start_ns``, ``end_ns``, ``nbytes``,
            ``instance`` (all of one length; ``instance`` may be None: every event is of
            instance 0).
        strings: field -> (codes array, the strings the codes index), for ``engine``,
            ``opcode``, ``waited_on``, ``source``.
    """

    __slots__ = ("_num", "_str", "_events")

    def __init__(self, numbers: dict[str, np.ndarray],
                 strings: dict[str, tuple[np.ndarray, tuple[str, ...]]]) -> None:
        self._num = numbers
        self._str = strings
        self._events: tuple[Event, ...] | None = None

    def column(self, name: str) -> np.ndarray:
        """One field of every event as a numpy array: times as float64, ``instr_id``,
        ``nbytes`` and ``instance`` as int64 (stored narrower where they fit), strings as an
        object array."""
        if name in self._str:
            codes, names = self._str[name]
            return np.array(names, dtype=object)[codes]
        col = self._num[name]
        if col is None:  # (instance of a one-instance launch)
            return np.zeros(len(self), dtype=np.int64)
        return col.astype(np.int64) if col.dtype.kind in "iu" and col.itemsize < 8 else col

    def _all(self) -> tuple[Event, ...]:
        """Every event as an object, made on the first call."""
        if self._events is None:
            n, s = self._num, self._str

            def strs(field: str) -> list[str]:
                codes, names = s[field]
                return [names[c] for c in codes.tolist()]

            self._events = tuple(Event(*f) for f in zip(
                n["instr_id"].tolist(), strs("engine"), strs("opcode"),
                n["start_ns"].tolist(), n["end_ns"].tolist(), n["nbytes"].tolist(),
                strs("waited_on"), strs("source"),
                n["instance"].tolist() if n["instance"] is not None else [0] * len(self)))
        return self._events

    def __len__(self) -> int:
        return len(self._num["start_ns"])

    @overload
    def __getitem__(self, i: int) -> Event: ...

    @overload
    def __getitem__(self, i: slice) -> tuple[Event, ...]: ...

    def __getitem__(self, i: int | slice) -> Event | tuple[Event, ...]:
        return self._all()[i]

    def __iter__(self) -> Iterator[Event]:
        return iter(self._all())

    def __reversed__(self) -> Iterator[Event]:
        return reversed(self._all())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, EventTable):
            other = other._all()
        if not isinstance(other, Sequence) or isinstance(other, (str, bytes)):
            return NotImplemented
        return self._all() == tuple(other)

    __hash__ = None  # type: ignore[assignment]  (equal to tuples, which hash differently)

    def __getstate__(self) -> tuple:
        return (self._num, self._str)  # (the Event objects are made again on demand)

    def __setstate__(self, state: tuple) -> None:
        self._num, self._str = state
        self._events = None

    def __repr__(self) -> str:
        return f"EventTable({len(self)} events)"


@dataclass(frozen=True, slots=True)
class KernelWork:
    """How much work a launch asks of the hardware, from the cost model: the inputs of the
    roofline bound and of MFU. Counted on the instructions as compiled (a load the compiler
    keeps resident is not counted again; spill copies are not counted).

    Attributes:
        matmul_flops: useful matmul FLOPs, ``2 * K * M * N`` summed over every nc_matmul
            (stationary ``[K, M]``, moving ``[K, N]``).
        matmul_peak_ns: time those matmuls need at the TensorE peak for their dtypes (fp32
            operands run ``fp32_matmul_slowdown`` times slower, less with a onezero hint).
        dma_bytes: bytes moved by DMA instructions.
        hbm_bytes: bytes those DMAs read from plus write to HBM.
        dma_hbm_read_bytes: the part of ``dma_bytes`` moved by DMAs that read HBM (their DMA
            engines move it at ``dma_hbm_read_bytes_per_ns``).
        dma_hbm_write_bytes: the part moved by DMAs that write HBM without reading it (at
            ``dma_hbm_write_bytes_per_ns``; the rest, on-chip copies, at
            ``dma_engine_bytes_per_ns``).
    """

    matmul_flops: int = 0
    matmul_peak_ns: float = 0.0
    dma_bytes: int = 0
    hbm_bytes: int = 0
    dma_hbm_read_bytes: int = 0
    dma_hbm_write_bytes: int = 0


@dataclass(frozen=True, slots=True)
class TimingResult:
    """The timing of one kernel launch.

    Attributes:
        events: every event, ordered by (start_ns, row, instr_id): a sequence of
            :class:`Event` (the timing model gives an :class:`EventTable`).
        latency_ns: end of the last event (the estimated device time of the launch).
        busy_ns: row -> total time that row was busy (sum of its event durations; rows never
            overlap themselves).
        instruction_end_ns: ``Instruction.id`` -> when it completed (last stage or last
            transfer); the timing model gives an :class:`~.end_times.EndTimes`.
        work: the launch's total work (FLOPs, bytes), for bounds and utilisation.
        warnings: what the timing model found worth a warning (a SpillWarning when SBUF tiles
            are spilled), for the caller to show.
        trigger_held_ns: DMA ``Instruction.id`` -> how long its issue waited, after its own
            data was ready, for the DMA trigger before it (compiler/dma_triggers.py); only
            DMAs that waited so.
    """

    events: Sequence[Event]
    latency_ns: float
    busy_ns: dict[str, float] = field(default_factory=dict)
    instruction_end_ns: Mapping[int, float] = field(default_factory=dict)
    work: KernelWork = field(default_factory=KernelWork)
    warnings: tuple[Warning, ...] = ()
    trigger_held_ns: Mapping[int, float] = field(default_factory=dict)

    @property
    def dma_busy_ns(self) -> float:
        """Summed busy time of all DMA engine rows."""
        return sum(v for k, v in self.busy_ns.items() if is_dma_row(k))
