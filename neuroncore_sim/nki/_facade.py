"""What the ``nki.language``, ``nki.isa`` and ``nki.compiler`` facades share: a module that shows
the NKI names of an implementation module and no others (``dir``, ``hasattr``, tab completion
see only what NKI has), and answers a name NKI has but the simulator does not implement with
the implementation's error, raised as an ``UnsupportedAttributeError`` (an ``UnsupportedError``
and an ``AttributeError``, so ``hasattr`` and ``getattr(module, name, default)`` answer)."""

from __future__ import annotations

from types import ModuleType
from typing import Any, Callable

from ..errors import UnsupportedAttributeError, UnsupportedError


def expose(namespace: dict[str, Any], impl: ModuleType, name: str, hidden: frozenset[str]
           ) -> tuple[list[str], Callable[[str], Any], Callable[[], list[str]]]:
    """Copy ``impl``'s public names but ``hidden`` into ``namespace`` (a facade's globals).

    Returns:
        The facade's ``__all__``, its module ``__getattr__`` and its ``__dir__``.
    """
    names = sorted(n for n in vars(impl) if not n.startswith("_") and n not in hidden)
    namespace.update({n: getattr(impl, n) for n in names})

    def __getattr__(attr: str) -> Any:
        if attr in hidden:
            raise AttributeError(f"module {name!r} has no attribute {attr!r}")
        try:
            return getattr(impl, attr)
        except UnsupportedError as e:  # not implemented yet / v3-only / unknown: the impl's
            if isinstance(e, AttributeError):  # error (at the kernel line), as an
                raise  # AttributeError
            raise UnsupportedAttributeError(e.message, e.loc) from None

    def __dir__() -> list[str]:
        return list(names)

    return names, __getattr__, __dir__
