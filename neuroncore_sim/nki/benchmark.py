"""``nki.benchmark`` and ``nki.profile`` on the simulator.

``nki.benchmark`` estimates the kernel's device latency with a timing-only simulation: like the
hardware benchmark it does not depend on input values (``nt.tensor`` placeholders work). The
simulation is deterministic, so every percentile of ``nc_latency`` is the same estimate; unlike
the hardware figure it excludes host-device transfer time.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import Any, Callable

from ..errors import KernelError, caller_loc, expected, public_entry
from ..frontend.typing import TensorType
from ..report.launch_files import (OutputPlaceError, OutputWriteError, check_out_dir,
                                  write_files)
from ..simulate import simulate_launch
from .kernel import Kernel

_PERCENTILES = (0, 1, 10, 25, 50, 90, 99, 100)


@dataclass(frozen=True)
class LatencyStats:
    """Latency of the benchmarked kernel, in microseconds."""

    latency_us: float
    iterations: int

    def get_latency_percentile(self, p: int) -> float:
        """The p-th percentile latency in microseconds (p in 0, 1, 10, 25, 50, 90, 99, 100)."""
        if p not in _PERCENTILES:
            from ..errors import SimulatorError
            raise SimulatorError(f"get_latency_percentile: expected one of {_PERCENTILES}, "
                                 f"found {p}")
        return self.latency_us


@dataclass(frozen=True)
class BenchmarkResult:
    """What ``kernel.benchmark_result`` holds after a benchmark call."""

    nc_latency: LatencyStats
    sim_result: Any


class BenchmarkKernel(Kernel):
    """A kernel whose calls are timing-only simulations that set ``benchmark_result``.

    ``k[grid](...)`` sets it on ``k`` too: the gridded kernel is a temporary, and the SDK's
    users read ``k.benchmark_result`` after such a call.
    """

    benchmark_result: BenchmarkResult | None = None
    _owner: BenchmarkKernel | None = None

    @public_entry
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        iters = int(self.options.get("iters", 100))
        res = simulate_launch(self, args, kwargs, grid=self.grid, functional=False,
                              entry="nki.benchmark")
        self.benchmark_result = BenchmarkResult(LatencyStats(res.latency_ns / 1000.0, iters), res)
        if self._owner is not None:
            self._owner.benchmark_result = self.benchmark_result
        return None

    def __getitem__(self, grid: Any) -> BenchmarkKernel:
        k = BenchmarkKernel(self.func, Kernel(self.func)[grid].grid, self.options)
        k._owner = self._owner or self
        return k


def _count(value: Any, name: str, least: int) -> int:
    """``value`` as an int of at least ``least``; a KernelError naming the caller's line."""
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise KernelError(f"nki.benchmark: {name} expected an integer >= {least}, found "
                          f"{value!r}", caller_loc())
    return value


def benchmark(func: Callable[..., Any] | None = None, *, warmup: int = 10, iters: int = 100,
              **options: Any) -> Any:
    """``@nki.benchmark(warmup=..., iters=...)``: estimate latency with a timing-only run.

    ``warmup`` (>= 0) and ``iters`` (>= 1) are the hardware loop's counts; the simulation is
    deterministic, so one run gives every iteration's latency."""
    warmup, iters = _count(warmup, "warmup", 0), _count(iters, "iters", 1)

    def wrap(f: Callable[..., Any]) -> BenchmarkKernel:
        inner = getattr(f, "func", f)
        return BenchmarkKernel(inner, getattr(f, "grid", ()),
                               dict(options, warmup=warmup, iters=iters, mode="benchmark"))
    return wrap(func) if func is not None else wrap


class ProfileKernel(Kernel):
    """A kernel whose calls run the full simulation and write a profile directory.

    Like the hardware profiler, it needs no input values: called with ``nt.tensor``
    placeholders (AWS's profiling example passes ``tensor[[250, 512], nl.float32]``), the launch
    is timing-only and returns None; with arrays it also computes and returns the outputs.
    """

    @public_entry
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # absolute now: a kernel that changes directory does not move the files
        out = Path(os.path.abspath(self.options.get("working_directory") or "."))
        try:
            # before the simulation: a bad place fails at once
            check_out_dir(out, "nki.profile working_directory")
        except OutputPlaceError as e:
            e.locate(caller_loc())
            raise
        # placeholders carry no values: profile the timing alone, as nki.benchmark does
        functional = not any(isinstance(a, TensorType) for a in (*args, *kwargs.values()))
        res = simulate_launch(self, args, kwargs, grid=self.grid, functional=functional,
                              entry="nki.profile")
        # both files or neither: an interrupted profile or a full disk leaves the previous ones
        summary = json.dumps(res.summary(), indent=2, default=str)
        try:
            write_files(out, {"summary.json": lambda tmp: tmp.write_text(summary),
                              "events.csv": lambda tmp: res.events.to_csv(tmp, index=False)})
        except OutputWriteError as e:
            e.locate(caller_loc())
            raise
        self.profile_result = res
        if not functional:
            return None
        return res.outputs[0] if len(res.outputs) == 1 else (res.outputs or None)


def profile(func: Callable[..., Any] | None = None, *, working_directory: str | None = None,
            **options: Any) -> Any:
    """``@nki.profile(working_directory=...)``: simulate and write summary.json and events.csv."""
    if working_directory is not None and not isinstance(working_directory, (str, PathLike)):
        raise KernelError(expected("nki.profile working_directory", "a path (str)",
                                   f"{type(working_directory).__name__} "
                                   f"{working_directory!r:.60}"), caller_loc())
    def wrap(f: Callable[..., Any]) -> ProfileKernel:
        inner = getattr(f, "func", f)
        return ProfileKernel(inner, getattr(f, "grid", ()),
                             dict(options, working_directory=working_directory, mode="profile"))
    return wrap(func) if func is not None else wrap
