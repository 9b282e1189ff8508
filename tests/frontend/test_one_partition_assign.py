"""Assignments to views on one partition picked by an int (``t[i, j] = 5``, ``t[i, :] = x``):
the view keeps a partition axis of size 1; a constant written on a partition an engine access
cannot start at is a memset at partition 0 plus an SBUF-to-SBUF DMA."""

from __future__ import annotations

import numpy as np
import pytest

import neuroncore_sim as ncs
from neuroncore_sim.errors import AccessError
from neuroncore_sim.program.ir import Opcode
import neuroncore_sim.nki.language as nl


def test_element_assignments_fill_a_tile():
    def k():
        out = nl.ndarray((8, 5), nl.int32, buffer=nl.shared_hbm)
        t = nl.zeros((8, 5), dtype=nl.int32)
        for i in nl.static_range(8):
            for j in nl.static_range(5):
                t[i, j] = i * 10 + j
        nl.store(out, value=t)
        return out

    launch = ncs.trace(k)
    np.testing.assert_array_equal(launch.outputs[0],
                                  np.arange(8)[:, None] * 10 + np.arange(5)[None, :])
    ops = [i.opcode for i in launch.program.instructions]
    # partition 0: one memset in place; partitions 1..7: memset at 0 then a DMA into place
    assert ops.count(Opcode.MEMSET) == 1 + 40 and ops.count(Opcode.DMA_COPY) == 35 + 1
    moves = [i for i in launch.program.instructions
             if i.opcode is Opcode.DMA_COPY and i.dsts["out"].space.value == "sbuf"]
    assert all(m.srcs["src"].row_lo == 0 and m.dsts["out"].partitions == 1 for m in moves)


def test_row_assignment_from_a_one_partition_tile():
    def k(a):
        out = nl.ndarray((4, 6), a.dtype, buffer=nl.shared_hbm)
        t = nl.zeros((4, 6), dtype=a.dtype)
        t[0, :] = nl.load(a)  # a: [1, 6]
        t[0, 2] = 7.0
        nl.store(out, value=t)
        return out

    a = np.arange(6, dtype=np.float32)[None, :]
    want = np.zeros((4, 6), np.float32)
    want[0] = a[0]
    want[0, 2] = 7
    np.testing.assert_array_equal(ncs.trace(k, a).outputs[0], want)


def test_an_element_out_of_the_tile_is_still_an_error():
    def k():
        t = nl.zeros((4, 6), dtype=nl.float32)
        t[3, 2:9] = 1.0  # BAD: columns 2..8 of 6

    with pytest.raises(AccessError, match="out of bounds"):
        ncs.trace(k)
