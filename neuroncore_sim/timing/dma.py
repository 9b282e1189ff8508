"""The DMA engines and the HBM pipe: when the transfers of a DMA instruction run.

An analytic reservation model (cheaper than a simpy process per transfer, and deterministic): the
timing model calls :meth:`DmaEngines.issue` at the simulated time a DMA instruction becomes ready
(its dependencies met), in simulated-time order. The instruction's transfers
(:func:`neuroncore_sim.timing.cost.dma_transfers`) start no earlier than ``ready +
dma_fixed_latency_ns`` (descriptor setup and semaphore-to-start: latency, not engine occupancy,
so many DMAs overlap it). Each transfer goes to the DMA engine that frees up first (ties: lowest
index) and occupies it for its ``engine_ns``; an engine runs one transfer at a time. Transfers
that touch HBM also reserve the shared HBM pipe for ``hbm_bytes / hbm_bytes_per_ns`` in
reservation order; a transfer ends when both its engine time and its HBM share are done.

Descriptors generated at run time (the compile stage marks such DMAs ``dge``,
:mod:`neuroncore_sim.compiler.dma_descriptors`): on NeuronCore-v2 one software generator (GpSimd)
writes them, one DMA after another. A DMA's descriptors take ``dge_ns_per_element`` per element
of at most ``dge_element_bytes`` of each DMA buffer, from when the DMA is ready and the generator
is free; its transfers follow the descriptors as they are written (they start no earlier than
the generation), and the DMA is done no earlier than its last descriptor. (The generator's time is not shown on the
GpSimd row: an approximation, docs/model.md.)
"""

from __future__ import annotations

import heapq
import math

from ..config import NeuronCoreConfig
from .cost import DmaTransfer, dma_transfers
from ..program.ir import Instruction


#: The placed transfers of one instruction, as parallel lists (a launch places hundreds of
#: thousands of transfers; the timing model appends the lists to its event columns): engine
#: index, start_ns, end_ns, bytes, and engine_wait (it started later than the earliest allowed
#: time because every DMA engine was busy).
PlacedTransfers = tuple[list[int], list[float], list[float], list[int], list[bool]]


class DmaEngines:
    """Busy-until state of the DMA engines and of the HBM pipe during one simulation.

    Args:
        config: the hardware.
        start_ns: simulated time at which every engine is free.
    """

    def __init__(self, config: NeuronCoreConfig, start_ns: float = 0.0) -> None:
        self._config = config
        self._free = [(start_ns, e) for e in range(config.dma_engines)]
        self._hbm_free = start_ns
        self._dge_free = start_ns  # the run-time descriptor generator
        # Transfer plans depend only on the operands' layout: cache them per layout, as
        # (engine_ns, HBM pipe ns or None) per transfer and the transfers' bytes.
        self._plans: dict[tuple[object, ...],
                          tuple[tuple[tuple[float, float | None], ...], list[int], float]] = {}

    def _plan(self, transfers: tuple[DmaTransfer, ...], dge: bool
              ) -> tuple[tuple[tuple[float, float | None], ...], list[int], float]:
        cfg = self._config
        per_ns = cfg.hbm_bytes_per_ns
        gen = 0.0
        if dge:  # one descriptor element per dge_element_bytes of each buffer
            gen = cfg.dge_ns_per_element * sum(
                tr.buffers * math.ceil(tr.nbytes / tr.buffers / cfg.dge_element_bytes)
                for tr in transfers if tr.buffers)
        return (tuple((tr.engine_ns, tr.hbm_bytes / per_ns if tr.hbm_bytes else None)
                      for tr in transfers), [tr.nbytes for tr in transfers], gen)

    def issue(self, ins: Instruction, ready_ns: float) -> tuple[float, PlacedTransfers]:
        """Reserve engines for the transfers of ``ins``, ready at ``ready_ns``.

        Returns:
            (completion time of the whole instruction, its placed transfers in order; the
            list of bytes is shared by every instruction of one layout: not to be changed).
        """
        cfg = self._config
        earliest = ready_ns + cfg.dma_fixed_latency_ns
        engines: list[int] = []
        starts: list[float] = []
        ends: list[float] = []
        waits: list[bool] = []
        done = earliest
        src, dst = ins.srcs["src"], ins.out
        dge = bool(ins.attrs.get("dge"))
        key = (ins.opcode, src.space, dst.space, src.pattern, dst.pattern,
               src.dtype.itemsize, dst.dtype.itemsize, dge)
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = self._plan(dma_transfers(ins, cfg), dge)
        steps, sizes, gen_ns = plan
        gen_end = 0.0
        if gen_ns:  # the generator writes this DMA's descriptors, one DMA after another; the
            # transfers follow them as they are written, and the DMA is done no earlier
            gen_start = self._dge_free if self._dge_free > ready_ns else ready_ns
            self._dge_free = gen_end = gen_start + gen_ns
            if gen_start > earliest:
                earliest = done = gen_start
        free, replace = self._free, heapq.heapreplace
        hbm_free = self._hbm_free
        for engine_ns, hbm_ns in steps:
            free_at, e = free[0]  # the engine that frees up first (ties: lowest index)
            start = earliest if earliest >= free_at else free_at  # max(), as in the docs
            end = start + engine_ns
            if hbm_ns is not None:
                hbm_free = (hbm_free if hbm_free >= start else start) + hbm_ns
                if hbm_free > end:
                    end = hbm_free
            replace(free, (end, e))
            engines.append(e)
            starts.append(start)
            ends.append(end)
            waits.append(start > earliest)
            if end > done:
                done = end
        self._hbm_free = hbm_free
        return max(done, gen_end), (engines, starts, ends, sizes, waits)
