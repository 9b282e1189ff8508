"""``nl.gather_flattened`` and ``nl.loop_reduce``.

``gather_flattened(data, indices)``: for each partition, ``out.flat[i] = data.flat[indices.flat[i]]``
over the flattened free dims ("up to 128 parallel gather operations", NKI docs). The docs do not
name its engine or cost; we record one ``gather_flattened`` instruction on GpSimd (the engine of
the other data-dependent gathers, ``local_gather``) costing ``GPSIMD_START + N`` cycles, N =
indices per partition, like ``iota`` and ``affine_select`` (assumption, docs/frontend.md).

``loop_reduce(x, op, loop_indices)``: per the docs, ``b = nl.loop_reduce(a, op, [k])`` inside a
loop over ``k`` is ``b = nisa.tensor_tensor(b, a, op)``, the destination being also the left
operand. A Python assignment cannot name that destination, so the accumulator belongs to the
call's source line: the first iteration (every loop index 0, or the first call at the line)
copies ``x`` into a new accumulator tile, later iterations combine into it in place with one
VectorE ``tensor_tensor``. This treats the accumulator's starting value as the identity of
``op`` (zeros for add), which is how the docs' example initialises it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..program import ops
from ..dtypes import dtype_name, to_dtype
from ..errors import DTypeError, KernelError, ShapeError
from ..program.ir import Engine, MemSpace, Opcode
from . import tracer as _tracer
from .operands import issue, issue_into, op_name
from .tensor import NkiTensor


def gather_flattened(data: Any, indices: Any, *, mask: Any = None, dtype: Any = None,
                     **_: Any) -> NkiTensor:
    """Gather from the flattened free dims of ``data`` by uint32 ``indices``, per partition."""
    what = "gather_flattened"
    tr = _tracer.current(what)
    for t, role in ((data, "data"), (indices, "indices")):
        if not isinstance(t, NkiTensor):
            raise tr.fail(KernelError, f"{what} {role}: expected a tile, found {type(t).__name__}")
        if not 2 <= t.ndim <= 4:
            raise tr.fail(ShapeError, f"{what} {role}: expected a 2-, 3- or 4-D tile, found "
                          f"shape {list(t.shape)}")
    if np.dtype(indices.dtype) != np.uint32:
        raise tr.fail(DTypeError, f"{what} indices: expected uint32, found "
                      f"{dtype_name(indices.dtype)}")
    if data.shape[0] != indices.shape[0]:
        raise tr.fail(ShapeError, f"{what}: data and indices must have the same partitions; "
                      f"found {data.shape[0]} and {indices.shape[0]}")
    out_dtype = to_dtype(dtype, f"{what} dtype") if dtype is not None else data.dtype
    return issue(what, Opcode.GATHER_FLATTENED, Engine.GPSIMD, indices.shape, out_dtype,
                 {"data": data, "indices": indices}, {}, mask=mask, spaces=(MemSpace.SBUF,))


def loop_reduce(x: Any, op: Any, loop_indices: Any, *, dtype: Any = None, mask: Any = None,
                **_: Any) -> NkiTensor:
    """Reduce ``x`` across the iterations of the loops ``loop_indices`` with ``op``."""
    from . import isa as nisa
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
    acc = tr.lang_state.get(key)
    if first or not isinstance(acc, NkiTensor) or acc.shape != x.shape:
        acc = nisa.tensor_copy(x, dtype=out_dtype, mask=mask)
        tr.flush()  # give the accumulator its own tile now (later iterations write into it)
        tr.lang_state[key] = acc
        return acc
    issue_into(what, Opcode.TENSOR_TENSOR, Engine.VECTOR, acc, {"data1": acc, "data2": x},
               {"op": name}, mask=mask)
    return acc
