"""Indirect (index-tile) DMA: ``nl.load(t[idx_tile, i_f])``, ``nl.store(t[idx_tile, i_f], v)``,
``nl.atomic_rmw(t[idx_tile, i_f], v, np.add)`` and ``nisa.dma_copy`` with such an operand.

Indexing an HBM tensor with an SBUF tile of integers as its first index gives an
:class:`IndirectView`: row ``p`` of the view is row ``idx_tile[p, 0]`` of the tensor (the NKI docs:
"indirect DMA access with dynamic index values"; the indices "have to be in SBUF"). The other
indices (slices, ints, ``nl.arange`` expressions) select the elements of each row as usual.

Because the rows are only known when the kernel runs, the recorded ``dma_copy`` names the whole
table region (all rows of the indexed dim) as its HBM operand: a gather waits for every earlier
write to the table and a scatter orders every later access after it. The instruction carries
the index tile as a source (role ``index``), so it also waits for whatever computed the
indices. Timing: one DMA descriptor per gathered row (times the contiguous runs of a row), see
``cost.dma_transfers``.
"""

from __future__ import annotations

from typing import Any

from ..dtypes import dtype_name, is_float
from ..errors import (AccessError, DTypeError, KernelError, MemorySpaceError, ShapeError,
                      UnsupportedError)
from ..program.ir import Engine, MemSpace, Opcode
from . import tracer as _tracer
from .alloc import full, ndarray, sbuf
from .index.indexing import IndexExpr
from .operands import issue, issue_into, operand
from .tensors.tensor import NkiTensor
from .transfer import DMA_SPACES as _DMA_SPACES

#: nisa.oob_mode members by value (error = 0, skip = 1) and name.
OOB_MODES = {0: "error", 1: "skip", "error": "error", "skip": "skip"}


class IndirectView:
    """Rows of an HBM tensor selected by an index tile: ``tensor[idx_tile, ...]``.

    Attributes:
        table: the tensor region the rows come from, ``[R, F...]`` with every row of the indexed
            dim (R = that dim's size).
        index: the [P, 1] SBUF tile of row numbers.
        shape: ``(P,) + F``: the shape of the data moved.
    """

    def __init__(self, table: NkiTensor, index: NkiTensor) -> None:
        self.table, self.index = table, index
        self.shape = (index.shape[0],) + table.shape[1:]
        self.dtype = table.dtype
        self.space = MemSpace.HBM

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __repr__(self) -> str:
        return f"IndirectView({self.table.tensor.name}[index], {list(self.shape)})"


def indirect_view(t: NkiTensor, key: tuple[Any, ...]) -> IndirectView:
    """``t[idx_tile, rest...]``: validate and build the view (called by ``NkiTensor[...]``)."""
    tr = _tracer.current("indirect indexing")
    idx = key[0]
    if any(isinstance(k, NkiTensor) for k in key[1:]) or not isinstance(idx, NkiTensor):
        raise tr.fail(UnsupportedError, "indirect indexing: only the first index may be a tile "
                      "of row numbers (indirect DMA selects rows of the tensor)")
    if t.space is not MemSpace.HBM:
        raise tr.fail(MemorySpaceError, f"indirect indexing: expected a tensor in hbm (indirect "
                      f"DMA reads or writes device memory), found {t.space.value}")
    if idx.space is not MemSpace.SBUF:
        raise tr.fail(MemorySpaceError, f"indirect index tile: expected a tile in sbuf (the NKI "
                      f"docs: indices have to be in SBUF), found {idx.space.value}")
    if is_float(idx.dtype):
        raise tr.fail(DTypeError, f"indirect index tile: expected an integer dtype, found "
                      f"{dtype_name(idx.dtype)}")
    if idx.ndim == 0:  # t[e[0, 0], ...]: one runtime offset for the whole access
        from .hbm_offset import runtime_offset_view
        return runtime_offset_view(t, key)  # type: ignore[return-value]
    if idx.ndim not in (1, 2) or (idx.ndim == 2 and idx.shape[1] != 1):
        raise tr.fail(ShapeError, f"indirect index tile: expected shape [P, 1] (one row number "
                      f"per partition), found {list(idx.shape)}")
    if idx.ndim == 1:
        idx = idx[:, None]
    rest = key[1:]
    affine = any(isinstance(k, IndexExpr) for k in rest)
    row = t[(0,) + rest] if rest else t[0]
    free = row.shape
    if affine:  # the expressions' leading axis broadcasts against the index tile's partitions
        if not free or free[0] != 1:
            raise tr.fail(AccessError, f"indirect indexing: the index expressions of the other "
                          f"dims must have size 1 on the partition axis, found shape "
                          f"{list(free)}")
        free = free[1:]
        coefs = tuple(r[1:] for r in row.coefs)
    else:
        coefs = row.coefs
    # Axis 0 of the table region walks every row of the indexed dim (coefficient 1 on dim 0).
    coefs = tuple((1 if d == 0 else 0,) + c for d, c in enumerate(coefs))
    table = NkiTensor(t.decl, (t.dims[0],) + tuple(free), t.dtype, row.base, coefs, t.space,
                      frame=t.frame)
    return IndirectView(table, idx)


def oob_name(oob_mode: Any, tr: _tracer.Tracer) -> str:
    """"error" / "skip" for an ``nisa.oob_mode`` (None: error), else a KernelError."""
    value = getattr(oob_mode, "value", oob_mode) if oob_mode is not None else 0
    if value not in OOB_MODES:
        raise tr.fail(KernelError, f"oob_mode: expected nisa.oob_mode.error or "
                      f"nisa.oob_mode.skip, found {oob_mode!r}")
    return OOB_MODES[value]


def _fit(view: IndirectView, other: NkiTensor) -> NkiTensor:
    """``other`` in the indirect view's shape when they name the same elements (a [P] tile
    for a [P, 1] view, partition-aligned as in assignments), else ``other`` itself."""
    from .broadcast import relabel, same_layout
    if other.shape != view.shape and same_layout(other.shape, view.shape):
        return relabel(other, view.shape)
    return other


def _check(tr: _tracer.Tracer, what: str, view: IndirectView, other: NkiTensor,
           mask: Any) -> None:
    if mask is not None:
        raise tr.fail(UnsupportedError, f"{what}: mask= on an indirect DMA is not supported")
    if other.shape != view.shape:
        raise tr.fail(ShapeError, f"{what}: expected a tile of shape {list(view.shape)} (index "
                      f"partitions x selected elements), found {list(other.shape)}")
    operand(view.index, f"{what} index", (MemSpace.SBUF,))


def gather(what: str, src: IndirectView, dtype: Any, mask: Any) -> NkiTensor:
    """``nl.load(t[idx, ...])``: a new SBUF tile with the selected rows."""
    from ..dtypes import to_dtype
    tr = _tracer.current(what)
    if src.shape[0] > tr.config.num_partitions:
        raise tr.fail(ShapeError, f"{what}: at most {tr.config.num_partitions} indices, found "
                      f"{src.shape[0]}")
    out_dtype = to_dtype(dtype, f"{what} dtype") if dtype is not None else src.dtype
    if mask is not None:
        return _masked_gather(what, src, out_dtype, mask)
    return issue(what, Opcode.DMA_COPY, Engine.DMA, src.shape, out_dtype,
                 {"src": src.table, "index": src.index},
                 {"dst_rmw_op": None, "indirect": "src", "oob_mode": "error"},
                 spaces=_DMA_SPACES)


def _masked_gather(what: str, src: IndirectView, out_dtype: Any, mask: Any) -> NkiTensor:
    """``nl.load(t[idx, ...], mask=m)``: only the rows (and columns) the mask keeps are gathered,
    so the index rows it drops are never read (they may hold any value, as a resize kernel's
    rows past the end of its output do). The mask must be a box (bounds per axis); the rows
    it drops are left unwritten in the new tile."""
    from .operands import mask_box
    tr = _tracer.current(what)
    box, residual, empty = mask_box(mask, src.shape)
    if residual is not None:
        raise tr.fail(UnsupportedError, f"{what}: mask= on an indirect DMA must be bounds per "
                      f"axis (i < n, i >= m, combined with &); found a mask that is not a box "
                      f"over {list(src.shape)}")
    out = ndarray(src.shape, dtype=out_dtype, buffer=sbuf)
    if empty or box is None:
        return out if empty else NkiTensor.whole(out.decl)
    (lo, hi), cols = box[0], box[1:]
    free = tuple(slice(a, b) for a, b in cols)
    rows = IndirectView(src.table[(slice(None),) + free], src.index[lo:hi])
    dma_indirect(what, out[(slice(lo, hi),) + free], rows, None, None)
    return out


def dma_indirect(what: str, dst: Any, src: Any, mask: Any, rmw: str | None,
                 oob_mode: Any = None) -> None:
    """A DMA where ``dst`` or ``src`` (not both) is an :class:`IndirectView`."""
    tr = _tracer.current(what)
    oob = oob_name(oob_mode, tr)
    if isinstance(dst, IndirectView) and isinstance(src, IndirectView):
        raise tr.fail(UnsupportedError, f"{what}: at most one side of a DMA can be indirect")
    if rmw is not None and oob != "error":
        raise tr.fail(KernelError, f"{what}: with dst_rmw_op only oob_mode=oob_mode.error is "
                      f"allowed (NKI docs); found oob_mode {oob}")
    attrs: dict[str, object] = {"dst_rmw_op": rmw, "oob_mode": oob}
    if isinstance(src, IndirectView):
        if rmw is not None:
            raise tr.fail(UnsupportedError, f"{what}: dst_rmw_op needs an indirect dst")
        dst = _fit(src, dst)
        _check(tr, what, src, dst, mask)
        srcs = {"src": src.table, "index": src.index}
        if oob == "skip":  # rows with an out-of-bounds index keep the destination's values
            srcs["prior"] = dst
        issue_into(what, Opcode.DMA_COPY, Engine.DMA, dst, srcs, dict(attrs, indirect="src"),
                   dst_spaces=_DMA_SPACES, src_spaces=_DMA_SPACES)
        return
    if not isinstance(src, NkiTensor):
        raise tr.fail(KernelError, f"{what} value: expected a tile, found {type(src).__name__}")
    if src.space is MemSpace.PSUM:
        from .isa.compute import tensor_copy
        src = tensor_copy(src)
    src = _fit(dst, src)
    _check(tr, what, dst, src, mask)
    srcs = {"src": src, "index": dst.index}
    if rmw is None:  # a scatter keeps the rows it does not write
        srcs["prior"] = dst.table
    if dst.table.decl is not None:
        tr.note_write(dst.table.decl)
    issue_into(what, Opcode.DMA_COPY, Engine.DMA, dst.table, srcs, dict(attrs, indirect="dst"),
               dst_spaces=_DMA_SPACES, src_spaces=_DMA_SPACES)


def atomic_rmw(dst: Any, value: Any, op: Any, *, mask: Any = None, **_: Any) -> None:
    """``nl.atomic_rmw(t[idx_tile, ...], value, np.add)``: ``dst = dst + value`` on the rows the
    index tile selects, as one DMA with read-modify-write (repeated rows add up)."""
    from .operands import op_name
    what = "atomic_rmw"
    tr = _tracer.current(what)
    name = op_name(op, f"{what} op", frozenset({"add"}))
    if not isinstance(dst, IndirectView):
        raise tr.fail(UnsupportedError, f"{what} dst: expected an HBM tensor indexed by an index "
                      f"tile (t[idx_tile, ...]); NKI supports only indirect indexing here, found "
                      f"{type(dst).__name__}")
    if not isinstance(value, NkiTensor):
        value = full(dst.shape, value, dst.dtype)
    dma_indirect(what, dst, value, mask, name)
