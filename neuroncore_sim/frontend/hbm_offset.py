"""``t[e[0, 0], ...]``: an HBM tensor indexed by one element of an SBUF tile (a runtime offset).

MoE kernels pick an expert's weights with the expert number held on chip:
``nl.load(w[expert[0, 0], p + 128 * i, f])``. On the device the DMA reads the offset from SBUF
when it runs. Here values are computed while the kernel is traced, so the offset's value is
read then (after every instruction before it has run), and the DMA is recorded with the static
view it selects, plus the offset element as an extra source (``offset``) so the DMA waits for
the instruction that wrote it, as the hardware's does. In a timing-only run no value exists and
offset 0 is used: a DMA's cost depends on its sizes, not on where in the tensor it reads.
An offset outside the indexed dim is an ``AccessError`` at the line (the DMA would fault).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import AccessError
from . import tracer as _tracer
from .tensors.tensor import NkiTensor


class OffsetView(NkiTensor):
    """An HBM view selected by a runtime offset; ``offset_tile`` is the [1, 1] SBUF element it
    was read from (the DMA's extra ``offset`` source)."""

    offset_tile: NkiTensor


def runtime_offset_view(t: NkiTensor, key: tuple[Any, ...]) -> OffsetView:
    """``t[key]`` where ``key[0]`` is a single SBUF element (0-d tile view)."""
    from .isa.dynamic import _offset_tile
    tr = _tracer.current("runtime offset index")
    tile = _offset_tile(key[0])
    values = tr.read(tile.access())
    value = 0 if values is None else int(np.asarray(values).reshape(-1)[0])
    size = t.shape[0]
    if not 0 <= value < size:
        raise tr.fail(AccessError, f"runtime offset read from SBUF ({tile.tensor.name}): "
                      f"expected an index of dim 0 of {list(t.shape)} in 0..{size - 1}, "
                      f"found {value}")
    static = t[(value,) + tuple(key[1:])]
    view = OffsetView(static.decl, static.shape, static.dtype, static.base, static.coefs,
                      static.space, static.lease, frame=static.frame)
    view.offset_tile = tile
    return view


def offset_sources(view: Any) -> dict[str, NkiTensor]:
    """The ``offset`` source a DMA touching ``view`` needs ({} for an ordinary view)."""
    return {"offset": view.offset_tile} if isinstance(view, OffsetView) else {}
