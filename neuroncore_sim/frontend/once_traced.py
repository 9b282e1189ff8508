"""Index expressions keep their loop-entry values in every iteration of a loop NKI traces once.

NKI runs the Python body of an ``nl.affine_range`` / ``nl.sequential_range`` loop once, to
trace it; the simulator runs it once per iteration. A kernel that rebinds an index name late
in the body (``if_k = nl.arange(128)[None, :]`` after an earlier line used the ``if_k`` of
``nl.arange(512)`` bound before the loop, as AWS's fused attention backward does) sees, in NKI,
the loop-entry binding at the earlier line of every iteration; run per iteration, Python would
hand the second iteration the late binding. So at the start of every iteration after the first,
the kernel frame's local names that were bound to ``nl.arange`` / ``nl.mgrid`` expressions (or
masks built from them) when the loop began get those bindings back. Other Python state (ints,
tiles, lists) is left alone: tiles and counters that change per iteration are handled where
they matter (``Tracer.traced_iteration``).
"""

from __future__ import annotations

import ctypes
import sys
from types import FrameType
from typing import Any

#: The index-expression types (``indexing.py`` registers ``IndexExpr`` and ``MaskExpr``; kept
#: here so the tracer can use this module without importing the index machinery).
INDEX_TYPES: list[type] = []


def _is_index(value: Any) -> bool:
    kinds = tuple(INDEX_TYPES)
    if isinstance(value, kinds):
        return True
    # nl.mgrid unpacked into a tuple is unpacked into names; a kept tuple counts too
    return (isinstance(value, tuple) and bool(value)
            and all(isinstance(v, kinds) for v in value))


def entry_indices(frame: FrameType | None) -> dict[str, Any]:
    """The index-expression bindings of ``frame``'s local names now (at a loop's start)."""
    if frame is None:
        return {}
    return {name: value for name, value in frame.f_locals.items() if _is_index(value)}


def restore_indices(frame: FrameType | None, entry: dict[str, Any]) -> bool:
    """Give ``frame``'s names their loop-entry index bindings back where the body rebound them;
    True when it did. A body that rebound none in its first iteration rebinds none later (NKI
    runs it once: what it binds cannot depend on the iteration), so the loops stop asking
    after a False: reading ``frame.f_locals`` copies every local of the kernel, each time."""
    if frame is None or not entry:
        return False
    local = frame.f_locals
    changed = {n: v for n, v in entry.items() if local.get(n, v) is not v}
    if not changed:
        return False
    if sys.version_info >= (3, 13):  # f_locals is a write-through proxy (PEP 667)
        for name, value in changed.items():
            local[name] = value
        return True
    local.update(changed)  # the frame's locals dict, written back to its fast locals
    ctypes.pythonapi.PyFrame_LocalsToFast(ctypes.py_object(frame), ctypes.c_int(0))
    return True
