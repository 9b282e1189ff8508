"""``nki.isa`` compute instructions: one function per NeuronCore-v2 instruction of TensorE,
VectorE, ScalarE and GpSimd, and the enums of ``nki.isa`` (``engine``, ``oob_mode``, ...).

Each function checks its operands against the rules the NKI API reference (docs 2.20-2.26)
states, picks the engine (the ``engine=`` argument, else the documented default), and records
one instruction; the value is computed by the executor when the instruction is recorded.
Results are new tiles: SBUF, except TensorE results which are in PSUM.
"""

from __future__ import annotations

import enum
import math
from typing import Any

import numpy as np

from ...program import ops
from ...dtypes import dtype_name, float32, is_float, promote, to_dtype
from ...errors import DTypeError, KernelError, MemorySpaceError, ShapeError, UnsupportedError
from ...program.ir import ENGINE_PICKED, Engine, MemSpace, Opcode
from .. import tracer as _tracer
from ..index.indexing import IndexExpr, MaskExpr, permuted_mask
from ..index.mask_bool import resolve as resolve_mask
from ..index.mask_view import box_mask, carried_box, is_empty
from ..operands import fail as _fail, require_tile as _tile
from ..operands import engine_arg, issue, op_name, require_matmul_dtype, scalar_value, shape_arg
from ..broadcast import free_broadcast, per_partition
from .. import rng as _rng
from .selection import v3_error
from .transpose_blocks import vector_block_transpose
from ..tensors.tensor import NkiTensor


class engine(enum.IntEnum):  # noqa: N801  (name and values as in nki.isa)
    """Engines, with the values of ``nki.isa.engine`` (docs 2.26)."""

    unknown = 0
    tensor = 1
    scalar = 2
    gpsimd = 3
    vector = 5
    sync = 6


tensor_engine, scalar_engine, gpsimd_engine = engine.tensor, engine.scalar, engine.gpsimd
vector_engine, sync_engine, unknown_engine = engine.vector, engine.sync, engine.unknown


class reduce_cmd(enum.Enum):  # noqa: N801
    """ScalarE accumulator-register commands of ``activation``."""

    idle = "idle"
    reset = "reset"
    reduce = "reduce"
    reset_reduce = "reset_reduce"


class nc_version(enum.IntEnum):  # noqa: N801
    """NeuronCore generations: gen2 is Trainium1 / Inferentia2."""

    gen2 = 2
    gen3 = 3


class dge_mode(enum.IntEnum):  # noqa: N801
    """Descriptor generation modes of dma_copy (hardware DGE is NeuronCore-v3 only)."""

    unknown = 0
    swdge = 1
    hwdge = 2
    none = 3


class oob_mode(enum.IntEnum):  # noqa: N801
    """What dma_copy does with out-of-bounds indirect indices."""

    error = 0
    skip = 1


dropout = _rng.dropout  # nisa.dropout: VectorE, max(MIN_II, N) (defined with nl's randomness)


def get_nc_version() -> nc_version:
    """The simulated core's generation: always NeuronCore-v2."""
    return nc_version.gen2


def _out_dtype(dtype: Any, *inputs: np.dtype) -> np.dtype:
    if dtype is not None:
        return to_dtype(dtype, "dtype")
    out = inputs[0]
    for d in inputs[1:]:
        out = promote(out, d)
    return out


def _no_gpsimd_psum(eng: Engine, what: str, *tiles: NkiTensor) -> None:
    if eng is Engine.GPSIMD and any(t.space is MemSpace.PSUM for t in tiles):
        raise _fail(MemorySpaceError, f"{what}: GpSimd cannot access PSUM; expected SBUF "
                    "operands, found a PSUM operand")


def _no_float_bitvec(what: str, names: tuple[Any, ...], *tiles: NkiTensor) -> None:
    """Bit-vector operators need integer operands (arch.md 3.4: bitvec ops -> int dtypes)."""
    bad = [n for n in names if n in ops.BITVEC_OPS]
    if not bad:
        return
    for t in tiles:
        if is_float(t.dtype):
            raise _fail(DTypeError, f"{what}: bit-vector op {bad[0]!r} needs integer operands; "
                        f"expected an int dtype, found {dtype_name(t.dtype)}")


def _scalar_or_tile(x: Any, data: NkiTensor, what: str, srcs: dict, role: str) -> float | None:
    if isinstance(x, NkiTensor):
        srcs[role] = per_partition(x, data, f"{what} {role}")
        return None
    return scalar_value(x, f"{what} {role}")


# --- TensorE ---------------------------------------------------------------------------------
def nc_matmul(stationary: Any, moving: Any, *, is_stationary_onezero: bool = False,
              is_moving_onezero: bool = False, is_transpose: bool = False,
              tile_position: Any = (), tile_size: Any = (), mask: Any = None,
              perf_mode: Any = None) -> NkiTensor:
    """``stationary.T @ moving`` on TensorE, into a new PSUM tile (float32)."""
    what = "nc_matmul"
    if perf_mode is not None and getattr(perf_mode, "name", perf_mode) not in (None, "none"):
        raise v3_error(f"nc_matmul perf_mode={getattr(perf_mode, 'name', perf_mode)}")
    st, mv = _tile(stationary, "nc_matmul stationary"), _tile(moving, "nc_matmul moving")
    tr = _tracer.current(what)
    cfg = tr.config
    # operands restricted by tile[mask] (mask_view.py): boxes over their [K, F...] axes
    boxes = (carried_box(tr, st), carried_box(tr, mv))
    # TensorE reads SBUF only; an operand in PSUM (an nc_transpose result, as AWS's flash
    # attention backward passes) is copied to SBUF on VectorE first, as the compiler does
    # (docs/frontend.md "PSUM accumulation groups")
    st = tensor_copy(st) if st.space is MemSpace.PSUM else st
    mv = tensor_copy(mv) if mv.space is MemSpace.PSUM else mv
    for t, role in ((st, "stationary"), (mv, "moving")):
        if t.space is not MemSpace.SBUF:
            raise _fail(MemorySpaceError, f"{what} {role}: expected a tile in sbuf, found "
                        f"{t.space.value}")
        # the moving access pattern may have several free dims (a conv's [K, rows, cols]
        # window, as AWS's conv kernels pass): the result keeps them, [M, rows, cols]
        if len(t.shape) != 2 and (role == "stationary" or len(t.shape) < 2):
            raise _fail(ShapeError, f"{what} {role}: expected a 2-D tile [K, F]"
                        f"{'' if role == 'stationary' else ' or [K, F1, F2, ...]'}, found "
                        f"{list(t.shape)}")
        require_matmul_dtype(t, f"{what} {role}")
    if st.shape[0] != mv.shape[0]:
        raise _fail(ShapeError, f"{what}: contraction (partition) sizes must match; expected "
                    f"moving K = {st.shape[0]}, found {mv.shape[0]}")
    if st.shape[1] > cfg.gemm_stationary_fmax:
        raise _fail(ShapeError, f"{what} stationary: free size at most "
                    f"{cfg.gemm_stationary_fmax}, found {st.shape[1]}")
    mv_free = math.prod(mv.shape[1:])  # (shapes are Python ints; np.prod is slow per call)
    if mv_free > cfg.gemm_moving_fmax:
        raise _fail(ShapeError, f"{what} moving: free size at most {cfg.gemm_moving_fmax}, "
                    f"found {mv_free} ({list(mv.shape)})")
    attrs = {"accumulate": False, "is_stationary_onezero": bool(is_stationary_onezero),
             "is_moving_onezero": bool(is_moving_onezero), "is_transpose": bool(is_transpose)}
    if tile_position or tile_size:
        attrs["tile_position"], attrs["tile_size"] = tuple(tile_position), tuple(tile_size)
    out_shape = (st.shape[1], *mv.shape[1:])
    if boxes != (None, None):
        st, mv, mask = _carried_matmul_boxes(st, mv, boxes, out_shape, mask)
    # a mask ranges over the result [M, N...]: the stationary's free axis is its partition
    # axis, the moving's free axes its free axes; the contraction axis is never masked
    return issue(what, Opcode.NC_MATMUL, Engine.TENSOR, out_shape, float32,
                 {"stationary": st, "moving": mv}, attrs, mask=mask, out_space=MemSpace.PSUM,
                 src_axes={"stationary": (None, 0),
                           "moving": (None, *range(1, len(mv.shape)))})


def _carried_matmul_boxes(st: NkiTensor, mv: NkiTensor, boxes: tuple[Any, Any],
                          out_shape: tuple[int, ...], mask: Any) -> tuple[Any, Any, Any]:
    """nc_matmul operands restricted by ``tile[mask]``: their contraction boxes shrink the
    contraction (rows outside take no part in the sum), their free boxes restrict the result
    as a mask would (the stationary's to result rows, the moving's to result columns)."""
    if any(b is not None and is_empty(b) for b in boxes):  # t[False]: nothing to multiply
        return st, mv, False
    k = st.shape[0]
    lo = max(b[0][0] for b in boxes if b is not None)
    hi = min(b[0][1] for b in boxes if b is not None)
    if lo >= hi:
        raise _fail(UnsupportedError, "nc_matmul: the tile[mask] boxes of the operands leave no "
                    "contraction row; expected overlapping partition ranges")
    if (lo, hi) != (0, k):
        st, mv = st.shrink(((lo, hi),)), mv.shrink(((lo, hi),))
    st_box, mv_box = boxes
    out_box = ((st_box[1] if st_box is not None else (0, out_shape[0])),
               *(mv_box[1:] if mv_box is not None else ((0, n) for n in out_shape[1:])))
    extra = box_mask(out_box, out_shape)
    if extra is not True:
        mask = extra if mask is None or mask is True else (mask & extra)
    return st, mv, mask


def nc_transpose(data: Any, *, mask: Any = None, dtype: Any = None,
                 engine: Any = None) -> NkiTensor:
    """Transpose a [P, F] tile: TensorE (into PSUM, up to 128x128) or VectorE (32x32 blocks)."""
    what = "nc_transpose"
    d = _tile(data, f"{what} data")
    cfg = _tracer.current(what).config
    p, f = d.shape[0], math.prod(d.shape[1:])
    eng = engine_arg(engine, what)
    vmax = cfg.vector_transpose_max
    if eng is None:  # policy (docs/model.md): VectorE when it fits, else TensorE
        eng = Engine.VECTOR if p <= vmax and f <= vmax else Engine.TENSOR
    if eng is Engine.VECTOR:
        if p > vmax or f > vmax:  # one instruction per 32x32 block (transpose_blocks.py)
            return vector_block_transpose(d, _out_dtype(dtype, d.dtype), vmax,
                                          cfg.num_partitions, mask)
        space = MemSpace.SBUF
    elif eng is Engine.TENSOR:
        if d.space is not MemSpace.SBUF:
            raise _fail(MemorySpaceError, f"{what} on TensorE: expected data in sbuf, found "
                        f"{d.space.value}")
        if p > cfg.num_partitions or f > cfg.num_partitions:
            raise _fail(ShapeError, f"{what} on TensorE: expected at most 128x128, found {p}x{f}")
        space = MemSpace.PSUM
    else:
        raise _fail(UnsupportedError, f"{what}: engine must be tensor or vector, found {eng.value}")
    out_dtype = _out_dtype(dtype, float32 if space is MemSpace.PSUM else d.dtype)
    if d.ndim == 2:  # the mask ranges over the input's [P, F] axes (NKI masking docs)
        return issue(what, Opcode.NC_TRANSPOSE, eng, (f, p), out_dtype, {"data": d}, {},
                     mask=mask, out_space=space, mask_shape=d.shape, out_axes=(1, 0))
    return issue(what, Opcode.NC_TRANSPOSE, eng, (f, p), out_dtype, {"data": d}, {},
                 mask=mask, out_space=space)


# --- ScalarE ---------------------------------------------------------------------------------
def activation(op: Any, data: Any, *, bias: Any = None, scale: Any = 1.0, reduce_op: Any = None,
               reduce_res: Any = None, reduce_cmd: Any = reduce_cmd.idle, mask: Any = None,
               dtype: Any = None) -> NkiTensor:
    """``op(data * scale + bias)`` on ScalarE, optionally summing each partition's results."""
    return _activation("activation", Opcode.ACTIVATION, op, data, bias, scale, reduce_op,
                       reduce_res, reduce_cmd, mask, dtype)


def activation_reduce(op: Any, data: Any, *, reduce_op: Any, reduce_res: Any, bias: Any = None,
                      scale: Any = 1.0, mask: Any = None, dtype: Any = None) -> NkiTensor:
    """``activation`` plus a reduction (add on NeuronCore-v2) of each partition into reduce_res."""
    if reduce_res is None:
        raise _fail(KernelError, "activation_reduce: expected a reduce_res tile, found None")
    return _activation("activation_reduce", Opcode.ACTIVATION_REDUCE, op, data, bias, scale,
                       reduce_op, reduce_res, reduce_cmd.reset_reduce, mask, dtype)


def _activation(what: str, opcode: Opcode, op: Any, data: Any, bias: Any, scale: Any,
                reduce_op: Any, reduce_res: Any, cmd: Any, mask: Any, dtype: Any) -> NkiTensor:
    d = _tile(data, f"{what} data")
    name = op_name(op, f"{what} op", ops.ACTIVATIONS)
    srcs: dict[str, NkiTensor] = {"data": d}
    if isinstance(bias, (int, float, np.number)):
        raise v3_error(f"{what} with a scalar bias")  # NC-v2: bias is a [P, 1] tile
    if bias is not None:
        srcs["bias"] = per_partition(bias, d, f"{what} bias")
    scale_value = _scalar_or_tile(scale, d, what, srcs, "scale")
    extra = {}
    cmd_name = getattr(cmd, "value", cmd)
    if cmd_name not in ("idle", "reset", "reduce", "reset_reduce"):
        raise _fail(KernelError, f"{what} reduce_cmd: expected idle, reset, reduce or "
                    f"reset_reduce, found {cmd!r}")
    if reduce_res is not None and cmd_name == "idle":
        # reduce_res without a reduce_cmd asks for this instruction's own row sums, as before
        # reduce_cmd existed: reset the accumulator registers, reduce into them, read them.
        cmd_name = "reset_reduce"
    red = None
    if reduce_res is not None or cmd_name != "idle":
        red = op_name(reduce_op if reduce_op is not None else "add", f"{what} reduce_op",
                      frozenset({"add"}))  # NeuronCore-v2 reduces with add only [ARCH]
    if reduce_res is not None:
        extra["reduce_res"] = per_partition(reduce_res, d, f"{what} reduce_res")
    attrs = {"op": name, "scale": scale_value, "reduce_op": red, "reduce_cmd": cmd_name}
    return issue(what, opcode, Engine.SCALAR, d.shape, _out_dtype(dtype, d.dtype), srcs, attrs,
                 mask=mask, extra_dsts=extra)


# --- VectorE / GpSimd element-wise ------------------------------------------------------------
def tensor_tensor(data1: Any, data2: Any, op: Any, *, dtype: Any = None, mask: Any = None,
                  engine: Any = None) -> NkiTensor:
    """Element-wise ``data1 op data2`` of two tiles of one partition size; free axes of size 1
    broadcast (stride 0), as the reference implies (it points to tensor_scalar as the faster
    way to broadcast along the free dimension)."""
    what = "tensor_tensor"
    a, b = _tile(data1, f"{what} data1"), _tile(data2, f"{what} data2")
    name = op_name(op, f"{what} op", ops.BINARY_OPS)
    a, b = free_broadcast(a, b, what)
    if a.space is MemSpace.PSUM and b.space is MemSpace.PSUM:
        raise _fail(MemorySpaceError, f"{what}: at most one operand may be in psum, found two")
    _no_float_bitvec(what, (name,), a, b)
    eng = engine_arg(engine, what)
    picked = eng is None
    if eng is None:  # [SHARED] power and int32 add/multiply/subtract run on GpSimd
        int_arith = (dtype_name(a.dtype) == "int32" and dtype_name(b.dtype) == "int32"
                     and name in ("add", "multiply", "subtract"))
        eng = Engine.GPSIMD if (name == "power" or int_arith) else Engine.VECTOR
    _no_gpsimd_psum(eng, what, a, b)
    out = issue(what, Opcode.TENSOR_TENSOR, eng, a.shape, _out_dtype(dtype, a.dtype, b.dtype),
                {"data1": a, "data2": b}, {"op": name}, mask=mask)
    pending = _tracer.current(what).pending
    if picked and pending is not None and pending.result is out:
        pending.engine_fixed = False  # a PSUM destination gets a VectorE copy (assign)
    return out


def tensor_scalar(data: Any, op0: Any, operand0: Any, reverse0: bool = False, op1: Any = None,
                  operand1: Any = None, reverse1: bool = False, *, dtype: Any = None,
                  mask: Any = None, engine: Any = None) -> NkiTensor:
    """``(data op0 operand0) op1 operand1`` with scalar or per-partition [P, 1] operands."""
    what = "tensor_scalar"
    d = _tile(data, f"{what} data")
    srcs: dict[str, NkiTensor] = {"data": d}
    attrs: dict[str, object] = {
        "op0": op_name(op0, f"{what} op0", ops.BINARY_OPS),
        "operand0": _scalar_or_tile(operand0, d, what, srcs, "operand0"),
        "reverse0": bool(reverse0), "op1": None, "operand1": None, "reverse1": bool(reverse1)}
    if op1 is not None:
        attrs["op1"] = op_name(op1, f"{what} op1", ops.BINARY_OPS)
        attrs["operand1"] = _scalar_or_tile(operand1, d, what, srcs, "operand1")
    _no_float_bitvec(what, (attrs["op0"], attrs["op1"]), *srcs.values())
    if (eng := engine_arg(engine, what)) is None:  # the compiler's to pick (engine_choice.py)
        eng, attrs[ENGINE_PICKED] = Engine.VECTOR, True
    _no_gpsimd_psum(eng, what, d)
    return issue(what, Opcode.TENSOR_SCALAR, eng, d.shape, _out_dtype(dtype, d.dtype), srcs,
                 attrs, mask=mask)


def scalar_tensor_tensor(*, data: Any, op0: Any, operand0: Any, op1: Any, operand1: Any,
                         reverse0: bool = False, reverse1: bool = False, dtype: Any = None,
                         mask: Any = None) -> NkiTensor:
    """``(data op0 operand0) op1 operand1`` where operand1 is a tile shaped like data, or one
    that broadcasts with it along free axes (the second step is a tensor_tensor, which reads
    size-1 free axes with stride 0: docs/frontend.md "Broadcasting")."""
    what = "scalar_tensor_tensor"
    d, t1 = _tile(data, f"{what} data"), _tile(operand1, f"{what} operand1")
    d, t1 = free_broadcast(d, t1, f"{what} data and operand1")
    if d.space is MemSpace.PSUM and t1.space is MemSpace.PSUM:
        raise _fail(MemorySpaceError, f"{what}: data and operand1 cannot both be in psum")
    srcs: dict[str, NkiTensor] = {"data": d}
    attrs = {"op0": op_name(op0, f"{what} op0", ops.BINARY_OPS),
             "operand0": _scalar_or_tile(operand0, d, what, srcs, "operand0"),
             "reverse0": bool(reverse0), "op1": op_name(op1, f"{what} op1", ops.BINARY_OPS),
             "reverse1": bool(reverse1)}
    srcs["operand1"] = t1
    return issue(what, Opcode.SCALAR_TENSOR_TENSOR, Engine.VECTOR, d.shape,
                 _out_dtype(dtype, d.dtype, t1.dtype), srcs, attrs, mask=mask)


def tensor_scalar_reduce(*, data: Any, op0: Any, operand0: Any, reduce_op: Any, reduce_res: Any,
                         reverse0: bool = False, dtype: Any = None, mask: Any = None) -> NkiTensor:
    """``data op0 operand0`` and the reduction of each partition's results into reduce_res."""
    what = "tensor_scalar_reduce"
    d = _tile(data, f"{what} data")
    srcs: dict[str, NkiTensor] = {"data": d}
    attrs = {"op0": op_name(op0, f"{what} op0", ops.BINARY_OPS),
             "operand0": _scalar_or_tile(operand0, d, what, srcs, "operand0"),
             "reverse0": bool(reverse0),
             "reduce_op": op_name(reduce_op, f"{what} reduce_op", ops.REDUCE_OPS)}
    extra = {"reduce_res": per_partition(reduce_res, d, f"{what} reduce_res")}
    return issue(what, Opcode.TENSOR_SCALAR_REDUCE, Engine.VECTOR, d.shape,
                 _out_dtype(dtype, d.dtype), srcs, attrs, mask=mask, extra_dsts=extra)


def tensor_reduce(op: Any, data: Any, axis: Any, *, mask: Any = None, dtype: Any = None,
                  negate: bool = False, keepdims: bool = False) -> NkiTensor:
    """Reduce free axes of a tile with ``op`` (add, max, min, multiply, bitwise/logical ops)."""
    what = "tensor_reduce"
    d = _tile(data, f"{what} data")
    name = op_name(op, f"{what} op", ops.REDUCE_OPS)
    given = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    if not all(isinstance(a, (int, np.integer)) and -d.ndim <= a < d.ndim for a in given):
        raise _fail(KernelError, f"{what} axis: expected axes of the {d.ndim}-d data "
                    f"({-d.ndim}..{d.ndim - 1}), found {axis!r}")
    axes = tuple(sorted({int(a) % d.ndim for a in given}))
    if not axes or axes[0] < 1:
        raise _fail(KernelError, f"{what} axis: expected free axes (>= 1), found {list(axes)}")
    if list(axes) != list(range(axes[0], axes[0] + len(axes))):
        # Not adjacent ([2, 4], as pooling does): the compiler lists the reduced axes last in
        # the access pattern (a reordering of dims, no data movement), as AWS says it does
        # (aws-neuron-sdk issue 1257), so one instruction over the same N elements.
        kept = [a for a in range(d.ndim) if a not in axes]
        order = kept + list(axes)
        if mask is not None:  # the mask ranges over the input's axes: reorder them alike
            mask = permuted_mask(resolve_mask(mask), order, d.ndim)
        out = tensor_reduce(op, d._permuted(order), tuple(range(len(kept), d.ndim)),
                            mask=mask, dtype=dtype, negate=negate)
        return out[tuple(None if a in axes else slice(None) for a in range(d.ndim))] \
            if keepdims else out
    if keepdims:
        shape = tuple(1 if a in axes else n for a, n in enumerate(d.shape))
        out_axes = tuple(None if a in axes else a for a in range(d.ndim))
    else:
        shape = tuple(n for a, n in enumerate(d.shape) if a not in axes)
        out_axes = tuple(a for a in range(d.ndim) if a not in axes)
    # the mask ranges over the data's axes (the reduced ones too), as the NKI docs define it
    return issue(what, Opcode.TENSOR_REDUCE, Engine.VECTOR, shape, _out_dtype(dtype, d.dtype),
                 {"data": d}, {"op": name, "axes": axes, "negate": bool(negate),
                               "keepdims": bool(keepdims)}, mask=mask, mask_shape=d.shape,
                 out_axes=out_axes)


def tensor_tensor_scan(data0: Any, data1: Any, initial: Any, op0: Any, op1: Any,
                       reverse0: bool = False, reverse1: bool = False, *, dtype: Any = None,
                       mask: Any = None) -> NkiTensor:
    """Scan along the free axis: ``out[i] = (data0[i] op0 out[i-1]) op1 data1[i]``."""
    what = "tensor_tensor_scan"
    a, b = _tile(data0, f"{what} data0"), _tile(data1, f"{what} data1")
    if a.shape != b.shape:
        raise _fail(ShapeError, f"{what}: expected data1 shape {list(a.shape)}, found "
                    f"{list(b.shape)}")
    srcs: dict[str, NkiTensor] = {"data0": a, "data1": b}
    attrs = {"op0": op_name(op0, f"{what} op0", ops.BINARY_OPS),
             "op1": op_name(op1, f"{what} op1", ops.BINARY_OPS),
             "initial": _scalar_or_tile(initial, a, what, srcs, "initial"),
             "reverse0": bool(reverse0), "reverse1": bool(reverse1)}
    return issue(what, Opcode.TENSOR_TENSOR_SCAN, Engine.VECTOR, a.shape,
                 _out_dtype(dtype, a.dtype, b.dtype), srcs, attrs, mask=mask)


def tensor_copy(src: Any, *, mask: Any = None, dtype: Any = None, engine: Any = None) -> NkiTensor:
    """Copy a tile (VectorE by default; ScalarE casts through fp32; GpSimd has no PSUM)."""
    what, s = "tensor_copy", _tile(src, "tensor_copy src")
    picked = (eng := engine_arg(engine, what)) is None  # the compiler's (engine_choice.py)
    _no_gpsimd_psum(eng := eng or Engine.VECTOR, what, s)
    return issue(what, Opcode.TENSOR_COPY, eng, s.shape, _out_dtype(dtype, s.dtype),
                 {"src": s}, {ENGINE_PICKED: True} if picked else {}, mask=mask)


def memset(shape: Any, value: Any, dtype: Any, *, mask: Any = None, engine: Any = None) -> NkiTensor:
    """A new tile of ``shape`` filled with ``value`` (VectorE by default)."""
    what = "memset"
    eng = engine_arg(engine, what) or Engine.VECTOR
    return issue(what, Opcode.MEMSET, eng, shape_arg(shape, f"{what} shape"),
                 to_dtype(dtype, f"{what} dtype"), {},
                 {"value": scalar_value(value, f"{what} value")}, mask=mask)


def iota(expr: Any, dtype: Any, *, mask: Any = None) -> NkiTensor:
    """A tile holding the values of an index expression (GpSimd)."""
    what = "iota"
    if not isinstance(expr, IndexExpr):
        raise _fail(KernelError, f"{what} expr: expected an nl.arange / nl.mgrid expression, "
                    f"found {type(expr).__name__}")
    if expr.ndim < 2:
        expr = expr[:, None]  # a 1-D expression fills one column: the partition dim comes first
    return issue(what, Opcode.IOTA, Engine.GPSIMD, expr.shape, to_dtype(dtype, f"{what} dtype"),
                 {}, {"expr": expr.to_affine(expr.ndim)}, mask=mask)


def affine_select(pred: Any, on_true_tile: Any, on_false_value: Any, *, mask: Any = None,
                  dtype: Any = None) -> NkiTensor:
    """``pred ? on_true_tile : on_false_value`` for a compile-time affine predicate (GpSimd)."""
    what = "affine_select"
    t = _tile(on_true_tile, f"{what} on_true_tile")
    pred = resolve_mask(pred)  # `a and b` written as the predicate (mask_bool.py)
    if not isinstance(pred, MaskExpr):
        raise _fail(KernelError, f"{what} pred: expected a comparison of index expressions, "
                    f"found {type(pred).__name__}")
    if t.space is MemSpace.PSUM:
        # GpSimd cannot read PSUM (arch.md 1.4), yet NKI's attention kernels select straight
        # from PSUM scores: the compiler has to stage them in SBUF, a VectorE copy here
        t = tensor_copy(t, mask=mask)
    return issue(what, Opcode.AFFINE_SELECT, Engine.GPSIMD, t.shape, _out_dtype(dtype, t.dtype),
                 {"on_true": t}, {"pred": pred.to_predicate(t.ndim),
                                  "on_false_value": scalar_value(on_false_value, what)}, mask=mask)


def reciprocal(data: Any, *, dtype: Any = None, mask: Any = None) -> NkiTensor:
    """``1 / data`` on VectorE (more precise than the ScalarE activation)."""
    d = _tile(data, "reciprocal data")  # (the compile stage may move it: engine_choice.py)
    return issue("reciprocal", Opcode.RECIPROCAL, Engine.VECTOR, d.shape,
                 _out_dtype(dtype, d.dtype), {"data": d}, {}, mask=mask)


def bn_stats(data: Any, *, mask: Any = None, dtype: Any = None) -> NkiTensor:
    """Mean/variance statistics of each partition of a [P, N <= 512] tile, as [P, 6]."""
    what = "bn_stats"
    d = _tile(data, f"{what} data")
    fmax = _tracer.current(what).config.bn_stats_fmax
    if d.ndim != 2 or d.shape[1] > fmax:
        raise _fail(ShapeError, f"{what} data: expected [P, N] with N <= {fmax}, found "
                    f"{list(d.shape)}")
    return issue(what, Opcode.BN_STATS, Engine.VECTOR, (d.shape[0], 6),
                 _out_dtype(dtype, d.dtype), {"data": d}, {}, mask=mask, mask_shape=d.shape)


def bn_aggr(data: Any, *, mask: Any = None, dtype: Any = None) -> NkiTensor:
    """Aggregate concatenated bn_stats results [P, 6k] into mean and variance [P, 2]."""
    what = "bn_aggr"
    d = _tile(data, f"{what} data")
    if d.ndim != 2 or d.shape[1] % 6:
        raise _fail(ShapeError, f"{what} data: expected [P, 6*k] bn_stats results, found "
                    f"{list(d.shape)}")
    return issue(what, Opcode.BN_AGGR, Engine.VECTOR, (d.shape[0], 2), _out_dtype(dtype, d.dtype),
                 {"data": d}, {}, mask=mask, mask_shape=d.shape)
