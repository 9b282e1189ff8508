"""``and`` / ``or`` between masks, as the NKI reference examples write them
(``mask=(ix < n // 2 and iy < m // 2)``).

Python cannot overload ``and`` / ``or``: ``a and b`` asks ``bool(a)`` and returns ``b``. So when
a mask's ``__bool__`` is asked from the short-circuit of an ``and`` / ``or`` *expression* (its
value used, not an ``if``), read from the caller's bytecode, the mask is kept as a pending
operand and Python goes on to the right-hand side (``True`` for ``and``, ``False`` for ``or``).
The next instruction that takes a mask from that frame (after the expression has ended)
combines the pending operands with the mask it is given: ``a & b`` / ``a | b``, which is what
the examples mean.

Refused with a clear error, since their meaning would be lost: an ``and`` / ``or`` whose value
is stored in a variable (build it with ``&`` / ``|`` instead), ``and`` mixed with ``or`` in one
expression, ``not mask``, and ``if mask:`` (control flow cannot depend on ``nl.arange`` values,
as the NKI error ``err_control_flow_condition_depending_on_arange`` says).
"""

from __future__ import annotations

import bisect
import contextlib
import dis
import os
import sys
import weakref
from contextvars import ContextVar
from types import CodeType, FrameType
from typing import Any, Iterator

from ...errors import UnsupportedError, caller_loc

#: code object -> (offsets in order, offset -> instruction): the disassembly belongs to the code
#: object and goes with it (weak keys), so kernels defined in loops are not kept alive
_CODE: weakref.WeakKeyDictionary[CodeType, tuple[list[int], dict[int, dis.Instruction]]] = (
    weakref.WeakKeyDictionary())
#: One pending operand: (frame, end offset of the expression, "and" / "or", mask, line).
Pending = tuple[FrameType, int, str, Any, int]
#: The pending left operands of the launch being traced (None outside a launch); each launch has
#: its own list (:func:`pending_masks`, entered by the tracer), so one that stopped with an error
#: leaves nothing to the next.
_PENDING: ContextVar[list[Pending] | None] = ContextVar("neuroncore_sim_masks", default=None)


@contextlib.contextmanager
def pending_masks() -> Iterator[list[Pending]]:
    """Collect the pending and / or operands of one launch until the block ends."""
    pending: list[Pending] = []
    token = _PENDING.set(pending)
    try:
        yield pending
    finally:
        _PENDING.reset(token)

_HINT = ("combine masks with & and | (e.g. mask=(i < n) & (j < m)), or pass 'a and b' / "
         "'a or b' directly as mask=")


def _instructions(code: CodeType) -> tuple[list[int], dict[int, dis.Instruction]]:
    known = _CODE.get(code)
    if known is None:
        by = {i.offset: i for i in dis.get_instructions(code)}
        known = _CODE[code] = (sorted(by), by)
    return known


def _current(frame: FrameType) -> int:
    """Offset of the instruction ``frame`` is executing (f_lasti may point into the inline
    caches that follow it)."""
    offsets, _ = _instructions(frame.f_code)
    k = bisect.bisect_right(offsets, frame.f_lasti) - 1
    return offsets[max(k, 0)]


def _short_circuit(frame: FrameType) -> tuple[str, int] | None:
    """("and" / "or", offset where the expression's value is complete) when ``bool()`` is being
    asked by the short-circuit of an and / or expression in ``frame``, else None."""
    offsets, by = _instructions(frame.f_code)
    here = by[_current(frame)]
    if here.opname in ("JUMP_IF_FALSE_OR_POP", "JUMP_IF_TRUE_OR_POP"):  # Python 3.11
        return ("and" if "FALSE" in here.opname else "or"), int(here.argval)
    # Python 3.12+: COPY 1, [TO_BOOL,] POP_JUMP_IF_FALSE / _TRUE, POP_TOP
    k = offsets.index(here.offset)
    if here.opname == "TO_BOOL" and k + 1 < len(offsets):
        k += 1
        here = by[offsets[k]]
    before = by[offsets[k - 1]] if k else None
    if before is not None and before.opname == "TO_BOOL" and k >= 2:
        before = by[offsets[k - 2]]
    if (here.opname in ("POP_JUMP_IF_FALSE", "POP_JUMP_IF_TRUE") and before is not None
            and before.opname == "COPY" and before.arg == 1):
        return ("and" if "FALSE" in here.opname else "or"), int(here.argval)
    return None


def ask_bool(mask: Any) -> bool:
    """``bool(mask)``: the value that lets an and / or expression go on, or a clear error."""
    frame = sys._getframe(2)  # the kernel line (ask_bool <- MaskExpr.__bool__ <- kernel)
    found = _short_circuit(frame)
    pending = _PENDING.get()
    error = None
    if pending is None:  # no instruction outside a launch could take the combined mask
        error = f"'and' / 'or' between masks outside a kernel launch; {_HINT}"
    elif found is None:
        error = (f"a mask is a compile-time predicate over index expressions, with no Python "
                 f"truth value (if / not on a mask); {_HINT}")
    else:
        kind, end = found
        _, by = _instructions(frame.f_code)
        after = by.get(end)
        if after is not None and after.opname.startswith("STORE"):
            error = (f"'{kind}' between masks stored in a variable loses the left mask; "
                     f"{_HINT}")
        elif any(p[0] is frame and p[2] != kind for p in pending):
            error = f"'and' and 'or' mixed between masks; {_HINT}"
    if error is not None:
        raise _fail(error)
    pending.append((frame, end, kind, mask, frame.f_lineno))
    return kind == "and"  # and: go on to the right operand; or: likewise


def resolve(mask: Any) -> Any:
    """The mask an instruction gets, combined with the pending left operands of an and / or
    expression that has ended in a calling frame."""
    pending = _PENDING.get()
    if not pending:
        return mask
    live = set()
    f = sys._getframe(1)
    while f is not None:
        live.add(f)
        f = f.f_back  # type: ignore[assignment]
    taken, keep = [], []
    for entry in pending:
        fr, end, kind, left, _ = entry
        if fr not in live:
            continue  # its frame has returned: the expression's value went elsewhere
        now = _current(fr)
        if now < end:
            keep.append(entry)  # still inside the expression
            continue
        offsets, by = _instructions(fr.f_code)
        between = [o for o in offsets if end <= o < now]
        if any(by[o].opname.startswith("CALL") for o in between):
            pending.clear()
            raise _fail(f"'{kind}' between masks whose value is not the mask= of the next "
                        f"instruction; {_HINT}")
        taken.append(entry)
    pending[:] = keep
    for _, _, kind, left, _ in reversed(taken):
        mask = (left & mask) if kind == "and" else (left | mask)
    return mask


def leftover() -> str | None:
    """At the end of a launch: "file.py:LINE" of an and / or between masks whose value never
    reached an instruction's mask (forgotten here either way), else None."""
    pending = _PENDING.get()
    if not pending:
        return None
    frame, line = pending[0][0], pending[0][4]
    pending.clear()
    return f"{os.path.basename(frame.f_code.co_filename)}:{line}"


def _fail(message: str) -> UnsupportedError:
    # located at the kernel line that is running (the first frame outside the package)
    return UnsupportedError(message, caller_loc())
