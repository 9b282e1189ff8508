"""The events of a run as they are made, by column, and their sorting into an
:class:`~neuroncore_sim.timing.events.EventTable`.

A timing-only launch makes several events per instruction (one per DMA transfer: 16 for a
128-partition copy); as one object each they cost time to make and most of the run's memory.
:class:`EventLog` appends each field to a typed :mod:`array` (a DMA instruction's transfers in
one call per column) and keeps strings as codes into per-field tables, so an event costs 44
bytes; :meth:`EventLog.finish` sorts the columns with numpy into the order the timing model
defines (start, row, instruction, end; stable) and sums busy time per row.

Chunks. A column is filled in an array of up to :data:`CHUNK` events, then moved to an
anonymous memory map of its own, and the next chunk starts. A column grown whole as one array
is moved by every reallocation, and once the C allocator keeps large blocks on its heap (glibc
does after the first large block is freed) every move left a hole there: a timing-only run's
peak held about as much memory in those holes as in its events. A chunk's array grows only to
the chunk's size (the next chunk reuses its holes), and a map is given back to the system as
soon as :meth:`EventLog.finish` has joined its column. Every :data:`CHUNKS_PER_DOUBLING`
chunks the chunk size doubles (up to :data:`CHUNK_MAX` events), so a run of a hundred million
events needs a few thousand maps, well below the system's limit on a process's maps
(``vm.max_map_count``, 65530 by default), not one per 16384 events and column.
"""

from __future__ import annotations

import mmap
from array import array
from itertools import repeat

import numpy as np

from .dma import PlacedTransfers
from .events import COMPUTE_ROWS, DMA_ROW_PREFIX, EventTable, dma_row, is_dma_row

#: What a DMA transfer waited on when every DMA engine was busy.
DMA_ENGINE_WAIT = "dma_engine"
#: Events per chunk of a column (module docstring): 128 KiB of a float column, small enough
#: for the holes of its growth to be reused, large enough to need few maps.
CHUNK = 1 << 14
#: The chunk size doubles after this many chunks of a column, up to CHUNK_MAX events.
CHUNKS_PER_DOUBLING = 32
CHUNK_MAX = 1 << 20
#: The log's columns and their :mod:`array` typecodes.
_COLUMNS = (("instr_id", "i"), ("row", "H"), ("opcode", "H"), ("start", "d"), ("end", "d"),
            ("nbytes", "q"), ("waited", "i"), ("source", "i"), ("instance", "i"))


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
        #: column -> its full chunks, in order, each in its own map (the attribute of that name
        #: is the chunk being filled)
        self.chunks: dict[str, list[mmap.mmap]] = {name: [] for name, _ in _COLUMNS}
        self._new_chunk()
        self.rows: dict[str, int] = {dma_row(e): e for e in range(dma_engines)}
        self.opcodes: dict[str, int] = {}
        self.whys: dict[str, int] = {DMA_ENGINE_WAIT: 0}
        self.sources: dict[str, int] = {}

    def _new_chunk(self) -> None:
        """Move the chunks being filled (if any) to maps and start new ones."""
        for name, typecode in _COLUMNS:
            col = getattr(self, name, None)
            if col is not None:
                kept = mmap.mmap(-1, len(col) * col.itemsize)
                kept.write(col)
                self.chunks[name].append(kept)
            setattr(self, name, array(typecode))
        #: events the chunks being filled take before they are moved to maps
        self.limit = min(CHUNK << (len(self.chunks["instance"]) // CHUNKS_PER_DOUBLING),
                         CHUNK_MAX)

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
        if len(self.instance) >= self.limit:
            self._new_chunk()

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
        if len(self.instance) >= self.limit:
            self._new_chunk()

    def finish(self) -> tuple[EventTable, dict[str, float], float]:
        """The events sorted by (start, row in display order, instruction, end), stably; the
        busy time per row (in order of first appearance, summed in that order) and the
        latency (the last end). The log's columns are released as they are sorted (each is
        joined, its chunks dropped, then sorted), so the sort needs little memory beyond the
        result."""
        names = {c: r for r, c in self.rows.items()}
        # (rank codes as small as the rows allow: the sort key made of them is one per event)
        rank = np.zeros(max(len(self.rows), 1), dtype=np.min_scalar_type(len(self.rows)))
        for i, code in enumerate(sorted(names, key=lambda c: _row_rank(names[c]))):
            rank[code] = i
        joined: dict[str, np.ndarray] = {}

        def column(name: str) -> np.ndarray:
            """The whole column, its chunks joined (and then dropped)."""
            col = joined.get(name)
            if col is None:
                last = getattr(self, name)
                parts = [*self.chunks.pop(name), last]
                setattr(self, name, None)
                dtype = _DTYPES[last.typecode]
                col = (np.frombuffer(last, dtype=dtype) if len(parts) == 1 else
                       np.concatenate([np.frombuffer(p, dtype=dtype) for p in parts]))
            return col  # (the maps are unmapped as ``parts`` goes)

        for name in ("end", "instr_id", "row", "start"):  # the sort keys, joined once
            joined[name] = column(name)
        order = np.lexsort((joined["end"], joined["instr_id"], rank[joined["row"]],
                            joined["start"]))  # last key first; stable

        def take(name: str, dtype: np.dtype | type | None = None) -> np.ndarray:
            out = column(name)[order]
            joined.pop(name, None)  # (its buffer is freed with the last view of it)
            return out if dtype is None else out.astype(dtype)

        def codes(name: str, strings: tuple[str, ...]) -> tuple[np.ndarray, tuple[str, ...]]:
            """A string field: its codes in the smallest dtype that holds them."""
            return take(name, np.min_scalar_type(max(len(strings) - 1, 0))), strings

        # The code columns first: they come out smaller than the log's, which makes room for
        # the numbers' copies (the sort's peak is its first copies, with all the log still held).
        strings = {"engine": codes("row", tuple(names[c] for c in range(len(names)))),
                   "opcode": codes("opcode", tuple(self.opcodes)),
                   "waited_on": codes("waited", tuple(self.whys)),
                   "source": codes("source", tuple(self.sources))}
        instance = column("instance")  # (no column when every event is of instance 0)
        numbers = {"start_ns": take("start"), "end_ns": take("end"), "nbytes": take("nbytes"),
                   "instance": instance[order] if instance.any() else None,
                   "instr_id": take("instr_id")}
        del instance
        table = EventTable({k: numbers[k] for k in _NUMBER_ORDER}, strings)
        row = strings["engine"][0]
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


#: The order of EventTable's number columns.
_NUMBER_ORDER = ("instr_id", "start_ns", "end_ns", "nbytes", "instance")
#: numpy dtype of each array typecode the log uses.
_DTYPES = {"q": np.int64, "H": np.uint16, "d": np.float64, "i": np.int32}
