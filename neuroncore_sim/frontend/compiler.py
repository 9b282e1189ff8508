"""``nki.compiler`` (ncc): allocation and compiler-directive helpers.

``ncc.sbuf.auto_alloc()`` / ``ncc.psum.auto_alloc()`` are the default allocators (``nl.sbuf``
and ``nl.psum``). The compiler directives (``skip_middle_end_transformations`` and friends)
change how the real compiler optimises, not what a kernel computes, so they are accepted as
no-ops. Direct allocation (``alloc``/``mod_alloc``) is not implemented yet and says so.
"""

from __future__ import annotations

from typing import Any, Callable

from ..errors import UnsupportedError
from . import language as nl


class _Allocator:
    def __init__(self, buffer: nl.Buffer) -> None:
        self._buffer = buffer

    def auto_alloc(self) -> nl.Buffer:
        """The compiler-managed allocator: the same as passing ``nl.sbuf`` / ``nl.psum``."""
        return self._buffer

    def alloc(self, *_: Any, **__: Any) -> Any:
        raise UnsupportedError(f"ncc.{self._buffer.name}.alloc (direct allocation) is not "
                               "supported by neuroncore_sim yet; use auto allocation")

    mod_alloc = alloc


sbuf = _Allocator(nl.sbuf)
psum = _Allocator(nl.psum)


def _directive(fn: Callable[..., Any] | None = None, **_: Any) -> Any:
    """A compiler directive: returns the kernel unchanged."""
    if fn is None:
        return lambda f: f
    return fn


skip_middle_end_transformations = _directive
enable_stack_allocator = _directive
force_auto_alloc = _directive
no_reorder = _directive


def multi_buffer(n: int) -> int:
    """Accepted for compatibility: the buffer count hint of a loop."""
    return int(n)
