"""DMA transfers as kernels request them: ``nl.load``, ``nl.store``, ``nisa.dma_copy``.

All three become ``dma_copy`` instructions on the DMA queues. A load returns a pending SBUF tile,
so ``t[...] = nl.load(...)`` moves the data straight into ``t``. Storing a PSUM tile first copies
it to SBUF (the DMA engines reach HBM and SBUF only), as the NKI docs describe for ``nl.store``.
"""

from __future__ import annotations

from typing import Any

from ..dtypes import to_dtype
from ..errors import KernelError, MemorySpaceError, ShapeError
from ..program.ir import Engine, MemSpace, Opcode
from . import tracer as _tracer
from .alloc import full, ndarray
from .hbm_offset import offset_sources
from .indirect import IndirectView, dma_indirect, gather, oob_name
from .operands import issue
from .tensors.tensor import NkiTensor
from .transfer import DMA_SPACES as _DMA_SPACES, dma_move

def _extra_keywords(tr: _tracer.Tracer, what: str, extra: dict[str, Any],
                    takes: str) -> None:
    """NKI declares nl.load / nl.store with **kwargs; a keyword we do not know is an error at
    the kernel line naming the ones taken (never Python's TypeError)."""
    if extra:
        raise tr.fail(KernelError, f"nl.{what}: unexpected keyword(s) {sorted(extra)}; "
                      f"expected only {takes}")


def load(src: Any, *, mask: Any = None, dtype: Any = None, name: str | None = None,
         mode: Any = None, **extra: Any) -> NkiTensor:
    """Load an HBM region into a new SBUF tile (its first axis becomes the partition dim).
    ``mode=nisa.oob_mode.skip`` on an indirect load (``t[idx_tile, ...]``) skips the rows whose
    index is out of bounds (they stay unwritten), as ``nisa.dma_copy(oob_mode=...)``."""
    what = "load"
    tr = _tracer.current(what)
    _extra_keywords(tr, what, extra, "mask, dtype, name, mode")
    oob = oob_name(mode, tr)
    if isinstance(src, IndirectView):
        if oob == "error":
            return gather(what, src, dtype, mask)
        dst = ndarray(src.shape, dtype if dtype is not None else src.dtype)  # (SBUF)
        dma_indirect(what, dst, src, mask, None, mode)
        return dst
    if not isinstance(src, NkiTensor):
        hint = (" (numpy arrays passed to the kernel become HBM tensors; a list stays a list)"
                if isinstance(src, (list, tuple)) else "")
        raise tr.fail(KernelError, f"{what} src: expected an HBM tensor, found "
                      f"{type(src).__name__}{hint}")
    if src.space is not MemSpace.HBM:
        raise tr.fail(MemorySpaceError, f"{what} src: expected a tensor in hbm, found "
                      f"{src.space.value} (copy between on-chip tiles with nl.copy)")
    # a single element (a[3, 4], as AWS's flash attention loads its sink) is a [1, 1] tile
    shape = src.shape if src.ndim >= 2 else src.shape + (1,) if src.ndim else (1, 1)
    if shape[0] > tr.config.num_partitions:
        raise tr.fail(ShapeError, f"{what}: the first axis becomes the partition dim; expected "
                      f"at most {tr.config.num_partitions}, found {shape[0]}")
    view = src if src.ndim >= 2 else src[:, None] if src.ndim else src[None, None]
    out_dtype = to_dtype(dtype, f"{what} dtype") if dtype is not None else src.dtype
    return issue(what, Opcode.DMA_COPY, Engine.DMA, shape, out_dtype,
                 {"src": view, **offset_sources(src)}, {"dst_rmw_op": None}, mask=mask,
                 spaces=_DMA_SPACES)


def load_transpose2d(src: Any, *, mask: Any = None, dtype: Any = None,
                     name: str | None = None) -> NkiTensor:
    """Load a 2-D HBM region [A, B] transposed into a new SBUF tile [B, A] (DMA transpose)."""
    what = "load_transpose2d"
    tr = _tracer.current(what)
    if not isinstance(src, NkiTensor) or src.space is not MemSpace.HBM:
        found = src.space.value if isinstance(src, NkiTensor) else type(src).__name__
        raise tr.fail(MemorySpaceError, f"{what} src: expected a tensor in hbm, found {found}")
    return _dma_transpose(what, src, (1, 0), mask, dtype, dims=(2,))


#: Permutations nisa.dma_transpose supports, by rank (arch.md section 2).
_DMA_TRANSPOSE_AXES = {2: ((1, 0),), 3: ((2, 1, 0),), 4: ((3, 1, 2, 0),)}


def _dma_transpose(what: str, src: NkiTensor, axes: Any, mask: Any, dtype: Any,
                   dims: tuple[int, ...] = (2, 3, 4)) -> NkiTensor:
    tr = _tracer.current(what)
    if src.ndim not in dims:
        raise tr.fail(ShapeError, f"{what} src: expected a {' or '.join(map(str, dims))}-D "
                      f"tensor, found shape {list(src.shape)}")
    axes = _DMA_TRANSPOSE_AXES[src.ndim][0] if axes is None else tuple(int(a) for a in axes)
    if axes not in _DMA_TRANSPOSE_AXES[src.ndim]:
        raise tr.fail(KernelError, f"{what} axes: expected "
                      f"{list(_DMA_TRANSPOSE_AXES[src.ndim])}, found {axes}")
    shape = tuple(src.shape[a] for a in axes)
    if shape[0] > tr.config.num_partitions:
        raise tr.fail(ShapeError, f"{what}: the result's partition dim (src axis {axes[0]}) "
                      f"must be at most {tr.config.num_partitions}, found {shape[0]}")
    out_dtype = to_dtype(dtype, f"{what} dtype") if dtype is not None else src.dtype
    # a mask ranges over the source's axes (the index expressions of src), as for
    # nc_transpose: result axis k is source axis axes[k]
    return issue(what, Opcode.DMA_TRANSPOSE, Engine.DMA, shape, out_dtype, {"src": src},
                 {"axes": axes}, mask=mask, spaces=_DMA_SPACES, mask_shape=src.shape,
                 out_axes=axes)


def store(dst: Any, value: Any, *, mask: Any = None, name: str | None = None,
          mode: Any = None, **extra: Any) -> None:
    """Store a tile into an HBM region (PSUM tiles are first copied to SBUF); ``mode=`` is the
    out-of-bounds mode of an indirect store (``nisa.oob_mode``)."""
    what = "store"
    tr = _tracer.current(what)
    _extra_keywords(tr, what, extra, "mask, name, mode")
    oob_name(mode, tr)
    if isinstance(dst, IndirectView):
        if not isinstance(value, NkiTensor):
            value = full(dst.shape, value, dst.dtype)
        dma_indirect(what, dst, value, mask, None, mode)
        return
    if not isinstance(dst, NkiTensor) or dst.space is not MemSpace.HBM:
        found = dst.space.value if isinstance(dst, NkiTensor) else type(dst).__name__
        raise tr.fail(MemorySpaceError, f"{what} dst: expected a tensor in hbm, found {found}")
    extra = offset_sources(dst)
    if dst.ndim == 0:  # one element (out[i, j]): a [1, 1] region
        dst = dst[None, None]
    if not isinstance(value, NkiTensor):
        value = full(dst.shape, value, dst.dtype)
    if value.space is MemSpace.PSUM:
        from .isa.compute import tensor_copy
        value = tensor_copy(value)
    dma_move(what, dst, value, mask, None, extra)
