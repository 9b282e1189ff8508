"""Events stored by column (timing/event_log.py, EventTable in timing/events.py): the numpy sort
gives the order, busy sums and latency of the plain Python code it replaced, and the table
reads as a tuple of Events."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from neuroncore_sim.timing import event_log
from neuroncore_sim.timing.event_log import DMA_ENGINE_WAIT, EventLog, _row_rank
from neuroncore_sim.timing.events import Event, EventTable

ROWS = ("tensor", "vector", "scalar", "gpsimd", "sync", "tensor_ls", "dma0", "dma1", "dma15")

_event = st.tuples(
    st.integers(0, 40),                       # instr_id
    st.sampled_from(ROWS),                    # row
    st.sampled_from(("tensor_copy", "dma_copy", "multiply_moving")),
    st.sampled_from((0.0, 1.5, 2.0, 7.25)),   # start: few values, so ties are common
    st.sampled_from((0.5, 3.0)),              # duration
    st.integers(0, 1 << 40),                  # nbytes
    st.sampled_from(("", "vector#3", "port:sbuf", DMA_ENGINE_WAIT)),
    st.sampled_from(("", "k.py:3", "k.py:9")),
    st.integers(0, 3))                        # instance


def _fill(events: list[tuple]) -> EventLog:
    log = EventLog(16)
    for iid, row, op, start, dur, nbytes, why, source, instance in events:
        log.add(iid, log.row_code(row), op, start, start + dur, nbytes, why,
                log.source_code(source), instance)
    return log


def _python_reference(events: list[tuple]) -> tuple[list[Event], dict[str, float], float]:
    """What the timing model did before the columns: Event objects, a stable sort by
    (start, row rank, instr_id, end), busy summed in that order."""
    objs = [Event(iid, row, op, start, start + dur, nbytes, why, source, instance)
            for iid, row, op, start, dur, nbytes, why, source, instance in events]
    objs.sort(key=lambda e: (e.start_ns, _row_rank(e.engine), e.instr_id, e.end_ns))
    busy: dict[str, float] = {}
    for e in objs:
        busy[e.engine] = busy.get(e.engine, 0.0) + (e.end_ns - e.start_ns)
    return objs, busy, max((e.end_ns for e in objs), default=0.0)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(st.lists(_event, max_size=60))
def test_sorted_columns_match_the_python_sort(events):
    table, busy, latency = _fill(events).finish()
    objs, ref_busy, ref_latency = _python_reference(events)
    assert list(table) == objs
    assert busy == ref_busy and list(busy) == list(ref_busy)  # same sums, same row order
    assert latency == ref_latency
    assert all(type(e.start_ns) is float and type(e.instr_id) is int for e in table)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.lists(_event, max_size=40), st.integers(1, 5))
def test_chunked_columns_sort_as_whole_ones(events, chunk):
    """Columns kept in chunks of a few events (moved to maps as they fill) sort as one."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(event_log, "CHUNK", chunk)
        mp.setattr(event_log, "CHUNKS_PER_DOUBLING", 2)  # (chunks of 1, 1, 2, 2, 4, ... events)
        log = _with_transfers(_fill(events))
        assert sum(len(c) for c in log.chunks["start"]) // 8 + len(log.start) == len(events) + 3
        table, busy, latency = log.finish()
    whole, whole_busy, whole_latency = _with_transfers(_fill(events)).finish()
    assert (list(table), busy, latency) == (list(whole), whole_busy, whole_latency)


def test_chunks_grow_so_a_long_run_needs_few_maps():
    """A column's chunks double in size every CHUNKS_PER_DOUBLING chunks, up to CHUNK_MAX
    events: a long run stays far below the system's limit on memory maps."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(event_log, "CHUNK", 2)
        mp.setattr(event_log, "CHUNKS_PER_DOUBLING", 3)
        mp.setattr(event_log, "CHUNK_MAX", 8)
        log = EventLog(1)
        for i in range(60):
            log.add(i, 0, "memset", float(i), i + 1.0, 4, "", log.source_code("k.py:1"), 0)
        sizes = [len(c) // 8 for c in log.chunks["start"]]
        assert sizes == [2, 2, 2, 4, 4, 4, 8, 8, 8, 8, 8] and len(log.start) == 2
        table, _, _ = log.finish()
    assert [e.instr_id for e in table] == list(range(60))


def _with_transfers(log: EventLog) -> EventLog:
    """``log`` and three DMA transfers of one instruction (one add_transfers call)."""
    log.add_transfers(41, "dma_copy", ([1, 0, 2], [0.0, 1.5, 2.0], [1.0, 2.0, 9.0], [8, 8, 8],
                                       [False, True, False]), "", log.source_code("k.py:7"), 0)
    return log


def test_transfers_of_a_dma_instruction_name_their_wait():
    log = EventLog(4)
    placed = ([2, 0], [10.0, 12.0], [20.0, 22.0], [64, 64], [False, True])
    log.add_transfers(7, "dma_copy", placed, "vector#3", log.source_code("k.py:5"), 1)
    table, busy, latency = log.finish()
    assert list(table) == [
        Event(7, "dma2", "dma_copy", 10.0, 20.0, 64, "vector#3", "k.py:5", 1),
        Event(7, "dma0", "dma_copy", 12.0, 22.0, 64, DMA_ENGINE_WAIT, "k.py:5", 1)]
    assert busy == {"dma2": 10.0, "dma0": 10.0} and latency == 22.0


def _table() -> EventTable:
    return _fill([(1, "vector", "tensor_copy", 0.0, 2.0, 8, "", "k.py:3", 0),
                  (0, "dma1", "dma_copy", 1.0, 3.0, 16, "", "k.py:2", 0),
                  (2, "scalar", "activation", 4.0, 1.0, 8, "vector#1", "k.py:4", 0)]).finish()[0]


def test_table_reads_as_a_tuple_of_events():
    table = _table()
    events = tuple(table)
    assert len(table) == 3 and table[0] == events[0] and table[-1] == events[2]
    assert table[1:] == events[1:] and tuple(reversed(table)) == events[::-1]
    assert table == events and table == list(events) and table != events[:2]
    # reports compare events by identity: every read gives the same objects
    assert all(a is b for a, b in zip(table, table)) and table[0] is events[0]
    with pytest.raises(IndexError):
        table[3]
    with pytest.raises(TypeError):
        hash(table)


def test_table_columns_and_pickling():
    table = _table()
    assert table.column("start_ns").tolist() == [0.0, 1.0, 4.0]
    assert table.column("engine").tolist() == ["vector", "dma1", "scalar"]
    assert table.column("waited_on").tolist() == ["", "", "vector#1"]
    for name in ("instr_id", "nbytes", "instance"):  # (stored narrower, or not at all)
        assert table.column(name).dtype == np.int64
    assert table.column("instance").tolist() == [0, 0, 0]
    copy = pickle.loads(pickle.dumps(table))
    assert isinstance(copy, EventTable) and copy == table


def test_instances_of_a_grid_are_kept():
    """A launch of one instance stores no instance column (every event is of instance 0); a
    grid's events keep theirs."""
    one = _table()
    assert one._num["instance"] is None and {e.instance for e in one} == {0}
    grid = _fill([(0, "vector", "tensor_copy", 0.0, 2.0, 8, "", "k.py:3", 0),
                  (1, "vector", "tensor_copy", 2.0, 3.0, 8, "", "k.py:3", 1)]).finish()[0]
    assert [e.instance for e in grid] == [0, 1] and grid.column("instance").tolist() == [0, 1]


def test_empty_log():
    table, busy, latency = EventLog(16).finish()
    assert len(table) == 0 and list(table) == [] and busy == {} and latency == 0.0
    assert table.column("engine").shape == (0,) and table.column("end_ns").dtype == np.float64
