"""Loop vectorisation: the iterations of an innermost ``affine_range`` loop merged into wider
instructions.

What neuronx-cc does: the ``nl.affine_range`` reference (SDK 2.20-2.27) says the compiler
vectorises such loops "in current release" (the matmul tutorial uses ``sequential_range`` to
prevent it). The one public count: Autocomp's conv1d trace (SDK 2.26, calibration.md section 3)
profiles 65,536 ``tensor_tensor`` instructions of [128, 3] for its 2,048-iteration loop (not
vectorised), and after the same work is written as a 64-iteration inner loop the instruction
count collapses and the kernel runs 10.7x faster (4.955 -> 0.461 ms).

Model. A loop is vectorised when all of these hold (otherwise its instructions stay as they
are):

* it is innermost (no ``affine_range`` loop inside it; a Python or ``sequential_range`` loop
  inside an iteration only lengthens the body) and has at least two iterations;
* every iteration issues the same body: position by position the same opcode, engine, source
  line and attributes, no mask, and only VectorE / ScalarE / GpSimd element-wise work
  (:data:`VECTORIZABLE`; DMAs, matmuls, scans and accumulating reductions are never merged);
* each operand either moves by a constant stride from one iteration to the next within the
  same partitions (a tile the loop walks along its free dims; stride 0 is a tile every
  iteration reads), or is a tile of its own per iteration that no other iteration touches
  (a tile allocated in the body): the merged instruction then uses one tile of ``n`` times the
  size, from the same allocation site;
* no iteration writes what another iteration reads or writes (bounding boxes of the accesses);
* the merged operands stay within ``vectorize_max_free_elements`` per partition (assumption:
  512, ``nl.tile_size.psum_fmax``; conv1d's 64 x 3 = 192 is vectorised on the hardware, its
  2,048 x 3 = 6,144 is not).

The merged instruction takes an extra free dim (the iteration) right after the partition dim,
belongs to the enclosing iteration (so an outer loop that becomes innermost is tried next), and
sits where the loop's last iteration issued that body position (everything after the loop still
comes after it). Never under ``skip_middle_end_transformations`` / ``no_reorder`` (the caller's
``keeps_order``), ``sequential_range``, ``static_range`` or Python loops (those record no
``affine_range`` iterations).
Switch: ``config.compiler.vectorize``.
"""

from __future__ import annotations

import numpy as np

from ..config import NeuronCoreConfig
from ..program.ir import Access, Engine, Instruction, Opcode, TensorDecl
from .placement import NewIds

#: Element-wise instructions whose iterations merge into one wider instruction. Left out:
#: anything reducing over all of its free elements into one value per partition
#: (activation_reduce, tensor_scalar_reduce, bn_stats), scans, selects with iteration-dependent
#: predicates, random numbers, DMAs and TensorE.
VECTORIZABLE = frozenset({
    Opcode.TENSOR_TENSOR, Opcode.TENSOR_SCALAR, Opcode.TENSOR_COPY, Opcode.ACTIVATION,
    Opcode.TENSOR_REDUCE, Opcode.MEMSET, Opcode.RECIPROCAL, Opcode.SCALAR_TENSOR_TENSOR,
})
_ENGINES = frozenset({Engine.VECTOR, Engine.SCALAR, Engine.GPSIMD})


def vectorize(instrs: list[Instruction], config: NeuronCoreConfig, ids: NewIds
              ) -> list[Instruction]:
    """``instrs`` with every vectorisable innermost ``affine_range`` loop merged, innermost
    first, until no loop is left to merge."""
    while True:
        merged = _merge_innermost(instrs, config, ids)
        if merged is None:
            return instrs
        instrs = merged


def _merge_innermost(instrs: list[Instruction], config: NeuronCoreConfig, ids: NewIds
                     ) -> list[Instruction] | None:
    """One round: every innermost loop that can be merged is; None if none could."""
    bodies: dict[int, dict[int, list[int]]] = {}
    outer: set[int] = set()
    users: dict[int, list[int]] = {}  # tensor id -> indices of the instructions touching it
    for k, ins in enumerate(instrs):
        for lid, _ in ins.loops[:-1]:
            outer.add(lid)
        if ins.loops:
            lid, it = ins.loops[-1]
            bodies.setdefault(lid, {}).setdefault(it, []).append(k)
        for a in (*ins.srcs.values(), *ins.dsts.values()):
            users.setdefault(a.tensor.id, []).append(k)
    replace: dict[int, Instruction | None] = {}  # index -> merged instruction (None: dropped)
    for lid, iterations in bodies.items():
        if lid in outer:
            continue
        merged = _merge_loop(instrs, iterations, users, config, ids)
        if merged is None:
            continue
        for k in (k for body in iterations.values() for k in body):
            replace[k] = None
        last = iterations[max(iterations)]
        for k, ins in zip(last, merged):
            replace[k] = ins
    if not replace:
        return None
    return [replace.get(k, ins) for k, ins in enumerate(instrs) if replace.get(k, ins)
            is not None]


def _merge_loop(instrs: list[Instruction], iterations: dict[int, list[int]],
                users: dict[int, list[int]], config: NeuronCoreConfig, ids: NewIds
                ) -> list[Instruction] | None:
    """The merged body of one loop, or None when the loop cannot be vectorised."""
    n = len(iterations)
    if n < 2 or sorted(iterations) != list(range(n)):
        return None
    bodies = [[instrs[k] for k in iterations[it]] for it in range(n)]
    first = bodies[0]
    if any(len(body) != len(first) for body in bodies):
        return None
    for p, ins in enumerate(first):
        if ins.opcode not in VECTORIZABLE or ins.engine not in _ENGINES or (
                ins.opcode is Opcode.ACTIVATION and "reduce_res" in ins.dsts):
            return None
        for body in bodies[1:]:
            other = body[p]
            if (other.opcode is not ins.opcode or other.engine is not ins.engine
                    or other.loc != ins.loc or other.attrs != ins.attrs
                    or other.srcs.keys() != ins.srcs.keys()
                    or other.dsts.keys() != ins.dsts.keys()):
                return None
        if any(body[p].mask is not None for body in bodies):
            return None
    members = {k: it for it, body in iterations.items() for k in body}  # index -> iteration
    merged_tiles: dict[tuple[int, ...], TensorDecl] = {}
    # tile the iterations share -> (iteration, access, whether it writes) of every access
    shared: dict[int, list[tuple[int, Access, bool]]] = {}
    out: list[Instruction] = []
    for p, ins in enumerate(first):
        roles: dict[str, dict[str, Access]] = {"srcs": {}, "dsts": {}}
        for side in ("srcs", "dsts"):
            for role in getattr(ins, side):
                accesses = [getattr(body[p], side)[role] for body in bodies]
                merged = _merged_access(accesses, users, members, merged_tiles, ids)
                if merged is None or merged.free_size > config.vectorize_max_free_elements:
                    return None
                roles[side][role] = merged
                if merged.tensor is accesses[0].tensor:  # a tile the iterations share
                    shared.setdefault(merged.tensor.id, []).extend(
                        (it, a, side == "dsts") for it, a in enumerate(accesses))
        out.append(Instruction(ids.next_instruction(), ins.opcode, ins.engine, roles["dsts"],
                               roles["srcs"], _widened_attrs(ins.attrs, n), ins.loc, None,
                               ins.instance, ins.loops[:-1]))
    if not all(_independent(entries) for entries in shared.values()
               if any(w for _, _, w in entries)):
        return None
    return out


def _merged_access(accesses: list[Access], users: dict[int, list[int]],
                   members: dict[int, int], merged_tiles: dict[tuple[int, ...], TensorDecl],
                   ids: NewIds) -> Access | None:
    """One access covering every iteration's, with the iteration as a free dim after the
    partition dim; None when the iterations' accesses are not of one of the two kinds."""
    a0, n = accesses[0], len(accesses)
    if not a0.pattern or a0.view_dtype is not None or any(
            a.pattern != a0.pattern or a.view_dtype is not None for a in accesses):
        return None
    t0 = a0.tensor
    if all(a.tensor is t0 for a in accesses):  # one tile the loop walks along its free dims
        row = max(t0.row_size, 1)
        if any(a.offset // row != a0.offset // row for a in accesses):
            return None
        step = accesses[1].offset - a0.offset
        if any(a.offset != a0.offset + i * step for i, a in enumerate(accesses)):
            return None
        return Access(t0, a0.offset, (a0.pattern[0], (step, n), *a0.pattern[1:]))
    # a tile of its own per iteration: each touched only by its iteration's instructions
    tiles = [a.tensor for a in accesses]
    if (len({t.id for t in tiles}) != n
            or any(t.kind != "tile" or t.placement is not None or t.partition_axis != 0
                   or t.shape != t0.shape or t.space is not t0.space or t.dtype != t0.dtype
                   or t.site != t0.site for t in tiles)
            or any(a.offset != a0.offset for a in accesses)):
        return None
    key = tuple(t.id for t in tiles)
    merged = merged_tiles.get(key)
    if merged is None:
        if any(members.get(k) != it for it, t in enumerate(tiles) for k in users[t.id]):
            return None  # touched outside its own iteration
        merged = merged_tiles[key] = TensorDecl(
            ids.next_tensor(), f"{t0.name}x{n}", t0.space, (t0.shape[0], n, *t0.shape[1:]),
            t0.dtype, 0, "tile", t0.site)
    row, wide = t0.row_size, merged.row_size
    (pstride, parts), *free = a0.pattern
    if row == 0 or pstride % row or a0.offset % row + a0.col_hi - a0.col_lo > row:
        return None
    offset = a0.offset // row * wide + a0.offset % row
    return Access(merged, offset, ((pstride // row * wide, parts), (row, n), *free))


def _independent(entries: list[tuple[int, Access, bool]]) -> bool:
    """Whether no iteration writes elements that another iteration reads or writes (the
    accesses' row and column bounding boxes; conservative for strided patterns)."""
    it = np.array([e[0] for e in entries])
    rlo = np.array([e[1].row_lo for e in entries])
    rhi = np.array([e[1].row_hi for e in entries])
    clo = np.array([e[1].col_lo for e in entries])
    chi = np.array([e[1].col_hi for e in entries])
    write = np.array([e[2] for e in entries])
    overlap = ((rlo[:, None] < rhi[None, :]) & (rlo[None, :] < rhi[:, None])
               & (clo[:, None] < chi[None, :]) & (clo[None, :] < chi[:, None]))
    conflict = overlap & (it[:, None] != it[None, :]) & (write[:, None] | write[None, :])
    return not conflict.any()


def _widened_attrs(attrs: dict[str, object], n: int) -> dict[str, object]:
    """The attributes of the merged instruction: reduction axes move past the new dim, and
    ``vectorized`` records how many iterations it covers."""
    out = dict(attrs)
    axes = out.get("axes")
    if isinstance(axes, tuple):
        out["axes"] = tuple(a + 1 if a >= 1 else a for a in axes)
    out["vectorized"] = n
    return out
