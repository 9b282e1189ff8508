"""Which PSUM zero memsets the timing model drops: ``acc = nl.zeros(..., buffer=nl.psum)``
followed by ``acc[...] += nisa.nc_matmul(...)``.

A compiler lowers a zero-then-accumulate PSUM tile to matmuls that *start* the accumulation
group (write instead of add), so no VectorE memset runs (assumption, docs/model.md). It can do
that region by region: a tile of several banks filled bank by bank starts one group per bank.
The rule here: a memset of 0 into PSUM, without a mask, over a dense rectangle of its tile is
folded when every element it zeroes is first touched, after it, by an accumulating
``nc_matmul`` that writes it without a mask, and each such matmul writes only still-untouched
zeroed elements (one matmul cannot start a group on some elements and add on others). If any
other instruction reads or writes a zeroed element before a matmul has, or some zeroed element
is never written by a matmul, the memset is kept.

The values layer still executes every memset; only the timing model drops the folded ones.
Regions are the accesses' bounding boxes (rows x columns of a row, as hazards use): an access
whose box is not dense only ever keeps a memset, never folds one.
"""

from __future__ import annotations

from ..program.ir import Access, Instruction, MemSpace, Opcode
from .tiles import block_elems

#: (row_lo, row_hi, col_lo, col_hi), half-open.
Rect = tuple[int, int, int, int]


def folded_psum_zeros(instrs: list[Instruction]) -> set[int]:
    """Ids of the PSUM zero memsets in ``instrs`` (one instance, program order) that the
    compiler folds into the accumulating matmuls that follow them (module docstring).

    Pending memsets are indexed by tensor and column bucket (a block tensor's block, else the
    whole row), so an access meets only the memsets near it: ``nl.zeros`` of a block tensor is
    one memset per block, thousands of them pending at once (issue 16)."""
    pending = PendingZeros()
    folded: set[int] = set()
    for ins in instrs:
        for a in (*ins.srcs.values(), *ins.dsts.values()):
            if a.tensor.id not in pending.width:
                continue
            zeroed = pending.near(a)
            if not zeroed:
                continue
            starts = _starts_group(ins, a)
            r = _rect(a)
            for z in zeroed:
                outcome = z.touch(r, starts)
                if outcome is not None:
                    z.done = True
                    if outcome:
                        folded.add(z.memset)
        if dense_zero_memset(ins) and ins.out.tensor.space is MemSpace.PSUM:
            pending.add(ins.out, _Zeroed(ins.id, [_rect(ins.out)]))
    return folded


class PendingZeros:
    """Zero memsets indexed by tensor and column bucket (also :mod:`.zero_add`'s): the
    undecided memsets of every tensor, listed in each column bucket their region
    spans; a decided one (``done``) leaves a bucket's list when the list is next read."""

    __slots__ = ("width", "buckets")

    def __init__(self) -> None:
        self.width: dict[int, int] = {}  # tensor id -> columns per bucket
        self.buckets: dict[tuple[int, int], list[_Zeroed]] = {}

    def _span(self, tid: int, a: Access) -> range:
        w = self.width[tid]
        return range(a.col_lo // w, (max(a.col_hi, a.col_lo + 1) - 1) // w + 1)

    def add(self, a: Access, z: _Zeroed) -> None:
        tid = a.tensor.id
        if tid not in self.width:
            self.width[tid] = block_elems(a.tensor) or max(1, a.tensor.row_size)
        for b in self._span(tid, a):
            self.buckets.setdefault((tid, b), []).append(z)

    def near(self, a: Access) -> list[_Zeroed]:
        """The undecided memsets listed in the buckets ``a`` spans, each once."""
        tid = a.tensor.id
        span = self._span(tid, a)
        out: list[_Zeroed] = []
        for b in span:
            zs = self.buckets.get((tid, b))
            if not zs:
                continue
            if any(z.done for z in zs):
                zs[:] = [z for z in zs if not z.done]
            out.extend(zs)
        if len(span) > 1 and len(out) > 1:
            out = list({id(z): z for z in out}.values())
        return out


class _Zeroed:
    """One pending memset and the parts of its region no instruction has touched yet."""

    __slots__ = ("memset", "untouched", "done")

    def __init__(self, memset: int, untouched: list[Rect]) -> None:
        self.memset = memset
        self.untouched = untouched
        self.done = False

    def touch(self, r: Rect, starts: bool) -> bool | None:
        """Record an access of box ``r``: True (fold: every element now started by a matmul),
        False (keep: touched first by something else), None (still undecided)."""
        fresh = sum(_area(_meet(r, u)) for u in self.untouched)  # untouched rects are disjoint
        if fresh == 0:
            return None  # only elements a matmul already started (or none of the memset's)
        if not starts or fresh != _area(r):
            return False
        self.untouched = [piece for u in self.untouched for piece in _minus(u, r)]
        return True if not self.untouched else None


def dense_zero_memset(ins: Instruction) -> bool:
    """Whether ``ins`` is a memset of 0 without a mask over a dense box (any memory; also
    :mod:`.zero_add`'s)."""
    return (ins.opcode is Opcode.MEMSET and ins.mask is None and ins.attrs.get("value") == 0
            and _dense(ins.out))


def _starts_group(ins: Instruction, a: Access) -> bool:
    """True when access ``a`` of ``ins`` can start an accumulation group: the unmasked output of
    an accumulating nc_matmul over a dense box."""
    return (ins.opcode is Opcode.NC_MATMUL and bool(ins.attrs.get("accumulate"))
            and a is ins.dsts["out"] and ins.mask is None and _dense(a))


def _dense(a: Access) -> bool:
    return a.size == _area(_rect(a))


def _rect(a: Access) -> Rect:
    return (a.row_lo, a.row_hi, a.col_lo, a.col_hi)


def _area(r: Rect) -> int:
    return max(0, r[1] - r[0]) * max(0, r[3] - r[2])


def _meet(a: Rect, b: Rect) -> Rect:
    return (max(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), min(a[3], b[3]))


def _minus(u: Rect, r: Rect) -> list[Rect]:
    """``u`` without ``r``, as at most four disjoint rectangles."""
    m = _meet(u, r)
    if _area(m) == 0:
        return [u]
    pieces = [(u[0], m[0], u[2], u[3]), (m[1], u[1], u[2], u[3]),  # rows above, below
              (m[0], m[1], u[2], m[2]), (m[0], m[1], m[3], u[3])]  # left, right of r
    return [p for p in pieces if _area(p) > 0]
