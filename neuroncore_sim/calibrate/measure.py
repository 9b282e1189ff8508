"""Run the suite in the simulator: the metrics of each case under a config.

Each case's kernel is traced once (timing-only); the fit then re-times the same Program under
many trial configs (:class:`SuiteModel`), which costs a millisecond or so per case. The metrics
are read off the timing as the hardware tools report them (see :mod:`.suite`): neuron-profile's
duration of an instruction is its occupancy plus the latency until its results are written.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import __version__
from ..alias import install_neuronxcc_alias
from ..config import MODEL_VERSION, NeuronCoreConfig, load_config, override
from ..errors import SimulatorError
from ..program.ir import Engine, Program
from ..simulate import trace
from ..timing.cost import pipeline_latency_ns
from ..timing.engines import simulate_timing
from ..timing.events import TimingResult, is_dma_row
from .results import CalibrationError, write_rows
from .runner_source import PROFILE_PREFIX, PROFILE_UNITS
from .suite import CASES, SUITE_VERSION, Case

#: The folder of an emitted suite that holds the case files.
CASES_FOLDER = "cases"


@dataclass
class LoadedCase:
    """A case's kernel, example inputs, compile options and metrics (from its source)."""

    id: str
    kernel: Any
    inputs: list[Any]
    compile_options: dict[str, object]
    metrics: tuple[str, ...]
    #: the mechanism the case isolates (:mod:`.suite`; the registry maps it to parameters)
    mechanism: str = ""
    #: keyword arguments of the kernel (block factors of a published kernel)
    kwargs: dict[str, Any] = field(default_factory=dict)


def load_source(case_id: str, source: str, filename: str) -> LoadedCase:
    """Run a case file's source (with the ``neuronxcc`` alias) and take its parts.

    Raises:
        CalibrationError: the file does not run, or lacks ``kernel`` / ``inputs`` / METRICS.
    """
    install_neuronxcc_alias()
    space: dict[str, Any] = {"__name__": f"calibration_case_{case_id}", "__file__": filename}
    try:
        exec(compile(source, filename, "exec"), space)  # a case file is a kernel module
        if space["SUITE"] != SUITE_VERSION:
            raise CalibrationError(f"{filename}: a case of calibration suite {space['SUITE']}, "
                                   f"expected suite {SUITE_VERSION}: emit the suite again")
        inputs = list(space["inputs"]())
        return LoadedCase(case_id, space["kernel"], inputs, dict(space["COMPILE_OPTIONS"]),
                          tuple(space["METRICS"]))
    except KeyError as e:
        raise CalibrationError(f"{filename}: expected a calibration case file defining "
                               f"SUITE, kernel, inputs, COMPILE_OPTIONS and METRICS; {e} is missing"
                               ) from None
    except SimulatorError:  # (a CalibrationError above, or a kernel rule the case broke)
        raise
    except Exception as e:  # a broken case file: say which, not a traceback of ours
        raise CalibrationError(f"{filename}: the case file failed to run: "
                               f"{type(e).__name__}: {e}") from None


def load_suite_dir(folder: Path) -> list[LoadedCase]:
    """The cases of an emitted suite folder (``DIR/cases/*.py``), in name order.

    Raises:
        CalibrationError: no such folder, or no case files in it.
    """
    cases_dir = folder / CASES_FOLDER
    files = sorted(cases_dir.glob("*.py")) if cases_dir.is_dir() else []
    if not files:
        raise CalibrationError(f"{folder}: expected a suite folder written by `neuroncore-sim "
                               f"calibrate emit` (with {CASES_FOLDER}/*.py), found "
                               f"{'no case files' if folder.is_dir() else 'no such folder'}")
    return [load_source(f.stem, f.read_text(encoding="utf-8"), str(f)) for f in files]


def load_builtin(case_ids: list[str] | None = None) -> list[LoadedCase]:
    """The suite's own cases (all, or those named), from the sources emit writes.

    Raises:
        CalibrationError: an id that is not a case of this suite version.
    """
    ids = list(CASES) if case_ids is None else case_ids
    unknown = [i for i in ids if i not in CASES]
    if unknown:
        raise CalibrationError(f"expected case ids of calibration suite {SUITE_VERSION} "
                               f"({len(CASES)} cases, listed in docs/calibrate.md), found "
                               f"{', '.join(sorted(unknown))}")
    loaded = [load_source(i, CASES[i].source(), f"<calibration case {i}>") for i in ids]
    for c in loaded:
        c.mechanism = CASES[c.id].mechanism
    return loaded


def _profile_ns(event: Any, config: NeuronCoreConfig) -> float:
    """How long neuron-profile shows an instruction lasting: occupancy plus the time until its
    results are written (for a LoadStationary: until the weights are in the PE array)."""
    occupancy = event.end_ns - event.start_ns
    if event.engine == "tensor_ls":
        return occupancy + config.load_stationary_latency_ns
    return occupancy + pipeline_latency_ns(Engine(event.engine), config)


def _active_ns(timing: TimingResult, unit: str) -> float:
    """How long the profile shows ``unit`` active: an engine's summed busy time; for ``dma``
    the time some DMA queue is moving data (the union of their transfers)."""
    if unit != "dma":
        return timing.busy_ns.get(unit, 0.0)
    spans = sorted((e.start_ns, e.end_ns) for e in timing.events if is_dma_row(e.engine))
    total, reach = 0.0, -math.inf
    for start, end in spans:
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total


def profile_value(metric: str, timing: TimingResult) -> float | None:
    """The simulator's value of a neuron-profile summary row (:data:`PROFILE_PREFIX` metrics
    the emitted runner writes with ``--profile``), or None for an unknown one. HBM bytes are
    the kernel's own DMAs as compiled; the profile's counters would also hold SBUF spill
    traffic, which the suite's small kernels do not cause."""
    name = metric[len(PROFILE_PREFIX):]
    if name == "total_ns":
        return timing.latency_ns
    if name.startswith("active_ns:") and name[len("active_ns:"):] in PROFILE_UNITS:
        return _active_ns(timing, name[len("active_ns:"):])
    if name == "hbm_read_bytes":
        return float(timing.work.dma_hbm_read_bytes)
    if name == "hbm_write_bytes":
        return float(timing.work.hbm_bytes - timing.work.dma_hbm_read_bytes)
    return None


def metric_value(metric: str, timing: TimingResult, config: NeuronCoreConfig,
                 where: str) -> float:
    """One metric (``latency_ns``, ``duration_ns:OP``, ``gap_ns:OP`` or a ``profile:`` summary
    row) of a timed case.

    Raises:
        CalibrationError: an unknown metric, or an opcode the case does not run (enough of).
    """
    if metric == "latency_ns":
        return timing.latency_ns
    if metric.startswith(PROFILE_PREFIX):
        value = profile_value(metric, timing)
        if value is None:
            raise CalibrationError(f"{where}: expected a profile metric "
                                   f"{PROFILE_PREFIX}total_ns, {PROFILE_PREFIX}active_ns:UNIT "
                                   f"({', '.join(PROFILE_UNITS)}) or {PROFILE_PREFIX}hbm_read"
                                   f"_bytes / hbm_write_bytes, found {metric!r}")
        return value
    kind, _, opcode = metric.partition(":")
    events = [e for e in timing.events if e.opcode == opcode and not e.engine.startswith("dma")]
    if kind == "duration_ns" and events:
        return _profile_ns(events[0], config)
    if kind == "gap_ns" and len(events) > 1:
        return statistics.median(b.start_ns - a.start_ns - _profile_ns(a, config)
                                 for a, b in zip(events, events[1:]))
    if kind not in ("duration_ns", "gap_ns"):
        raise CalibrationError(f"{where}: expected a metric latency_ns, duration_ns:OPCODE or "
                               f"gap_ns:OPCODE, found {metric!r}")
    need = "two" if kind == "gap_ns" else "one"
    raise CalibrationError(f"{where}: metric {metric!r} needs {need} {opcode!r} "
                           f"instruction(s), found {len(events)}")


class SuiteModel:
    """The suite's cases traced once, re-timed under any config: the fit's model function."""

    def __init__(self, cases: list[LoadedCase], base: NeuronCoreConfig) -> None:
        self.cases = cases
        self.base = base
        self.programs: dict[str, Program] = {}
        self.mechanism = {c.id: c.mechanism for c in cases}
        #: case id -> neuron-profile summary metrics to evaluate besides the case's own
        self.profile_metrics: dict[str, tuple[str, ...]] = {}
        for c in cases:  # timing fields do not change what a kernel records
            self.programs[c.id] = trace(c.kernel, *c.inputs, config=self.case_config(c, base),
                                        functional=False, kernel_kwargs=c.kwargs).program

    def case_config(self, case: LoadedCase, config: NeuronCoreConfig) -> NeuronCoreConfig:
        """``config`` with the case's own compile options."""
        if not case.compile_options:
            return config
        return override(config, {"compiler": case.compile_options}, f"case {case.id}")

    def evaluate(self, config: NeuronCoreConfig) -> dict[tuple[str, str], float]:
        """(case id, metric) -> value in ns under ``config``."""
        out = {}
        for c in self.cases:
            cfg = self.case_config(c, config)
            timing = simulate_timing(self.programs[c.id], cfg)
            for m in c.metrics + self.profile_metrics.get(c.id, ()):
                out[(c.id, m)] = metric_value(m, timing, cfg, f"case {c.id}")
        return out


def measure(folder: Path, config: Any, out: Path) -> list[dict[str, object]]:
    """Run an emitted suite in the simulator under ``config``; write and return its rows."""
    cfg = load_config(config)
    cases = load_suite_dir(folder)
    values = SuiteModel(cases, cfg).evaluate(cfg)
    toolchain = f"neuroncore_sim {__version__} model {MODEL_VERSION} ({cfg.name} " \
                f"{cfg.fingerprint()})"
    by_id = {c.id: c for c in cases}
    rows = [{"case": case, "metric": metric, "value_ns": repr(value),
             "suite": SUITE_VERSION, "toolchain": toolchain,
             "compile_options": compile_flags(by_id[case].compile_options),
             "source": "simulator"} for (case, metric), value in values.items()]
    write_rows(out, rows)
    return rows


def compile_flags(options: dict[str, object]) -> str:
    """neuronx-cc flags standing for a case's compile options (what the runner passes):
    ``--disable-dge`` for ``dge: False``, ``--auto-cast=X`` for ``auto_cast: X``."""
    flags = [] if options.get("dge", True) else ["--disable-dge"]
    if "auto_cast" in options:
        flags.append(f"--auto-cast={options['auto_cast']}")
    return " ".join(flags)
