"""Python operators on tensors and tiles (``a + b``, ``-a``, ``a < b``, ``psum += x``): each is
forwarded to the ``nl`` function NKI names for it, as NKI's tiles do.

``NkiTensor`` inherits :class:`TileOperators`; ``t + index_expression`` is a runtime offset
(:class:`.indexing.DynamicIndex`), not an addition.
"""

from __future__ import annotations

from typing import Any

from ..index.indexing import DynamicIndex, IndexExpr

#: ``frontend.language`` (nl), bound by ``tensor.py`` once both modules exist: language imports
#: the tensor module, so this one cannot import language while NkiTensor is being defined.
_nl: Any = None


class TileOperators:
    """The Python operators of :class:`~neuroncore_sim.frontend.tensors.tensor.NkiTensor`."""

    __slots__ = ()

    def __add__(self, o: Any) -> Any:
        return DynamicIndex(self, o) if isinstance(o, IndexExpr) else _nl.add(self, o)

    def __radd__(self, o: Any) -> Any:
        return DynamicIndex(self, o) if isinstance(o, IndexExpr) else _nl.add(o, self)

    def __sub__(self, o: Any) -> Any: return _nl.subtract(self, o)
    def __rsub__(self, o: Any) -> Any: return _nl.subtract(o, self)
    def __mul__(self, o: Any) -> Any: return _nl.multiply(self, o)
    def __rmul__(self, o: Any) -> Any: return _nl.multiply(o, self)
    def __truediv__(self, o: Any) -> Any: return _nl.divide(self, o)
    def __rtruediv__(self, o: Any) -> Any: return _nl.divide(o, self)
    def __pow__(self, o: Any) -> Any: return _nl.power(self, o)
    def __mod__(self, o: Any) -> Any: return _nl.mod(self, o)
    def __neg__(self) -> Any: return _nl.negative(self)
    def __abs__(self) -> Any: return _nl.abs(self)
    def __lt__(self, o: Any) -> Any: return _nl.less(self, o)
    def __le__(self, o: Any) -> Any: return _nl.less_equal(self, o)
    def __gt__(self, o: Any) -> Any: return _nl.greater(self, o)
    def __ge__(self, o: Any) -> Any: return _nl.greater_equal(self, o)
    def __eq__(self, o: Any) -> Any: return _nl.equal(self, o)  # type: ignore[override]
    def __ne__(self, o: Any) -> Any: return _nl.not_equal(self, o)  # type: ignore[override]
    def __and__(self, o: Any) -> Any: return _nl.bitwise_and(self, o)
    def __or__(self, o: Any) -> Any: return _nl.bitwise_or(self, o)
    def __xor__(self, o: Any) -> Any: return _nl.bitwise_xor(self, o)
    def __invert__(self) -> Any: return _nl.invert(self)
    __hash__ = object.__hash__

    def __iadd__(self, o: Any) -> Any: return _nl.accumulate(self, o, "add")
    def __isub__(self, o: Any) -> Any: return _nl.accumulate(self, o, "subtract")
    def __imul__(self, o: Any) -> Any: return _nl.accumulate(self, o, "multiply")
    def __itruediv__(self, o: Any) -> Any: return _nl.accumulate(self, o, "divide")

