"""The launches a :func:`neuroncore_sim.simulate.record_launches` block collects, and which of
them are the same launch.

A script's benchmark loop launches one kernel with the same arguments many times. Identical
launches give the same Program, so the same timing: with ``reuse_timing`` on (``neuroncore-sim
run`` turns it on), a launch identical to one already timed reuses that timing, and the report
shows the two as one distinct launch with a count. Two launches are identical when they have
the same :func:`launch_key`: the same kernel function (the same object), the same shapes and
dtypes of the array arguments, the same other (constant) arguments, grid, hardware config,
values mode and entry point. Values are never reused: a functional launch still computes its own outputs (they
depend on its inputs), and its timing is reused only when its recorded Program is the same as
the first one's (:func:`program_fingerprint`; a program whose runtime DMA offsets came from the
input values may differ). A timing-only launch records nothing that depends on values, so an
identical one reuses the whole result without tracing again.

``max_distinct`` caps how many distinct launches are profiled: a launch beyond it still runs
(its values, when the block computes them, as the script needs them) but is not timed or
collected; ``skipped`` counts those.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from .config import NeuronCoreConfig
from .program.ir import Program
from .result import SimResult
from .timing.events import TimingResult

#: Constant argument types compared by value; anything else is compared by identity.
_VALUE_TYPES = (bool, int, float, complex, str, bytes, type(None))


def launch_key(kernel: Any, args: tuple, kwargs: dict, grid: Any, cfg: NeuronCoreConfig,
               functional: Any, entry: str) -> tuple:
    """What makes two launches the same (see the module docstring); launches through two entry
    points (``nki.jit`` and ``nki.simulate_kernel``) are told apart, as reports name it. Arrays (anything with a
    ``shape`` and a ``dtype``: numpy, torch, jax) count by shape and dtype, plain values by
    value, other objects by identity (the key holds them, so an identity is never reused)."""
    fn = getattr(kernel, "func", kernel)
    return (fn, _arg_key(args), tuple(sorted((k, _arg_key(v)) for k, v in kwargs.items())),
            _arg_key(grid if grid != () else getattr(kernel, "grid", ())), repr(cfg),
            functional, entry)


def _arg_key(value: Any) -> Any:
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return ("array", tuple(value.shape), str(value.dtype))
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, tuple(_arg_key(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple(sorted((str(k), _arg_key(v)) for k, v in value.items())))
    if isinstance(value, _VALUE_TYPES):
        return (type(value).__name__, value)
    return _Same(value)


class _Same:
    """An argument compared by identity (its own equality may be costly, or not a bool); it
    holds the object, so the id is never reused while a key lives."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Same) and other.value is self.value

    def __hash__(self) -> int:
        return id(self.value)


def program_fingerprint(program: Program) -> int:
    """A hash of a launch's recorded instructions: opcode, engine, kernel line and every
    operand's tensor, offset and pattern (what the timing model reads)."""
    parts = []
    for ins in program.instructions:
        accesses = tuple((a.tensor.name, a.offset, a.pattern)
                         for group in (ins.dsts, ins.srcs)
                         for a in (group.values() if isinstance(group, dict) else group)
                         if a is not None)
        parts.append(hash((ins.opcode, ins.engine, str(ins.loc), accesses)))
    return hash((program.grid, len(parts), tuple(parts)))


@dataclass
class LaunchRecorder:
    """Kernel launches made inside ``record_launches``, and how to run them.

    Attributes:
        config, functional, progress: the block's defaults for its launches.
        results: the collected launches, in order (identical ones each appear).
        reuse_timing: time identical launches once (see the module docstring).
        max_distinct: profile at most this many distinct launches (None: all).
        skipped: launches that ran past ``max_distinct`` without being profiled.
    """

    config: Any = None
    functional: bool = True
    progress: Any = False
    results: list[SimResult] = field(default_factory=list)
    reuse_timing: bool = False
    max_distinct: int | None = None
    skipped: int = 0
    _first: dict[tuple, SimResult] = field(default_factory=dict, repr=False)
    _prints: dict[int, int] = field(default_factory=dict, repr=False)  # id(program) -> hash
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __iter__(self) -> Any:
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)

    def __getitem__(self, i: int) -> SimResult:
        return self.results[i]

    @property
    def keeps_keys(self) -> bool:
        """Whether launches are told apart by :func:`launch_key` in this block."""
        return self.reuse_timing or self.max_distinct is not None

    def earlier(self, key: tuple) -> SimResult | None:
        """The first launch timed with this key, if any (None without ``reuse_timing``)."""
        if not self.reuse_timing:
            return None
        with self._lock:
            return self._first.get(key)

    def timing_for(self, key: tuple, program: Program) -> tuple[TimingResult | None, tuple]:
        """The timing of the first launch with ``key`` when ``program`` is the same as its
        (None: time it), and the key the new launch goes by (``key``, or one of its own when
        its program differs)."""
        first = self.earlier(key)
        if first is None:
            return None, key
        if self._fingerprint(first.program) == self._fingerprint(program):
            return first.timing, key
        return None, key + (self._fingerprint(program),)

    def _fingerprint(self, program: Program) -> int:
        found = self._prints.get(id(program))  # the programs of _first stay alive: ids hold
        if found is None:
            found = program_fingerprint(program)
            if any(r.program is program for r in self._first.values()):
                self._prints[id(program)] = found
        return found

    def profiles(self, key: tuple) -> bool:
        """Whether a launch with this key is profiled: a key seen before, or one more distinct
        launch within ``max_distinct``. A launch that is not is counted in ``skipped``."""
        with self._lock:
            if self.max_distinct is None or key in self._first or \
                    len(self._first) < self.max_distinct:
                return True
            self.skipped += 1
            return False

    def collect(self, result: SimResult) -> None:
        """Add a profiled launch; the first of its key is the one later ones reuse."""
        with self._lock:
            if result.launch_key is not None:
                self._first.setdefault(result.launch_key, result)
        self.results.append(result)
