"""What index expressions and masks share: their errors, the integer check, and
:class:`MaskExpr`, a comparison of index expressions (``i < n``) and its ``&`` / ``|`` / ``~``.

Below :mod:`.index_expr` (an ``IndexExpr`` comparison builds a ``MaskExpr``, which holds index
expressions without needing their class) and :mod:`.indexing`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...errors import AccessError, SimulatorError, UnsupportedError
from ...program.ir import Predicate

if TYPE_CHECKING:
    from .index_expr import IndexExpr


class AttributeAccessError(UnsupportedError, AttributeError):
    """An attribute NKI does not define (on a tensor or an index expression); also an
    AttributeError, so ``hasattr`` and ``getattr(x, name, default)`` keep working."""


def _defers(other: object) -> bool:
    """True for operands whose own reflected operator handles an index expression (tiles make
    runtime indices, split expressions their own arithmetic)."""
    return type(other).__name__ in ("NkiTensor", "SplitExpr", "DynamicIndex")


def _unsupported(message: str, cls: type[SimulatorError] = UnsupportedError) -> SimulatorError:
    """An error (UnsupportedError unless ``cls``) located at the kernel line when a kernel is
    being traced."""
    from .. import tracer as _tracer
    tr = _tracer.active_or_none()
    return tr.fail(cls, message) if tr is not None else cls(message)


def _is_int(x: object) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _is_bool(x: object) -> bool:
    return isinstance(x, (bool, np.bool_))


def _mask_operand(x: object, op: str) -> MaskExpr:
    if not isinstance(x, MaskExpr):
        raise _unsupported(f"mask {op}: expected a comparison of index expressions or a bool, "
                           f"found {type(x).__name__}", AccessError)
    return x


class MaskExpr:
    """A predicate over index expressions: ``expr op 0`` or a combination with ``&``, ``|``,
    ``~``. Used as the ``mask=`` argument of instructions."""

    __slots__ = ("kind", "op", "expr", "parts")

    def __init__(self, kind: str, op: str, expr: IndexExpr | None,
                 parts: tuple[MaskExpr, ...]) -> None:
        self.kind, self.op, self.expr, self.parts = kind, op, expr, parts

    def __and__(self, other: object) -> MaskExpr | bool:
        # a Python bool is a condition on loop indices, known here because loops are unrolled
        # (`(i_f < n) & (i * 128 < rows)`): it keeps or drops the whole mask
        if _is_bool(other):
            return self if other else False
        return MaskExpr("bool", "and", None, (self, _mask_operand(other, "&")))

    def __or__(self, other: object) -> MaskExpr | bool:
        if _is_bool(other):
            return True if other else self
        return MaskExpr("bool", "or", None, (self, _mask_operand(other, "|")))

    __rand__ = __and__
    __ror__ = __or__

    def __invert__(self) -> MaskExpr:
        return MaskExpr("bool", "not", None, (self,))

    def __bool__(self) -> bool:
        # `a and b` / `a or b` as the reference examples write masks (mask_bool.py)
        from .mask_bool import ask_bool
        return ask_bool(self)

    @property
    def ndim(self) -> int:
        if self.expr is not None:
            return self.expr.ndim
        return max(p.ndim for p in self.parts)

    def to_predicate(self, ndim: int) -> Predicate:
        """As an :class:`ir.Predicate` over an ``ndim``-axis grid (aligned to the right)."""
        if self.expr is not None:
            return Predicate(self.op, self.expr.to_affine(ndim))
        return Predicate(self.op, None, tuple(p.to_predicate(ndim) for p in self.parts))
