"""Shared plumbing of ``nisa`` and ``nl`` calls: operator names, masks, operand checks, issuing.

:func:`issue` is the single path from an instruction call to the tracer: it evaluates the mask
(shrinking every operand to the mask's bounding box, as the compiler does, so a masked
instruction costs only its active part), checks every operand's bounds and layout, and hands a
pending instruction to the tracer.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..program import ops
from ..dtypes import dtype_name, is_float
from ..errors import (AccessError, DTypeError, KernelError, MemorySpaceError, ShapeError,
                      UnsupportedError)
from ..program.ir import Access, Engine, MemSpace, Opcode
from . import tracer as _tracer
from .index.mask_view import (_NO_MASK, box_mask, carried_box, mask_box,  # noqa: F401
                        refuse_carried)  # (operands.mask_box: the modules' import)
from .tensors.tensor import NkiTensor

ON_CHIP = (MemSpace.SBUF, MemSpace.PSUM)


def op_name(op: Any, what: str, allowed: frozenset[str] | dict[str, Any]) -> str:
    """Resolve ``np.add`` / ``nl.add`` / ``"add"`` to an operator name in ``allowed``."""
    if isinstance(op, str):
        name = op
    else:
        name = getattr(op, "_nki_op", None) or getattr(op, "__name__", None) or repr(op)
    name = ops.ALIASES.get(name, name)
    if name == "abs" and name not in allowed and "abs_max" in allowed:
        # nl.abs as a binary ALU operator (op0=nl.abs, operand0=0.0, as AWS's rmsnorm-quant
        # kernels take |x|): the ALU's absolute-value operator, abs_max(a, b) = max(|a|, |b|)
        name = "abs_max"
    if name not in allowed:
        raise _tracer.current().fail(
            KernelError, f"{what}: expected one of {sorted(allowed)}, found {name!r}")
    return name


def shape_arg(shape: Any, what: str) -> tuple[int, ...]:
    """A shape argument (an int or a tuple/list of ints, ``nl.par_dim`` kept) as a tuple;
    every size must be a positive integer."""
    dims = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    if not dims or not all(isinstance(n, (int, np.integer)) and not isinstance(n, bool)
                           and n >= 1 for n in dims):
        raise _tracer.current().fail(
            ShapeError, f"{what}: expected a shape of positive integers, found {shape!r}")
    return tuple(n if isinstance(n, int) else int(n) for n in dims)


def nki_op(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Tag an ``nl`` function with the operator name it stands for when passed as ``op=``."""
    def tag(fn: Callable[..., Any]) -> Callable[..., Any]:
        fn._nki_op = name  # type: ignore[attr-defined]
        return fn
    return tag


def start_partition_error(acc: Access) -> str | None:
    """Why an on-chip access breaks the start-partition rule (arch.md 1.5), or None.

    An engine access over P partitions must start at partition 0 when 64 < P <= 128, at 0 or 64
    when 32 < P <= 64, and at 0, 32, 64 or 96 when P <= 32.
    """
    start = acc.row_lo
    if start == 0 or acc.tensor.space not in ON_CHIP or acc.size == 0:
        return None  # (partition 0 is always allowed: the common case, decided first)
    p = acc.row_hi - start
    allowed = (0,) if p > 64 else (0, 64) if p > 32 else (0, 32, 64, 96)
    if start in allowed:
        return None
    return (f"an access over {p} partitions must start at partition "
            f"{' or '.join(map(str, allowed))}; found start partition {start} "
            f"(rows {start}..{start + p - 1} of {acc.tensor.name})")


def fail(cls: type, msg: str) -> Exception:
    """An error of type ``cls`` at the current kernel line (to ``raise``)."""
    return _tracer.current().fail(cls, msg)


def require_tile(x: Any, what: str) -> NkiTensor:
    """``x`` when it is a tile (an NkiTensor), else a KernelError at the kernel line."""
    if not isinstance(x, NkiTensor):
        raise fail(KernelError, f"{what}: expected a tile, found {not_a_tile(x)}")
    return x


def not_a_tile(x: Any) -> str:
    """What ``x``, given where a tile goes, is (for "expected a tile, found ...")."""
    if type(x).__name__ == "DynamicView":  # t[ix, idx[0, i] + iy]: two instructions take one
        return ("a view at a runtime offset (only nisa.tensor_copy_dynamic_src / "
                "tensor_copy_dynamic_dst take one)")
    return type(x).__name__


def operand(t: Any, what: str, spaces: tuple[MemSpace, ...] = ON_CHIP,
            engine: Engine | None = None) -> Access:
    """Check a tensor operand (type, memory, bounds, partition layout); return its access.

    With a compute ``engine`` (not DMA) the start-partition rule is checked too.
    """
    return checked_access(_tracer.current(what), t, what, "", spaces, engine)


def checked_access(tr: _tracer.Tracer, t: Any, what: str, role: str,
                   spaces: tuple[MemSpace, ...], engine: Engine | None) -> Access:
    """:func:`operand` for a caller that holds the active tracer; the operand is named
    ``"{what} {role}"`` (or ``what`` when ``role`` is empty) in errors. This runs for every
    operand of every instruction: the name is only put together for an error message."""
    if not isinstance(t, NkiTensor):
        raise tr.fail(KernelError, f"{_label(what, role)}: expected a tile, found "
                      f"{type(t).__name__}")
    if t.space not in spaces:
        names = " or ".join(s.value for s in spaces)
        raise tr.fail(MemorySpaceError,
                      f"{_label(what, role)}: expected a tensor in {names}, found {t.space.value}")
    if not t._checked:  # once per view: views never change
        box = carried_box(tr, t, take=False)
        if box is not None:
            # a tile[mask] view reached an instruction that did not take its box (mask_view.py)
            raise refuse_carried(t, box, _label(what, role))
        problem = None if t._inside else t.out_of_bounds()
        if problem:
            raise tr.fail(AccessError, f"{_label(what, role)}: out of bounds: {problem}")
        problem = t.tile_error()
        if problem:
            raise tr.fail(AccessError, f"{_label(what, role)}: {problem}")
        t._checked = True
    acc = t._access if t._access is not None else t.access()
    if engine is not None and engine is not Engine.DMA and acc.pattern:
        p_step, p_size = acc.pattern[0]
        if p_step == 0 and p_size > 1 and t.space is not MemSpace.HBM:
            # lanes map 1:1 to partitions (arch.md 1.5): no engine but DMA repeats one
            raise tr.fail(AccessError, f"{_label(what, role)}: the view repeats one partition "
                          f"over {p_size} partitions; compute engines read one partition per "
                          f"lane (copy it to many with nl.broadcast_to)")
    if engine is not None and engine is not Engine.DMA and acc.row_lo:
        problem = start_partition_error(acc)  # (partition 0 is always allowed)
        if problem:
            raise tr.fail(AccessError,
                          f"{_label(what, role)}: start-partition rule: {problem}")
    return acc


def _label(what: str, role: str) -> str:
    return f"{what} {role}" if role else what


def issue(what: str, opcode: Opcode, engine: Engine, out_shape: tuple[int, ...],
          out_dtype: np.dtype, srcs: dict[str, NkiTensor], attrs: dict[str, object], *,
          mask: Any = None, out_space: MemSpace = MemSpace.SBUF,
          extra_dsts: dict[str, NkiTensor] | None = None,
          spaces: tuple[MemSpace, ...] = ON_CHIP,
          mask_shape: tuple[int, ...] | None = None,
          out_axes: tuple[int | None, ...] | None = None,
          src_axes: dict[str, tuple[int | None, ...]] | None = None) -> NkiTensor:
    """Issue a compute instruction whose main output is a new (pending) tile.

    The mask ranges over the output's axes, or, for instructions whose input is shaped
    otherwise (reductions), over ``mask_shape`` (the input's shape, as the NKI docs define
    masks): the sources are shrunk to its box and output axis ``k`` to the box of input axis
    ``out_axes[k]`` (None: not masked, e.g. a reduced or statistics axis). ``src_axes`` maps
    the axes of the named sources onto the mask's (``nc_matmul``: the stationary's free axis
    is the result's partition axis, its contraction axis is not masked). A source restricted
    by ``tile[mask]`` over the mask's shape adds its box to the mask (mask_view.py).
    """
    tr = _tracer.current(what)
    loc = tr.user_loc()
    full = tuple(map(int, out_shape)) if mask_shape is None else tuple(mask_shape)
    mask = with_carried(tr, srcs, full, mask, what, src_axes or {})
    out_shape = tuple(map(int, out_shape))
    if out_shape and not 1 <= out_shape[0] <= tr.config.num_partitions:
        raise tr.fail(ShapeError, f"{what}: the result's partition dim (dim 0) must be 1.."
                      f"{tr.config.num_partitions}; found shape {list(out_shape)}")
    box, residual, empty = mask_box(mask, full) if mask is not None else _NO_MASK
    if empty:
        # The compiler drops a fully masked instruction; the result tile is left unwritten,
        # and assigning or accumulating it (`psum += nc_matmul(..., mask=False)`) writes nothing
        decl = tr.new_tensor(out_space, out_shape, out_dtype, site=loc)
        dropped(tr).add(decl)
        return NkiTensor.whole(decl)
    if mask_shape is not None and residual is not None:
        raise tr.fail(UnsupportedError, f"{what}: a mask that is not a rectangle over the "
                      f"input {list(full)} is not supported for this instruction; "
                      f"expected bounds per axis (i < n, i >= m, combined with &)")
    src_acc = {}
    for k, v in srcs.items():
        if box is not None and src_axes is not None and k in src_axes:
            v = v.shrink(tuple(box[a] if a is not None else (0, n)
                               for a, n in zip(src_axes[k], v.shape)))
        elif box is not None:
            v = v.shrink(box, full)
        src_acc[k] = checked_access(tr, v, what, k, spaces, engine)
    if mask_shape is not None and box is not None:
        axes = out_axes if out_axes is not None else (0,) + (None,) * (len(out_shape) - 1)
        box = tuple(box[ia] if ia is not None else (0, n) for ia, n in zip(axes, out_shape))
    dst_acc = {}
    for k, v in (extra_dsts or {}).items():
        dst_acc[k] = checked_access(tr, v.shrink(box, out_shape), what, k, ON_CHIP, engine)
    result = NkiTensor.pending(out_shape, out_dtype, out_space)
    tr.set_pending(_tracer.PendingOp(opcode, engine, src_acc, attrs, dst_acc, residual, box, loc,
                                     result))
    return result


def dropped(tr: _tracer.Tracer) -> set:
    """The result tiles of instructions a mask dropped entirely (see :func:`issue`)."""
    return tr.lang_state.setdefault("dropped", set())  # type: ignore[return-value]


def scalar_value(x: Any, what: str) -> float | int:
    """A Python / numpy scalar operand as a plain number."""
    if isinstance(x, (bool, np.bool_)):
        return int(x)
    if isinstance(x, (int, float, np.integer, np.floating)):
        return x.item() if isinstance(x, np.generic) else x
    raise _tracer.current().fail(
        KernelError, f"{what}: expected a scalar or a tile, found {type(x).__name__}")


def engine_arg(engine: Any, what: str) -> Engine | None:
    """Translate an ``engine=`` argument (nisa.engine member or None) to an Engine."""
    if engine is None:
        return None
    value = getattr(engine, "value", engine)
    mapping = {"tensor": Engine.TENSOR, "vector": Engine.VECTOR, "scalar": Engine.SCALAR,
               "gpsimd": Engine.GPSIMD, "unknown": None, 1: Engine.TENSOR, 2: Engine.SCALAR,
               3: Engine.GPSIMD, 5: Engine.VECTOR, 0: None}
    if value not in mapping:
        raise _tracer.current().fail(UnsupportedError, f"{what}: unknown engine {engine!r}")
    if mapping[value] is Engine.TENSOR and what != "nc_transpose":
        # TensorE is the matmul array: it runs nc_matmul and nc_transpose, nothing element-wise
        raise _tracer.current().fail(UnsupportedError, (
            f"{what}: expected engine vector, scalar or gpsimd, found tensor (TensorE runs only "
            "nc_matmul and nc_transpose)"))
    return mapping[value]


def issue_into(what: str, opcode: Opcode, engine: Engine, dst: NkiTensor,
               srcs: dict[str, NkiTensor], attrs: dict[str, object], *, mask: Any = None,
               dst_spaces: tuple[MemSpace, ...] = ON_CHIP,
               src_spaces: tuple[MemSpace, ...] = ON_CHIP,
               extra_dsts: dict[str, NkiTensor] | None = None, reads_dst: bool = False) -> None:
    """Record an instruction whose destination is a given view (stores, copies into place).

    ``extra_dsts`` are further outputs (e.g. reduce_res); ``reads_dst`` adds the destination
    as the source role ``old`` (instructions that leave part of it unchanged).
    """
    tr = _tracer.current(what)
    if engine is Engine.GPSIMD and isinstance(dst, NkiTensor) and dst.space is MemSpace.PSUM:
        raise tr.fail(MemorySpaceError, f"{what} dst: GpSimd cannot access PSUM; expected an "
                      f"SBUF destination, found psum")
    mask = with_carried(tr, srcs, tuple(dst.shape), mask, what, {})
    box, residual, empty = mask_box(mask, dst.shape)
    if empty:
        return
    src_acc = {}
    for k, v in srcs.items():
        src_acc[k] = checked_access(tr, v.shrink(box, dst.shape), what, k, src_spaces, engine)
    dst_acc = checked_access(tr, dst.shrink(box), what, "dst", dst_spaces, engine)
    dsts = {"out": dst_acc}
    for k, v in (extra_dsts or {}).items():
        dsts[k] = checked_access(tr, v.shrink(box, dst.shape), what, k, ON_CHIP, engine)
    if reads_dst:
        src_acc["old"] = dst_acc
    tr.record(opcode, engine, dsts, src_acc, attrs, mask=residual)


def with_carried(tr: _tracer.Tracer, srcs: dict[str, NkiTensor], full: tuple[int, ...],
                 mask: Any, what: str, mapped: dict[str, Any]) -> Any:
    """``mask`` and the boxes the sources carry from ``tile[mask]`` (mask_view.py): a source
    of the instruction's mask shape ``full`` restricts the instruction to its box; any other
    (or one whose axes ``mapped`` maps differently) is an UnsupportedError."""
    if not tr.lang_state.get("carried_masks"):  # the common case: no tile[mask] view pending
        return mask
    for k, v in srcs.items():
        carried = carried_box(tr, v) if isinstance(v, NkiTensor) else None
        if carried is None:
            continue
        if tuple(v.shape) != full or k in mapped:
            raise refuse_carried(v, carried, what)
        extra = box_mask(carried, full)
        mask = extra if mask is None or mask is True else (mask & extra)
    return mask


#: Integer dtypes TensorE takes as matmul operands: one byte, so every value is exact in the
#: float32 the array computes in (our choice, docs/frontend.md "PSUM accumulation groups").
_BYTE_INTEGERS = frozenset({"uint8", "int8"})


def require_matmul_dtype(t: NkiTensor, what: str) -> None:
    """Refuse a matmul operand of a dtype TensorE does not take. The nc_matmul reference (2.2x,
    NeuronCore-v2) and the architecture guide list float8_e4m3, float8_e5m2, bfloat16,
    float16, tfloat32 and float32 inputs, accumulated in float32; AWS's kernels (partition
    broadcasts with ``is_*_onezero``, quantized weights) also pass uint8 / int8 bytes, which
    are exact in float32, so those are taken too. Wider integers are refused."""
    if not is_float(t.dtype) and dtype_name(t.dtype) not in _BYTE_INTEGERS:
        raise fail(DTypeError, f"{what}: expected a TensorE input dtype (float8_e4m3, "
                   f"float8_e5m2, bfloat16, float16, tfloat32, float32, or 8-bit uint8 / "
                   f"int8; the result accumulates in float32 PSUM), found "
                   f"{dtype_name(t.dtype)}; convert wider integer data first "
                   f"(nl.copy(t, dtype=nl.bfloat16))")
