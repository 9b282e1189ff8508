"""The memories a tensor can be allocated in: ``nl.sbuf``, ``nl.psum``, ``nl.hbm``,
``nl.private_hbm``, ``nl.shared_hbm``.

Kept apart from the allocation functions (alloc.py) so that tensor views, below them, can
answer ``t.buffer`` with the same objects: kernels test ``if t.buffer is nl.psum:`` (AWS's team
kernels pick a copy path so).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...program.ir import MemSpace, Placement

if TYPE_CHECKING:
    from .. import tracer as _tracer


class Buffer:
    """A memory a tensor can be allocated in (``nl.sbuf``, ``nl.psum``, ``nl.shared_hbm``...).

    Equal to itself, and to the :class:`MemSpace` it lives in (``t.buffer == MemSpace.PSUM``).
    """

    def __init__(self, name: str, space: MemSpace, kind: str) -> None:
        self.name, self.space, self.kind = name, space, kind

    def __repr__(self) -> str:
        return f"nl.{self.name}"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, MemSpace):
            return self.space is other
        return self is other

    def __hash__(self) -> int:
        return id(self)

    def place(self, tr: _tracer.Tracer, dims: tuple[int, ...], pa: int,
              itemsize: int) -> Placement | None:
        """Where each logical tile of a (B..., P, F...) tensor goes: None, the compiler places
        it (``ncc``'s direct-allocation buffers override this)."""
        return None


sbuf = Buffer("sbuf", MemSpace.SBUF, "tile")
psum = Buffer("psum", MemSpace.PSUM, "tile")
hbm = Buffer("hbm", MemSpace.HBM, "hbm")
private_hbm = Buffer("private_hbm", MemSpace.HBM, "hbm")
shared_hbm = Buffer("shared_hbm", MemSpace.HBM, "output")


def buffer_of(space: MemSpace, kind: str) -> Buffer:
    """The buffer object a tensor in ``space`` declared as ``kind`` answers to ``.buffer``:
    ``nl.sbuf`` / ``nl.psum`` on chip (direct allocations too), ``nl.shared_hbm`` for kernel
    outputs, ``nl.hbm`` for the other HBM tensors (inputs, scratch, constants)."""
    if space is MemSpace.SBUF:
        return sbuf
    if space is MemSpace.PSUM:
        return psum
    return shared_hbm if kind == "output" else hbm
