"""Building blocks for executor tests: hand-made tensor declarations, accesses, instructions."""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np

from neuroncore_sim import dtypes as D
from neuroncore_sim.values.execute import Executor
from neuroncore_sim.program.ir import (Access, Engine, Instruction, MemSpace, Opcode, SourceLoc,
                                       TensorDecl)

_ids = itertools.count()
F32 = np.float32
BF16 = ml_dtypes.bfloat16


def decl(shape, dtype=D.float32, space=MemSpace.SBUF, pa=0, name="t", kind="tile"):
    """A tensor declaration with a fresh id."""
    return TensorDecl(next(_ids), name, space, tuple(shape), np.dtype(dtype), pa, kind)


def acc(t: TensorDecl, offset: int, *pattern: tuple[int, int]) -> Access:
    """An access: ``offset`` plus (stride, size) pairs."""
    return Access(t, offset, tuple(pattern))


def rect(t: TensorDecl, rows: slice, cols: slice) -> Access:
    """A [rows, cols] rectangle of a 2-d partition-major tile."""
    r0, r1 = rows.indices(t.shape[0])[:2]
    c0, c1 = cols.indices(t.shape[1])[:2]
    return acc(t, r0 * t.row_size + c0, (t.row_size, r1 - r0), (1, c1 - c0))


def ins(opcode, dsts, srcs, engine=Engine.VECTOR, mask=None, **attrs) -> Instruction:
    """An instruction issued from a fake kernel line."""
    return Instruction(next(_ids), opcode, engine, dsts, srcs, attrs, SourceLoc("k.py", 7), mask)


def tile(ex: Executor, values=None, shape=None, dtype=D.float32, **kw) -> TensorDecl:
    """Declare a tensor on ``ex`` (from values, or uninitialised)."""
    if values is not None:
        values = np.asarray(values)
        shape, dtype = values.shape, values.dtype if dtype is D.float32 else dtype
    t = decl(shape, dtype, **kw)
    ex.declare(t, values)
    return t


U32 = 2.0 ** -24  # unit roundoff of float32


def gamma(k: int) -> float:
    """gamma_k of floating-point error analysis, for float32."""
    return k * U32 / (1 - k * U32)


def chain_lengths(program) -> int:
    """The largest number of products summed into one PSUM element by an nc_matmul chain (0 when
    the program has no matmul)."""
    longest, running = 0, {}
    for i in program.instructions:
        if i.opcode is not Opcode.NC_MATMUL:
            continue
        key = (i.dsts["out"].tensor, repr(i.dsts["out"]))
        k = i.srcs["stationary"].partitions
        running[key] = running.get(key, 0) + k if i.attrs.get("accumulate") else k
        longest = max(longest, running[key])
    return longest


def products_per_element(program, out_elements: int) -> int:
    """The products summed into each element of an output of ``out_elements`` elements by all
    the program's nc_matmuls (its contraction length, over every chain)."""
    total = sum(i.srcs["stationary"].partitions * i.dsts["out"].size
                for i in program.instructions if i.opcode is Opcode.NC_MATMUL)
    return total // max(1, out_elements)
