"""The events of a run as they are made, by column, and their sorting into an
:class:`~neuroncore_sim.timing.events.EventTable`.

A timing-only launch makes several events per instruction (one per DMA transfer: 16 for a
128-partition copy); as one object each they cost time to make and most of the run's memory.
:class:`EventLog` appends each field to a typed :mod:`array` (a DMA instruction's transfers in
one call per column) and keeps strings as codes into per-field tables, so an event costs 48
bytes; :meth:`EventLog.finish` sorts the columns with numpy into the order the timing model
defines (start, row, instruction, end; stable) and sums busy time per row.
"""

from __future__ import annotations

from array import array
from itertools import repeat

import numpy as np

from .dma import PlacedTransfers
from .events import COMPUTE_ROWS, DMA_ROW_PREFIX, EventTable, dma_row, is_dma_row

#: What a DMA transfer waited on when every DMA engine was busy.
DMA_ENGINE_WAIT = "dma_engine"


def _row_rank(row: str) -> tuple[int, int, str]:
    """Display order of rows: compute engines, tensor_ls, then dma0..dma15 numerically."""
    if row in COMPUTE_ROWS:
        return (0, COMPUTE_ROWS.index(row), row)
    if is_dma_row(row):
        return (2, int(row[len(DMA_ROW_PREFIX):]), row)
    return (1, 0, row)


def _code(table: dict[str, int], s: str) -> int:
    """The code of ``s`` in ``table`` (a new one the first time)."""
    c = table.get(s)
    if c is None:
        c = table[s] = len(table)
    return c


class EventLog:
    """The events of one launch (all its SPMD instances), by column.

    Args:
        dma_engines: how many DMA engines the hardware has; their rows get the codes
            ``0 .. dma_engines - 1``, so a transfer's engine index is its row code.
    """

    def __init__(self, dma_engines: int) -> None:
        self.instr_id = array("q")
        self.row = array("H")
        self.opcode = array("H")
        self.start = array("d")
        self.end = array("d")
        self.nbytes = array("q")
        self.waited = array("i")
        self.source = array("i")
        self.instance = array("i")
        self.rows: dict[str, int] = {dma_row(e): e for e in range(dma_engines)}
        self.opcodes: dict[str, int] = {}
        self.whys: dict[str, int] = {DMA_ENGINE_WAIT: 0}
        self.sources: dict[str, int] = {}

    def row_code(self, row: str) -> int:
        """The code of row ``row`` (``"vector"``, ``"tensor_ls"``, ...)."""
        return _code(self.rows, row)

    def source_code(self, source: str) -> int:
        """The code of a kernel line ``"file.py:LINE"`` (or "")."""
        return _code(self.sources, source)

    def add(self, instr_id: int, row: int, opcode: str, start: float, end: float, nbytes: int,
            why: str, source: int, instance: int) -> None:
        """One event; ``row`` and ``source`` are codes (:meth:`row_code`,
        :meth:`source_code`)."""
        self.instr_id.append(instr_id)
        self.row.append(row)
        code = self.opcodes.get(opcode)  # (_code inlined: this runs per compute event)
        self.opcode.append(code if code is not None else _code(self.opcodes, opcode))
        self.start.append(start)
        self.end.append(end)
        self.nbytes.append(nbytes)
        code = self.whys.get(why)
        self.waited.append(code if code is not None else _code(self.whys, why))
        self.source.append(source)
        self.instance.append(instance)

    def add_transfers(self, instr_id: int, opcode: str, placed: PlacedTransfers, why: str,
                      source: int, instance: int) -> None:
        """The events of one DMA instruction's transfers, placed by
        :meth:`~neuroncore_sim.timing.dma.DmaEngines.issue`; a transfer that waited for a DMA
        engine waited on ``"dma_engine"``, the others on ``why``."""
        engines, starts, ends, sizes, waits = placed
        n = len(starts)
        self.instr_id.extend(repeat(instr_id, n))
        self.row.extend(engines)
        self.opcode.extend(repeat(_code(self.opcodes, opcode), n))
        self.start.extend(starts)
        self.end.extend(ends)
        self.nbytes.extend(sizes)
        why_code = _code(self.whys, why)
        if True in waits:
            self.waited.extend([0 if w else why_code for w in waits])
        else:
            self.waited.extend(repeat(why_code, n))
        self.source.extend(repeat(source, n))
        self.instance.extend(repeat(instance, n))

    def finish(self) -> tuple[EventTable, dict[str, float], float]:
        """The events sorted by (start, row in display order, instruction, end), stably; the
        busy time per row (in order of first appearance, summed in that order) and the
        latency (the last end). The log's columns are released as they are sorted (each is
        read in place, then dropped), so the sort needs little memory beyond the result."""
        names = {c: r for r, c in self.rows.items()}
        rank = np.zeros(max(len(self.rows), 1), dtype=np.int64)
        for i, code in enumerate(sorted(names, key=lambda c: _row_rank(names[c]))):
            rank[code] = i

        def view(name: str) -> np.ndarray:
            col = getattr(self, name)
            return np.frombuffer(col, dtype=_DTYPES[col.typecode])

        order = np.lexsort((view("end"), view("instr_id"), rank[view("row")],
                            view("start")))  # last key first; stable

        def take(name: str) -> np.ndarray:
            out = view(name)[order]
            setattr(self, name, None)  # (its buffer is freed with the last view of it)
            return out

        numbers = {"instr_id": take("instr_id"), "start_ns": take("start"),
                   "end_ns": take("end"), "nbytes": take("nbytes"),
                   "instance": take("instance")}
        row = take("row")
        table = EventTable(numbers, {
            "engine": (row, tuple(names[c] for c in range(len(names)))),
            "opcode": (take("opcode"), tuple(self.opcodes)),
            "waited_on": (take("waited"), tuple(self.whys)),
            "source": (take("source"), tuple(self.sources))})
        del order
        self.__init__(0)  # a fresh, empty log
        start, end = numbers["start_ns"], numbers["end_ns"]
        busy: dict[str, float] = {}
        if len(row):
            # bincount adds the weights one by one in order: the same sums as a Python loop
            sums = np.bincount(row, weights=end - start, minlength=len(names)).tolist()
            present, first = np.unique(row, return_index=True)
            for code in present[np.argsort(first, kind="stable")].tolist():
                busy[names[code]] = sums[code]
        latency = float(end.max()) if len(end) else 0.0
        return table, busy, latency


#: numpy dtype of each array typecode the log uses.
_DTYPES = {"q": np.int64, "H": np.uint16, "d": np.float64, "i": np.int32}
