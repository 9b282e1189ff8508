"""What a kernel launch takes and gives, without running it: the output shapes and dtypes a
kernel declares, found by a value-less trace.

A framework must know a custom op's result shapes before the op runs (``jax.pure_callback``
needs them while ``jax.jit`` traces, an XLA custom call declares them). NKI kernels declare
their outputs in code (``nl.ndarray(shape, dtype, buffer=nl.shared_hbm)``), so we trace the
kernel once with ``nt.tensor``-like placeholders, timing-only (no numpy work, nothing recorded by
a profile session), and read the shapes of what it returns. That costs one trace per distinct
argument signature (cached here; ``jax.jit`` caches its own trace too). The trace also checks
the kernel's rules, so most kernel errors surface as SimulatorErrors at this point, before a
framework runs anything.
"""

from __future__ import annotations

import inspect
import threading
import warnings
import weakref
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..dtypes import to_dtype
from ..errors import KernelError
from ..frontend.tensors.tensor import NkiTensor
from ..frontend.typing import TensorType
from ..simulate import trace


@dataclass(frozen=True)
class OutSpec:
    """One output of a launch: its shape and (numpy / ml_dtypes) dtype."""

    shape: tuple[int, ...]
    dtype: np.dtype


def def_loc(fn: Callable[..., Any]) -> str | None:
    """``file.py:LINE`` of a kernel's ``def``."""
    fn = getattr(fn, "func", fn)
    code = getattr(fn, "__code__", None)
    return f"{code.co_filename.rsplit('/', 1)[-1]}:{code.co_firstlineno}" if code else None


class _ReturnCapture:
    """The kernel function, keeping what its first SPMD instance returned. It looks like the
    kernel to the tracer (signature, name and code, so errors name the kernel's own lines)."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.__name__ = getattr(fn, "__name__", "kernel")
        self.__code__ = getattr(fn, "__code__", None)
        self.__signature__ = inspect.signature(fn)
        self.returned: Any = None
        self.calls = 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        out = self.fn(*args, **kwargs)
        if self.calls == 0:
            self.returned = out
        self.calls += 1
        return out


#: kernel function -> (argument signature -> output specs). The specs belong to the kernel
#: function and go with it (weak keys): a model calls its kernels many times, but a kernel
#: defined and dropped (in a test, a notebook cell) is not kept alive by this table.
_CACHE: weakref.WeakKeyDictionary[Any, dict[Any, tuple[OutSpec, ...]]] = (
    weakref.WeakKeyDictionary())
_CACHE_LOCK = threading.Lock()


def _key(args: tuple, kwargs: dict, grid: tuple[int, ...], config: Any) -> Any:
    def one(v: Any) -> Any:
        if isinstance(v, TensorType):
            return ("T", v.shape, str(v.dtype))
        hash(v)  # only hashable constants make a cache key
        return ("C", type(v).__name__, v)
    try:
        return (grid, config if isinstance(config, (str, type(None))) else id(config),
                tuple(one(a) for a in args), tuple(sorted((k, one(v)) for k, v in kwargs.items())))
    except TypeError:
        return None


def _known(fn: Any) -> dict[Any, tuple[OutSpec, ...]] | None:
    """The specs found so far for kernel function ``fn`` (None when it cannot be weakly
    referenced: then nothing is remembered)."""
    with _CACHE_LOCK:
        try:
            return _CACHE.setdefault(fn, {})
        except TypeError:
            return None


def placeholder(shape: Any, dtype: Any, what: str) -> TensorType:
    """An ``nt.tensor``-like value-less input of ``shape`` and ``dtype``."""
    return TensorType(tuple(int(s) for s in shape), to_dtype(np.dtype(dtype), what))


def output_specs(kernel: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
                 grid: tuple[int, ...], config: Any = None) -> tuple[OutSpec, ...]:
    """Shapes and dtypes of the tensors ``kernel`` returns for these arguments (tensor arguments
    given as :class:`TensorType` placeholders), found by a timing-only trace.

    Returns an empty tuple for a kernel that returns nothing (an output-argument kernel).

    Raises:
        SimulatorError: the kernel breaks a rule for these shapes (raised here, before any
            framework runs it), or returns something that is not an HBM tensor.
    """
    fn = getattr(kernel, "func", kernel)
    key = _key(args, kwargs, grid, config)
    known = _known(fn) if key is not None else None
    with _CACHE_LOCK:
        if known is not None and key in known:
            return known[key]
    cap = _ReturnCapture(fn)
    # Warnings belong to the real launch (which repeats them); this trace only reads shapes.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trace(cap, *args, grid=grid, config=config, functional=False, **kwargs)
    items = cap.returned if isinstance(cap.returned, (tuple, list)) else (
        () if cap.returned is None else (cap.returned,))
    specs = []
    for i, item in enumerate(items):
        if not isinstance(item, NkiTensor):
            raise KernelError(f"{cap.__name__}: return value {i}: expected an HBM tensor, "
                              f"found {type(item).__name__}", def_loc(fn))
        specs.append(OutSpec(tuple(int(s) for s in item.shape), np.dtype(item.dtype)))
    result = tuple(specs)
    if known is not None:
        with _CACHE_LOCK:
            known[key] = result
    return result


def takes_output_args(kernel: Any, n_args: int, n_outs: int, kwargs: dict[str, Any]) -> bool:
    """Whether ``kernel`` takes its ``n_outs`` outputs as trailing arguments after ``n_args``
    inputs (the output-argument style) rather than returning them."""
    if n_outs == 0:
        return False
    sig = inspect.signature(getattr(kernel, "func", kernel))
    dummy = [None] * n_args
    try:
        sig.bind(*dummy, *([None] * n_outs), **kwargs)
    except TypeError:
        return False
    try:
        sig.bind(*dummy, **kwargs)
    except TypeError:
        return True  # the outputs are required parameters
    return False


__all__ = ["OutSpec", "output_specs", "placeholder", "takes_output_args", "def_loc"]
