"""The keyword arguments every NKI instruction function takes beyond its documented ones.

NKI 2.2x declares its ``nki.isa`` instructions (and ``nl.load`` / ``nl.store``) with
``**kwargs``; real kernels pass ``name="..."`` to label the instruction or its result
(``nisa.tensor_scalar_reduce(..., name="reduced")``). :func:`accepts_name` wraps such a function
so that ``name=`` (a string) is accepted, and so that any other keyword it does not take is a
:class:`KernelError` naming the kernel's line, the function and the keywords it does take,
instead of Python's ``TypeError`` from inside the package.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

from ..errors import KernelError
from . import tracer as _tracer


def _argument_error(fn: Callable[..., Any], api: str, args: tuple[Any, ...],
                    kwargs: dict[str, Any]) -> KernelError | None:
    """A KernelError when ``args`` / ``kwargs`` do not fit ``fn``'s signature, else None."""
    sig = inspect.signature(fn)
    try:
        sig.bind(*args, **kwargs)
    except TypeError as e:
        accepted = ", ".join(p for p in sig.parameters if not p.startswith("_")) + ", name"
        return _tracer.current().fail(
            KernelError, f"{api}: {e} (it takes: {accepted}){_newer_api_hint(sig, args, kwargs)}")
    return None


def _newer_api_hint(sig: inspect.Signature, args: tuple[Any, ...], kwargs: dict[str, Any]
                    ) -> str:
    """A hint when the call has the shape of the newer NKI API's (``nisa.X(dst, ...)`` or
    ``dst=``: destination first, nothing returned)."""
    rest = {k: v for k, v in kwargs.items() if k != "dst"}
    shapes = [(args, rest)] + ([(args[1:], rest)] if args and "dst" not in kwargs else [])
    for a, kw in shapes:
        try:
            sig.bind(*a, **kw)
        except TypeError:
            continue
        return ("; this looks like the newer NKI API (destination first, nki.isa of Neuron "
                "2.27+); neuroncore_sim runs the neuronxcc.nki API of NeuronCore-v2, where an "
                "instruction returns its result: t = nisa.<instruction>(...)")
    return ""


def accepts_name(fn: Callable[..., Any], api: str) -> Callable[..., Any]:
    """``fn`` taking an extra ``name=`` keyword (a label, kept for NKI compatibility) and
    reporting arguments that do not fit its signature as a KernelError."""

    @functools.wraps(fn)
    def call(*args: Any, name: Any = None, **kwargs: Any) -> Any:
        if name is not None and not isinstance(name, str):
            raise _tracer.current().fail(
                KernelError, f"{api}: name= expected a string, found {type(name).__name__}")
        try:
            return fn(*args, **kwargs)
        except TypeError:
            # Only a call that does not fit the signature becomes a KernelError; a TypeError
            # from further inside keeps its own traceback.
            err = _argument_error(fn, api, args, kwargs)
            if err is None:
                raise
            raise err from None

    call.__signature__ = _with_name(inspect.signature(fn))  # type: ignore[attr-defined]
    return call


def _with_name(sig: inspect.Signature) -> inspect.Signature:
    """``sig`` with a keyword-only ``name=None`` (before any ``**kwargs``)."""
    params = list(sig.parameters.values())
    if "name" in sig.parameters:
        return sig
    named = inspect.Parameter("name", inspect.Parameter.KEYWORD_ONLY, default=None)
    if params and params[-1].kind is inspect.Parameter.VAR_KEYWORD:
        params.insert(len(params) - 1, named)
    else:
        params.append(named)
    return sig.replace(parameters=params)
