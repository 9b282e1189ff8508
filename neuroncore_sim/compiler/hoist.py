"""Loop-invariant compute instructions the compiler computes once (a timing-model assumption).

A compute instruction inside an ``nl.affine_range`` loop that repeats, in the same or a later
iteration of its innermost loop, an earlier one exactly (same opcode, engine, attributes, source
regions and output layout), while none of its sources has been written in between and its
output is a fresh tile, computes the same values again: the compiler keeps the first result
instead (loop-invariant code motion, or common-subexpression elimination within an iteration,
e.g. the mean ``nl.var`` recomputes after an ``nl.mean`` of the same tile; the iterations of an
affine loop are independent, so it may). The timing model gives such repeats no engine time;
the values are unaffected. The schedule finds the repeats before memory is placed and spilled
(a spill reload restores values, it does not change them) and gives them no sources, so a tile
read only by them is not kept live for them (compiler/schedule.py).

Evidence (docs/model.md, "Loop-invariant instructions"): in the fused-Mamba tutorial, v2 loads
``delta`` and ``u`` once per channel tile and multiplies them in every state iteration; its
VectorE time per (state, channel tile) is 3.13 us against v1's 4.21 us, where v1 reloads both
per iteration: the difference is that one 2N fp32 tensor_tensor (0.91 us) and its dependency
overhead.
"""

from __future__ import annotations

from typing import Iterable, MutableMapping

from ..dtypes import dtype_str
from ..program.ir import Engine, Instruction, Opcode

#: Engines whose instructions may be hoisted (TensorE and DMA keep their cost: their repeats
#: move data the compiler cannot keep in place).
_ENGINES = frozenset({Engine.VECTOR, Engine.SCALAR, Engine.GPSIMD})


def _key(ins: Instruction, attr_keys: dict[int, tuple[dict, tuple | None]]) -> tuple | None:
    """What makes two instructions compute the same values, or None if not comparable.
    ``attr_keys``: id of an attrs dict -> (the dict, its key), one per pass (instructions with
    equal attrs share one dict: layout.shared_attrs)."""
    if ins.mask is not None or not ins.loops or ins.engine not in _ENGINES:
        return None
    known = attr_keys.get(id(ins.attrs))
    if known is None or known[0] is not ins.attrs:
        known = attr_keys[id(ins.attrs)] = (ins.attrs, _attrs_key(ins.attrs))
    attrs = known[1]
    if attrs is None:
        return None
    srcs = tuple(sorted([(role, a.tensor.id, a.offset, a.pattern, dtype_str(a.dtype))
                         for role, a in ins.srcs.items()]))
    dsts = tuple(sorted([(role, a.offset, a.pattern, dtype_str(a.dtype))
                         for role, a in ins.dsts.items()]))
    outer = ins.loops[:-1] + (ins.loops[-1][0],)  # same outer iterations, same innermost loop
    return (ins.opcode, ins.engine, attrs, srcs, dsts, outer)


def _attrs_key(attrs: dict[str, object]) -> tuple | None:
    """The attributes as a comparable key; None when one is not hashable (an array)."""
    try:
        key = tuple(sorted(attrs.items()))
        hash(key)
    except TypeError:  # array-valued attributes: never compared
        return None
    return key


def loop_invariant(instructions: Iterable[Instruction]) -> dict[int, int]:
    """The instructions that repeat an earlier one of the same loop with unchanged inputs
    (see the module docstring): repeat id -> id of the first computation, whose result the
    compiler keeps."""
    version: dict[int, int] = {}  # tensor id -> writes so far
    seen: dict[tuple, tuple[tuple[int, ...], int]] = {}  # key -> (source versions, first id)
    attr_keys: dict[int, tuple[dict, tuple | None]] = {}
    out: dict[int, int] = {}
    for ins in instructions:
        # (its output fresh first: cheaper than the key)
        fresh = ins.opcode is not Opcode.NC_MATMUL and not any(
            [a.tensor.id in version for a in ins.dsts.values()])
        key = _key(ins, attr_keys) if fresh else None
        if key is not None:
            versions = tuple(version.get(a.tensor.id, 0) for a in ins.srcs.values())
            first = seen.get(key)
            if first is not None and first[0] == versions:
                out[ins.id] = first[1]
            else:
                seen[key] = (versions, ins.id)
        for a in ins.dsts.values():
            version[a.tensor.id] = version.get(a.tensor.id, 0) + 1
    return out


def read_first_results(deps: MutableMapping[int, tuple[tuple[int, int], ...]],
                       ls_deps: dict[int, tuple[int, ...]], origin: dict[int, int],
                       raw: int, only: Iterable[int] | None = None) -> None:
    """The readers of a loop-invariant repeat read the first computation's result, which the
    compiler keeps: their RAW edges go to it, and the repeat, which is no instruction on the
    hardware, orders nothing (its own edges and the WAR / WAW edges of its output are
    dropped; it stays in its queue as a zero-length marker that waits for nothing). ``raw`` is
    the schedule's RAW edge kind; edited in place. ``only``: the ids of ``deps`` that are
    repeats or have a repeat among their producers, when the caller knows them (the others
    are left as they are: looking at every instruction's edges is slow)."""
    for iid in list(deps) if only is None else only:
        if iid in origin:
            deps[iid] = ()
            continue
        edges = deps[iid]
        if not any(p in origin for p, _ in edges):
            continue
        kept = {(origin.get(p, p), kind) for p, kind in edges
                if p not in origin or kind == raw}
        deps[iid] = tuple(sorted(kept))
    for iid, producers in ls_deps.items():
        if any(p in origin for p in producers):
            ls_deps[iid] = tuple(sorted({origin.get(p, p) for p in producers}))



def without_sources(ins: Instruction) -> Instruction:
    """``ins`` reading nothing: a loop-invariant repeat whose result is the first one's."""
    return Instruction(ins.id, ins.opcode, ins.engine, ins.dsts, {}, ins.attrs, ins.loc,
                       ins.mask, ins.instance, ins.loops)
