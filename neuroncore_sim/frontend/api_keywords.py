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

import numpy as np

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
        hint = _newer_api_hint(sig, args, kwargs)
        precise = _accumulator_error(sig, api, args) or (
            None if hint else _twice_error(sig, api, args, kwargs))
        return _tracer.current().fail(
            KernelError, precise or f"{api}: {e} (it takes: {accepted}){hint}")
    return None


def _positional(sig: inspect.Signature) -> list[str]:
    return [p.name for p in sig.parameters.values()
            if p.kind in (inspect.Parameter.POSITIONAL_ONLY,
                          inspect.Parameter.POSITIONAL_OR_KEYWORD)]


def _shown(x: Any) -> str:
    """An argument as a message shows it (a tile by its memory, shape and dtype)."""
    space = getattr(getattr(x, "space", None), "value", None)
    if space is not None and hasattr(x, "shape"):
        return f"a {space} tile {list(x.shape)} {np.dtype(x.dtype).name}"
    return getattr(x, "__name__", None) or type(x).__name__


def _accumulator_error(sig: inspect.Signature, api: str, args: tuple[Any, ...]) -> str | None:
    """One positional argument too many, a PSUM tile, after operands that are not in PSUM:
    the kernel means an accumulator (``nisa.nc_matmul(s, m, acc)``), which NKI 2.2x writes
    ``acc += nisa.nc_matmul(s, m)``. (A PSUM tile first is the newer API's dst: another hint.)"""
    names = _positional(sig)
    if len(args) != len(names) + 1 or not names:
        return None
    if (getattr(getattr(args[-1], "space", None), "value", None) != "psum"
            or getattr(getattr(args[0], "space", None), "value", None) == "psum"):
        return None
    return (f"{api}: expected {len(names)} positional arguments ({', '.join(names)}), found "
            f"{len(args)}: the last, {_shown(args[-1])}, looks like an accumulator; the "
            f"instruction returns its result, so accumulate into the PSUM tile with "
            f"`acc += {api}({', '.join(names)})` (or `acc[...] += ...`)")


def _twice_error(sig: inspect.Signature, api: str, args: tuple[Any, ...],
                 kwargs: dict[str, Any]) -> str | None:
    """A parameter given both positionally and by keyword (``nisa.tensor_reduce(np.add, t,
    1, op=np.add)``, or ``tensor_reduce(t, op=np.add, ...)``, whose tile fills ``op``)."""
    names = _positional(sig)
    twice = [(i, n) for i, n in enumerate(names[:len(args)]) if n in kwargs]
    if not twice:
        return None
    i, n = twice[0]
    order = ", ".join(names[:max(len(args), 3)])
    return (f"{api}: {n} given twice: as positional argument {i + 1} (found "
            f"{_shown(args[i])}) and as {n}=; expected it once (the positional order is "
            f"{order}; pass the others by keyword, e.g. {api}({n}=..., ...))")


def _newer_api_hint(sig: inspect.Signature, args: tuple[Any, ...], kwargs: dict[str, Any]
                    ) -> str:
    """A hint when the call has the shape of the newer NKI API's (``nisa.X(dst, ...)`` or
    ``dst=``: destination first, nothing returned)."""
    rest = {k: v for k, v in kwargs.items() if k != "dst"}
    first_is_tile = bool(args) and hasattr(args[0], "space")  # (the newer API's dst)
    shapes = [(args, rest)] + ([(args[1:], rest)] if first_is_tile and "dst" not in kwargs
                               else [])
    for a, kw in shapes:
        try:
            sig.bind(*a, **kw)
        except TypeError:
            continue
        return ("; this looks like the newer NKI API (destination first, nki.isa of Neuron "
                "2.27+); neuroncore_sim runs the neuronxcc.nki API of NeuronCore-v2, where an "
                "instruction returns its result: t = nisa.<instruction>(...)")
    return ""


def _dtype_position(sig: inspect.Signature) -> int | None:
    """The position at which ``dtype`` can be passed positionally (``nisa.iota(expr, dtype)``),
    else None."""
    for i, p in enumerate(sig.parameters.values()):
        if p.name == "dtype":
            return i if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD else None
    return None


def _mark_cast(result: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
               pos: int | None) -> Any:
    """Note on the pending instruction whose result is ``result`` that the kernel gave its
    output dtype (``dtype=``): assigned into a tile of another dtype, it rounds to its own
    dtype first and is then copied (docs/frontend.md "Data types")."""
    dtype = kwargs.get("dtype")
    if dtype is None and pos is not None and pos < len(args):
        dtype = args[pos]
    if dtype is not None:
        tr = _tracer.active_or_none()
        op = tr.pending if tr is not None else None
        if op is not None and op.result is result:
            op.dtype_given = True
    return result


def _flags(sig: inspect.Signature) -> tuple[tuple[str, int | None], ...]:
    """The flag parameters of ``sig`` (default True or False), with their positions when they
    can be passed positionally."""
    out = []
    for i, p in enumerate(sig.parameters.values()):
        if isinstance(p.default, bool):
            out.append((p.name, i if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD else None))
    return tuple(out)


def _check_flags(api: str, flags: tuple[tuple[str, int | None], ...], args: tuple[Any, ...],
                 kwargs: dict[str, Any]) -> None:
    """A flag given anything but a bool is an error: Python would take ``keepdims="no"`` or
    ``transpose_x=x`` by its truth value, silently."""
    for name, pos in flags:
        if name in kwargs:
            value = kwargs[name]
        elif pos is not None and pos < len(args):
            value = args[pos]
        else:
            continue
        if not isinstance(value, (bool, np.bool_)):
            shown = (repr(value) if value is None or isinstance(value, (str, int, float))
                     else "a value")  # (a tile's repr would print its values)
            raise _tracer.current().fail(
                KernelError, f"{api}: {name}= expected True or False, found {shown} "
                f"({type(value).__name__})")


def accepts_name(fn: Callable[..., Any], api: str) -> Callable[..., Any]:
    """``fn`` taking an extra ``name=`` keyword (a label, kept for NKI compatibility) and
    reporting arguments that do not fit its signature, and flags that are not bools, as a
    KernelError."""
    flags = _flags(inspect.signature(fn))
    dtype_at = _dtype_position(inspect.signature(fn))

    @functools.wraps(fn)
    def call(*args: Any, name: Any = None, **kwargs: Any) -> Any:
        if name is not None and not isinstance(name, str):
            raise _tracer.current().fail(
                KernelError, f"{api}: name= expected a string, found {type(name).__name__}")
        if flags:
            _check_flags(api, flags, args, kwargs)
        try:
            return _mark_cast(fn(*args, **kwargs), args, kwargs, dtype_at)
        except TypeError:
            # Only a call that does not fit the signature becomes a KernelError; a TypeError
            # from further inside keeps its own traceback.
            err = _argument_error(fn, api, args, kwargs)
            if err is None:
                raise
            raise err from None

    call.__signature__ = _with_name(inspect.signature(fn))  # type: ignore[attr-defined]
    return call


def known_keywords(fn: Callable[..., Any], api: str) -> Callable[..., Any]:
    """An ``nl`` function declared with ``**kwargs`` (as NKI declares them) that takes only
    the keywords it names, plus ``name=``: any other keyword is a KernelError listing the ones
    it takes (instead of being dropped silently), and so is a flag that is not a bool."""
    sig = inspect.signature(fn)
    named = [p.name for p in sig.parameters.values()
             if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)]
    accepted = frozenset(named) | {"name"}
    flags = _flags(sig)
    keeps_name = "name" in named
    dtype_at = _dtype_position(sig)

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        if kwargs:
            for k in kwargs:
                if k not in accepted:
                    raise _tracer.current().fail(
                        KernelError, f"{api}: unexpected keyword argument {k!r} (it takes: "
                        f"{', '.join(named + ([] if keeps_name else ['name']))})")
            if not keeps_name and "name" in kwargs:
                label = kwargs.pop("name")
                if label is not None and not isinstance(label, str):
                    raise _tracer.current().fail(
                        KernelError, f"{api}: name= expected a string, found "
                        f"{type(label).__name__}")
        if flags:
            _check_flags(api, flags, args, kwargs)
        try:
            return _mark_cast(fn(*args, **kwargs), args, kwargs, dtype_at)
        except TypeError:
            err = _argument_error(fn, api, args, kwargs)
            if err is None:
                raise
            raise err from None

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
