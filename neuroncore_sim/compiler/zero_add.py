"""Additions to zero turned into copies: ``acc = nl.zeros(...)`` then ``acc[r] += x`` where
``acc[r]`` still holds the memset's zeros becomes ``acc[r] = x``.

``acc[r] += x`` is a VectorE ``tensor_tensor`` add that reads ``acc[r]`` and writes it back
(arch.md: only TensorE's writes accumulate in PSUM; the other engines see it as plain memory).
When the region still holds the zeros of a memset, the compiler knows the addition's result is
``x`` (constant propagation): it copies ``x`` instead, and the copy is then folded into ``x``'s
producer where :mod:`.copy_fold` allows it. The NKI docs do not describe this; the measurement
it rests on is Autocomp's conv1d trace (SDK 2.26): v4 sums each [128, 3] product with
``tensor_reduce(..., keepdims=True)`` and adds the column into a zeroed PSUM tile. The hardware
runs it at 85.5 ns per output column, below the 121.5 ns of v3's two instructions per column
(a product and a reduce, each at its measured floor), so the third instruction, the add, cannot
run (docs/model.md, "Compile stage").

The rule (conservative: only where the addition's result is exactly its other operand):

* a ``tensor_tensor`` with ``op="add"`` and no mask, one of whose operands is exactly its output
  (same tensor, offset, pattern and dtype view: an in-place accumulation);
* every element of that region was last written by a ``memset`` of 0 without a mask over a dense
  box that covers the region: no instruction has written any column of it since, in any row
  (columns are tracked, not single elements: a write to another row of the same column keeps
  the addition);
* every in-place addition of the same kernel line qualifies: the compiler rewrites a loop's
  body, not one iteration of it, so ``for s in nl.affine_range(16): acc += x[s]`` keeps all its
  additions (only the first meets zeros; AWS's Mamba tutorial accumulates its states so, and
  its measured times leave no room for a sixteenth of its adds to go).

The memset itself stays (it is one instruction per tile). The values layer executes the
addition as written; only the timing model's streams change.
Switch: ``config.compiler.fold_zero_adds``.
"""

from __future__ import annotations

import numpy as np

from ..program.ir import Access, Instruction, Opcode
from .copy_fold import same_region
from .psum_zeros import PendingZeros, dense_zero_memset


def fold_zero_adds(instrs: list[Instruction]) -> list[Instruction]:
    """``instrs`` (one instance, program order) with each addition to still-zero memory
    replaced by a ``tensor_copy`` of its other operand, where every addition of its kernel
    line is one (module docstring)."""
    zeroed = PendingZeros()  # memsets of 0 whose zeros may remain, by tensor and columns
    copies: dict[int, Instruction] = {}  # position -> the copy replacing the addition there
    adds: dict[object, list[int]] = {}  # kernel line -> positions of its in-place additions
    for pos, ins in enumerate(instrs):
        operands = _accumulated(ins)
        if operands is not None:
            acc, other = operands
            adds.setdefault(ins.loc, []).append(pos)
            if acc.tensor.id in zeroed.width and any(z.holds(acc) for z in zeroed.near(acc)):
                copies[pos] = Instruction(ins.id, Opcode.TENSOR_COPY, ins.engine, ins.dsts,
                                          {"src": other}, {}, ins.loc, None, ins.instance,
                                          ins.loops)
        for a in ins.dsts.values():  # what it writes is no longer zero
            if a.tensor.id in zeroed.width:
                for z in zeroed.near(a):
                    z.written(a)
        if dense_zero_memset(ins):
            zeroed.add(ins.out, _Zeros(ins.out))
    # The compiler rewrites a loop's body, not one iteration: an addition whose line also adds
    # to memory no longer zero (a later iteration of the same accumulation) stays.
    fold = {p for line in adds.values() if all(p in copies for p in line) for p in line}
    if not fold:
        return instrs
    return [copies[pos] if pos in fold else ins for pos, ins in enumerate(instrs)]


class _Zeros:
    """A memset's box and, per column of it, whether anything has written that column since."""

    __slots__ = ("rows", "col_lo", "dirty", "done")

    def __init__(self, a: Access) -> None:
        self.rows = (a.row_lo, a.row_hi)
        self.col_lo = a.col_lo
        self.dirty = np.zeros(a.col_hi - a.col_lo, dtype=bool)
        self.done = False  # every column written: none of its zeros remain

    def _cols(self, a: Access) -> slice:
        return slice(max(a.col_lo - self.col_lo, 0), max(a.col_hi - self.col_lo, 0))

    def written(self, a: Access) -> None:
        """Record a write of ``a`` (the columns it spans, if it meets this box's rows)."""
        cols = self._cols(a)
        if a.row_lo < self.rows[1] and self.rows[0] < a.row_hi and cols.start < min(
                cols.stop, len(self.dirty)):
            self.dirty[cols] = True
            self.done = bool(self.dirty.all())

    def holds(self, a: Access) -> bool:
        """Whether every element of ``a`` still holds this memset's zeros."""
        return (self.rows[0] <= a.row_lo and a.row_hi <= self.rows[1]
                and self.col_lo <= a.col_lo and a.col_lo < a.col_hi
                and a.col_hi - self.col_lo <= len(self.dirty)
                and not self.dirty[self._cols(a)].any())


def _accumulated(ins: Instruction) -> tuple[Access, Access] | None:
    """(the operand that is also the output, the other operand) when ``ins`` is an unmasked
    in-place ``tensor_tensor`` add (``acc[r] += x``), else None."""
    if ins.opcode is not Opcode.TENSOR_TENSOR or ins.attrs.get("op") != "add" or (
            ins.mask is not None or len(ins.srcs) != 2):
        return None
    a, b = ins.srcs.values()
    a_in_place, b_in_place = same_region(a, ins.out), same_region(b, ins.out)
    if a_in_place == b_in_place:
        return None
    return (a, b) if a_in_place else (b, a)
