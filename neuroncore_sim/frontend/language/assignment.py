"""Tile assignment and accumulation, the targets of ``t[...] = x`` and ``t += x``.

An instruction's result is written straight into the target when the engine can write there
(the pending result of tracer.py); otherwise a copy, a DMA (HBM on either side) or, for a
scalar, a memset (alloc.fill). ``psum += nisa.nc_matmul(...)`` accumulates in PSUM.
"""

from __future__ import annotations

import math
from typing import Any

from ...dtypes import dtype_name
from ...errors import DTypeError, MemorySpaceError, ShapeError, SimulatorError
from ...program.ir import Engine, MemSpace, Opcode
from ...program.opcodes import ENGINE_PICKED
from .. import tracer as _tracer
from ..alloc import fill
from ..broadcast import broadcast_error, common_shape, expand, padded, relabel, same_layout
from ..operands import ON_CHIP, checked_access, dropped, issue_into
from ..tensors.tensor import NkiTensor
from ..transfer import dma_move
from .nlmath import binary, partition_broadcast


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
    recast = op is not None and op.dtype_given and value.dtype != target.dtype
    fits = op is not None and (_can_write(op.engine, target.space) and (
        value.shape == target.shape or same_layout(value.shape, target.shape))
        and not recast)
    if op is not None and op.reads_dst is not None and recast:
        raise tr.fail(DTypeError, f"assignment of a {op.opcode.value} that reads its "
                      f"destination (nl.loop_reduce): dtype= must be the destination's; "
                      f"expected {dtype_name(target.dtype)}, found {dtype_name(value.dtype)}")
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
    issue_into("tensor_copy", Opcode.TENSOR_COPY, Engine.VECTOR, target, {"src": src},
               {ENGINE_PICKED: True})  # the compiler picks the copy's engine


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
