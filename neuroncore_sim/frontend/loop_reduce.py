"""``nl.loop_reduce``: reduce a tile across loop iterations into its destination.

The NKI docs define ``b = nl.loop_reduce(a, op, [k])`` inside a loop over ``k`` as
``b = nisa.tensor_tensor(data1=b, data2=a, op)``: "the destination tile is also the rhs input
to op". The destination is whatever the call's result is assigned to, which a Python function
cannot see, so it is read from the calling kernel line's bytecode (the instructions after the
call, as ``mask_bool.py`` reads short-circuits):

- ``t[idx] = nl.loop_reduce(x, ...)`` (a subscript store): on the first iteration (every loop
  index 0) ``x`` is copied into ``t[idx]``, which starts the reduction without reading the slot
  (AWS's MoE backward reduces into an uninitialised ``nl.ndarray``); on later ones the result
  is a pending instruction (see ``tracer.py``) that, assigned into ``t[idx]``, becomes one
  VectorE ``tensor_tensor`` reading and writing that region: ``t[idx] = op(t[idx], x)``. Each
  destination keeps its own sum, however the loops are nested (a flash-attention backward
  accumulates ``dq[i_q] = loop_reduce(..., [i_k])`` over an outer ``i_k`` loop, and a causal
  one skips some slots' first iterations: they accumulate onto the slots' ``nl.zeros``).
- ``b = nl.loop_reduce(x, ...)`` with ``b`` already naming a tile of ``x``'s shape (the docs'
  ``b = nl.zeros(...)`` before the loop, or the previous iteration's result): the same
  ``tensor_tensor`` into ``b``. Exception: on the first iteration (every loop index 0) a ``b``
  that holds this call's own result from an earlier pass of an enclosing loop starts a new
  reduction (NKI traces the loop body once, where ``b`` is not bound yet).
- Otherwise (a name not bound yet, a result used in an expression): the first iteration copies
  ``x`` into a new accumulator tile, later ones combine into the accumulator of the call's
  source line (the start value is taken as ``op``'s identity, zeros for add).
"""

from __future__ import annotations

import dis
import sys
from types import FrameType
from typing import Any

from ..dtypes import to_dtype
from ..errors import KernelError
from ..program import ops
from ..program.ir import Engine, MemSpace, Opcode
from . import tracer as _tracer
from .index.mask_bool import _current, _instructions
from .operands import issue, issue_into, op_name
from .tensors.tensor import NkiTensor

#: How many instructions after the call the subscript store may be (the target and index
#: expressions are evaluated after the right-hand side).
_SCAN = 64
_NAME_STORES = ("STORE_FAST", "STORE_NAME", "STORE_DEREF", "STORE_GLOBAL")


def _kernel_frame() -> FrameType | None:
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.startswith(_tracer._PKG_DIR):
        frame = frame.f_back  # type: ignore[assignment]
    return frame


def result_target(frame: FrameType) -> tuple[str, str | None]:
    """Where the value of the call ``frame`` is executing goes: ("name", name) for ``b = f()``,
    ("subscript", None) for ``t[idx] = f()``, ("other", None) otherwise."""
    offsets, by = _instructions(frame.f_code)
    k = offsets.index(_current(frame)) + 1
    if k < len(offsets) and by[offsets[k]].opname.startswith(_NAME_STORES):
        target = by[offsets[k]].argval  # 3.13's STORE_FAST_LOAD_FAST etc. name a pair
        return "name", target[0] if isinstance(target, tuple) else target
    depth = 1  # the call's result, at the bottom of the part of the stack followed here
    for off in offsets[k:k + _SCAN]:
        ins = by[off]
        if ins.opname == "STORE_SUBSCR":
            return ("subscript", None) if depth == 3 else ("other", None)
        if "JUMP" in ins.opname or ins.opname.startswith(("RETURN", "STORE", "POP", "DELETE")):
            break
        try:
            depth += dis.stack_effect(ins.opcode, ins.arg, jump=False)
        except ValueError:
            break
        if depth < 1:  # the result was consumed by something else
            break
    return "other", None


def _frame_value(frame: FrameType, name: str) -> Any:
    if name in frame.f_locals:
        return frame.f_locals[name]
    return frame.f_globals.get(name)


def _copy(x: NkiTensor, dtype: Any, mask: Any) -> NkiTensor:
    """A VectorE ``tensor_copy`` of ``x`` (``nisa.tensor_copy``'s default engine)."""
    return issue("loop_reduce", Opcode.TENSOR_COPY, Engine.VECTOR, x.shape, dtype, {"src": x},
                 {}, mask=mask)


def loop_reduce(x: Any, op: Any, loop_indices: Any, *, dtype: Any = None, mask: Any = None,
                **_: Any) -> NkiTensor:
    """Reduce ``x`` across the iterations of the loops ``loop_indices`` with ``op``, into the
    tile the result is assigned to (the docs: the destination is also the rhs input)."""
    what = "loop_reduce"
    tr = _tracer.current(what)
    if not isinstance(x, NkiTensor):
        raise tr.fail(KernelError, f"{what} x: expected a tile, found {type(x).__name__}")
    name = op_name(op, f"{what} op", ops.REDUCE_OPS)
    idx = loop_indices if isinstance(loop_indices, (tuple, list)) else (loop_indices,)
    try:
        first = all(int(i) == 0 for i in idx)
    except (TypeError, ValueError):
        raise tr.fail(KernelError, f"{what} loop_indices: expected loop indices (ints), found "
                      f"{loop_indices!r}") from None
    out_dtype = to_dtype(dtype, f"{what} dtype") if dtype is not None else x.dtype
    key = ("loop_reduce", tr.instance, tr.user_loc())
    frame = _kernel_frame()
    kind, var = result_target(frame) if frame is not None else ("other", None)
    if kind == "subscript":
        copied = _copy(x, out_dtype, mask)
        if first:  # the reduction starts: x goes into the slot (which may be uninitialised)
            return copied
        # later iterations: the pending op reads the region it is assigned into
        fresh = tr.take_pending(copied)
        result = issue(what, Opcode.TENSOR_TENSOR, Engine.VECTOR, x.shape, out_dtype,
                       {"data2": x}, {"op": name}, mask=mask)
        pending = tr.pending
        if pending is not None and pending.result is result:
            pending.reads_dst, pending.fresh = "data1", fresh
        return result
    acc = tr.lang_state.get(key)
    if kind == "name":
        bound = _frame_value(frame, var)  # type: ignore[arg-type]
        if (isinstance(bound, NkiTensor) and bound.shape == x.shape
                and bound.space is not MemSpace.HBM and not (first and bound is acc)):
            acc = bound
            first = False
    if first or not isinstance(acc, NkiTensor) or acc.shape != x.shape:
        acc = _copy(x, out_dtype, mask)
        tr.flush()  # give the accumulator its own tile now (later iterations write into it)
        tr.lang_state[key] = acc
        return acc
    issue_into(what, Opcode.TENSOR_TENSOR, Engine.VECTOR, acc, {"data1": acc, "data2": x},
               {"op": name}, mask=mask)
    tr.lang_state[key] = acc
    return acc
