"""The recorded program: the one interface between the NKI front end, the functional executor
and the timing model.

A :class:`Program` is an ordered list of :class:`Instruction` over :class:`TensorDecl` tensors.
Each operand is an :class:`Access`: an affine access pattern (offset plus ``(stride, size)``
pairs, in elements) into one tensor, like the hardware's access patterns. The timing model reads
shapes, dtypes, memory spaces and regions from it and never sees a numpy value.

Storage layout. Every tensor is stored *row-major by partition*: its ``partition_axis`` is the
row axis, and the other dims, in declared order, make up a row (for SBUF/PSUM a row is the
tensor's bytes in one partition, block dims included, as on the hardware). HBM tensors use
``partition_axis = 0``, i.e. plain C order. ``TensorDecl.strides`` gives the element strides of
the declared dims in that layout.

Operand roles. ``Instruction.srcs`` and ``Instruction.dsts`` are dicts from role names to
accesses. The roles and ``attrs`` of each opcode are listed in :data:`OPCODE_DOC`; operators in
attrs are NKI names such as "add", "exp" or "maximum" (see ``neuroncore_sim/program/ops.py``).
"""

from __future__ import annotations

import enum
import math
import os
from dataclasses import dataclass, field
from typing import Iterator

import numpy as np

from ..dtypes import dtype_name
from .layout import ACTIVE_MEMO, layout, measure, resized_bounds, slot_setters
# re-exported: part of the IR vocabulary
from .opcodes import DMA_OPCODES, ENGINE_PICKED, OPCODE_DOC, Opcode  # noqa: F401

__all__ = ["Engine", "MemSpace", "Opcode", "OPCODE_DOC", "SourceLoc", "Placement", "TensorDecl",
           "Access", "Affine", "Predicate", "Instruction", "Program"]


class Engine(str, enum.Enum):
    """Execution units, named as ``nki.isa.engine``; DMA work is on the DMA queues."""

    TENSOR = "tensor"
    VECTOR = "vector"
    SCALAR = "scalar"
    GPSIMD = "gpsimd"
    SYNC = "sync"
    DMA = "dma"


class MemSpace(str, enum.Enum):
    """Memories of a NeuronCore-v2."""

    HBM = "hbm"
    SBUF = "sbuf"
    PSUM = "psum"


@dataclass(frozen=True, slots=True)
class SourceLoc:
    """A line of the user's kernel source."""

    filename: str
    lineno: int

    def __str__(self) -> str:
        return f"{os.path.basename(self.filename)}:{self.lineno}"


@dataclass(frozen=True, slots=True)
class Placement:
    """Where the tiles of a directly allocated tensor (``ncc.sbuf.alloc`` / ``mod_alloc``,
    ``ncc.psum.alloc`` / ``mod_alloc``) physically live.

    Attributes:
        tiles: one ``(start_partition, byte_addr)`` per logical block, block dims in row-major
            order (one entry for a tensor without block dims). For PSUM ``byte_addr`` counts
            from the start of bank 0 (``bank * bank_bytes + offset``).
        partitions: partitions of one tile (the tensor's partition dim).
        tile_bytes: bytes per partition of one tile (its free dims).
    """

    tiles: tuple[tuple[int, int], ...]
    partitions: int
    tile_bytes: int


@dataclass(frozen=True, slots=True, eq=False, init=False)
class TensorDecl:
    """A tensor the kernel reads or writes: a kernel argument, an HBM output or an on-chip tile.

    Attributes:
        id: position in ``Program.tensors``.
        name: readable name ("a", "out", "t12").
        space: the memory it lives in.
        shape: declared shape (block dims, partition dim, free dims for SBUF/PSUM).
        dtype: an NKI numpy dtype.
        partition_axis: which declared dim is the partition dim (0 for HBM).
        kind: "input", "output" (shared_hbm allocated by the kernel), "hbm" (private scratch),
            "tile" (SBUF/PSUM) or "constant".
        site: the source line that allocated it (tiles from one site rotate through buffers).
        placement: the explicit physical placement of a directly allocated tile (None: the
            compiler's allocator decides).
    """

    id: int
    name: str
    space: MemSpace
    shape: tuple[int, ...]
    dtype: np.dtype
    partition_axis: int = 0
    kind: str = "tile"
    site: SourceLoc | None = None
    placement: Placement | None = None
    rows: int = field(init=False)
    row_size: int = field(init=False)
    strides: tuple[int, ...] = field(init=False)

    def __init__(self, id: int, name: str, space: MemSpace, shape: tuple[int, ...],
                 dtype: np.dtype, partition_axis: int = 0, kind: str = "tile",
                 site: SourceLoc | None = None, placement: Placement | None = None) -> None:
        # Hand-written, with slot setters, as Access's and Instruction's: see ir_layout.py.
        geometry = layout(shape, partition_axis)
        (set_id, set_name, set_space, set_shape, set_dtype, set_pa, set_kind, set_site,
         set_placement, set_rows, set_row_size, set_strides) = _TENSOR_SETTERS
        set_id(self, id)
        set_name(self, name)
        set_space(self, space)
        set_shape(self, geometry[3])  # (an equal shape of an earlier tensor, shared)
        set_dtype(self, dtype)
        set_pa(self, partition_axis)
        set_kind(self, kind)
        set_site(self, site)
        set_placement(self, placement)
        set_rows(self, geometry[0])
        set_row_size(self, geometry[1])
        set_strides(self, geometry[2])

    @property
    def size(self) -> int:
        """Number of elements."""
        return self.rows * self.row_size

    @property
    def itemsize(self) -> int:
        """Bytes per element."""
        return self.dtype.itemsize

    @property
    def row_bytes(self) -> int:
        """Bytes per row (per partition for SBUF/PSUM tiles)."""
        return self.row_size * self.dtype.itemsize

    def __repr__(self) -> str:
        return (f"TensorDecl({self.name}, {self.space.value}, {list(self.shape)}, "
                f"{dtype_name(self.dtype)})")


_TENSOR_SETTERS = slot_setters(TensorDecl, "id name space shape dtype partition_axis kind site "
                                "placement rows row_size strides")


@dataclass(frozen=True, slots=True, eq=False, init=False)
class Access:
    """An affine access pattern into one tensor (the region an operand reads or writes).

    Element ``(i0, i1, ...)`` of the access is storage element
    ``offset + sum(stride_k * i_k)``. For SBUF/PSUM operands the first pattern dim is the
    partition dim. ``row_lo/row_hi`` and ``col_lo/col_hi`` bound the rows (partitions) and the
    elements within a row that the access touches; they are exact for rectangular slices and
    conservative otherwise. They are what hazard detection compares.
    """

    tensor: TensorDecl
    offset: int
    pattern: tuple[tuple[int, int], ...]
    #: the elements read as another dtype (``t.view(dtype)``); None: the tensor's own. With a
    #: dtype of another size, ``offset`` and ``pattern`` count elements of that dtype in the
    #: tensor's storage read as a flat array of it, while the bounds below stay in the tensor's
    #: own elements (so accesses through different views of one tensor compare)
    view_dtype: np.dtype | None = None
    row_lo: int = field(init=False)
    row_hi: int = field(init=False)
    col_lo: int = field(init=False)
    col_hi: int = field(init=False)
    #: number of elements accessed (kept: hot paths ask for it on every instruction)
    size: int = field(init=False, compare=False, repr=False)

    def __init__(self, tensor: TensorDecl, offset: int,
                 pattern: tuple[tuple[int, int], ...], view_dtype: np.dtype | None = None
                 ) -> None:
        if view_dtype is not None and view_dtype.itemsize != tensor.dtype.itemsize:
            bounds = resized_bounds(tensor.row_size, tensor.dtype.itemsize, view_dtype.itemsize,
                                    offset, pattern)
        else:
            key = (tensor.row_size, offset, pattern)
            memo = ACTIVE_MEMO.get()
            bounds = None
            if memo is not None:
                try:
                    bounds = memo.bounds.get(key)
                except TypeError:  # lists in the pattern: not hashable, so never remembered
                    memo = None
            if bounds is None:
                bounds = measure(*key, memo)
        (set_tensor, set_offset, set_pattern, set_row_lo, set_row_hi, set_col_lo, set_col_hi,
         set_size) = _ACCESS_SETTERS
        set_tensor(self, tensor)
        _SET_VIEW_DTYPE(self, view_dtype)
        set_offset(self, offset)
        set_pattern(self, bounds[5])  # (the first equal pattern: fewer live objects to collect)
        set_row_lo(self, bounds[0])
        set_row_hi(self, bounds[1])
        set_col_lo(self, bounds[2])
        set_col_hi(self, bounds[3])
        set_size(self, bounds[4])

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of the accessed region."""
        return tuple(n for _, n in self.pattern)

    @property
    def dtype(self) -> np.dtype:
        """The dtype the elements are read and written as (the tensor's, unless viewed as
        another dtype)."""
        return self.tensor.dtype if self.view_dtype is None else self.view_dtype

    @property
    def space(self) -> MemSpace:
        """The memory the tensor lives in."""
        return self.tensor.space

    @property
    def nbytes(self) -> int:
        """Bytes accessed."""
        return self.size * self.dtype.itemsize

    @property
    def resized(self) -> bool:
        """True when the access reads its tensor as a dtype of another size (its offset and
        pattern then count that dtype's elements, not the tensor's)."""
        v = self.view_dtype
        return v is not None and v.itemsize != self.tensor.dtype.itemsize

    @property
    def partitions(self) -> int:
        """Size of the first (partition) dim; 1 for a 0-d access."""
        return self.pattern[0][1] if self.pattern else 1

    @property
    def free_size(self) -> int:
        """Elements per partition (product of the non-partition dims): the N of cost formulas."""
        pattern, size = self.pattern, self.size
        if pattern and type(size) is int and pattern[0][1] > 0:  # (all dims plain ints)
            return size // pattern[0][1]  # (speed: size is their product, kept)
        return math.prod(n for _, n in pattern[1:])

    def contiguous_runs(self) -> tuple[int, int]:
        """(number of contiguous element runs, elements per run) after merging adjacent dims.

        A DMA moves one descriptor ("DMA buffer") per run.
        """
        dims = [(s, n) for s, n in self.pattern if n != 1]
        run = 1
        while dims and dims[-1][0] == run:
            run *= dims.pop()[1]
        return (math.prod(n for _, n in dims) if dims else 1), run

    def overlaps(self, other: Access) -> bool:
        """True when the bounding regions of two accesses to the same tensor intersect."""
        return (self.tensor is other.tensor
                and self.row_lo < other.row_hi and other.row_lo < self.row_hi
                and self.col_lo < other.col_hi and other.col_lo < self.col_hi)

    def __repr__(self) -> str:
        t = self.tensor
        return (f"{t.name}:{t.space.value}[{self.row_lo}:{self.row_hi},{self.col_lo}:{self.col_hi}]"
                f"{list(self.shape)}")


_ACCESS_SETTERS = slot_setters(Access, "tensor offset pattern row_lo row_hi col_lo col_hi size")
(_SET_VIEW_DTYPE,) = slot_setters(Access, "view_dtype")


@dataclass(frozen=True, slots=True)
class Affine:
    """An integer affine expression over the axes of an instruction's output:
    ``const + sum(coefs[k] * i_k)``."""

    const: int
    coefs: tuple[int, ...]

    def evaluate(self, shape: tuple[int, ...]) -> np.ndarray:
        """Values over a grid of ``shape`` (broadcast-shaped int64 array)."""
        grids = np.ogrid[tuple(slice(0, n) for n in shape)] if shape else []
        value: np.ndarray | int = self.const
        for c, g in zip(self.coefs, grids):
            if c:
                value = value + c * g
        return np.broadcast_to(np.asarray(value, dtype=np.int64), shape)


_CMP = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
        "==": np.equal, "!=": np.not_equal}


@dataclass(frozen=True, slots=True)
class Predicate:
    """A compile-time condition over the output axes: comparisons of affine expressions with 0,
    combined with and / or / not. ``op`` is one of ``< <= > >= == !=`` (then ``expr`` is set)
    or ``and``, ``or``, ``not`` (then ``parts`` is set)."""

    op: str
    expr: Affine | None = None
    parts: tuple[Predicate, ...] = ()

    def __post_init__(self) -> None:
        if self.op not in _CMP and self.op not in ("and", "or", "not"):
            raise ValueError(f"Predicate op must be a comparison or and/or/not, found {self.op!r}")

    def evaluate(self, shape: tuple[int, ...]) -> np.ndarray:
        """Boolean array of ``shape``: where the predicate holds."""
        if self.op in _CMP:
            assert self.expr is not None
            return _CMP[self.op](self.expr.evaluate(shape), 0)
        values = [p.evaluate(shape) for p in self.parts]
        if self.op == "not":
            return ~values[0]
        combine = np.logical_and if self.op == "and" else np.logical_or
        out = values[0]
        for v in values[1:]:
            out = combine(out, v)
        return np.broadcast_to(out, shape)


@dataclass(frozen=True, slots=True, eq=False, init=False)
class Instruction:
    """One executed instruction.

    Attributes:
        id: position in ``Program.instructions``.
        opcode: which nki.isa instruction.
        engine: the engine that runs it (``Engine.DMA`` for DMA transfers).
        dsts: role -> region written (the main output is "out").
        srcs: role -> region read.
        attrs: plain values (operator names, scalars, flags), per :data:`OPCODE_DOC`.
            Read-only, like ``dsts`` and ``srcs``: instructions with equal attrs share one dict
            (``layout.shared_attrs``).
        loc: the user's kernel line that issued it.
        mask: which output elements are written (None: all). Already shrunk to its bounding box.
        instance: index of the SPMD program instance (0 for a kernel without a grid).
        loops: the enclosing ``nl.affine_range`` loops, outermost first, as (loop id, iteration
            number) pairs; the loop id indexes ``Program.loops``.
    """

    id: int
    opcode: Opcode
    engine: Engine
    dsts: dict[str, Access]
    srcs: dict[str, Access]
    attrs: dict[str, object]
    loc: SourceLoc | None = None
    mask: Predicate | None = None
    instance: int = 0
    loops: tuple[tuple[int, int], ...] = ()

    def __init__(self, id: int, opcode: Opcode, engine: Engine, dsts: dict[str, Access],
                 srcs: dict[str, Access], attrs: dict[str, object], loc: SourceLoc | None = None,
                 mask: Predicate | None = None, instance: int = 0,
                 loops: tuple[tuple[int, int], ...] = ()) -> None:
        (set_id, set_opcode, set_engine, set_dsts, set_srcs, set_attrs, set_loc, set_mask,
         set_instance, set_loops) = _INSTRUCTION_SETTERS
        set_id(self, id)
        set_opcode(self, opcode)
        set_engine(self, engine)
        set_dsts(self, dsts)
        set_srcs(self, srcs)
        set_attrs(self, attrs)
        set_loc(self, loc)
        set_mask(self, mask)
        set_instance(self, instance)
        set_loops(self, loops)

    @property
    def out(self) -> Access:
        """The main destination."""
        return self.dsts["out"]

    def accesses(self) -> Iterator[tuple[Access, bool]]:
        """All operands as (access, is_write), sources first."""
        for a in self.srcs.values():
            yield a, False
        for a in self.dsts.values():
            yield a, True


_INSTRUCTION_SETTERS = slot_setters(Instruction, "id opcode engine dsts srcs attrs loc mask "
                                     "instance loops")


@dataclass(slots=True)
class Program:
    """Everything a kernel launch executed, in program order.

    Attributes:
        name: the kernel's function name.
        grid: the SPMD launch grid (() for a single instance).
        tensors: every tensor, indexed by ``TensorDecl.id``.
        instructions: every instruction, indexed by ``Instruction.id``.
        loops: the source line of every ``nl.affine_range`` loop the kernel ran, indexed by
            loop id (each time a loop statement starts is a new loop).
        keeps_order: the kernel asked the compiler to keep its instruction order
            (``ncc.no_reorder`` / ``skip_middle_end_transformations``): the compile stage does
            not reorder it.
    """

    name: str
    grid: tuple[int, ...] = ()
    tensors: list[TensorDecl] = field(default_factory=list)
    instructions: list[Instruction] = field(default_factory=list)
    loops: list[SourceLoc | None] = field(default_factory=list)
    keeps_order: bool = False

    def format(self) -> str:
        """A readable listing, one instruction per line (used for golden tests)."""
        lines = [f"program {self.name} grid={list(self.grid)}"]
        for t in self.tensors:
            lines.append(f"  tensor {t.name}: {t.space.value} {list(t.shape)} "
                         f"{dtype_name(t.dtype)} {t.kind}")
        for ins in self.instructions:
            dsts = ", ".join(f"{k}={a!r}" for k, a in ins.dsts.items())
            srcs = ", ".join(f"{k}={a!r}" for k, a in ins.srcs.items())
            attrs = ", ".join(f"{k}={v}" for k, v in ins.attrs.items())
            mask = " masked" if ins.mask is not None else ""
            lines.append(f"  {ins.id:>4} {ins.engine.value:<6} {ins.opcode.value:<20} {dsts}"
                         f" <- {srcs}{' {' + attrs + '}' if attrs else ''}{mask}  @{ins.loc}")
        return "\n".join(lines)
