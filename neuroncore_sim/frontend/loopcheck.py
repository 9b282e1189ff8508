"""Loop-carried dependencies inside ``nl.affine_range`` loops, found in the recorded Program.

The NKI docs: ``affine_range`` is for loops without loop-carried dependencies, associative
reductions excepted (several ``nc_matmul`` accumulating into one PSUM tile, or ``+=`` on SBUF, as
the ``nl.loop_reduce`` page shows); using it for a loop with a carried dependency "is considered
unsafe and could lead to numerical errors" (the compiler may pipeline or reorder iterations).
The compiler accepts such a kernel, so this is a warning (:class:`LoopDependencyWarning`), not an
error. The simulator runs iterations in order, so its values are what ``sequential_range`` would
give, which the hardware may not.

What is reported: an instruction in iteration j of an affine loop that reads elements whose
latest writer is an instruction of an earlier iteration i of the same loop (the first loop level
where their iterations differ). Not reported (accumulations):

- the implicit read of an accumulating ``nc_matmul`` (``psum += nc_matmul(...)``) or of a DMA
  with ``dst_rmw_op``;
- an associative ``tensor_tensor`` (add, multiply, max, min, bitwise / logical and-or-xor)
  reading the region it writes (``acc += x``, ``acc[...] = nl.add(acc, x)``, ``nl.loop_reduce``),
  or reading what the same kernel line wrote in an earlier iteration
  (``b = nisa.tensor_tensor(b, a, nl.add)``);
- the ``old`` / ``prior`` operands of partial writes (runtime-offset, predicated and shuffle
  copies, indirect scatters), which only keep the destination's other elements.

Regions are tracked per tensor as rectangles (partition rows x element columns) of the latest
writes; a write with an exact rectangular footprint removes what it covers from older ones. A
candidate hit is confirmed element by element before it is reported, so strided accesses do not
give false reports. One report per reading kernel line.

The rectangles of a bucket of rows are kept by column bucket (a block tensor's block, or
_BUCKET_COLS elements), each with its place in the order they were recorded, so a read or a
write looks only at the rectangles of the column buckets it spans, and a write updates only
the rectangles it changes: the cost stays linear in the accesses with thousands of blocks
(issue 16).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import LoopDependencyWarning
from ..program.ir import Access, Instruction, MemSpace, Opcode, Program

#: tensor_tensor operators that make an accumulation (associative reductions).
ASSOCIATIVE = frozenset({"add", "multiply", "maximum", "minimum", "bitwise_and", "bitwise_or",
                         "bitwise_xor", "logical_and", "logical_or", "logical_xor"})
#: Tensors with more rows than this keep their writes in blocks of _BUCKET_ROWS rows.
_BUCKET_ABOVE_ROWS = 512
_BUCKET_ROWS = 128
_HBM_ROW_BUCKETS = 32
#: Column buckets: a block tensor's block width, else this many elements, widened so that a
#: row has at most _MAX_COL_BUCKETS of them.
_BUCKET_COLS = 512
_MAX_COL_BUCKETS = 64


@dataclass(slots=True)
class _Write:
    """The part (rectangle) of a write that is still the latest writer there."""

    r_lo: int
    r_hi: int
    c_lo: int
    c_hi: int
    access: Access
    ins: Instruction
    #: its place in the recorded order of its bucket of rows (a part of a rectangle cut by a
    #: later write takes the rectangle's place: its order and the index of the part)
    seq: tuple[int, ...] = ()


def loop_carried_reads(program: Program) -> list[LoopDependencyWarning]:
    """Warnings for reads of what an earlier iteration of the same affine loop wrote."""
    found: list[LoopDependencyWarning] = []
    reported: set[object] = set()
    #: (tensor id, row bucket) -> rectangles recorded there so far (their order, _Write.seq)
    live: dict[tuple[int, int], int] = {}
    #: (tensor id, row bucket) -> column bucket -> the live rectangles that meet it, in
    #: recorded order; or the one rectangle recorded there (the first write of a fresh tile,
    #: most of them: a dict and a list for each were most of the check's memory)
    cols: dict[tuple[int, int], dict[int, list[_Write]] | _Write] = {}
    outermost = None
    exact: dict[int, bool] = {}  # id(access) -> _exact(access): accesses repeat (accumulators)
    for ins in program.instructions:
        loops = ins.loops
        if not loops:
            continue
        if loops[0][0] != outermost:  # a new outermost loop: nothing earlier can carry
            live.clear()
            cols.clear()
            outermost = loops[0][0]
        if not reported or ins.loc not in reported:
            for role, a in _plain_reads(ins).items():
                if role in _KEEP_ROLES:  # (destination-keeping roles of partial writes)
                    continue
                hit = _carried_write(live, cols, a, ins)
                if hit is not None:
                    found.append(_warning(program, ins, role, a, hit))
                    reported.add(ins.loc)
                    break
        for a in ins.dsts.values():
            _record(live, cols, a, ins, exact)
    return found


#: Source roles that only keep a destination's unwritten elements (a partial write, e.g. a
#: runtime-offset or predicated copy, an indirect scatter): not a use of earlier values.
_KEEP_ROLES = frozenset({"old", "prior"})


def _plain_reads(ins: Instruction) -> dict[str, Access]:
    """The explicit reads, less the accumulator of an in-place associative update
    (``acc += x``, however the accumulator was first written: the ``nl.loop_reduce`` idiom).
    The implicit read of an accumulating matmul or DMA is not a source at all. (The caller
    skips the destination-keeping roles: ``ins.srcs`` itself is returned, not a copy, for every
    opcode but tensor_tensor, the only one _accumulates accepts.)"""
    if ins.opcode is not Opcode.TENSOR_TENSOR:
        return ins.srcs
    acc = _accumulates(ins)
    out = ins.dsts.get("out")
    return {role: a for role, a in ins.srcs.items()
            if not (acc and a.tensor is out.tensor and a.offset == out.offset
                    and a.pattern == out.pattern)}


def _accumulates(ins: Instruction) -> bool:
    """An associative tensor_tensor writing into one of its own operands (``acc += x``)."""
    if ins.opcode is not Opcode.TENSOR_TENSOR or ins.attrs.get("op") not in ASSOCIATIVE:
        return False
    out = ins.out
    return any(a.tensor is out.tensor and a.offset == out.offset and a.pattern == out.pattern
               for a in ins.srcs.values())


def _is_reduction(writer: Instruction, reader: Instruction) -> bool:
    """Writer and reader are steps of one associative reduction: the same operator, and either
    both accumulate in place or they are the same kernel line (``b = tensor_tensor(b, a)``)."""
    if (reader.opcode is not Opcode.TENSOR_TENSOR or writer.opcode is not Opcode.TENSOR_TENSOR
            or reader.attrs.get("op") not in ASSOCIATIVE
            or writer.attrs.get("op") != reader.attrs.get("op")):
        return False
    return writer.loc == reader.loc or (_accumulates(writer) and _accumulates(reader))


def _bucket_size(a: Access) -> int:
    """Rows per row bucket: an HBM tensor of 3+ dims and few rows (its leading dim, a
    [32, 128, N] output written one leading index per store) has up to _HBM_ROW_BUCKETS of
    them, so the stores to one index do not meet the rectangles of all the others (their boxes
    span the columns)."""
    rows = a.tensor.rows
    if rows > _BUCKET_ABOVE_ROWS:
        return _BUCKET_ROWS
    if a.tensor.space is MemSpace.HBM and len(a.tensor.shape) > 2:
        return -(-rows // _HBM_ROW_BUCKETS)
    return rows if rows > 1 else 1


def _col_size(a: Access) -> int:
    """Elements per column bucket of ``a``'s tensor."""
    t = a.tensor
    pa = t.partition_axis
    if pa > 0:  # block dims lead each row: one bucket per block (however many: the buckets
        blocks = math.prod(t.shape[:pa])  # are a dict, and an instruction reads one block)
        if blocks > 1:
            return max(1, t.row_size // blocks)
    size = _BUCKET_COLS
    while size * _MAX_COL_BUCKETS < t.row_size:
        size *= 2
    return size


def _carried_write(live: dict, cols: dict, a: Access,
                   ins: Instruction) -> tuple[_Write, tuple] | None:
    r_lo, r_hi, c_lo, c_hi = a.row_lo, a.row_hi, a.col_lo, a.col_hi
    if r_hi <= r_lo:  # empty access
        return None
    tid, size = a.tensor.id, _bucket_size(a)
    csize = _col_size(a)
    c0, c1 = c_lo // csize, (max(c_hi, c_lo + 1) - 1) // csize
    loops = ins.loops
    for b in range(r_lo // size, (r_hi - 1) // size + 1):
        by_col = cols.get((tid, b))
        if not by_col:
            continue
        # the rectangles meeting its column buckets, in the order they were recorded
        candidates = ((by_col,) if type(by_col) is _Write else
                      by_col.get(c0, ()) if c0 == c1 else _gather(by_col, c0, c1))
        for w in candidates:
            # (columns first: the writes that miss a read are usually other blocks of a row)
            if not (c_lo < w.c_hi and w.c_lo < c_hi and w.r_lo < r_hi and r_lo < w.r_hi):
                continue
            w_loops = w.ins.loops
            if w_loops is loops or w_loops == loops:
                continue  # the same iteration (the common case: a tile used where it was loaded)
            # (loop id, writer iteration, reader iteration) when the two are in different
            # iterations of one affine loop (the first level where they differ), else None
            for wl, rl in zip(w_loops, loops):
                if wl != rl:
                    over = (wl[0], wl[1], rl[1]) if wl[0] == rl[0] else None
                    break
            else:
                over = None
            if over is None or _is_reduction(w.ins, ins):
                continue
            if _elements_meet(w, a):
                return w, over
    return None


def _gather(by_col: dict[int, list[_Write]], c0: int, c1: int) -> list[_Write]:
    """The rectangles listed in column buckets ``c0`` to ``c1``, each once, in recorded order."""
    if c1 - c0 < len(by_col):
        lists = [by_col[cb] for cb in range(c0, c1 + 1) if cb in by_col]
    else:
        lists = [found for cb, found in by_col.items() if c0 <= cb <= c1]
    if len(lists) == 1:
        return lists[0]
    return sorted({id(w): w for found in lists for w in found}.values(), key=_order)


def _order(w: _Write) -> tuple[int, ...]:
    return w.seq


def _span(w: _Write, csize: int) -> range:
    return range(w.c_lo // csize, (max(w.c_hi, w.c_lo + 1) - 1) // csize + 1)


def _record(live: dict, cols: dict, a: Access, ins: Instruction,
            exact_of: dict[int, bool]) -> None:
    r_lo, r_hi, c_lo, c_hi = a.row_lo, a.row_hi, a.col_lo, a.col_hi
    if r_hi <= r_lo:  # empty access
        return
    tid, size = a.tensor.id, _bucket_size(a)
    csize = _col_size(a)
    c0, c1 = c_lo // csize, (max(c_hi, c_lo + 1) - 1) // csize
    exact = None
    for b in range(r_lo // size, (r_hi - 1) // size + 1):
        key = (tid, b)
        lo, hi = b * size, (b + 1) * size  # the rows of bucket b
        new = _Write(r_lo if r_lo > lo else lo, r_hi if r_hi < hi else hi, c_lo, c_hi, a, ins)
        by_col = cols.get(key)
        if not by_col:  # the usual case: the first write of a fresh tile
            new.seq = (0,)
            live[key] = 1
            cols[key] = new  # (alone; by column bucket from the second write on)
            continue
        if exact is None:
            exact = exact_of.get(id(a))
            if exact is None:
                exact = exact_of[id(a)] = _exact(a)
        if type(by_col) is _Write:
            if exact and (by_col.r_lo, by_col.r_hi, by_col.c_lo, by_col.c_hi) == (
                    new.r_lo, new.r_hi, new.c_lo, new.c_hi):
                # the write covers the one rectangle there (an accumulation's next step):
                # what the general path below leaves, without its tables
                new.seq = (live[key],)
                live[key] += 1
                cols[key] = new
                continue
            by_col = cols[key] = {cb: [by_col] for cb in _span(by_col, csize)}
        # The rectangles this write changes all meet its column buckets; each is replaced, in
        # its place in the recorded order, by what is left of it
        for w in [w for w in (by_col.get(c0, ()) if c0 == c1 else _gather(by_col, c0, c1))
                  if (w.r_lo < r_hi and r_lo < w.r_hi and w.c_lo < c_hi and c_lo < w.c_hi
                      if exact else (w.access.offset == a.offset
                                     and w.access.pattern == a.pattern))]:
            if not exact or (r_lo <= w.r_lo and w.r_hi <= r_hi and c_lo <= w.c_lo
                             and w.c_hi <= c_hi):  # (a rectangle inside the write: nothing left)
                pieces = []
            else:
                pieces = _subtract(w, a)
                for j, p in enumerate(pieces):
                    p.seq = w.seq + (j,)  # (between w and whatever followed it)
            _replace(by_col, csize, w, pieces)
        new.seq = (live[key],)
        live[key] += 1
        for cb in range(c0, c1 + 1):
            found = by_col.get(cb)
            if found is None:
                by_col[cb] = [new]
            else:
                found.append(new)


def _replace(by_col: dict[int, list[_Write]], csize: int, w: _Write,
             pieces: list[_Write]) -> None:
    """Put ``pieces`` (parts of ``w``, in order) where ``w`` is in each of its column buckets."""
    for cb in _span(w, csize):
        found = by_col[cb]
        at = next(k for k, x in enumerate(found) if x is w)
        found[at:at + 1] = [p for p in pieces if p.c_lo // csize <= cb
                            <= (max(p.c_hi, p.c_lo + 1) - 1) // csize]
        if not found:
            del by_col[cb]


def _exact(a: Access) -> bool:
    """True when an access selects every element of its bounding rectangle exactly once."""
    size = 1
    for s, n in a.pattern:
        if s == 0 and n != 1:
            return False
        size *= n
    return size == (a.row_hi - a.row_lo) * (a.col_hi - a.col_lo)


def _subtract(w: _Write, a: Access) -> list[_Write]:
    """The parts of rectangle ``w`` outside ``a``'s rectangle (up to four)."""
    if not (w.r_lo < a.row_hi and a.row_lo < w.r_hi and w.c_lo < a.col_hi
            and a.col_lo < w.c_hi):
        return [w]
    parts = []
    if w.r_lo < a.row_lo:
        parts.append(_Write(w.r_lo, a.row_lo, w.c_lo, w.c_hi, w.access, w.ins))
    if a.row_hi < w.r_hi:
        parts.append(_Write(a.row_hi, w.r_hi, w.c_lo, w.c_hi, w.access, w.ins))
    r_lo, r_hi = max(w.r_lo, a.row_lo), min(w.r_hi, a.row_hi)
    if w.c_lo < a.col_lo:
        parts.append(_Write(r_lo, r_hi, w.c_lo, a.col_lo, w.access, w.ins))
    if a.col_hi < w.c_hi:
        parts.append(_Write(r_lo, r_hi, a.col_hi, w.c_hi, w.access, w.ins))
    return parts


def _elements(a: Access) -> np.ndarray:
    """Storage offsets of the elements an access selects."""
    offsets = np.full((1,) * len(a.pattern), a.offset, np.int64)
    for d, (s, n) in enumerate(a.pattern):
        shape = [1] * len(a.pattern)
        shape[d] = n
        offsets = offsets + s * np.arange(n, dtype=np.int64).reshape(shape)
    return offsets.reshape(-1)


def _elements_meet(w: _Write, a: Access) -> bool:
    """True when the read selects an element of ``w``'s remaining rectangle that ``w`` wrote."""
    if _exact(w.access) and _exact(a):
        return True  # two overlapping dense rectangles share elements
    row_size = max(1, a.tensor.row_size)
    written = _elements(w.access)
    rows, cols = written // row_size, written % row_size
    written = written[(rows >= w.r_lo) & (rows < w.r_hi) & (cols >= w.c_lo) & (cols < w.c_hi)]
    return bool(np.intersect1d(written, _elements(a), assume_unique=False).size)


def _warning(program: Program, ins: Instruction, role: str, a: Access,
             hit: tuple[_Write, tuple[int, int, int]]) -> LoopDependencyWarning:
    w, (loop, i, j) = hit
    loop_loc = program.loops[loop] if loop < len(program.loops) else None
    msg = (f"{ins.opcode.value} {role}: iteration {j} of the nl.affine_range loop at {loop_loc} "
           f"reads {a.tensor.name} rows {max(w.r_lo, a.row_lo)}..{min(w.r_hi, a.row_hi) - 1}, "
           f"written by iteration {i} ({w.ins.opcode.value} at {w.ins.loc}); expected "
           f"independent iterations (only accumulations such as psum += nc_matmul(...) may "
           f"carry over), found a loop-carried dependency the compiler may reorder: use "
           f"nl.sequential_range for this loop")
    return LoopDependencyWarning(f"{ins.loc}: {msg}" if ins.loc is not None else msg)
