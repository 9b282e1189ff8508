"""One point of a parameter sweep: route its parameters, simulate, and measure.

A sweep point is a dict of parameters. Each name goes to one place:

* a parameter of the kernel file's ``example_inputs`` -> the inputs are made with it;
* ``config.<field>`` -> that field of the hardware config is replaced;
* anything else -> a keyword argument of the kernel (and of ``reference``, where it takes it).

:func:`run_point` is what sweep workers call, in this process, in pool processes or on Dask
workers; it takes only picklable values (the target as a string) and never raises for a failing
point: the error is returned in the row. Loaded kernel files are cached per process.
"""

from __future__ import annotations

import difflib
import hashlib
import inspect
import json
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..config import CompileOptions, NeuronCoreConfig, field_names, fields_hint, override
from ..errors import ConfigError, SimulatorError, UnwrittenOutputWarning, expected
from .kernel_file import (UsageError, example_inputs, find_kernel, load_kernel_file, max_abs_error,
                          split_target)
from ..simulate import simulate
from .table import RESULT_COLUMNS, measured_row

CONFIG_PREFIX = "config."
# Tolerances of the result check, by the lowest precision among inputs and outputs (the same
# rule as tests/kernels/test_kernels.py): fp8 keeps 3-4 significant bits, bf16/fp16 8-11, fp32 24.
_TOL_8BIT, _TOL_16BIT, _TOL_32BIT = 1.25e-1, 1e-2, 1e-4


class SweepError(SimulatorError):
    """A sweep is set up wrongly: a parameter no part of the kernel file takes, a value that
    cannot be saved, a grid that is not a dict of lists, or a worker process that died."""


class SweepParameterError(SweepError, UsageError):
    """A sweep parameter that no part of the kernel file takes, or a ``config.<field>`` value
    the hardware config refuses: found before any point runs (the command line exits 2)."""


@dataclass(frozen=True)
class KernelTarget:
    """A kernel file loaded for sweeping, and where each parameter name goes."""

    target: str  # "ABSOLUTE/PATH/file.py::kernel", what workers re-import
    module: Any
    kernel: Any
    input_names: tuple[str, ...]  # keyword parameters of example_inputs
    loc: str  # "file.py:LINE" of the kernel's def
    stamp: tuple[int, int]  # the file's (mtime_ns, size) when loaded: an edit reloads it
    #: "file.py::kernel@<hash of the file's bytes>": what saved points are keyed by, so a sweep
    #: resumes from another checkout of the same file, and an edited kernel is run again
    identity: str = ""

    def route(self, point: dict[str, Any]) -> tuple[dict, dict, dict]:
        """Split a point into (example_inputs kwargs, config fields, kernel kwargs)."""
        shape, fields, kernel_kw = {}, {}, {}
        for name, value in point.items():
            if name in self.input_names:
                shape[name] = value
            elif name.startswith(CONFIG_PREFIX):
                fields[name[len(CONFIG_PREFIX):]] = value
            elif _accepts(self.kernel, name):
                kernel_kw[name] = value
            else:
                raise SweepParameterError(self._unknown(name), self.loc)
        return shape, fields, kernel_kw

    def check(self, points: list[dict[str, Any]], base: NeuronCoreConfig) -> None:
        """Check every parameter name of ``points``, and every ``config.<field>`` value, before
        any point runs: a misspelt name fails the sweep at once, not each point in turn.

        Raises:
            SweepParameterError: the first bad name or config value, with the valid names.
        """
        seen: set[str] = set()
        for name in (n for p in points for n in p):
            if name in seen:
                continue
            seen.add(name)
            field = name[len(CONFIG_PREFIX):] if name.startswith(CONFIG_PREFIX) else None
            if field is not None and field not in field_names() and not (
                    field.startswith("compiler.")
                    and field.split(".", 1)[1] in CompileOptions.names()):
                raise SweepParameterError(expected(
                    f"sweep parameter {name!r}", f"config.<field> naming {fields_hint(field)}",
                    repr(field)), self.loc)
            self.route({name: None})
        tried: set[str] = set()
        for point in points:
            fields = self.route(point)[1]
            key = json.dumps(fields, sort_keys=True)
            if fields and key not in tried:
                tried.add(key)
                try:
                    override(base, fields, "sweep parameter config.<field>")
                except ConfigError as e:
                    given = ", ".join(f"{CONFIG_PREFIX}{k}={v!r}" for k, v in fields.items())
                    raise SweepParameterError(f"sweep point with {given}: {e}", self.loc) \
                        from None

    def _unknown(self, name: str) -> str:
        """The message for a name no part of the kernel file takes, listing those it does."""
        keywords = _keywords(self.kernel)
        close = difflib.get_close_matches(name, [*self.input_names, *keywords], n=1)
        return expected(
            f"sweep parameter {name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""),
            f"a parameter of example_inputs ({', '.join(self.input_names) or 'none'}), "
            f"'config.<field>' or a keyword of the kernel ({', '.join(keywords) or 'none'})",
            repr(name))


def _signature(fn: Callable[..., Any]) -> inspect.Signature:
    return inspect.signature(getattr(fn, "func", fn))


def _keywords(fn: Callable[..., Any]) -> list[str]:
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return [p.name for p in _signature(fn).parameters.values() if p.kind in kinds]


def _accepts(fn: Callable[..., Any], name: str) -> bool:
    params = _signature(fn).parameters.values()
    return name in _keywords(fn) or any(p.kind is p.VAR_KEYWORD for p in params)


def load_target(target: str) -> KernelTarget:
    """Load ``"file.py::kernel"`` (or ``"file.py"``: its default kernel) for sweeping."""
    path, name = split_target(target)
    stamp = _stamp(path)
    module = load_kernel_file(path)
    name, kernel = find_kernel(module, name)
    make = getattr(module, "example_inputs", None)
    if not callable(make):
        raise UsageError(f"{path} has no example_inputs() to take the kernel's inputs from")
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    inputs = tuple(p.name for p in inspect.signature(make).parameters.values() if p.kind in kinds)
    code = getattr(getattr(kernel, "func", kernel), "__code__", None)
    loc = f"{path.name}:{code.co_firstlineno if code else 1}"
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    return KernelTarget(f"{path.resolve()}::{name}", module, kernel, inputs, loc, stamp,
                        f"{path.name}::{name}@{digest}")


def _stamp(path: Path) -> tuple[int, int]:
    try:
        st = path.stat()
    except OSError:
        return (0, 0)  # load_kernel_file reports the missing file
    return (st.st_mtime_ns, st.st_size)


# Kernel files loaded in this process, by target (the parent of a sweep puts its freshly loaded
# one here, so forked workers start with it).
_LOADED: dict[str, KernelTarget] = {}
# The last timing-only inputs made in this process: points that differ only in kernel or config
# parameters reuse them (making a [8192 x 8192] bf16 input takes seconds). Timing-only launches
# never write into their inputs, so sharing them is safe.
_INPUTS: list[tuple[str, tuple, dict]] = []


def remember(kt: KernelTarget) -> None:
    """Use ``kt`` for its target in this process (and in processes forked from it)."""
    _LOADED[kt.target] = kt


def _cached_target(target: str) -> KernelTarget:
    kt = _LOADED.get(target)
    if kt is None or kt.stamp != _stamp(split_target(target)[0]):
        kt = _LOADED[target] = load_target(target)
    return kt


def _inputs(kt: KernelTarget, shape: dict[str, Any], functional: bool) -> tuple[tuple, dict]:
    if functional:  # a functional launch may write into argument arrays: always fresh ones
        return example_inputs(kt.module, kt.target, **shape)
    key = json.dumps([kt.target, kt.stamp, shape], sort_keys=True)
    if not _INPUTS or _INPUTS[0][0] != key:
        _INPUTS[:] = [(key, *example_inputs(kt.module, kt.target, **shape))]
    return _INPUTS[0][1], _INPUTS[0][2]


def wants_check(check: bool | int, pos: tuple, kw: dict) -> bool:
    """Whether a point runs functionally and is compared with the reference: ``check`` True,
    or an int and the point's inputs hold at most that many elements in all."""
    if isinstance(check, bool):
        return check
    return sum(int(np.size(a)) for a in (*pos, *kw.values())) <= check


def run_point(target: str, point: dict[str, Any], config: NeuronCoreConfig,
              check: bool | int = False) -> dict[str, Any]:
    """Simulate one sweep point; returns its measured columns (``sweep_table.RESULT_COLUMNS``) plus
    ``wall_s``. A failure of the point is returned as ``error`` ("Type: message"), not raised."""
    start = time.perf_counter()
    try:
        row = _measure(_cached_target(target), point, config, check)
    except Exception as e:  # a failing point must not stop the sweep: record it
        row = {c: None for c in RESULT_COLUMNS}
        row["error"] = describe_error(e)
    row["wall_s"] = time.perf_counter() - start
    return row


def point_launch(kt: KernelTarget, point: dict[str, Any], base: NeuronCoreConfig
                 ) -> tuple[tuple, dict, dict, NeuronCoreConfig]:
    """What one point launches, outside a sweep (``profile --param``, a sweep's best point):
    the example inputs (positional, keyword), the kernel keywords and the config. The point's
    names and config values are checked as a sweep checks them.

    Raises:
        SweepParameterError: a name no part of the kernel file takes, a bad config value.
    """
    kt.check([point], base)
    shape, fields, kernel_kw = kt.route(point)
    cfg = override(base, fields, "sweep parameter config.<field>") if fields else base
    pos, kw = example_inputs(kt.module, kt.target, **shape)
    _no_clash(kt, kw, kernel_kw)
    return pos, kw, kernel_kw, cfg


def reference_kwargs(kt: KernelTarget, kernel_kw: dict[str, Any]) -> dict[str, Any]:
    """The kernel keywords the file's ``reference`` takes too."""
    return {k: v for k, v in kernel_kw.items() if _accepts(kt.module.reference, k)}


def _no_clash(kt: KernelTarget, kw: dict[str, Any], kernel_kw: dict[str, Any]) -> None:
    clash = sorted(set(kw) & set(kernel_kw))
    if clash:
        raise SweepError(expected(f"sweep parameter {clash[0]!r}", "a kernel keyword",
                                  "the name of an input array from example_inputs"), kt.loc)


def _measure(kt: KernelTarget, point: dict[str, Any], base: NeuronCoreConfig,
             check: bool | int) -> dict[str, Any]:
    shape, fields, kernel_kw = kt.route(point)
    cfg = override(base, fields, "sweep parameter config.<field>") if fields else base
    functional = check is True
    pos, kw = _inputs(kt, shape, functional)
    if not isinstance(check, bool) and wants_check(check, pos, kw):
        functional = True
        pos, kw = _inputs(kt, shape, functional)
    _no_clash(kt, kw, kernel_kw)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = simulate(kt.kernel, *pos, grid=getattr(kt.module, "GRID", ()), config=cfg,
                       functional=functional, **kw, **kernel_kw)
    row = measured_row(res, _flags(caught))
    if functional:
        want = kt.module.reference(*pos, **kw, **reference_kwargs(kt, kernel_kw))
        want = tuple(want) if isinstance(want, (tuple, list)) else (want,)
        row["max_abs_err"] = err = max_abs_error(res.outputs, want)
        tol = _tolerance(*pos, *kw.values(), *want)
        row["match"] = bool(np.isfinite(err)) and all(
            np.allclose(np.asarray(o, np.float64), np.asarray(r, np.float64), rtol=tol, atol=tol)
            for o, r in zip(res.outputs, want))
    return row


def _flags(caught: list[warnings.WarningMessage]) -> list[str]:
    """Why a point's measurement cannot be ranked, from the warnings of its launch: an output
    never written, or written in part, times a kernel that did not do its job. The point is
    flagged instead (its warning would otherwise scroll by in a worker's stderr); the other
    warnings are shown as usual, where they point."""
    flags = []
    for w in caught:
        if issubclass(w.category, UnwrittenOutputWarning):
            # "file.py:LINE: kernel return value NAME (allocated at ...) is never written; ..."
            flags.append(str(w.message).split("; expected", 1)[0])
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return flags


def _tolerance(*arrays: Any) -> float:
    """rtol = atol of the result check, from the lowest-precision float among the arrays."""
    sizes = [a.dtype.itemsize for a in arrays  # ml_dtypes floats (bfloat16, fp8) have kind "V"
             if isinstance(a, np.ndarray) and (a.dtype.kind == "f" or "float" in a.dtype.name)]
    low = min(sizes, default=4)
    return _TOL_8BIT if low == 1 else _TOL_16BIT if low == 2 else _TOL_32BIT


def describe_error(e: BaseException) -> str:
    """``"Type: message"``, plus ``(file.py:LINE)`` of the innermost frame outside this package
    and the Python installation when the message does not carry a kernel location already."""
    text = f"{type(e).__name__}: {e}"
    if isinstance(e, SimulatorError) and e.loc:
        return text
    package = str(Path(__file__).resolve().parent)
    system = tuple({sys.prefix, sys.base_prefix, sys.exec_prefix})
    frames = [f for f in _frames(e) if not f[0].startswith(package + "/")] or _frames(e)
    outside = [f for f in frames if not f[0].startswith(system)] or frames
    if outside:
        text += f" ({Path(outside[-1][0]).name}:{outside[-1][1]})"
    return text


def _frames(e: BaseException) -> list[tuple[str, int]]:
    tb, out = e.__traceback__, []
    while tb is not None:
        out.append((str(Path(tb.tb_frame.f_code.co_filename).resolve()), tb.tb_lineno))
        tb = tb.tb_next
    return out
