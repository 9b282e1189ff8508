"""The dependency edges of a schedule, packed: :class:`Deps`.

A schedule holds every instruction's edges (producer id, kind) from hazard detection until the
timing run reaches that instruction. As a tuple of 2-tuples they were about 300 bytes per
instruction (three to four edges each), the largest part of a timing-only run's peak on a
blocked matmul, and they left the small-object arenas fragmented once the run freed them. Here
an instruction's edges are one ``bytes`` object of 8-byte integers ``producer << KIND_BITS |
kind``: 8 bytes per edge, plus 33 for the object, and no object per edge.

:class:`Deps` reads as the mapping it replaces (instruction id -> ((producer id, kind), ...)),
for tests, reports and :mod:`.hoist`; the timing run takes each instruction's edges once with
:meth:`Deps.take` (or :meth:`Deps.take_packed` and :func:`edge_code`, one edge at a time), and
unpacks them itself (``e >> KIND_BITS``, ``e & KIND_MASK``).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator, MutableMapping

#: Bits of an edge's kind (RAW, WAW, WAR: 0, 1, 2) below its producer id.
KIND_BITS = 2
KIND_MASK = (1 << KIND_BITS) - 1
_EDGE = struct.Struct("q")
#: Bytes of one packed edge.
EDGE_BYTES = _EDGE.size
#: edges count -> the Struct packing that many (made on first use)
_PACKERS: dict[int, struct.Struct] = {}


def _packer(n: int) -> struct.Struct:
    s = _PACKERS.get(n)
    if s is None:
        s = _PACKERS[n] = struct.Struct(f"{n}q")
    return s


def edge_code(packed: bytes, i: int) -> int:
    """Edge ``i`` of packed edges (:meth:`Deps.take_packed`): ``producer << KIND_BITS | kind``."""
    return _EDGE.unpack_from(packed, i * EDGE_BYTES)[0]


Edges = tuple[tuple[int, int], ...]


class Deps(MutableMapping[int, Edges]):
    """Instruction id -> its dependency edges ((producer id, kind), ...), stored packed.

    Args:
        items: initial entries (a mapping or (id, edges) pairs), as ``dict(items)``.
    """

    __slots__ = ("_packed",)

    def __init__(self, items: Iterable = ()) -> None:
        self._packed: dict[int, bytes] = {}
        for iid, edges in dict(items).items():
            self[iid] = edges

    def add(self, iid: int, found: dict[int, int]) -> None:
        """Set the edges of ``iid`` from producer -> kind, sorted by producer (hazard
        detection's form: one call per instruction with dependencies)."""
        self._packed[iid] = _packer(len(found)).pack(
            *sorted([p << KIND_BITS | k for p, k in found.items()]))

    def take(self, iid: int) -> tuple[int, ...]:
        """Remove the edges of ``iid`` and return them packed, ``producer << KIND_BITS |
        kind`` each (none when it has no entry): the timing run reads each instruction's edges
        once, and what it has read is only memory held."""
        b = self._packed.pop(iid, None)
        return _packer(len(b) // EDGE_BYTES).unpack(b) if b else ()

    def take_packed(self, iid: int) -> bytes:
        """Remove the edges of ``iid`` and return them as they are stored (``b""`` when it has
        no entry): ``len(packed) // EDGE_BYTES`` edges, read with :func:`edge_code`."""
        return self._packed.pop(iid, b"")

    def __getitem__(self, iid: int) -> Edges:
        return tuple((e >> KIND_BITS, e & KIND_MASK) for (e,) in
                     _EDGE.iter_unpack(self._packed[iid]))

    def __setitem__(self, iid: int, edges: Edges) -> None:
        """Set the edges of ``iid``, kept in the order given."""
        codes = [p << KIND_BITS | k for p, k in edges]
        self._packed[iid] = _packer(len(codes)).pack(*codes)

    def __delitem__(self, iid: int) -> None:
        del self._packed[iid]

    def __contains__(self, iid: object) -> bool:
        return iid in self._packed

    def __iter__(self) -> Iterator[int]:
        return iter(self._packed)

    def __len__(self) -> int:
        return len(self._packed)

    def __repr__(self) -> str:
        return f"Deps({dict(self.items())!r})"
