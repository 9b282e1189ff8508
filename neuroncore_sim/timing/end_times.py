"""When each instruction of a run completed, one float per instruction id.

The run looks the end of a producer up for every dependency edge, and the result keeps every
end: as a dict, an entry and a float object per instruction were about 70 bytes per
instruction of a timing-only run's memory. Instruction ids are dense (the Program's, then its
spill copies'), so the ends are an :mod:`array` of doubles indexed by id, NaN until the
instruction has run; :class:`EndTimes` reads it as the ``Instruction.id -> end`` mapping of
``TimingResult.instruction_end_ns``.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Mapping

#: The ends of a run's instructions, by id (an array of doubles).
Ends = array

#: The end of an instruction that has not run (yet): NaN, the one float unequal to itself, so
#: the run's hot paths test ``t != t``.
NOT_RUN = float("nan")


def new_ends(size: int) -> Ends:
    """Ends of instructions ``0 .. size - 1``, none run yet."""
    return array("d", [NOT_RUN]) * size


class EndTimes(Mapping):
    """``Instruction.id`` -> when it completed (ns), for the instructions that ran (a PSUM
    memset the compiler folds into its matmuls never runs, so it has no entry)."""

    __slots__ = ("_ends",)

    def __init__(self, ends: Ends) -> None:
        self._ends = ends

    def __getitem__(self, iid: object) -> float:
        if type(iid) is not int or not 0 <= iid < len(self._ends):
            raise KeyError(iid)
        t = self._ends[iid]
        if t != t:
            raise KeyError(iid)
        return t

    def __contains__(self, iid: object) -> bool:
        if type(iid) is not int or not 0 <= iid < len(self._ends):
            return False
        t = self._ends[iid]
        return t == t

    def __iter__(self) -> Iterator[int]:
        return (iid for iid, t in enumerate(self._ends) if t == t)

    def __len__(self) -> int:
        return sum(1 for t in self._ends if t == t)

    def __repr__(self) -> str:
        return f"EndTimes({dict(self.items())!r})"
