"""SBUF and PSUM use over time: the tiles a launch allocates and when each is live.

A tile (an SBUF or PSUM tensor, or one block of a tensor with block dims, :mod:`.tiles`) is live
from the start of the first instruction that touches it to the end of the last one, in simulated
time (the same first-to-last-use live range the scheduler gives its buffer rings,
:mod:`neuroncore_sim.compiler.schedule`). It takes its bytes per partition in every partition; a PSUM tile takes whole banks (``ceil(row_bytes / psum_bank_bytes)`` of
them), as the allocator gives them. Summing the live tiles gives the bytes per partition in use
at every instant, its peak, when the peak happens and which allocation sites hold it.

The peak is the demand of the live ranges: when it exceeds the capacity the compiler spills
(:mod:`.spill`); the spill DMAs' bytes are summed from the events (``spill_save_bytes``,
``spill_reload_bytes``, ``spill_sites``).

Plain data and numpy only; :mod:`neuroncore_sim.report.tables` turns it into tables and
:mod:`neuroncore_sim.report.plot` into a panel.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..config import NeuronCoreConfig
from ..program.ir import MemSpace, Program
from .events import (PSUM_SPILL_RELOAD, PSUM_SPILL_SAVE, SPILL_RELOAD, SPILL_SAVE, TENSOR_LS_ROW,
                     TimingResult, is_dma_row)
from ..compiler.tiles import access_keys, block_elems, key_tensor, tile_bytes

#: The on-chip memories tracked, in display order.
SPACES = (MemSpace.SBUF, MemSpace.PSUM)
#: How many allocation sites :func:`peak_use` names at the peak.
PEAK_SITES = 3


@dataclass(frozen=True, slots=True)
class TileLife:
    """One tile's live range.

    Attributes:
        name: the tensor's name ("t12").
        site: the allocating source line ("file.py:LINE"), or "tensor <name>" without one.
        space: SBUF or PSUM.
        bytes_per_partition: what it occupies in each partition (PSUM: whole banks).
        start_ns: start of its first instruction.
        end_ns: end of its last instruction.
    """

    name: str
    site: str
    space: MemSpace
    bytes_per_partition: int
    start_ns: float
    end_ns: float


def capacity(space: MemSpace, config: NeuronCoreConfig) -> int:
    """Bytes per partition a kernel may use: ``sbuf_usable_bytes_per_partition`` or
    ``psum_bytes_per_partition``."""
    return (config.sbuf_usable_bytes_per_partition if space is MemSpace.SBUF
            else config.psum_bytes_per_partition)


def tile_lives(program: Program, timing: TimingResult, config: NeuronCoreConfig
               ) -> list[TileLife]:
    """Live range of every SBUF/PSUM tensor the launch touched, in order of first use."""
    # A matmul's LoadStationary (row tensor_ls) runs in the background of the matmul before
    # it: it reads the stationary tile from its own start, while the PSUM output is written
    # from the MultiplyMoving's start (a buffer the previous reader still holds is not yet
    # written)
    starts: dict[int, float] = {}
    stationary_starts: dict[int, float] = {}
    for e in timing.events:
        into = stationary_starts if e.engine == TENSOR_LS_ROW else starts
        if e.instr_id not in into or e.start_ns < into[e.instr_id]:
            into[e.instr_id] = e.start_ns
    ends = timing.instruction_end_ns
    first: dict[int, float] = {}
    last: dict[int, float] = {}
    split: dict[int, int] = {}
    for ins in program.instructions:
        if ins.id not in ends:
            continue  # not timed (a PSUM zeros memset folded into its first matmul): never ran
        t_end = ends[ins.id]
        t_start = starts.get(ins.id, t_end)
        stationary = ins.srcs.get("stationary")
        for a, _ in ins.accesses():
            if a.space is MemSpace.HBM:
                continue
            t_first = (stationary_starts.get(ins.id, t_start) if a is stationary
                       else t_start)
            tid = a.tensor.id
            per = split.get(tid)
            if per is None:
                per = split[tid] = block_elems(a.tensor) if a.tensor.placement is None else 0
            for key in access_keys(a, per):
                if key not in first or t_first < first[key]:
                    first[key] = t_first
                if key not in last or t_end > last[key]:
                    last[key] = t_end
    out = []
    for key in first:
        t = program.tensors[key_tensor(key)]
        size = tile_bytes(t) if split[t.id] else t.row_bytes
        if t.space is MemSpace.PSUM:
            size = math.ceil(size / config.psum_bank_bytes) * config.psum_bank_bytes
        site = str(t.site) if t.site is not None else f"tensor {t.name}"
        out.append(TileLife(t.name, site, t.space, size, first[key], last[key]))
    return out


def usage_series(lives: list[TileLife], space: MemSpace) -> tuple[np.ndarray, np.ndarray]:
    """Bytes per partition in use in ``space`` as a step function.

    Returns:
        (times_ns, bytes): ``bytes[i]`` is in use from ``times_ns[i]`` until ``times_ns[i+1]``.
        A tile freed at ``t`` and one allocated at ``t`` are never counted together. Both
        arrays start with (0, 0).
    """
    sel = [x for x in lives if x.space is space]
    t = np.array([0.0] + [x.start_ns for x in sel] + [x.end_ns for x in sel])
    delta = np.array([0] + [x.bytes_per_partition for x in sel]
                     + [-x.bytes_per_partition for x in sel], dtype=np.int64)
    order = np.lexsort((delta, t))  # by time; frees (negative) before allocations
    t, used = t[order], np.cumsum(delta[order])
    # Keep the value after the last change at each instant.
    keep = np.append(t[1:] != t[:-1], True)
    return t[keep], used[keep]


def peak_use(lives: list[TileLife], space: MemSpace, config: NeuronCoreConfig
             ) -> dict[str, Any]:
    """Peak bytes per partition in use in ``space``, when, and the sites holding it.

    Returns:
        ``peak_bytes_per_partition``, ``capacity_bytes_per_partition`` (:func:`capacity`),
        ``peak_percent`` (of capacity), ``peak_at_ns`` (first instant at the peak),
        ``tiles`` (how many tiles of this space the launch used) and ``peak_sites``: up to
        :data:`PEAK_SITES` sites with their bytes per partition at the peak, largest first.
    """
    times, used = usage_series(lives, space)
    i = int(np.argmax(used))
    peak, at = int(used[i]), float(times[i])
    holders: dict[str, int] = {}
    for x in lives:
        if x.space is space and x.start_ns <= at < x.end_ns:
            holders[x.site] = holders.get(x.site, 0) + x.bytes_per_partition
    sites = sorted(holders.items(), key=lambda kv: (-kv[1], kv[0]))[:PEAK_SITES]
    cap = capacity(space, config)
    return {"peak_bytes_per_partition": peak, "capacity_bytes_per_partition": cap,
            "peak_percent": 100.0 * peak / cap, "peak_at_ns": at,
            "tiles": sum(1 for x in lives if x.space is space),
            "peak_sites": dict(sites)}


def memory_summary(program: Program, timing: TimingResult, config: NeuronCoreConfig
                   ) -> dict[str, dict[str, Any]]:
    """:func:`peak_use` of SBUF and of PSUM, keyed "sbuf" and "psum"."""
    lives = tile_lives(program, timing, config)
    out = {space.value: peak_use(lives, space, config) for space in SPACES}
    out["sbuf"].update(spill_use(timing, SPILL_SAVE, SPILL_RELOAD))
    out["psum"].update(spill_use(timing, PSUM_SPILL_SAVE, PSUM_SPILL_RELOAD))
    return out


def spill_use(timing: TimingResult, save_op: str, reload_op: str) -> dict[str, Any]:
    """What the compiler spilled (:mod:`.spill`), from the spill copies' events.

    Returns:
        ``spill_save_bytes`` (all partitions; SBUF to HBM, or PSUM to SBUF),
        ``spill_reload_bytes`` (back) and ``spill_sites``: allocation site -> bytes its spill
        saves and reloads moved, largest first. Zeros and {} when nothing was spilled.
    """
    save = reload = 0
    sites: dict[str, int] = {}
    for e in timing.events:
        if e.opcode != save_op and e.opcode != reload_op:
            continue
        # a DMA event's bytes are moved bytes; a copy on an engine counts read plus written
        moved = e.nbytes if is_dma_row(e.engine) else e.nbytes // 2
        if e.opcode == save_op:
            save += moved
        else:
            reload += moved
        sites[e.source] = sites.get(e.source, 0) + moved
    order = dict(sorted(sites.items(), key=lambda kv: (-kv[1], kv[0])))
    return {"spill_save_bytes": save, "spill_reload_bytes": reload, "spill_sites": order}
