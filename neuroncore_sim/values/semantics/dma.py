"""Values of indirect (index-tile) DMAs and of ``gather_flattened``.

An indirect ``dma_copy`` (``ir.OPCODE_DOC``) either gathers rows of a table region into a tile
(``indirect == "src"``) or scatters the rows of a tile into a table region
(``indirect == "dst"``). The row numbers come from the ``index`` source, a [P, 1] integer tile.

Out-of-bounds rows follow ``oob_mode``: ``"error"`` raises an :class:`AccessError` naming the
first bad index (the hardware raises a runtime error), ``"skip"`` leaves the destination row as
it was (the ``prior`` source). With ``dst_rmw_op == "add"`` a scatter returns the *increment* of
the table region (zero where no row is written, the sum of every value aimed at a row), which the
executor adds to the destination like any DMA read-modify-write; so repeated rows add up, as an
atomic read-modify-write must. A plain scatter with repeated rows keeps the last one (the hardware
order of such writes is not documented).
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from ...errors import AccessError, expected
from ...program.ir import Engine, Opcode
from .core import Arrays, Outs, Semantic, dma_copy as _plain_dma_copy, f32

__all__ = ["dma_copy", "gather_flattened"]


def _rows(index: np.ndarray, n_rows: int, oob: str) -> tuple[np.ndarray, np.ndarray]:
    """Row numbers as int64 and which of them are in range; raise in ``error`` mode."""
    rows = np.asarray(index).reshape(-1).astype(np.int64)
    ok = (rows >= 0) & (rows < n_rows)
    if oob == "error" and not ok.all():
        bad = int(np.flatnonzero(~ok)[0])
        raise AccessError(expected(f"indirect DMA row index (partition {bad} of the index tile)",
                                   f"0..{n_rows - 1} (or oob_mode=nisa.oob_mode.skip)",
                                   int(rows[bad])))
    return rows, ok


def _like(x: np.ndarray, dt: np.dtype) -> np.ndarray:
    """``x`` bit-exact when it already has dtype ``dt`` (a plain DMA copy), else float32."""
    return x if x.dtype == dt else f32(x)


def dma_copy(srcs: Arrays, attrs: Mapping, outs: Outs, engine: Engine) -> dict:
    """dma_copy, direct or indirect (see the module docstring)."""
    side = attrs.get("indirect")
    if side is None:
        return _plain_dma_copy(srcs, attrs, outs, engine)
    oob = str(attrs.get("oob_mode") or "error")
    dt = outs["out"].dtype
    if side == "src":
        table = srcs["src"]
        rows, ok = _rows(srcs["index"], table.shape[0], oob)
        if ok.all():
            return {"out": _like(table[rows], dt)}
        prior = srcs["prior"]
        both = dt if table.dtype == prior.dtype == dt else np.dtype(np.float32)
        out = _like(prior, both).copy()
        out[ok] = _like(table[rows[ok]], both)
        return {"out": out}
    value = srcs["src"]
    shape = outs["out"].shape
    rows, ok = _rows(srcs["index"], shape[0], oob)
    if attrs.get("dst_rmw_op") is not None:
        delta = np.zeros(shape, np.int64 if value.dtype.kind in "iub" and dt.kind in "iub"
                         else np.float32)
        np.add.at(delta, rows[ok], value[ok].astype(delta.dtype))
        return {"out": delta}
    prior = srcs["prior"]
    both = dt if value.dtype == prior.dtype == dt else np.dtype(np.float32)
    out = _like(prior, both).copy()
    out[rows[ok]] = _like(value[ok], both)
    return {"out": out}


def gather_flattened(srcs: Arrays, attrs: Mapping, outs: Outs, engine: Engine) -> dict:
    """out[p, i...] = data[p].flat[indices[p, i...]]; out-of-range indices give NaN (0 for
    integer outputs): the docs say they "return garbage values", and NaN makes that loud."""
    data, idx = srcs["data"], srcs["indices"]
    flat = data.reshape(data.shape[0], -1)
    pos = idx.reshape(idx.shape[0], -1).astype(np.int64)
    ok = (pos >= 0) & (pos < flat.shape[1])
    dt = outs["out"].dtype
    picked = np.take_along_axis(_like(flat, dt), np.where(ok, pos, 0), axis=1)
    garbage = 0 if dt.kind in "iub" else np.nan
    if not ok.all():
        picked = np.where(ok, f32(picked) if garbage is np.nan else picked, garbage)
    return {"out": picked.reshape(idx.shape)}


#: Opcode -> meaning, merged into the package's ``SEMANTICS``.
DMA_SEMANTICS: dict[Opcode, Semantic] = {Opcode.DMA_COPY: dma_copy, Opcode.GATHER_FLATTENED: gather_flattened}
