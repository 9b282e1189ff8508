"""Repeated loads of one iteration merged: a load that reads again, later in the same iteration,
exactly what an earlier load of another kernel line read is dropped, and its readers read the
first load's tile (common-subexpression elimination of loads).

What neuronx-cc does (measured, SDK 2.24/2.25, ``--disable-dge``; calibration.md section 3):
AccelOpt's optimised RoPE kernel (``samples/nki/rope_optimized.py``, its best RoPE plan, 3.333 ms,
1.30x its NKIBench baseline) loads each of its [64, 2048] fp32 slices of ``x``, ``cos`` and ``sin``
twice per iteration, once for each product that reads it (512 MiB of loads as written); its
profile reads 256 MiB from HBM, each slice once. NKIBench's rmsnorm_matmul loads every
[128, 1024] row block of ``x`` twice in one iteration (once for the sum of squares, once to
scale it; 32 MiB as written) beside 8 MiB of weights, and AccelOpt's best plan for it, the same
loads but each weight block loaded once, reads 24 MiB: ``x`` once. A compiler that sees two
loads of one unchanged kernel input region in one iteration keeps the first tile; no memory is
weighed (the first tile lives on only to the end of the iteration).

Model. A load is a *repeat* when all of these hold:

* it reads a kernel input the kernel never writes, with no mask, into an on-chip tile the
  compiler places (no direct allocation), exactly as an earlier load does (same input region,
  pattern and dtype, same destination offset, pattern and tile layout);
* both loads run in the same iteration of every enclosing ``affine_range`` loop, and the repeat
  is on a later line of the same file (a Python or ``sequential_range`` loop records no
  iterations: a repeat on an earlier line or the same line may be the next iteration's, which
  only :mod:`.resident_loads` may keep);
* every write of either tile is such a load, each to its own block (a block tensor written one
  block per iteration qualifies).

A tile is merged into the earlier one only when every one of its loads is a repeat of a load of
that same earlier tile; then its loads are dropped and its readers read the earlier tile at the
same offsets. The values are the same by construction (the values layer still executes every
load as written). Switch: ``config.compiler.merge_repeated_loads``.
"""

from __future__ import annotations

from ..dtypes import dtype_str
from ..program.ir import Access, Instruction, MemSpace, Opcode, TensorDecl


def merge_repeated_loads(instrs: list[Instruction]) -> list[Instruction]:
    """``instrs`` without the loads that repeat an earlier load of the same iteration, their
    readers reading the earlier tile (module docstring)."""
    loaded = _loaded_tiles(instrs)
    if len(loaded) < 2:
        return instrs
    first: dict[tuple, Instruction] = {}  # (region, iteration) -> the first load of it
    origin: dict[int, TensorDecl | None] = {}  # tile id -> the earlier tile (None: not merged)
    for ins in instrs:
        if ins.opcode is not Opcode.DMA_COPY or ins.out.tensor.id not in loaded:
            continue
        key = (load_region(ins), ins.loops)
        earlier = first.setdefault(key, ins)
        tile = ins.out.tensor
        if earlier is ins or earlier.out.tensor is tile or not _later_line(earlier, ins):
            origin[tile.id] = None  # a load of its own: the tile is not a repeat's
            continue
        was = origin.setdefault(tile.id, earlier.out.tensor)
        if was is not earlier.out.tensor:
            origin[tile.id] = None  # repeats of two different tiles (or of none)
    merged = {tid: t for tid, t in origin.items() if t is not None}
    # A tile merged into one that is itself merged away: chase to the one kept.
    for tid, t in list(merged.items()):
        while t.id in merged:
            t = merged[t.id]
        merged[tid] = t
    return without_loads_of(instrs, merged) if merged else instrs


def without_loads_of(instrs: list[Instruction], origin: dict[int, TensorDecl]
                     ) -> list[Instruction]:
    """``instrs`` without the loads into the tiles of ``origin`` (tile id -> the tile that holds
    the same values, of the same layout), whose readers read that tile at the same offsets."""
    out = []
    for ins in instrs:
        if ins.opcode is Opcode.DMA_COPY and ins.out.tensor.id in origin:
            continue
        if any(a.tensor.id in origin for a in ins.srcs.values()):
            srcs = {r: _retarget(a, origin) for r, a in ins.srcs.items()}
            ins = Instruction(ins.id, ins.opcode, ins.engine, ins.dsts, srcs, ins.attrs,
                              ins.loc, ins.mask, ins.instance, ins.loops)
        out.append(ins)
    return out


def _loaded_tiles(instrs: list[Instruction]) -> set[int]:
    """Ids of the tiles every write of which is a plain load of a kernel input the kernel never
    writes, each load to its own block."""
    inputs_written: set[int] = set()
    blocks: dict[int, set[tuple]] = {}
    spoiled: set[int] = set()
    for ins in instrs:
        for a in ins.dsts.values():
            t = a.tensor
            if t.kind == "input":
                inputs_written.add(t.id)
            if not plain_load(ins) or a is not ins.out:
                spoiled.add(t.id)
                continue
            block = (a.offset, a.pattern)
            seen = blocks.setdefault(t.id, set())
            if block in seen:
                spoiled.add(t.id)
            seen.add(block)
    plain = {tid for tid in blocks if tid not in spoiled}
    return plain - _loaded_from_written(instrs, inputs_written)


def _loaded_from_written(instrs: list[Instruction], inputs_written: set[int]) -> set[int]:
    """Tiles loaded from an input the kernel also writes (their loads are not comparable)."""
    return {ins.out.tensor.id for ins in instrs
            if ins.opcode is Opcode.DMA_COPY and "src" in ins.srcs
            and ins.srcs["src"].tensor.id in inputs_written}


def plain_load(ins: Instruction) -> bool:
    """A load of a kernel input into a compiler-placed on-chip tile, nothing else to it."""
    if ins.opcode is not Opcode.DMA_COPY or ins.mask is not None or "src" not in ins.srcs:
        return False
    src, dst = ins.srcs["src"], ins.out
    t = dst.tensor
    return (src.tensor.kind == "input" and dst.space is MemSpace.SBUF and t.kind == "tile"
            and t.placement is None and src.view_dtype is None and dst.view_dtype is None
            and ins.attrs.get("dst_rmw_op") is None)


def load_region(ins: Instruction) -> tuple:
    """What a plain load reads and where in its tile it puts it, as a comparable key."""
    src, dst = ins.srcs["src"], ins.out
    t = dst.tensor
    return (src.tensor.id, src.offset, src.pattern, dtype_str(src.dtype), dst.offset,
            dst.pattern, t.shape, t.partition_axis, dtype_str(t.dtype))


def _later_line(earlier: Instruction, ins: Instruction) -> bool:
    """``ins`` is on a later line of the same file as ``earlier``."""
    a, b = earlier.loc, ins.loc
    return a is not None and b is not None and a.filename == b.filename and a.lineno < b.lineno


def _retarget(a: Access, origin: dict[int, TensorDecl]) -> Access:
    """``a`` on the tile holding its values when it reads a dropped load's (same layout: same
    offset and pattern)."""
    kept = origin.get(a.tensor.id)
    return a if kept is None else Access(kept, a.offset, a.pattern, a.view_dtype)
