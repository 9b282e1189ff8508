"""``t.view(dtype)`` with a dtype of another element size: the same bytes, the last dim rescaled.

As numpy's ``ndarray.view``, the last (free) dim grows or shrinks by ``old size / new size``
(a ``[P, 1]`` float32 tile is a ``[P, 4]`` float8 one, a ``[P, 2F]`` bfloat16 tile an
``[P, F]`` int32 one); every other dim keeps its size, so on chip the partition dim never
changes. The view gets its own *frame* (tensor_surface.py): its dims, with strides and offset
counted in elements of the new dtype in the storage read as a flat array of that dtype. Its
accesses then carry that dtype (``Access.view_dtype``), so the values stage reads and writes
the same bytes through either name and the timing stage counts the bytes moved; hazards are
compared in the tensor's own elements (``Access`` bounds), so a write through one name orders a
read through the other.

The rules are numpy's, in bytes: the last axis must be contiguous, its bytes a multiple of the
new element size, and the view's start and every other stride whole new elements.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ...dtypes import dtype_name
from ...errors import AccessError, ShapeError, UnsupportedError
from ...program.ir import MemSpace
from .. import tracer as _tracer

if TYPE_CHECKING:
    from .tensor import NkiTensor


def resized_view(t: NkiTensor, dt: np.dtype) -> NkiTensor:
    """``t`` read as ``dt``, whose element size differs from ``t.dtype``'s (see the module)."""
    tr = _tracer.current("view")
    old, new = np.dtype(t.dtype).itemsize, dt.itemsize
    what = (f"view of {dtype_name(t.dtype)} {list(t.shape)} ({old} bytes per element) as "
            f"{dtype_name(dt)} ({new} bytes)")
    if not t.shape:
        raise tr.fail(ShapeError, f"{what}: expected a view with a last dim to rescale, found "
                      f"a 0-d view")
    problem = t.out_of_bounds()
    if problem:
        raise tr.fail(AccessError, f"{what}: {problem}")
    nd = t.ndim
    pax = 0
    if t.space is not MemSpace.HBM:
        row = t.coefs[t.pdim]
        walks = [a for a, c in enumerate(row) if c]
        if len(walks) != 1:
            found = "axes " + str(walks) if walks else "none (an int picked it: slice instead)"
            raise tr.fail(UnsupportedError, f"{what}: expected one axis of the view on the "
                          f"{t.space.value} tile's partition dim, found {found}")
        pax = walks[0]
        if pax == nd - 1:
            raise tr.fail(ShapeError, f"{what}: the last dim is the partition dim, which a "
                          f"view never changes; expected a free last dim")
    acc = t.access()
    strides = [s for s, _ in acc.pattern]
    last = t.shape[-1]
    if last != 1 and strides[-1] != 1:
        raise tr.fail(ShapeError, f"{what}: expected the last dim contiguous in memory, found "
                      f"a stride of {strides[-1]} elements (take the view before slicing "
                      f"with a step)")
    if (last * old) % new:
        raise tr.fail(ShapeError, f"{what}: the last dim holds {last} x {old} = {last * old} "
                      f"bytes, expected a multiple of {new} (the new element size)")
    if (acc.offset * old) % new:
        raise tr.fail(ShapeError, f"{what}: the view starts at byte {acc.offset * old} of "
                      f"{t.tensor.name}, expected a multiple of {new} (the new element size)")
    out_strides = []
    for a, (s, n) in enumerate(zip(strides[:-1], t.shape[:-1])):
        if (s * old) % new:
            if n != 1:
                raise tr.fail(ShapeError, f"{what}: axis {a} steps {s * old} bytes, expected "
                              f"a multiple of {new} (the new element size)")
            s = 0  # a single index: its stride is never used
        out_strides.append(s * old // new)
    out_strides.append(1)
    shape = tuple(t.shape[:-1]) + (last * old // new,)
    ident = tuple(tuple(1 if a == d else 0 for a in range(nd)) for d in range(nd))
    frame = (shape, tuple(out_strides), acc.offset * old // new, pax)
    out = type(t)(t._resolved(), shape, dt, (0,) * nd, ident, t.space, t.lease, inside=True,
                  frame=frame)
    out._views = {}
    return out

