"""``nl.gather_flattened`` (``nl.loop_reduce`` is in loop_reduce.py).

``gather_flattened(data, indices)``: for each partition, ``out.flat[i] = data.flat[indices.flat[i]]``
over the flattened free dims ("up to 128 parallel gather operations", NKI docs). The docs do not
name its engine or cost; we record one ``gather_flattened`` instruction on GpSimd (the engine of
the other data-dependent gathers, ``local_gather``) costing ``GPSIMD_START + N`` cycles, N =
indices per partition, like ``iota`` and ``affine_select`` (assumption, docs/frontend.md).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..dtypes import dtype_name, to_dtype
from ..errors import DTypeError, KernelError, ShapeError
from ..program.ir import Engine, MemSpace, Opcode
from . import tracer as _tracer
from .operands import issue
from .tensors.tensor import NkiTensor


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
