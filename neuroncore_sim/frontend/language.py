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
                      UnsupportedError)
from ..program.ir import Engine, MemSpace, Opcode
from .isa import compute as nisa  # (the instructions themselves, not the nisa facade)
from . import tracer as _tracer
from .dma import dma_move, load, load_transpose2d, store  # noqa: F401  (nl.load etc.)
from .indexing import arange, ds, mgrid  # noqa: F401  (nl.arange etc.)
from .gather import gather_flattened  # noqa: F401
from .loop_reduce import loop_reduce  # noqa: F401
from .indirect import atomic_rmw  # noqa: F401  (nl.atomic_rmw)
# Views a tile forwards here (tensor.py): an index tile into HBM, a runtime offset on chip.
from .indirect import indirect_view  # noqa: F401
from .isa.dynamic import assign_dynamic, dynamic_view  # noqa: F401
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
from .alloc import (Buffer, empty_like, fill, full, hbm, ndarray, ones, par_dim,  # noqa: F401
                    private_hbm, psum, sbuf, shared_constant, shared_hbm,
                    shared_identity_matrix, tile_size, zeros, zeros_like)

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
        fill(target, value)  # a memset (alloc.py)
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


_UNSUPPORTED_HINT = "(it is part of the NKI surface neuroncore_sim does not implement yet)"


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    tr = _tracer.active_or_none()
    msg = f"nl.{name} is not supported by neuroncore_sim {_UNSUPPORTED_HINT}"
    raise tr.fail(UnsupportedError, msg) if tr is not None else UnsupportedError(msg)


