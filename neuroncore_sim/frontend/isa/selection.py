"""``nki.isa`` select, sort, gather and shuffle instructions, and the NeuronCore-v3-only names.

Re-exported by :mod:`neuroncore_sim.frontend.isa` (``nisa``). Each function checks the rules of
its NKI API reference page (docs 2.26.1; shared/arch.md section 2), then records one
instruction (roles and attrs: ``ir.OPCODE_DOC``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...program import ops
from ...dtypes import dtype_name, is_float, to_dtype
from ...errors import (AccessError, DTypeError, KernelError, MemorySpaceError, ShapeError,
                      UnsupportedError)
from ...program.ir import Engine, MemSpace, Opcode
from .. import tracer as _tracer
from ..operands import fail as _fail, require_tile as _tile
from ..operands import issue, issue_into, mask_box, op_name, operand, scalar_value
from ..broadcast import per_partition
from ..tensors.tensor import NkiTensor

#: Elements per partition max8 / nc_find_index8 / nc_match_replace8 accept (API reference).
TOPK_MIN_ELEMENTS, TOPK_MAX_ELEMENTS = 8, 16384
#: local_gather: partitions per GpSimd core, allowed num_elem_per_idx, indices per core.
GATHER_CORE_PARTITIONS = 16
GATHER_ELEMS_PER_INDEX = (1, 2, 4, 8, 16, 32)
GATHER_MAX_INDICES = 4096

#: Names of the 2.27+ ``nki.isa`` API that exist for NeuronCore-v3 or later only (arch.md 2, 6).
V3_ONLY = frozenset({
    "exponential", "activate2", "nc_matmul_mx", "quantize_mx", "tensor_scalar_cumulative",
    "nc_n_gather", "dma_compute", "rng", "rand2", "register_alloc", "register_move",
    "register_load", "register_store", "core_barrier", "sendrecv", "topk",
    "nonzero_with_count", "matmul_perf_mode",
})


class fp32:  # noqa: N801  (nki.isa.fp32)
    """FP32 constants: ``fp32.min`` is the bit pattern 0xff7fffff, float32's lowest value."""

    min = float(np.finfo(np.float32).min)


#: ``nki.isa.dma_engine`` (2.26.1 names the DMA engine as a module constant).
dma_engine = Engine.DMA


def v3_error(name: str) -> UnsupportedError:
    """The error for an instruction or mode that NeuronCore-v2 does not have."""
    msg = f"{name} is not available on NeuronCore-v2 (NeuronCore-v3 or later)"
    tr = _tracer.active_or_none()
    return tr.fail(UnsupportedError, msg) if tr is not None else UnsupportedError(msg)  # type: ignore[return-value]


def _free(t: NkiTensor) -> int:
    return math.prod(t.shape[1:])


def _like(t: NkiTensor, ref: NkiTensor, what: str, mask: Any) -> NkiTensor:
    """``t`` checked to have ``ref``'s partitions and elements per partition."""
    if t.shape[:1] != ref.shape[:1] or _free(t) != _free(ref):
        raise _fail(ShapeError, f"{what}: expected {ref.shape[0]} partitions x {_free(ref)} "
                    f"elements (shape {list(ref.shape)}), found {list(t.shape)}")
    if mask is not None and t.shape != ref.shape:
        raise _fail(ShapeError, f"{what}: a mask needs operands of the dst shape "
                    f"{list(ref.shape)}, found {list(t.shape)}")
    return t


def _dtypes(t: NkiTensor, allowed: tuple[str, ...], what: str) -> None:
    if dtype_name(t.dtype) not in allowed:
        raise _fail(DTypeError, f"{what}: expected {' / '.join(allowed)}, found "
                    f"{dtype_name(t.dtype)}")


def _into_dtype(dtype: Any, dst: NkiTensor, what: str) -> None:
    """``dtype=`` of an instruction that writes a given dst: only dst's own dtype."""
    if dtype is not None and to_dtype(dtype, f"{what} dtype") != dst.dtype:
        raise _fail(DTypeError, f"{what} dtype: the result is written into dst; expected "
                    f"{dtype_name(dst.dtype)}, found {dtype_name(to_dtype(dtype))}")


def _not_both_psum(a: NkiTensor | None, b: NkiTensor, what: str) -> None:
    if a is not None and a.space is MemSpace.PSUM and b.space is MemSpace.PSUM:
        raise _fail(MemorySpaceError, f"{what}: at most one of them may be in psum, found two")


def _no_mask(mask: Any, what: str) -> None:
    if mask is not None:
        raise _fail(UnsupportedError, f"{what}: mask= is not supported yet")


def _sbuf(t: NkiTensor, what: str) -> NkiTensor:
    if t.space is not MemSpace.SBUF:
        raise _fail(MemorySpaceError, f"{what}: GpSimd reaches sbuf only; found "
                    f"{t.space.value}")
    return t


# --- predicated copy and select (VectorE) --------------------------------------------------------
def tensor_copy_predicated(*, src: Any, dst: Any, predicate: Any, reverse_pred: bool = False,
                           mask: Any = None, dtype: Any = None) -> None:
    """Copy ``src`` (a tile or a scalar) into ``dst`` where ``predicate`` is non-zero (VectorE);
    elsewhere ``dst`` keeps its values."""
    what = "tensor_copy_predicated"
    d = _tile(dst, f"{what} dst")
    p = _like(_tile(predicate, f"{what} predicate"), d, f"{what} predicate", mask)
    _dtypes(p, ("uint8", "uint16", "uint32", "bool"), f"{what} predicate")  # bool: uint8
    srcs, attrs = {"predicate": p}, {"src_value": None, "reverse_pred": bool(reverse_pred)}
    if isinstance(src, NkiTensor):
        srcs["src"] = _like(src, d, f"{what} src", mask)
        if src.dtype != d.dtype:
            raise _fail(DTypeError, f"{what}: src and dst must share a dtype; expected "
                        f"{dtype_name(d.dtype)}, found {dtype_name(src.dtype)}")
        _not_both_psum(src, p, f"{what} src and predicate")
    else:
        attrs["src_value"] = scalar_value(src, f"{what} src")
    _into_dtype(dtype, d, what)
    issue_into(what, Opcode.TENSOR_COPY_PREDICATED, Engine.VECTOR, d, srcs, attrs, mask=mask,
               reads_dst=True)


def select_reduce(*, dst: Any, predicate: Any, on_true: Any, on_false: Any,
                  reduce_res: Any = None, reduce_cmd: Any = "idle", reduce_op: Any = np.amax,
                  reverse_pred: bool = False, mask: Any = None, dtype: Any = None) -> None:
    """``dst = predicate ? on_true : on_false`` (VectorE), with the row max optionally kept in
    the VectorE accumulator registers and read into ``reduce_res``."""
    what = "select_reduce"
    d = _tile(dst, f"{what} dst")
    t = _like(_tile(on_true, f"{what} on_true"), d, f"{what} on_true", mask)
    p = _like(_tile(predicate, f"{what} predicate"), d, f"{what} predicate", mask)
    _dtypes(p, ("int8", "uint8", "int16", "uint16", "bool"), f"{what} predicate")
    if dtype_name(t.dtype) in ("tfloat32", "int32", "uint32"):
        raise _fail(DTypeError, f"{what} on_true: expected any dtype but tfloat32 / int32 / "
                    f"uint32, found {dtype_name(t.dtype)}")
    _not_both_psum(t, p, f"{what} on_true and predicate")
    srcs = {"predicate": p, "on_true": t}
    attrs: dict[str, object] = {"on_false_value": None, "reverse_pred": bool(reverse_pred),
                                "reduce_op": op_name(reduce_op, f"{what} reduce_op",
                                                     frozenset({"maximum"}))}
    if isinstance(on_false, NkiTensor):
        srcs["on_false"] = _column(on_false, d, f"{what} on_false")
    else:
        attrs["on_false_value"] = scalar_value(on_false, f"{what} on_false")
    cmd = str(getattr(reduce_cmd, "name", reduce_cmd))
    if cmd not in ("idle", "reset", "reduce", "reset_reduce"):
        raise _fail(KernelError, f"{what} reduce_cmd: expected idle, reset, reduce or "
                    f"reset_reduce, found {reduce_cmd!r}")
    extra = {}
    if reduce_res is not None:
        extra["reduce_res"] = _column(reduce_res, d, f"{what} reduce_res")
        if not is_float(reduce_res.dtype):
            raise _fail(DTypeError, f"{what} reduce_res: expected a float dtype, found "
                        f"{dtype_name(reduce_res.dtype)}")
        cmd = "reset_reduce" if cmd == "idle" else cmd  # reduce_res alone: this row's max
    attrs["reduce_cmd"] = cmd
    _into_dtype(dtype, d, what)
    issue_into(what, Opcode.SELECT_REDUCE, Engine.VECTOR, d, srcs, attrs, mask=mask,
               extra_dsts=extra)


def _column(x: Any, ref: NkiTensor, what: str) -> NkiTensor:
    """A per-partition [P, 1] tile for ``ref``."""
    return per_partition(x, ref, what)


def range_select(*, on_true_tile: Any, comp_op0: Any, comp_op1: Any, bound0: Any, bound1: Any,
                 reduce_cmd: Any = "idle", reduce_res: Any = None, reduce_op: Any = np.amax,
                 range_start: Any = 0, on_false_value: Any = fp32.min, mask: Any = None,
                 dtype: Any = None) -> NkiTensor:
    """Select by comparing free-axis indices with bounds: NeuronCore-v3 or later only."""
    raise v3_error("range_select")


# --- cross-partition reduce and gather (GpSimd) ---------------------------------------------------
def tensor_partition_reduce(op: Any, data: Any, *, mask: Any = None,
                            dtype: Any = None) -> NkiTensor:
    """Reduce across partitions: [P, F...] -> [1, F...] with add, max, bitwise_or or
    bitwise_and (GpSimd)."""
    what = "tensor_partition_reduce"
    d = _sbuf(_tile(data, f"{what} data"), f"{what} data")
    name = op_name(op, f"{what} op", frozenset({"add", "maximum", "bitwise_or", "bitwise_and"}))
    if name in ops.BITVEC_OPS and is_float(d.dtype):
        raise _fail(DTypeError, f"{what}: bit-vector op {name!r} needs integer operands; "
                    f"expected an int dtype, found {dtype_name(d.dtype)}")
    out_dtype = d.dtype if dtype is None else to_dtype(dtype, f"{what} dtype")
    return issue(what, Opcode.TENSOR_PARTITION_REDUCE, Engine.GPSIMD, (1,) + d.shape[1:],
                 out_dtype, {"data": d}, {"op": name}, mask=mask)


def local_gather(src_buffer: Any, index: Any, num_elem_per_idx: int = 1,
                 num_valid_indices: Any = None, *, mask: Any = None) -> NkiTensor:
    """Gather within each GpSimd core's 16 partitions: each partition reads
    ``num_elem_per_idx`` contiguous elements of its own data at each of the core's indices."""
    what = "local_gather"
    src = _sbuf(_tile(src_buffer, f"{what} src_buffer"), f"{what} src_buffer")
    idx = _sbuf(_tile(index, f"{what} index"), f"{what} index")
    _dtypes(idx, ("uint16",), f"{what} index")
    p = src.shape[0]
    if idx.shape[0] != p or p % GATHER_CORE_PARTITIONS:
        raise _fail(ShapeError, f"{what}: src_buffer and index need the same partition count, "
                    f"a multiple of {GATHER_CORE_PARTITIONS}; found {p} and {idx.shape[0]}")
    e = int(num_elem_per_idx)
    if e not in GATHER_ELEMS_PER_INDEX:
        raise _fail(KernelError, f"{what} num_elem_per_idx: expected one of "
                    f"{list(GATHER_ELEMS_PER_INDEX)}, found {num_elem_per_idx}")
    per_core = GATHER_CORE_PARTITIONS * _free(idx)
    if per_core > GATHER_MAX_INDICES:
        raise _fail(ShapeError, f"{what} index: at most {GATHER_MAX_INDICES} indices per GpSimd "
                    f"core (16 partitions), found {per_core}")
    v = per_core if num_valid_indices is None else int(num_valid_indices)
    if not 1 <= v <= per_core:
        raise _fail(KernelError, f"{what} num_valid_indices: expected 1..{per_core} (the "
                    f"indices in 16 partitions of index), found {num_valid_indices}")
    _no_mask(mask, what)
    # All indices valid: [P, *index free shape, 16, E], the order the gather produces them.
    shape = ((p,) + idx.shape[1:] + (GATHER_CORE_PARTITIONS, e) if v == per_core
             else (p, v, e))
    return issue(what, Opcode.LOCAL_GATHER, Engine.GPSIMD, shape, src.dtype,
                 {"src": src, "index": idx}, {"num_elem_per_idx": e, "num_valid_indices": v})


# --- top-8 values, their indices, match-and-replace (VectorE) -------------------------------------
def _topk_data(x: Any, what: str, lo: int = TOPK_MIN_ELEMENTS) -> NkiTensor:
    t = _tile(x, what)
    if t.ndim > 5 or not lo <= _free(t) <= TOPK_MAX_ELEMENTS:
        raise _fail(ShapeError, f"{what}: expected at most 5 dims and {lo}..{TOPK_MAX_ELEMENTS} "
                    f"elements per partition, found {list(t.shape)}")
    return t


def _eight(x: Any, ref: NkiTensor, what: str, max_dims: int = 3) -> NkiTensor:
    t = _tile(x, what)
    if t.shape[:1] != ref.shape[:1] or _free(t) != 8 or t.ndim > max_dims:
        raise _fail(ShapeError, f"{what}: expected {ref.shape[0]} partitions x 8 elements "
                    f"(at most {max_dims} dims), found {list(t.shape)}")
    return t


def max8(*, src: Any, mask: Any = None, dtype: Any = None) -> NkiTensor:
    """The 8 largest values of each partition, descending, as [P, 8] (VectorE, N cycles)."""
    what = "max8"
    s = _topk_data(src, f"{what} src")
    out_dtype = s.dtype if dtype is None else to_dtype(dtype, f"{what} dtype")
    return issue(what, Opcode.MAX8, Engine.VECTOR, (s.shape[0], 8), out_dtype, {"src": s}, {},
                 mask=mask, mask_shape=s.shape)


def nc_find_index8(*, data: Any, vals: Any, mask: Any = None, dtype: Any = None) -> NkiTensor:
    """Index of the first occurrence of each of the 8 ``vals`` in each partition of ``data``,
    as [P, 8] uint32 (or uint16)."""
    what = "nc_find_index8"
    d = _topk_data(data, f"{what} data")
    v = _eight(vals, d, f"{what} vals")
    out_dtype = to_dtype("uint32" if dtype is None else dtype, f"{what} dtype")
    if dtype_name(out_dtype) not in ("uint16", "uint32"):
        raise _fail(DTypeError, f"{what} dtype: expected uint16 or uint32, found "
                    f"{dtype_name(out_dtype)}")
    return issue(what, Opcode.NC_FIND_INDEX8, Engine.VECTOR, (d.shape[0], 8), out_dtype,
                 {"data": d, "vals": v}, {}, mask=mask, mask_shape=d.shape)


def nc_match_replace8(*, data: Any, vals: Any, imm: Any, dst_idx: Any = None, mask: Any = None,
                      dtype: Any = None) -> NkiTensor:
    """``data`` with the first occurrence of each of the 8 ``vals`` replaced by ``imm``
    (VectorE); ``dst_idx`` receives their positions."""
    what = "nc_match_replace8"
    d = _topk_data(data, f"{what} data", lo=1)
    v = _eight(vals, d, f"{what} vals")
    extra = {}
    if dst_idx is not None:
        extra["dst_idx"] = _eight(dst_idx, d, f"{what} dst_idx", max_dims=5)
        if is_float(dst_idx.dtype):
            raise _fail(DTypeError, f"{what} dst_idx: expected an integer dtype, found "
                        f"{dtype_name(dst_idx.dtype)}")
    out_dtype = d.dtype if dtype is None else to_dtype(dtype, f"{what} dtype")
    return issue(what, Opcode.NC_MATCH_REPLACE8, Engine.VECTOR, d.shape, out_dtype,
                 {"data": d, "vals": v}, {"imm": float(scalar_value(imm, f"{what} imm"))},
                 extra_dsts=extra, mask=mask)


# --- cross-partition shuffle (VectorE) and sequence bounds (GpSimd) -------------------------------
def nc_stream_shuffle(src: Any, dst: Any, shuffle_mask: Any, *, dtype: Any = None,
                      mask: Any = None) -> None:
    """Move partitions within each 32-partition quadrant: dst partition i takes src partition
    ``shuffle_mask[i % 32]`` of its quadrant (255 leaves it unchanged)."""
    what = "nc_stream_shuffle"
    s, d = _tile(src, f"{what} src"), _tile(dst, f"{what} dst")
    if s.dtype != d.dtype:
        raise _fail(DTypeError, f"{what}: dst must have src's dtype; expected "
                    f"{dtype_name(s.dtype)}, found {dtype_name(d.dtype)}")
    if _free(s) != _free(d):
        raise _fail(ShapeError, f"{what}: dst must have src's elements per partition; expected "
                    f"{_free(s)}, found {_free(d)}")
    _into_dtype(dtype, d, what)
    sm = list(shuffle_mask) if isinstance(shuffle_mask, (list, tuple)) else None
    if sm is None or len(sm) != 32 or not all(
            isinstance(m, (int, np.integer)) and (0 <= m < 32 or m == 255) for m in sm):
        raise _fail(KernelError, f"{what} shuffle_mask: expected 32 ints in 0..31 or 255, "
                    f"found {shuffle_mask!r}")
    active = -(-max(s.shape[0], d.shape[0]) // 32) * 32
    starts = (0,) if active > 64 else (0, 64) if active > 32 else (0, 32, 64, 96)
    for t, role in ((s, "src"), (d, "dst")):
        start = t.access().row_lo
        if start not in starts:
            raise _fail(AccessError, f"{what} {role}: with {active} active partitions the start "
                        f"partition must be {' or '.join(map(str, starts))}; found {start}")
    for i in range(d.shape[0]):
        m = int(sm[i % 32])
        if m != 255 and (i // 32) * 32 + m >= s.shape[0]:
            raise _fail(AccessError, f"{what} shuffle_mask[{i % 32}] = {m}: dst partition {i} "
                        f"reads src partition {(i // 32) * 32 + m}; expected < {s.shape[0]}")
    # The mask applies to dst (masked-out elements keep their values); src partitions do not
    # line up with dst's, so nothing is shrunk and the whole mask stays a predicate.
    box, _, empty = mask_box(mask, d.shape)
    if empty:
        return
    pred = mask.to_predicate(d.ndim) if box is not None else None
    out = operand(d, f"{what} dst", engine=Engine.VECTOR)
    _tracer.current(what).record(Opcode.NC_STREAM_SHUFFLE, Engine.VECTOR, {"out": out},
              {"src": operand(s, f"{what} src", engine=Engine.VECTOR), "old": out},
              {"shuffle_mask": tuple(int(m) for m in sm)}, mask=pred)


def sequence_bounds(*, segment_ids: Any, dtype: Any = None) -> NkiTensor:
    """[1, N] segment ids -> [1, 2, N]: start and end (exclusive) of each element's segment
    (GpSimd); id 0 is padding (start N, end -1)."""
    what = "sequence_bounds"
    ids = _sbuf(_tile(segment_ids, f"{what} segment_ids"), f"{what} segment_ids")
    if ids.ndim != 2 or ids.shape[0] != 1:
        raise _fail(ShapeError, f"{what} segment_ids: expected [1, N] (partition dim 1), found "
                    f"{list(ids.shape)}")
    _dtypes(ids, ("float32", "int32"), f"{what} segment_ids")
    out_dtype = ids.dtype if dtype is None else to_dtype(dtype, f"{what} dtype")
    if dtype_name(out_dtype) not in ("float32", "int32"):
        raise _fail(DTypeError, f"{what} dtype: expected float32 or int32, found "
                    f"{dtype_name(out_dtype)}")
    return issue(what, Opcode.SEQUENCE_BOUNDS, Engine.GPSIMD, (1, 2, ids.shape[1]), out_dtype,
                 {"segment_ids": ids}, {})
