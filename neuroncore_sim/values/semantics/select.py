"""The meaning of the select, sort, gather, shuffle and dynamic-copy instructions, as numpy.

Same contract as :mod:`neuroncore_sim.values.semantics.core` (``fn(srcs, attrs, outs, engine)`` returning
role -> values); these functions are registered into its ``SEMANTICS`` table. Roles and attrs
are listed in ``ir.OPCODE_DOC``.

Instructions that write only part of their destination (predicated copies, shuffles, dynamic
destinations) read the destination's current values as the source role ``old`` and return the
whole region, so the executor needs no special cases.

Sources: the ``nki.isa`` docstrings (v2.26.1) of each instruction; shared/arch.md section 2.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from ...dtypes import cast
from ...errors import AccessError, KernelError, expected
from ...program.ir import Engine, Opcode
from .core import F32, Arrays, Out, Outs, Semantic, f32, tensor_copy

#: Partitions each of the 8 GpSimd cores reaches (arch.md 1.8); local_gather works per core.
GPSIMD_CORE_PARTITIONS = 16
#: Entries of an nc_stream_shuffle mask: one per partition of a 32-partition quadrant.
SHUFFLE_QUADRANT = 32
#: nc_stream_shuffle mask value meaning "leave this destination partition unchanged".
SHUFFLE_KEEP = 255


def _rows(x: np.ndarray) -> np.ndarray:
    """``x`` as [partitions, elements per partition]."""
    return x.reshape(x.shape[0] if x.ndim else 1, -1)


def _scalar_fill(value: object, dt: np.dtype) -> np.ndarray:
    """A scalar operand in dtype ``dt``: integers reach integer tiles exactly."""
    exact_int = isinstance(value, (int, np.integer)) and dt.kind in "iub"
    return cast(np.asarray(value, np.int64 if exact_int else F32), dt)


def _predicate(srcs: Arrays, attrs: Mapping, shape: tuple[int, ...]) -> np.ndarray:
    """Where the predicate tile is true (non-zero), flipped by ``reverse_pred``."""
    keep = srcs["predicate"].reshape(shape) != 0
    return ~keep if attrs.get("reverse_pred") else keep


# --- dynamic copies ----------------------------------------------------------------------------

def _dynamic_index(srcs: Arrays, attrs: Mapping, span: int) -> int:
    """Position along a dynamic access's offset axis (axis 1) of the runtime offset value."""
    value = int(np.asarray(srcs["offset"]).reshape(-1)[0])
    lo = int(attrs["offset_lo"])  # type: ignore[call-overload]
    if not 0 <= value - lo < span:
        raise AccessError(expected("dynamic offset read from SBUF",
                                   f"{lo}..{lo + span - 1} (the access must stay inside its "
                                   "tensor)", value))
    return value - lo


def tensor_copy_dynamic_src(srcs: Arrays, attrs: Mapping, outs: Outs, engine: Engine) -> dict:
    """out = src[:, offset - offset_lo], copied as tensor_copy on the same engine."""
    src = srcs["src"]
    k = _dynamic_index(srcs, attrs, src.shape[1])
    return tensor_copy({"src": src[:, k]}, attrs, outs, engine)


def tensor_copy_dynamic_dst(srcs: Arrays, attrs: Mapping, outs: Outs, engine: Engine) -> dict:
    """out = old, with the slice at the runtime offset replaced by src (tensor_copy rules)."""
    old = srcs["old"]
    k = _dynamic_index(srcs, attrs, old.shape[1])
    out = old.copy()
    part = out[:, k]
    new = tensor_copy({"src": srcs["src"]}, attrs, {"out": Out(part.shape, old.dtype)}, engine)
    part[...] = cast(new["out"].reshape(part.shape), old.dtype)
    return {"out": out}


# --- predicated copy and select ------------------------------------------------------------------

def tensor_copy_predicated(srcs: Arrays, attrs: Mapping, outs: Outs, engine: Engine) -> dict:
    """out = predicate ? src : old (src and out share a dtype: a bit-exact copy)."""
    old = srcs["old"]
    src = srcs.get("src")
    if src is None:
        value = _scalar_fill(attrs["src_value"], old.dtype)
    else:
        value = (src if src.dtype == old.dtype else cast(f32(src), old.dtype)).reshape(old.shape)
    return {"out": np.where(_predicate(srcs, attrs, old.shape), value, old)}


def select_reduce(srcs: Arrays, attrs: Mapping, outs: Outs, engine: Engine) -> dict:
    """out = predicate ? on_true : on_false; reduce_res = row max of out (the executor applies
    the accumulator-register command)."""
    on_true, dt = srcs["on_true"], outs["out"].dtype
    keep = _predicate(srcs, attrs, on_true.shape)
    tile = srcs.get("on_false")
    false = (f32(attrs["on_false_value"]) if tile is None
             else f32(tile).reshape((tile.shape[0],) + (1,) * (on_true.ndim - 1)))
    if on_true.dtype == dt:  # bit-exact for the selected elements
        out = np.where(keep, on_true, cast(np.broadcast_to(false, on_true.shape), dt))
    else:
        out = np.where(keep, f32(on_true), false)
    result = {"out": out}
    if "reduce_res" in outs or attrs.get("reduce_cmd") not in (None, "idle"):
        result["reduce_res"] = f32(_rows(out)).max(axis=1, keepdims=True)
    return result


# --- gather, top-8 and match --------------------------------------------------------------------

def local_gather(srcs: Arrays, attrs: Mapping, outs: Outs, engine: Engine) -> dict:
    """Per GpSimd core (16 partitions): the core's indices, partition-major, pick
    ``num_elem_per_idx`` contiguous elements of each partition's own data."""
    src, index = _rows(srcs["src"]), _rows(srcs["index"]).astype(np.int64)
    n_elem, n_valid = int(attrs["num_elem_per_idx"]), int(attrs["num_valid_indices"])
    out = np.empty((src.shape[0], n_valid, n_elem), src.dtype)
    step = np.arange(n_elem)
    for g in range(0, src.shape[0], GPSIMD_CORE_PARTITIONS):
        rows = slice(g, g + GPSIMD_CORE_PARTITIONS)
        idx = index[rows].reshape(-1, order="F")[:n_valid]
        if idx.size and (idx.min() < 0 or idx.max() + n_elem > src.shape[1]):
            raise AccessError(expected(
                f"local_gather indices of partitions {g}..{g + GPSIMD_CORE_PARTITIONS - 1}",
                f"0..{src.shape[1] - n_elem} (elements per partition minus num_elem_per_idx)",
                f"{int(idx.min())}..{int(idx.max())}"))
        out[rows] = src[rows][:, idx[:, None] + step]
    return {"out": out}


def max8(srcs: Arrays, attrs: Mapping, outs: Outs, engine: Engine) -> dict:
    """out[P, 8] = the 8 largest values of each partition in descending order (fp32)."""
    x = _rows(f32(srcs["src"]))
    return {"out": -np.sort(-x, axis=1)[:, :8]}


def _matches(data: np.ndarray, vals: np.ndarray) -> np.ndarray:
    """[P, 8, N] where data (fp32, [P, N]) equals each of the 8 vals of its partition."""
    return data[:, None, :] == vals[:, :, None]


def nc_find_index8(srcs: Arrays, attrs: Mapping, outs: Outs, engine: Engine) -> dict:
    """out[P, 8] = index of the first occurrence of each val in its partition of data."""
    data, vals = _rows(f32(srcs["data"])), _rows(f32(srcs["vals"]))
    eq = _matches(data, vals)
    found = eq.any(axis=2)
    if not found.all():
        p, j = (int(i) for i in np.argwhere(~found)[0])
        raise KernelError(expected(f"vals[{p}, {j}] = {vals[p, j]}",
                                   "a value present in that partition of data (the hardware "
                                   "result is undefined otherwise)", "no match"))
    return {"out": eq.argmax(axis=2)}


def nc_match_replace8(srcs: Arrays, attrs: Mapping, outs: Outs, engine: Engine) -> dict:
    """Replace the first occurrence of each val (in order) with imm; dst_idx gets the positions.

    As the documented numpy equivalent: a val with no match replaces nothing (index 0).
    """
    data, vals = srcs["data"], _rows(f32(srcs["vals"]))
    x = _rows(f32(data)).copy()
    imm, rows = F32(attrs["imm"]), np.arange(x.shape[0])
    idx = np.zeros(vals.shape, np.int64)
    hit = np.zeros(x.shape, bool)
    for j in range(vals.shape[1]):  # sequential: a repeated val takes the next occurrence
        eq = x == vals[:, j:j + 1]
        has = eq.any(axis=1)
        pos = eq.argmax(axis=1)
        idx[:, j] = np.where(has, pos, 0)
        x[rows[has], pos[has]] = imm
        hit[rows[has], pos[has]] = True
    dt = outs["out"].dtype
    if data.dtype == dt:  # untouched elements stay bit-exact
        out = _rows(data).copy()
        out[hit] = cast(np.asarray([imm]), dt)[0]
    else:
        out = x
    result = {"out": out}
    if "dst_idx" in outs:
        result["dst_idx"] = idx
    return result


# --- shuffle and sequence bounds ----------------------------------------------------------------

def nc_stream_shuffle(srcs: Arrays, attrs: Mapping, outs: Outs, engine: Engine) -> dict:
    """out[32q + i] = src[32q + mask[i]] per quadrant q; mask value 255 keeps old[32q + i]."""
    src, old = _rows(srcs["src"]), srcs["old"]
    out = _rows(old).copy()
    mask = np.asarray(attrs["shuffle_mask"], np.int64)  # type: ignore[arg-type]
    dst_rows = np.arange(out.shape[0])
    pick = mask[dst_rows % SHUFFLE_QUADRANT]
    moved = pick != SHUFFLE_KEEP
    src_rows = (dst_rows // SHUFFLE_QUADRANT) * SHUFFLE_QUADRANT + pick
    values = src[src_rows[moved]]
    out[moved] = values if values.dtype == out.dtype else cast(f32(values), out.dtype)
    return {"out": out}


def sequence_bounds(srcs: Arrays, attrs: Mapping, outs: Outs, engine: Engine) -> dict:
    """out[0, 0, i] / out[0, 1, i] = start / end (exclusive) of the run of equal segment ids
    holding element i; padding (id 0) gives start N and end -1."""
    ids = srcs["segment_ids"].reshape(-1)
    n = ids.size
    i = np.arange(n)
    first = np.ones(n, bool)
    first[1:] = ids[1:] != ids[:-1]
    last = np.ones(n, bool)
    last[:-1] = ids[:-1] != ids[1:]
    start = np.maximum.accumulate(np.where(first, i, 0))
    end = np.minimum.accumulate(np.where(last, i + 1, n)[::-1])[::-1]
    pad = ids == 0
    bounds = np.stack([np.where(pad, n, start), np.where(pad, -1, end)])
    return {"out": bounds[None]}


#: Opcode -> meaning, merged into ``semantics.SEMANTICS``.
SELECT_SEMANTICS: dict[Opcode, Semantic] = {
    Opcode.TENSOR_COPY_DYNAMIC_SRC: tensor_copy_dynamic_src,
    Opcode.TENSOR_COPY_DYNAMIC_DST: tensor_copy_dynamic_dst,
    Opcode.TENSOR_COPY_PREDICATED: tensor_copy_predicated,
    Opcode.SELECT_REDUCE: select_reduce,
    Opcode.LOCAL_GATHER: local_gather,
    Opcode.MAX8: max8,
    Opcode.NC_FIND_INDEX8: nc_find_index8,
    Opcode.NC_MATCH_REPLACE8: nc_match_replace8,
    Opcode.NC_STREAM_SHUFFLE: nc_stream_shuffle,
    Opcode.SEQUENCE_BOUNDS: sequence_bounds,
}
