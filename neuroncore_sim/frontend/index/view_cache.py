"""The geometries of views computed during one launch, owned by that launch's tracer.

Loops index each new tile the way they indexed the one before (``moving[:, j * 512:(j + 1) *
512]`` of every moving tile, ``t[i_p, i_f]`` with the same ``nl.mgrid`` expressions), so the
front end remembers a view's geometry by what determines it. The memo belongs to the launch
(:attr:`Tracer.view_cache`): it starts empty with each launch and goes with it, nothing is kept
between launches or shared between threads that trace at once. Views made outside a kernel
(host-side ``nl`` use) compute their geometry every time.
"""

from __future__ import annotations

from typing import Any

#: Bound of each memo (cleared when full: it only saves recomputation).
CACHE_SIZE = 4096


class ViewCache:
    """Geometry memos of one launch.

    Attributes:
        whole: (shape, view key) -> the geometry of an int / slice key on a whole tensor of that
            shape (``basic_index.whole_index``).
        affine: (layout, memory, coefs, key grids) -> the form of a view indexed by
            ``nl.arange`` / ``nl.mgrid`` expressions, whatever its base and the key's ints
            (``affine_index.affine_view``).
    """

    __slots__ = ("whole", "affine")

    def __init__(self) -> None:
        self.whole: dict[tuple[Any, ...], Any] = {}
        self.affine: dict[tuple[Any, ...], Any] = {}


def remember(memo: dict[tuple[Any, ...], Any], key: tuple[Any, ...], value: Any) -> None:
    """Store ``value`` under ``key``, clearing ``memo`` first when it is full."""
    if len(memo) >= CACHE_SIZE:
        memo.clear()
    memo[key] = value
