"""Spill victims: the resident tiles of a memory plan as eviction candidates (Belady's choice
weighted by what an eviction moves), for :mod:`.spill`.

The victim is the resident tile whose next use is furthest away per byte its eviction moves
(a dirty tile: a save and a reload; a clean one: a reload; a tile never written: nothing),
among the tiles none of the ``lead`` instructions before the one needing room touched when
there is one (the compiler issues a reload ahead of its reader; docs/model.md, "Spilling").
"""

from __future__ import annotations

import heapq

#: Next use of a tile with none left.
NEVER = 1 << 62


def eviction_bytes(k: int, nbytes: int, dirty: set[int], saved: set[int],
                   const: dict[int, list[int]]) -> int:
    """Bytes evicting tile ``k`` moves: a save and a reload when dirty, a reload when its copy
    elsewhere is current or its memsets run again, nothing when it was never written."""
    return 2 * nbytes if k in dirty else nbytes if k in saved or k in const else 0


class Evictable:
    """The resident tiles as eviction candidates, for :meth:`victim`: per eviction cost, a heap
    by next use (then size, then key). A tile's next use and cost change only at an instruction
    that touches it, which pushes it anew (:meth:`push`); older entries are skipped."""

    __slots__ = ("groups", "version", "used_at", "lead")

    def __init__(self, lead: int = 0) -> None:
        #: eviction bytes -> heap of (-next use, -size, -key, version, key)
        self.groups: dict[int, list[tuple[int, int, int, int, int]]] = {}
        self.version: dict[int, int] = {}
        self.used_at: dict[int, int] = {}  # tile -> the instruction that last touched it
        self.lead = lead

    def push(self, k: int, next_use: int, nbytes: int, cost: int, at: int) -> None:
        """Tile ``k`` as a candidate, touched by instruction ``at``."""
        self.used_at[k] = at
        v = self.version[k] = self.version.get(k, 0) + 1
        heapq.heappush(self.groups.setdefault(cost, []), (-next_use, -nbytes, -k, v, k))

    def victim(self, resident: dict[int, int], need: list[int], i: int) -> int:
        """The resident tile not used by instruction ``i`` whose next use is furthest away per
        byte its eviction moves (ties: the furthest next use, the larger tile, the later key):
        the best of each cost's heap top. A tile one of the ``lead`` instructions before ``i``
        touched is taken only when every other candidate is (its reader may still be running
        when the DMA that needs its memory is issued)."""
        best = self._victim(resident, need, i, i - self.lead) if self.lead else -1
        if best < 0:
            best = self._victim(resident, need, i, i + 1)
        assert best >= 0  # _too_big ruled out an instruction that alone does not fit
        return best

    def stale_victim(self, resident: dict[int, int], need: list[int], i: int, since: int,
                     beyond: int) -> int:
        """:meth:`victim` among the tiles no instruction from ``since`` on touched and whose
        next use is more than ``beyond`` instructions after ``i``; -1 when there is none."""
        return self._victim(resident, need, i, since, beyond)

    def _victim(self, resident: dict[int, int], need: list[int], i: int, since: int,
                beyond: int = -1) -> int:
        """:meth:`victim` among the tiles last touched before instruction ``since``; -1 when
        there is none."""
        best, best_rank = -1, None
        version, used_at = self.version, self.used_at
        for cost, heap in list(self.groups.items()):
            aside = []
            top = None
            while heap:
                e = heap[0]
                k = e[4]
                if k not in resident or version[k] != e[3]:
                    heapq.heappop(heap)  # (evicted, dead, or pushed anew since)
                elif k in need or used_at[k] >= since:
                    aside.append(heapq.heappop(heap))
                else:
                    top = e
                    break
            for e in aside:
                heapq.heappush(heap, e)
            if not heap:
                del self.groups[cost]
            if top is None:
                continue
            distance = -top[0] - i if -top[0] != NEVER else NEVER
            if distance <= beyond:  # (the group's furthest next use: none of it qualifies)
                continue
            rank = (distance / cost if cost else float("inf"), distance, -top[1], top[4])
            if best_rank is None or rank > best_rank:
                best, best_rank = top[4], rank
        return best
