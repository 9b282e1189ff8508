"""``nc_transpose(engine=vector)`` of a tile larger than one 32x32 block.

The reference says one VectorE transpose handles a [32, 32] tile or smaller (the Reshape Bank
transposes 32 partitions by 32 elements, arch guide "Vector Engine"). Kernels that ask VectorE
for a larger tile ([128, 64]) compile and run on Trn1 with the full transpose as their result,
so the request is lowered here to one VectorE transpose per 32x32 block: block (i, j) of the
input becomes block (j, i) of a new SBUF tile (each block moves between partition quadrants,
which VectorE does for at most 32 partitions, arch guide "Cross-Partition Connectivity").
docs/frontend.md says so.
"""

from __future__ import annotations

import numpy as np

from ...errors import ShapeError, UnsupportedError
from ...program.ir import Engine, MemSpace, Opcode
from .. import tracer as _tracer
from ..operands import fail as _fail
from ..operands import issue_into
from ..tensors.tensor import NkiTensor


def vector_block_transpose(d: NkiTensor, out_dtype: np.dtype, block: int, limit: int,
                           mask: object) -> NkiTensor:
    """``d`` [P, F] transposed into a new SBUF tile [F, P] by ``block`` x ``block`` VectorE
    transposes; P and F at most ``limit`` (the partitions of either side)."""
    what = "nc_transpose"
    p, f = d.shape[0], int(np.prod(d.shape[1:]))
    if p > limit or f > limit:
        raise _fail(ShapeError, f"{what} on VectorE: expected at most {block}x{block} per "
                    f"instruction and {limit}x{limit} in all (larger tiles run as "
                    f"{block}x{block} blocks), found {p}x{f}")
    if len(d.shape) != 2:
        raise _fail(UnsupportedError, f"{what} on VectorE of a tile larger than {block}x"
                    f"{block} with several free axes; expected a 2-D tile, found "
                    f"{list(d.shape)} (index it as [P, F] first)")
    if mask is not None:
        raise _fail(UnsupportedError, f"{what} on VectorE with mask= on a tile larger than "
                    f"{block}x{block} ({p}x{f}); expected no mask (or engine=tensor)")
    tr = _tracer.current(what)
    out = NkiTensor.whole(tr.new_tensor(MemSpace.SBUF, (f, p), out_dtype, site=tr.user_loc()))
    for p0 in range(0, p, block):
        for f0 in range(0, f, block):
            p1, f1 = min(p, p0 + block), min(f, f0 + block)
            issue_into(what, Opcode.NC_TRANSPOSE, Engine.VECTOR,
                       out.shrink(((f0, f1), (p0, p1))),
                       {"data": d.shrink(((p0, p1), (f0, f1)))}, {})
    return out
