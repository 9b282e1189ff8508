"""Value-level rules the functional executor checks before it runs an instruction.

1. Reads of memory nothing wrote. A tensor declared without values (an SBUF/PSUM tile, an HBM
   output or scratch tensor) is *tracked* until every element has been written. Tracking is
   cheap where it matters: a write covering the whole tensor (the usual first write of a fresh
   tile) ends the tracking at once, without any bookkeeping array; otherwise a byte per element
   marks what was written, viewed through the same access pattern as the data (partial writes
   are marked when the tensor is next read, or in batches), and the tracking ends when the last
   element is written. Fully written tensors cost one dict lookup per
   operand. A read that touches an unwritten element gives an :class:`UninitializedReadWarning`
   (once per kernel line). Float memory starts as NaN (``memory.py``), integer memory as 0; both
   warn the same way, since on the hardware either is garbage.

   Garbage that never reaches a result is not reported: kernels load a ragged last tile with a
   mask, compute on all 128 partitions and store with the same mask (AWS's softmax tutorial).
   An instruction that works partition by partition (Vector/Scalar/GpSimd element-wise, free-axis
   reductions and scans: :data:`PARTITION_LOCAL`) and reads unwritten elements of some
   partitions of a tile writing a tile does not warn: the partitions of its output computed from
   them are marked unwritten again (holding garbage; their origin is remembered), and the
   warning comes where garbage is read by any other instruction (a store to HBM, a matmul, a
   DMA, ...), naming the line that first read memory nothing wrote.
2. Activation input ranges. The ScalarE functions with a documented valid input range
   (``ops.ACTIVATIONS``, arch.md 3.4: log, sin, arctan, sqrt, rsqrt, reciprocal) give invalid
   results outside it; an :class:`ActivationRangeWarning` names the line, the function, the
   range and the offending min / max (once per kernel line). Only those functions pay for the
   check, and a line stops being checked once it has warned.

What is a read: every source operand, plus the destination of an accumulating ``nc_matmul`` and
of a DMA with ``dst_rmw_op``. Reading values to print them (``nl.device_print``) is not checked.
"""

from __future__ import annotations

import numpy as np

from ..program import ops
from ..dtypes import is_float
from ..errors import ActivationRangeWarning, SimulatorWarning, UninitializedReadWarning
from ..program.ir import Access, Instruction, MemSpace, Opcode, TensorDecl
from ..program.layout import tensor_elements
from .semantics import activation_input, canon

_ACTIVATIONS = (Opcode.ACTIVATION, Opcode.ACTIVATION_REDUCE)
#: Instructions whose output partition p is computed from their inputs' partition p alone
#: (garbage in some partitions of an input stays in those partitions of the output).
PARTITION_LOCAL = frozenset({
    Opcode.ACTIVATION, Opcode.ACTIVATION_REDUCE, Opcode.TENSOR_TENSOR, Opcode.TENSOR_SCALAR,
    Opcode.SCALAR_TENSOR_TENSOR, Opcode.TENSOR_SCALAR_REDUCE, Opcode.TENSOR_REDUCE,
    Opcode.TENSOR_TENSOR_SCAN, Opcode.TENSOR_COPY, Opcode.AFFINE_SELECT, Opcode.RECIPROCAL,
    Opcode.BN_STATS, Opcode.BN_AGGR, Opcode.TENSOR_COPY_PREDICATED, Opcode.SELECT_REDUCE,
    Opcode.MAX8, Opcode.NC_FIND_INDEX8, Opcode.NC_MATCH_REPLACE8})
#: Partial writes of one tensor kept before they are marked in its flags.
_PENDING_WRITES = 256


class ValueChecks:
    """Tracks written memory and checks each instruction's inputs before it runs.

    An executor may run independent instructions out of program order (execute.py, GEMM
    threads); the warnings are still those of program order: per kernel line, the one of the
    earliest instruction, and :attr:`warnings` lists them by instruction.
    """

    def __init__(self) -> None:
        #: tracked tensor -> written-element flags (flat, storage layout), None: none written
        self._written: dict[TensorDecl, np.ndarray | None] = {}
        #: tracked tensor -> how many of its elements are still unwritten
        self._left: dict[TensorDecl, int] = {}
        #: tracked tensor -> partial writes not marked in its flags yet (marked when the tensor
        #: is next read, or in batches: a tiled kernel storing into an output it never reads
        #: pays one list append per store)
        self._pending: dict[TensorDecl, list[tuple[Access, np.ndarray | None]]] = {}
        #: (rule, kernel line) -> (instruction id, its warning): one warning per line and rule
        self._warned: dict[tuple[str, str], tuple[int, SimulatorWarning]] = {}
        #: tile -> where the garbage some of its partitions hold came from (the first read of
        #: memory nothing wrote, "file.py:LINE: what it read"), see the module doc
        self._origin: dict[TensorDecl, str] = {}

    @property
    def warnings(self) -> list[SimulatorWarning]:
        """The warnings found so far, in program order."""
        return [w for _, w in sorted(self._warned.values(), key=lambda found: found[0])]

    def _done(self, key: tuple[str, str], ins: Instruction) -> bool:
        """True when ``key`` already warned for an instruction at or before ``ins``."""
        found = self._warned.get(key)
        return found is not None and found[0] <= ins.id

    def declare(self, decl: TensorDecl, has_values: bool) -> None:
        """Start tracking a tensor declared without initial values."""
        if not has_values and decl.size:
            self._written[decl] = None
            self._left[decl] = decl.size

    def before(self, ins: Instruction, view) -> None:
        """Check ``ins``'s reads, then mark its writes. ``view(access)`` gives operand values."""
        garbage: list[tuple[str, Access, np.ndarray]] = []
        if self._written:
            for role, a in ins.srcs.items():
                if a.tensor in self._written:
                    self._check_read(ins, role, a, garbage)
            if _reads_destination(ins) and ins.out.tensor in self._written:
                self._check_read(ins, "out", ins.out, garbage)
        if ins.opcode in _ACTIVATIONS:
            self._check_range(ins, view)
        carry = bool(garbage) and _carries(ins, garbage)
        if garbage and not carry:
            self._warn_read(ins, *garbage[0])
        if self._written:
            for a in ins.dsts.values():
                if a.tensor in self._written:
                    self.wrote(a, ins)
        if carry:
            self._unmark(ins, garbage)

    def wrote(self, a: Access, ins: Instruction | None = None) -> None:
        """Mark the elements ``a`` selects as written (only those the mask of ``ins`` keeps)."""
        decl = a.tensor
        if decl not in self._written:
            return
        where = _where(ins, a)
        if where is None and a.nbytes == decl.size * decl.itemsize and _no_repeats(a):
            self._untrack(decl)  # one write covers the whole tensor
            return
        pending = self._pending.setdefault(decl, [])
        pending.append((a, where))
        if len(pending) >= _PENDING_WRITES:
            self._mark(decl)

    def _mark(self, decl: TensorDecl) -> None:
        """Mark the pending partial writes of ``decl`` in its flags (may end its tracking)."""
        for a, where in self._pending.pop(decl, ()):
            if decl not in self._written:
                return
            self._mark_one(decl, a, where)

    def _mark_one(self, decl: TensorDecl, a: Access, where: np.ndarray | None) -> None:
        flags = self._written[decl]
        if flags is None:
            flags = self._written[decl] = np.zeros(decl.size, np.bool_)
        if a.resized:  # a dtype view of another size: mark every tensor element it overlaps
            index = _resized_index(flags, a)
            if index is None:
                return
            if where is not None:
                index = index[where]
            index = np.unique(index)
            new = index.size - int(np.count_nonzero(flags[index]))
            flags[index] = True
            self._left[decl] -= new
            if self._left[decl] <= 0:
                self._untrack(decl)
            return
        sel = _flags_view(flags, a)
        if sel is None:
            return  # out of bounds: the executor reports it
        if where is None:
            new = sel.size - int(np.count_nonzero(sel))
            sel[...] = True
        else:
            new = int(np.count_nonzero(where & ~sel))
            np.logical_or(sel, where, out=sel)
        self._left[decl] -= new
        if self._left[decl] <= 0:
            self._untrack(decl)

    def unwritten(self, a: Access) -> np.ndarray | bool | None:
        """Which elements of ``a`` nothing has written: None (all written, or not tracked),
        True (none of its tensor is written yet) or a boolean array of ``a``'s shape."""
        decl = a.tensor
        if decl not in self._written:
            return None
        if decl in self._pending:
            self._mark(decl)
            if decl not in self._written:
                return None
        flags = self._written[decl]
        if flags is None:
            return True
        sel = _flags_view(flags, a)
        if sel is None:
            return None  # out of bounds: the executor reports it
        missing = ~sel
        return missing if missing.any() else None

    def forget(self, decl: TensorDecl) -> None:
        """Stop tracking a tile whose storage is released (it can no longer be read)."""
        if decl in self._written:
            self._untrack(decl)

    def _untrack(self, decl: TensorDecl) -> None:
        del self._written[decl]
        del self._left[decl]
        self._pending.pop(decl, None)
        self._origin.pop(decl, None)

    def _check_read(self, ins: Instruction, role: str, a: Access,
                    garbage: list[tuple[str, Access, np.ndarray]]) -> None:
        """Append (role, a, which elements are unwritten) to ``garbage`` when ``a`` reads
        memory nothing wrote (after the instruction's mask); lines that warned are not
        checked again."""
        loc = str(ins.loc) if ins.loc is not None else ""
        if a.size == 0 or self._done(("read", loc), ins):
            return
        if a.tensor in self._pending:
            self._mark(a.tensor)
            if a.tensor not in self._written:
                return  # the pending writes covered all of it
        flags = self._written[a.tensor]
        if flags is None:
            missing = np.ones(a.shape, np.bool_)
        else:
            sel = _flags_view(flags, a)
            if sel is None:
                return
            missing = ~sel
        where = _where(ins, a)
        if where is not None:
            missing &= where
        if missing.any():
            garbage.append((role, a, missing))

    def _warn_read(self, ins: Instruction, role: str, a: Access, missing: np.ndarray) -> None:
        loc = str(ins.loc) if ins.loc is not None else ""
        first = [int(i) for i in np.argwhere(missing)[0]]
        decl = a.tensor
        fill = "NaN" if is_float(decl.dtype) else "0"
        where_declared = f" (allocated at {decl.site})" if decl.site is not None else ""
        origin = self._origin.get(decl)
        what = (f"that hold garbage computed from memory nothing wrote ({origin})"
                if origin is not None else "that nothing wrote")
        msg = (f"{ins.opcode.value} {role}: reads {int(missing.sum())} element(s) of "
               f"{decl.name}{where_declared} {what}, first at operand index {first}; expected "
               f"written memory, found uninitialised memory (garbage on the hardware, {fill} "
               f"here)")
        self._warned[("read", loc)] = (ins.id, UninitializedReadWarning(f"{loc}: {msg}"
                                                                       if loc else msg))

    def _unmark(self, ins: Instruction, garbage: list[tuple[str, Access, np.ndarray]]) -> None:
        """Mark the elements of ``ins``'s outputs computed from garbage as unwritten again (a
        partition-local instruction, :func:`_carries`: an operand of the output's shape passes
        its garbage element by element, another one by partition), remembering its origin."""
        role, a, missing = garbage[0]
        origin = self._origin.get(a.tensor)
        if origin is None:
            loc = f"{ins.loc}: " if ins.loc is not None else ""
            site = f" (allocated at {a.tensor.site})" if a.tensor.site is not None else ""
            origin = (f"first read at {loc}{ins.opcode.value} {role}, {int(missing.sum())} "
                      f"element(s) of {a.tensor.name}{site}")
        for d in ins.dsts.values():
            bad_out = np.zeros(d.shape, np.bool_)
            for _, src, bad in garbage:
                if src.shape == d.shape:
                    bad_out |= bad
                    continue
                rows = bad.reshape(bad.shape[0], -1).any(axis=1)
                rows = rows if src.shape[0] == d.shape[0] else np.repeat(rows, d.shape[0])
                bad_out |= rows.reshape((-1,) + (1,) * (bad_out.ndim - 1))
            where = _where(ins, d)
            if where is not None:
                bad_out &= where
            flags = self._tracked_flags(d.tensor)
            sel = _flags_view(flags, d)
            if sel is None or not bad_out.any():
                continue
            self._left[d.tensor] += int(np.count_nonzero(sel & bad_out))
            np.logical_and(sel, ~bad_out, out=sel)
            if self._left[d.tensor]:
                self._origin.setdefault(d.tensor, origin)

    def _tracked_flags(self, decl: TensorDecl) -> np.ndarray:
        """``decl``'s written flags, tracking it again (all written) if it was not tracked."""
        if decl in self._pending:
            self._mark(decl)
        flags = self._written.get(decl)
        if decl not in self._written:
            self._left[decl] = 0
            flags = np.ones(decl.size, np.bool_)
        elif flags is None:
            flags = np.zeros(decl.size, np.bool_)
        self._written[decl] = flags
        return flags

    def _check_range(self, ins: Instruction, view) -> None:
        name = canon(ins.attrs.get("op"))
        valid = ops.ACTIVATIONS.get(name)
        loc = str(ins.loc) if ins.loc is not None else ""
        if valid is None or self._done(("range", loc), ins):
            return
        x = activation_input({r: view(a) for r, a in ins.srcs.items()}, ins.attrs)
        where = _where(ins, ins.srcs["data"])
        x = x[where] if where is not None else x
        x = x[~np.isnan(x)]  # NaN inputs are reported as unwritten reads, not as range errors
        if x.size == 0:
            return
        lo, hi = valid
        # reciprocal's range is on the magnitude (arch.md 3.4: +-[2^-42, 2^42])
        mag = np.abs(x) if name == "reciprocal" else x
        xmin, xmax = float(mag.min()), float(mag.max())
        if lo <= xmin and xmax <= hi:
            return
        what = "|input|" if name == "reciprocal" else "input"
        msg = (f"activation {name!r}: {what} outside the documented valid range; expected "
               f"[{lo:.6g}, {hi:.6g}], found min {xmin:.6g}, max {xmax:.6g} (the hardware "
               f"gives invalid results there)")
        self._warned[("range", loc)] = (ins.id, ActivationRangeWarning(f"{loc}: {msg}"
                                                                      if loc else msg))


def _carries(ins: Instruction, garbage: list[tuple[str, Access, np.ndarray]]) -> bool:
    """Whether ``ins`` keeps the garbage it reads in the same partitions of on-chip outputs
    (partition-local, every output an SBUF / PSUM tile whose partitions match the garbage
    operands' or those operands a single broadcast partition)."""
    if ins.opcode not in PARTITION_LOCAL or not ins.dsts:
        return False
    for d in ins.dsts.values():
        # (an output viewed as another element size has no per-element flags to clear)
        if d.tensor.space is MemSpace.HBM or not d.shape or d.resized:
            return False
        if any(not a.shape or a.shape[0] not in (1, d.shape[0]) for _, a, _ in garbage):
            return False
    return True


def _reads_destination(ins: Instruction) -> bool:
    """True when the instruction adds into its destination (a read of it)."""
    if ins.opcode is Opcode.NC_MATMUL:
        return bool(ins.attrs.get("accumulate"))
    return ins.opcode is Opcode.DMA_COPY and ins.attrs.get("dst_rmw_op") is not None


def _where(ins: Instruction | None, a: Access) -> np.ndarray | None:
    """The instruction's residual mask over ``a``, when it applies to that operand's shape."""
    if ins is None or ins.mask is None or a.shape != ins.out.shape:
        return None
    return ins.mask.evaluate(a.shape)


def _no_repeats(a: Access) -> bool:
    """True when no element is selected twice (no stride-0 dim of size > 1)."""
    return all(s != 0 or n == 1 for s, n in a.pattern)


def _resized_index(flags: np.ndarray, a: Access) -> np.ndarray | None:
    """The tensor elements each element of ``a`` (a dtype view of another size) overlaps,
    shaped ``a.shape + (k,)``; None if out of bounds."""
    index = tensor_elements(a.offset, a.pattern, a.tensor.itemsize, a.dtype.itemsize)
    if index.size and (index.min() < 0 or index.max() >= flags.size):
        return None
    return index


def _flags_view(flags: np.ndarray, a: Access) -> np.ndarray | None:
    """The flags of the elements ``a`` selects (a writable strided view; a copy, each element
    written only when all the tensor elements it overlaps are, for a dtype view of another
    size), None if out of bounds."""
    if a.resized:
        index = _resized_index(flags, a)
        return None if index is None else flags[index].all(axis=-1)
    try:
        return np.ndarray([n for _, n in a.pattern], np.bool_, flags, a.offset,
                          [s for s, _ in a.pattern])
    except (ValueError, TypeError):
        return None
