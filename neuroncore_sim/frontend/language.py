"""``nki.language`` (nl): tiles, buffers, loops, SPMD ids, data movement and math.

Creation functions declare tensors; ``zeros``/``ones``/``full`` on chip add a memset;
``load``/``store`` are DMAs; the math lives in :mod:`nlmath` and is re-exported here.
Anything of the NKI surface not implemented yet raises ``UnsupportedError`` on access
(module ``__getattr__``), never ``AttributeError``.
"""

from __future__ import annotations

import builtins
import math
from typing import Any

import numpy as np

from .. import dtypes as _dt
from ..errors import (CapacityError, KernelError, MemorySpaceError, ShapeError, SimulatorError,
                      UnsupportedAttributeError, UnsupportedError, caller_loc)
from ..program.ir import Engine, MemSpace, Opcode
from . import isa as nisa
from . import tracer as _tracer
from .dma import dma_move, load, load_transpose2d, store  # noqa: F401  (nl.load etc.)
from .indexing import arange, ds, mgrid  # noqa: F401  (nl.arange etc.)
from .gather import gather_flattened  # noqa: F401
from .loop_reduce import loop_reduce  # noqa: F401
from .indirect import atomic_rmw  # noqa: F401  (nl.atomic_rmw)
from .iteration import (affine_range, nc, num_programs, program_id,  # noqa: F401  (nl loops,
                        program_ndim, sequential_range, spmd_dim, static_range)  # SPMD grid)
from .rng import nl_dropout as dropout, rand, random_seed  # noqa: F401
from .nlmath import *  # noqa: F401,F403  (the element-wise / reduction surface)
from .nlmath import binary, copy_op, partition_broadcast  # noqa: F401
from .broadcast import (broadcast_error, common_shape, expand, padded, relabel,
                        same_layout)
from .operands import (ON_CHIP, checked_access, dropped, issue_into, operand, scalar_value,
                       shape_arg, start_partition_error)
from .tensor import NkiTensor

# --- dtypes -------------------------------------------------------------------------------------
float32, float16, bfloat16, tfloat32 = _dt.float32, _dt.float16, _dt.bfloat16, _dt.tfloat32
float8_e4m3, float8_e5m2 = _dt.float8_e4m3, _dt.float8_e5m2
int8, int16, int32, uint8, uint16, uint32, bool_ = (_dt.int8, _dt.int16, _dt.int32, _dt.uint8,
                                                    _dt.uint16, _dt.uint32, _dt.bool_)



class finfo:  # noqa: N801
    """Machine limits of a float dtype (``nl.finfo(nl.bfloat16).max``), like ``numpy.finfo``."""

    def __init__(self, dtype: Any) -> None:
        import ml_dtypes
        self.dtype = _dt.to_dtype(dtype, "nl.finfo dtype")
        if not _dt.is_float(self.dtype):
            raise KernelError(f"nl.finfo: expected a float dtype, found {_dt.dtype_name(self.dtype)}")
        info = ml_dtypes.finfo(self.dtype)
        self.min, self.max, self.eps, self.tiny = (float(info.min), float(info.max),
                                                   float(info.eps), float(info.tiny))
        self.bits = int(info.bits)

    def __repr__(self) -> str:
        return f"nl.finfo({_dt.dtype_name(self.dtype)}: min={self.min}, max={self.max})"


fp32 = finfo(float32)  # nl.fp32.min is float32's lowest value (0xff7fffff)
bfp16 = finfo(bfloat16)
bfp16.min = float("-inf")  # documented as the bit pattern 0xff80, which is bfloat16 -inf (arch.md 3.5)
fp16 = finfo(float16)


# --- buffers ------------------------------------------------------------------------------------
class Buffer:
    """A memory a tensor can be allocated in (``nl.sbuf``, ``nl.psum``, ``nl.shared_hbm``...)."""

    def __init__(self, name: str, space: MemSpace, kind: str) -> None:
        self.name, self.space, self.kind = name, space, kind

    def __repr__(self) -> str:
        return f"nl.{self.name}"


sbuf = Buffer("sbuf", MemSpace.SBUF, "tile")
psum = Buffer("psum", MemSpace.PSUM, "tile")
hbm = Buffer("hbm", MemSpace.HBM, "hbm")
private_hbm = Buffer("private_hbm", MemSpace.HBM, "hbm")
shared_hbm = Buffer("shared_hbm", MemSpace.HBM, "output")


class par_dim(int):  # noqa: N801
    """Marks the partition dim in a shape: ``nl.ndarray((4, nl.par_dim(128), 512), ...)``."""

    def __new__(cls, size: Any) -> "par_dim":
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)):
            message = (f"nl.par_dim: expected an integer partition size, found "
                       f"{type(size).__name__} {size!r}")
            tr = _tracer.active_or_none()
            raise tr.fail(ShapeError, message) if tr is not None else ShapeError(message, caller_loc())
        return super().__new__(cls, size)


class _TileSize:
    """``nl.tile_size``: hardware tile limits, read from the active configuration."""

    def _cfg(self) -> Any:
        tr = _tracer.active_or_none()
        if tr is not None:
            return tr.config
        from ..config import TRN1
        return TRN1

    pmax = property(lambda self: self._cfg().num_partitions)
    psum_fmax = property(lambda self: self._cfg().psum_fmax)
    gemm_stationary_fmax = property(lambda self: self._cfg().gemm_stationary_fmax)
    gemm_moving_fmax = property(lambda self: self._cfg().gemm_moving_fmax)
    bn_stats_fmax = property(lambda self: self._cfg().bn_stats_fmax)
    psum_num_banks = property(lambda self: self._cfg().psum_num_banks)
    psum_bank_fmax = property(lambda self: self._cfg().psum_bank_bytes // 4)
    total_available_sbuf_size = property(lambda self: self._cfg().sbuf_usable_bytes_per_partition)

    def __getattr__(self, name: str) -> Any:
        # A limit NKI does not define: an UnsupportedError that is also an AttributeError, so
        # hasattr(nl.tile_size, name) still answers False.
        if name.startswith("__"):
            raise AttributeError(name)
        known = [n for n, v in vars(_TileSize).items() if isinstance(v, property)]
        message = f"nl.tile_size.{name}: expected one of {', '.join(known)}, found {name!r}"
        tr = _tracer.active_or_none()
        raise tr.fail(UnsupportedAttributeError, message) if tr is not None else \
            UnsupportedAttributeError(message, caller_loc())


tile_size = _TileSize()


# --- creation -------------------------------------------------------------------------------------
def _buffer(buffer: Any) -> Buffer:
    if buffer is None:
        return sbuf
    if isinstance(buffer, Buffer):
        return buffer
    raise _tracer.current().fail(KernelError, f"buffer: expected nl.sbuf, nl.psum, nl.hbm, "
                                 f"nl.private_hbm or nl.shared_hbm, found {buffer!r}")


def ndarray(shape: Any, dtype: Any, *, buffer: Any = None, name: str = "",
            **_: Any) -> NkiTensor:
    """Allocate a tensor (no instruction; its contents are undefined until written)."""
    tr = _tracer.current("nl.ndarray")
    buf = _buffer(buffer)
    shape = shape_arg(shape, "nl.ndarray shape")
    pa = builtins.next((i for i, s in enumerate(shape) if isinstance(s, par_dim)), 0)
    dims = tuple(int(s) for s in shape)
    dt = _dt.to_dtype(dtype, "nl.ndarray dtype")
    if buf.space is not MemSpace.HBM:
        _check_tile_shape(tr, dims, pa, dt, buf)
    placed = None
    if type(buf) is not Buffer:  # ncc.sbuf.alloc / mod_alloc, ncc.psum.alloc / mod_alloc
        from .compiler import placement
        # NKI traces an nl.affine_range / nl.sequential_range body once; here it runs per
        # iteration, so Python state the body changes (an address counter, as AWS's allocated
        # attention kernels keep) would drift. A direct allocation at one line of such a loop
        # keeps its first iteration's place.
        loops, later = tr.traced_iteration()
        key = (tr.user_loc(), loops)
        first = tr.lang_state.setdefault("loop_placements", {})
        if later and key in first:
            placed = first[key]  # type: ignore[index]
        else:
            placed = placement(tr, buf, dims, pa, dt.itemsize)  # type: ignore[arg-type]
            if loops:
                first[key] = placed  # type: ignore[index]
    decl = tr.new_tensor(buf.space, dims, dt, partition_axis=pa if buf.space is not MemSpace.HBM
                         else 0, kind=buf.kind, name=name or None, placement=placed)
    return NkiTensor.whole(decl)


def _check_tile_shape(tr: _tracer.Tracer, dims: tuple[int, ...], pa: int, dt: np.dtype,
                      buf: Buffer) -> None:
    cfg = tr.config
    if not dims or dims[pa] > cfg.num_partitions or dims[pa] < 1:
        raise tr.fail(ShapeError, f"nl.ndarray: partition dim (dim {pa}) must be 1.."
                      f"{cfg.num_partitions}; found shape {list(dims)}")
    free_bytes = math.prod(dims[pa + 1:]) * dt.itemsize
    if buf.space is MemSpace.PSUM and free_bytes > cfg.psum_bank_bytes:
        raise tr.fail(CapacityError, f"nl.ndarray: a PSUM tile must fit one bank; expected at "
                      f"most {cfg.psum_bank_bytes} bytes per partition, found {free_bytes}")


def full(shape: Any, fill_value: Any, dtype: Any, *, buffer: Any = None, name: str = "",
         **_: Any) -> NkiTensor:
    """A tensor filled with ``fill_value`` (a memset on chip; initial values in HBM)."""
    buf = _buffer(buffer)
    if buf.space is MemSpace.HBM:
        tr = _tracer.current("nl.full")
        dims = tuple(int(s) for s in shape_arg(shape, "nl.full shape"))
        dt = _dt.to_dtype(dtype, "nl.full dtype")
        values = np.full(dims, fill_value).astype(dt) if tr.backend is not None else None
        decl = tr.new_tensor(MemSpace.HBM, dims, dt, kind=buf.kind, name=name or None,
                             values=values)
        return NkiTensor.whole(decl)
    t = ndarray(shape, dtype, buffer=buf, name=name)
    pa = t.decl.partition_axis
    if pa == 0 or math.prod(t.shape[:pa]) == 1:
        assign(t, fill_value)
        return t
    # Block dims are logical tiles (the compiler allocates each on its own, docs/model.md):
    # one memset per tile, as an ISA instruction addresses one (partition, free) tile.
    for idx in np.ndindex(*t.shape[:pa]):
        assign(t[tuple(int(i) for i in idx)], fill_value)
    return t


def zeros(shape: Any, dtype: Any, *, buffer: Any = None, name: str = "", **_: Any) -> NkiTensor:
    """A tensor of zeros."""
    return full(shape, 0, dtype, buffer=buffer, name=name)


def ones(shape: Any, dtype: Any, *, buffer: Any = None, name: str = "", **_: Any) -> NkiTensor:
    """A tensor of ones."""
    return full(shape, 1, dtype, buffer=buffer, name=name)


def _like(a: Any, what: str) -> None:
    """A KernelError unless ``a`` is a tensor or tile (the model of a ``*_like`` call)."""
    if not isinstance(a, NkiTensor):
        raise _tracer.current(what).fail(
            KernelError, f"{what}: expected a tensor or tile to copy the shape of, found "
            f"{type(a).__name__}")


def zeros_like(a: NkiTensor, dtype: Any = None, *, buffer: Any = None, name: str = "",
               **_: Any) -> NkiTensor:
    """Zeros with ``a``'s shape (and dtype unless given)."""
    _like(a, "nl.zeros_like")
    return zeros(a.shape, dtype if dtype is not None else a.dtype, buffer=buffer, name=name)


def empty_like(a: NkiTensor, dtype: Any = None, *, buffer: Any = None, name: str = "",
               **_: Any) -> NkiTensor:
    """An uninitialised tensor with ``a``'s shape (and dtype unless given)."""
    _like(a, "nl.empty_like")
    return ndarray(a.shape, dtype if dtype is not None else a.dtype, buffer=buffer, name=name)


def shared_constant(constant: Any, dtype: Any = None, **_: Any) -> NkiTensor:
    """A constant HBM tensor holding ``constant`` (a numpy array)."""
    tr = _tracer.current("nl.shared_constant")
    try:
        values = np.asarray(constant)
    except (TypeError, ValueError) as e:
        raise tr.fail(KernelError, f"nl.shared_constant: expected a numpy array of numbers, "
                      f"found {type(constant).__name__} ({e})") from None
    if values.dtype.kind not in "biuf" or values.ndim == 0:
        raise tr.fail(KernelError, f"nl.shared_constant: expected a numpy array of numbers "
                      f"(at least 1-D), found {type(constant).__name__} of dtype {values.dtype}"
                      f" and shape {values.shape}")
    dt = _dt.to_dtype(dtype if dtype is not None else values.dtype, "nl.shared_constant dtype")
    decl = tr.new_tensor(MemSpace.HBM, values.shape, dt, kind="constant", name="const",
                         values=values.astype(dt))
    return NkiTensor.whole(decl)


# --- assignment and accumulation (the targets of t[...] = x and t += x) -------------------------
def _same_region(a: NkiTensor, b: NkiTensor) -> bool:
    return (a.decl is b.decl and a.shape == b.shape and a.base == b.base
            and a.coefs == b.coefs and a.frame == b.frame)


def assign(target: NkiTensor, value: Any) -> None:
    """``target[...] = value``: write an instruction's result directly, copy, or memset.

    Shapes meet by partition-aligned broadcasting (broadcast.py): a [P] result fills a [P, 1]
    slot, a [P, 1] tile fills the free axes of a [P, F] one; a single element (``t[i, j]``) is
    a [1, 1] region.
    """
    tr = _tracer.current("tile assignment")
    if target.ndim == 0:
        target = relabel(target, (1, 1))
    if not isinstance(value, NkiTensor):
        v = scalar_value(value, "assignment value")
        dst = target.partition_first()
        if dst.space is MemSpace.SBUF and start_partition_error(dst.access()):
            # t[i, j] = 5 on a partition an engine access cannot start at (arch.md 1.5): a
            # memset at partition 0 and an SBUF-to-SBUF DMA into place (DMAs are exempt)
            dma_move("assignment", dst, nisa.memset(dst.shape, v, dst.dtype), None, None)
            return
        issue_into("memset", Opcode.MEMSET, Engine.VECTOR, dst, {}, {"value": v},
                   dst_spaces=(MemSpace.SBUF, MemSpace.PSUM))
        return
    if value.decl is not None and value.decl in dropped(tr):
        return  # the result of an instruction its mask dropped: nothing to write
    op = tr.pending if tr.pending is not None and tr.pending.result is value else None
    if (op is not None and op.engine is Engine.GPSIMD and op.engine_fixed
            and target.space is MemSpace.PSUM):
        raise tr.fail(MemorySpaceError, f"assignment of a GpSimd {op.opcode.value} result: "
                      f"GpSimd cannot access PSUM; expected an SBUF destination, found psum "
                      f"tile {target.tensor.name}")
    fits = op is not None and (_can_write(op.engine, target.space) and (
        value.shape == target.shape or same_layout(value.shape, target.shape)))
    if op is not None and op.reads_dst is not None and not fits:
        # nl.loop_reduce: the destination is also an operand, so it must be one VectorE reads
        raise tr.fail(ShapeError, f"assignment of a {op.opcode.value} that reads its "
                      f"destination (nl.loop_reduce): expected an SBUF or PSUM region of the "
                      f"result's shape {list(value.shape)}, found {target.space.value} region "
                      f"{list(target.shape)}")
    if fits:
        target = relabel(target, value.shape)  # the instruction's own shape, same elements
        tr.take_pending(value)
        tr.complete(op, checked_access(tr, target.shrink(op.box), "assignment target", "",
                                       (MemSpace.SBUF, MemSpace.PSUM, MemSpace.HBM), op.engine))
        value.retarget(target)
        return
    if _same_region(value, target):
        return
    if op is not None and op.box is not None and value.shape == target.shape:
        # a masked result copied into place (TensorE into SBUF): only its active box exists
        value, target = value.shrink(op.box), target.shrink(op.box)
    if target.space is MemSpace.HBM or value.space is MemSpace.HBM:
        dma_move("assignment", target, value, None, None)
        return
    on_one = target.partition_first()
    if on_one.ndim != target.ndim:  # t[i, j] = x[...]: one partition's elements, kept as [1, ..]
        target = on_one
        value = value.partition_first() if value.ndim + 1 == target.ndim else value
    if same_layout(value.shape, target.shape):
        src = relabel(value, target.shape)
    else:
        shape = common_shape(value.shape, target.shape)
        if shape is None or shape != padded(target.shape, len(shape)):
            raise broadcast_error("assignment", value.shape, target.shape)
        if padded(value.shape, 1)[0] != target.shape[0]:  # one partition to many: moves data
            value = partition_broadcast(value, (target.shape[0],) + value.shape[1:])
        src = expand(value, target.shape, "assignment")
    issue_into("tensor_copy", Opcode.TENSOR_COPY, Engine.VECTOR, target, {"src": src}, {})


#: Where each engine can write an instruction's result directly (architecture guide: TensorE
#: writes PSUM only, GpSimd cannot reach PSUM, DMA reaches HBM and SBUF).
_WRITABLE = {Engine.TENSOR: (MemSpace.PSUM,), Engine.GPSIMD: (MemSpace.SBUF,),
             Engine.DMA: (MemSpace.SBUF, MemSpace.HBM)}


def _merged_free(target: NkiTensor, shape: tuple[int, ...]) -> NkiTensor:
    """``target`` as a 2-D ``shape`` [P, N] when its free axes hold N elements that a no-copy
    reshape can merge (an nc_matmul result with a flattened multi-axis moving tile), else
    ``target`` itself."""
    if (len(shape) != 2 or target.ndim <= 2 or target.shape[0] != shape[0]
            or math.prod(target.shape[1:]) != shape[1]):
        return target
    try:
        return target.reshape(shape)
    except SimulatorError:
        return target


def _can_write(engine: Engine, space: MemSpace) -> bool:
    return space in _WRITABLE.get(engine, (MemSpace.SBUF, MemSpace.PSUM))


def accumulate(target: NkiTensor, value: Any, op: str) -> NkiTensor:
    """``target += value``: PSUM accumulation of a matmul, else an element-wise op in place."""
    tr = _tracer.current("in-place operator")
    if isinstance(value, NkiTensor) and value.decl is not None and value.decl in dropped(tr):
        return target  # `acc += instr(..., mask=False)`: the instruction was dropped
    pending = tr.pending
    slot = target  # (returned: `t[i] += x` stores back the very view it got)
    if (op == "add" and pending is not None and pending.result is value
            and pending.opcode is Opcode.NC_MATMUL and target.space is MemSpace.PSUM
            and value.shape != target.shape):
        target = _merged_free(target, value.shape)  # a [M, a, b] slot for a [M, a*b] result
    if (op == "add" and pending is not None and pending.result is value
            and pending.opcode is Opcode.NC_MATMUL and target.space is MemSpace.PSUM
            and value.shape == target.shape):
        tr.take_pending(value)
        dst = target if pending.box is None else target.shrink(pending.box)
        tr.complete(pending, checked_access(tr, dst, "matmul accumulation target", "", ON_CHIP,
                                            pending.engine), accumulate=True)
        value.retarget(target)
        return slot
    assign(target, binary(op, target, value, target.dtype))
    return target


# --- data movement and layout ------------------------------------------------------------------
def copy(src: Any, *, dtype: Any = None, mask: Any = None, **_: Any) -> NkiTensor:
    """Copy a tile (VectorE); use it to move a PSUM result into SBUF."""
    return nisa.tensor_copy(src, dtype=dtype, mask=mask)


def transpose(x: Any, *, dtype: Any = None, mask: Any = None, **_: Any) -> NkiTensor:
    """2-D partition/free transpose on TensorE (result in PSUM)."""
    return nisa.nc_transpose(x, dtype=dtype, mask=mask, engine=nisa.engine.tensor)


def matmul(x: Any, y: Any, *, transpose_x: bool = False, mask: Any = None,
           **_: Any) -> NkiTensor:
    """``x @ y`` on TensorE. Without ``transpose_x`` the compiler first transposes ``x`` on
    TensorE and copies it back to SBUF, as the NKI docs describe. An operand in PSUM (the
    result of ``nl.transpose`` or of another ``nl.matmul``) is first copied to SBUF on VectorE,
    as the compiler does for ``nl`` calls (TensorE reads only SBUF; docs/frontend.md)."""
    for t, name in ((x, "x"), (y, "y")):  # before the lowering, in the user's terms
        operand(t, f"nl.matmul {name}", (MemSpace.SBUF, MemSpace.PSUM))
    x = nisa.tensor_copy(x) if x.space is MemSpace.PSUM else x
    y = nisa.tensor_copy(y) if y.space is MemSpace.PSUM else y
    k = x.shape[0] if transpose_x else x.shape[-1]
    if x.ndim != 2 or y.ndim != 2 or y.shape[0] != k:
        form = "x.T @ y (transpose_x=True)" if transpose_x else "x @ y"
        raise _tracer.current().fail(
            ShapeError, f"nl.matmul: {form} with x {list(x.shape)}: expected y of shape [{k}, N], "
            f"found {list(y.shape)}")
    if not transpose_x:
        xt = nisa.nc_transpose(x, engine=nisa.engine.tensor)
        x = nisa.tensor_copy(xt, dtype=x.dtype)
    return nisa.nc_matmul(x, y, mask=mask)


def device_print(prefix: str, x: Any, *, mask: Any = None, **_: Any) -> None:
    """Print a tile's values (simulation only, as on AWS's simulator)."""
    tr = _tracer.current("nl.device_print")
    if isinstance(x, NkiTensor):
        values = tr.read(x.access())
        print(prefix, values if values is not None else f"<{list(x.shape)}: timing-only run>")
    else:
        print(prefix, x)


def shared_identity_matrix(n: int, dtype: Any = _dt.uint8, **_: Any) -> NkiTensor:
    """An [n, n] identity matrix constant in HBM."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 1 <= n <= 1 << 16:
        raise _tracer.current("nl.shared_identity_matrix").fail(
            KernelError, f"nl.shared_identity_matrix: expected an integer size from 1 to 65536, "
                         f"found {n!r}")
    return shared_constant(np.eye(int(n)), dtype=dtype)


_UNSUPPORTED_HINT = "(it is part of the NKI surface neuroncore_sim does not implement yet)"


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    tr = _tracer.active_or_none()
    msg = f"nl.{name} is not supported by neuroncore_sim {_UNSUPPORTED_HINT}"
    raise tr.fail(UnsupportedError, msg) if tr is not None else UnsupportedError(msg)


