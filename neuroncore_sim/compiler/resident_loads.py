"""Loads kept resident: a load that repeats an earlier load of the same kernel-input region is
dropped when the compiler can keep the first copy in SBUF.

What neuronx-cc does (measured): NKIBench's add_rmsnorm_matmul (SDK 2.24/2.25,
``--disable-dge``) loads each [128, 512] fp32 tile of its 8 MiB weight in every one of 32 row
iterations as written (288 MiB of loads), and the profile reads 40.1 MiB from HBM: the weight
once plus the activations. matmul_add_rmsnorm likewise (16 MiB of weight, 576 MiB as written,
93.6 MiB measured). AWS's tiled matmul, whose repeated right-hand tiles total 128 MiB, reloads
them (its DMA-bound table rows are proportional to the bytes as written). So the compiler keeps
repeated loads resident when the distinct regions fit in SBUF beside the rest of the kernel.

Model. Per allocation site of the loads (the kernel line), in order of first appearance: a
load is a *repeat* when it reads exactly the region of an earlier load of the site (same
kernel-input tensor, offset, pattern and dtype, never written by the kernel) into a tile of the
same layout, and both tiles are written by their load alone. The site is kept resident when
its distinct regions, one tile each, fit in SBUF together with the most bytes of tiles the
kernel's own order keeps live at once (what placement by live range needs at least; the
allocator's rings shrink to what is left, :mod:`.capacity`; measured: matmul_add_rmsnorm's
weight is kept beside row tiles whose eight sites' rings would not fit with it): then its
repeats are dropped and their readers read the first tile, which the memory plan keeps live
until its last reader (and spills, should it have to). Otherwise the site keeps its loads.
Switch: ``config.compiler.keep_resident_loads``.
"""

from __future__ import annotations

from ..config import NeuronCoreConfig
from ..program.ir import Instruction, MemSpace, TensorDecl
from .load_cse import load_region, plain_load, without_loads_of
from .reorder import memory_demand
from .tiles import site_key


def keep_resident_loads(instrs: list[Instruction], config: NeuronCoreConfig
                        ) -> list[Instruction]:
    """``instrs`` without the repeated loads of the sites kept resident, their readers reading
    the first load's tile."""
    writes: dict[int, int] = {}  # tensor id -> instructions writing it
    for ins in instrs:
        for a in ins.dsts.values():
            writes[a.tensor.id] = writes.get(a.tensor.id, 0) + 1
    sites: dict[object, dict[tuple, TensorDecl]] = {}  # site -> region -> first tile
    repeats: dict[object, dict[int, TensorDecl]] = {}  # site -> repeat's tile id -> first tile
    for ins in instrs:
        region = _region(ins, writes)
        if region is None:
            continue
        site = site_key(ins.out.tensor)  # (as the scheduler keys sites)
        first = sites.setdefault(site, {}).setdefault(region, ins.out.tensor)
        if first is not ins.out.tensor:
            repeats.setdefault(site, {})[ins.out.tensor.id] = first
    if not repeats:
        return instrs
    _, shares, live = memory_demand(instrs, config)
    demand, capacity = live[MemSpace.SBUF], config.sbuf_usable_bytes_per_partition
    origin: dict[int, TensorDecl] = {}
    for site, moved in repeats.items():
        kept = sum(t.row_bytes for t in sites[site].values())
        ring = shares.get(site, (MemSpace.SBUF, 0))[1]
        if demand - ring + kept <= capacity:
            demand += kept - ring
            origin.update(moved)
    return without_loads_of(instrs, origin) if origin else instrs


def _region(ins: Instruction, writes: dict[int, int]) -> tuple | None:
    """What a load of a kernel input the kernel never writes into a fresh SBUF tile (written by
    that load alone) reads, as a comparable key; None for anything else."""
    if (not plain_load(ins) or ins.srcs["src"].tensor.id in writes
            or writes.get(ins.out.tensor.id) != 1):
        return None
    return load_region(ins)
