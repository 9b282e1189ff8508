"""Runtime offsets: tiles indexed by a value held in SBUF, and the two instructions that use them.

In NKI 2.2x a dynamic offset is written as an index: ``src[ix, idx[0, i] + iy]`` where ``idx`` is
an integer SBUF tile (its element is read by the engine at run time) and ``ix``, ``iy`` are the
static ``nl.mgrid`` part. Indexing an on-chip tile that way gives a :class:`DynamicView`, which
only ``nisa.tensor_copy_dynamic_src`` (as ``src``) and ``nisa.tensor_copy_dynamic_dst`` (as
``dst``) accept.

The recorded instruction cannot know the offset, so its dynamic operand is the *span*: every
element some offset value can reach while the access stays inside its tensor, with the offset as
axis 1 (``[P, K, F...]``). Hazards are therefore tracked conservatively over the span, and the
executor reads the offset (the ``offset`` source role) and picks one slice of it.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from ...dtypes import dtype_name, to_dtype
from ...errors import (AccessError, DTypeError, KernelError, MemorySpaceError, ShapeError,
                      UnsupportedError)
from ...program.ir import Engine, MemSpace, Opcode
from .. import tracer as _tracer
from ..index.indexing import DynamicIndex
from ..operands import ON_CHIP, engine_arg, mask_box, operand
from ..operands import fail as _fail
from ..tensors.tensor import NkiTensor

#: Engines that run tensor_copy_dynamic_src / _dst (nki.isa docs).
COPY_ENGINES = (Engine.VECTOR, Engine.SCALAR, Engine.GPSIMD)


class DynamicView:
    """A view of an on-chip tile whose offset along one free axis is read from SBUF at run time.

    Attributes:
        static: the view with the runtime offset taken as 0 (its shape is the copy's shape).
        delta: per declared dim of the tensor, how far one unit of the offset moves the view.
        index: the one-element integer SBUF tile holding the offset (as a [1, 1] view).
    """

    def __init__(self, static: NkiTensor, delta: tuple[int, ...], index: NkiTensor) -> None:
        self.static, self.delta, self.index = static, delta, index

    @property
    def shape(self) -> tuple[int, ...]:
        return self.static.shape

    @property
    def dtype(self) -> np.dtype:
        return self.static.dtype

    @property
    def space(self) -> MemSpace:
        return self.static.space

    def span(self, static: NkiTensor) -> tuple[NkiTensor, int]:
        """(every element the runtime offset can reach from ``static``, with the offset as axis
        1; the offset value of its index 0)."""
        decl = static.tensor
        lo, hi = -math.inf, math.inf
        for d, c in enumerate(self.delta):
            if not c:
                continue
            steps = [k * (n - 1) for k, n in zip(static.coefs[d], static.shape)]
            first = static.base[d] + sum(min(0, x) for x in steps)
            last = static.base[d] + sum(max(0, x) for x in steps)
            # offset v keeps dim d inside 0..size-1:  first + c v >= 0  and  last + c v <= size-1
            a, b = Fraction(-first, c), Fraction(static.dims[d] - 1 - last, c)
            a, b = (a, b) if c > 0 else (b, a)  # dividing by a negative c flips both bounds
            lo, hi = max(lo, math.ceil(a)), min(hi, math.floor(b))
        if lo > hi:
            raise _fail(AccessError, f"dynamic index: no offset keeps {decl.name} "
                        f"{list(static.dims)} in bounds for an access of shape "
                        f"{list(static.shape)}")
        lo, hi = int(lo), int(hi)
        base = tuple(b + c * lo for b, c in zip(static.base, self.delta))
        coefs = tuple((row[0], c) + row[1:] for row, c in zip(static.coefs, self.delta))
        shape = (static.shape[0], hi - lo + 1) + static.shape[1:]
        return NkiTensor(decl, shape, static.dtype, base, coefs, static.space,
                         frame=static.frame), lo


def dynamic_view(tensor: NkiTensor, key: tuple[Any, ...]) -> DynamicView:
    """``tensor[key]`` where one item of ``key`` is a runtime index (an SBUF tile element, maybe
    plus a static index expression)."""
    if any(k is None or k is Ellipsis for k in key) or len(key) > tensor.ndim:
        raise _fail(UnsupportedError, f"dynamic index: expected one index per axis of "
                    f"{list(tensor.shape)} (no None / ...), found {len(key)} items")
    positions = [a for a, k in enumerate(key) if isinstance(k, (NkiTensor, DynamicIndex))]
    if len(positions) != 1:
        raise _fail(UnsupportedError, f"dynamic index: expected one runtime index per access, "
                    f"found {len(positions)}")
    a = positions[0]
    dyn = key[a] if isinstance(key[a], DynamicIndex) else DynamicIndex(key[a])
    index = _offset_tile(dyn.tile)
    static = tensor[key[:a] + (dyn.expr,) + key[a + 1:]]
    delta = tuple(row[a] for row in tensor.coefs)
    decl = static.tensor
    if not any(delta):
        raise _fail(UnsupportedError, f"dynamic index on axis {a} of {list(tensor.shape)}: the "
                    "axis does not move the access (size 1 or broadcast)")
    if delta[static.pdim]:
        raise _fail(AccessError, f"dynamic index on axis {a}: expected a free axis, found the "
                    f"partition axis of {decl.name} (runtime offsets move along the free "
                    "dimension only)")
    if not static.shape:
        raise _fail(AccessError, "dynamic index: expected an access keeping the partition axis, "
                    "found a single element")
    return DynamicView(static, delta, index)


def _offset_tile(tile: Any) -> NkiTensor:
    """The runtime offset's tile as a [1, 1] view: one integer element in SBUF."""
    if not isinstance(tile, NkiTensor):
        raise _fail(KernelError, f"dynamic index: expected an SBUF tile element, found "
                    f"{type(tile).__name__}")
    if tile.space is not MemSpace.SBUF:
        raise _fail(MemorySpaceError, f"dynamic index: the offset must be in sbuf, found "
                    f"{tile.space.value}")
    if tile.dtype.kind not in "iu":
        raise _fail(DTypeError, f"dynamic index: expected an integer offset tile, found "
                    f"{dtype_name(tile.dtype)}")
    if math.prod(tile.shape) != 1:
        raise _fail(ShapeError, f"dynamic index: expected one element (e.g. idx[0, i]), found "
                    f"shape {list(tile.shape)}")
    if tile.ndim == 2:
        return tile
    nd = len(tile.base)
    return NkiTensor(tile.decl, (1, 1), tile.dtype, tile.base, ((0, 0),) * nd, tile.space,
                     frame=tile.frame)


def _copy_engine(engine: Any, what: str, *tiles: Any) -> Engine:
    eng = engine_arg(engine, what) or Engine.VECTOR
    if eng not in COPY_ENGINES:
        raise _fail(UnsupportedError, f"{what}: expected engine vector, scalar or gpsimd, "
                    f"found {eng.value}")
    if eng is Engine.GPSIMD and any(t.space is MemSpace.PSUM for t in tiles):
        raise _fail(MemorySpaceError, f"{what}: GpSimd cannot access PSUM; expected SBUF "
                    "operands, found a PSUM operand")
    return eng


def _dynamic(x: Any, what: str) -> DynamicView:
    if not isinstance(x, DynamicView):
        raise _fail(KernelError, f"{what}: expected a tile indexed with a runtime offset "
                    f"(t[ix, idx[0, i] + iy]), found {type(x).__name__}")
    return x


def tensor_copy_dynamic_src(src: Any, *, mask: Any = None, dtype: Any = None,
                            engine: Any = None) -> NkiTensor:
    """Copy ``src``, located at a runtime offset read from SBUF, into a new tile
    (``max(MIN_II_DYNAMIC, N)`` engine cycles)."""
    what = "tensor_copy_dynamic_src"
    view = _dynamic(src, f"{what} src")
    eng = _copy_engine(engine, what, view)
    tr = _tracer.current(what)
    loc = tr.user_loc()
    out_dtype = view.dtype if dtype is None else to_dtype(dtype, f"{what} dtype")
    box, residual, empty = mask_box(mask, view.shape)
    if empty:  # fully masked: dropped, the result tile stays unwritten
        return NkiTensor.whole(tr.new_tensor(MemSpace.SBUF, view.shape, out_dtype, site=loc))
    span, lo = view.span(view.static.shrink(box))
    srcs = {"src": operand(span, f"{what} src", ON_CHIP, eng),
            "offset": operand(view.index, f"{what} offset", (MemSpace.SBUF,))}
    result = NkiTensor.pending(view.shape, out_dtype, MemSpace.SBUF)
    tr.set_pending(_tracer.PendingOp(Opcode.TENSOR_COPY_DYNAMIC_SRC, eng, srcs,
                                     {"offset_lo": lo}, {}, residual, box, loc, result))
    return result


def tensor_copy_dynamic_dst(*, dst: Any, src: Any, mask: Any = None, dtype: Any = None,
                            engine: Any = None) -> None:
    """Copy ``src`` into ``dst``, located at a runtime offset read from SBUF
    (``max(MIN_II_DYNAMIC, N)`` engine cycles)."""
    what = "tensor_copy_dynamic_dst"
    view = _dynamic(dst, f"{what} dst")
    if not isinstance(src, NkiTensor):
        raise _fail(KernelError, f"{what} src: expected a tile, found {type(src).__name__}")
    if src.shape[:1] != view.shape[:1] or math.prod(src.shape) != math.prod(view.shape):
        raise _fail(ShapeError, f"{what}: src and dst need the same partitions and elements per "
                    f"partition; expected {list(view.shape)}, found {list(src.shape)}")
    if dtype is not None and to_dtype(dtype, f"{what} dtype") != view.dtype:
        raise _fail(DTypeError, f"{what} dtype: the result is written into dst; expected "
                    f"{dtype_name(view.dtype)}, found {dtype_name(to_dtype(dtype))}")
    eng = _copy_engine(engine, what, view, src)
    tr = _tracer.current(what)
    box, residual, empty = mask_box(mask, view.shape)
    if residual is not None or (box is not None and src.shape != view.shape):
        raise _fail(UnsupportedError, f"{what}: expected a rectangular mask over operands of one "
                    "shape")
    if empty:
        return
    span, lo = view.span(view.static.shrink(box))
    out = operand(span, f"{what} dst", ON_CHIP, eng)
    srcs = {"src": operand(src.shrink(box), f"{what} src", ON_CHIP, eng),
            "offset": operand(view.index, f"{what} offset", (MemSpace.SBUF,)), "old": out}
    tr.record(Opcode.TENSOR_COPY_DYNAMIC_DST, eng, {"out": out}, srcs, {"offset_lo": lo})


def assign_dynamic(target: DynamicView, value: Any) -> None:
    """``t[ix, idx[0, i] + iy] = tile``: a ``tensor_copy_dynamic_dst`` on VectorE."""
    if not isinstance(value, NkiTensor):
        raise _fail(UnsupportedError, "assignment to a runtime-offset view: expected a tile "
                    f"(copied with tensor_copy_dynamic_dst), found {type(value).__name__}")
    tensor_copy_dynamic_dst(dst=target, src=value)
