"""The calibrated parameters: one declared registry.

Each entry names a field of :class:`~neuroncore_sim.config.NeuronCoreConfig`, the physical
bounds the fit keeps it in, and the mechanisms (:mod:`.suite` case groups) whose cases constrain
it. A parameter none of whose cases is in a results file is not fitted (it keeps the base
config's value, and the fit says so). A new global parameter of the model is one more entry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..config import NeuronCoreConfig, override


@dataclass(frozen=True)
class Parameter:
    """One calibratable config field.

    Attributes:
        name: the config field (floats only: the fit is continuous).
        lo, hi: bounds of the fit, in the field's unit (past them it is not this hardware).
        mechanisms: the suite's mechanisms whose cases constrain it.
        doc: what it stands for, one line.
        read: how to read its value from a config (default: the field itself).
    """

    name: str
    lo: float
    hi: float
    mechanisms: tuple[str, ...]
    doc: str
    read: Callable[[NeuronCoreConfig], float] | None = None

    def value(self, config: NeuronCoreConfig) -> float:
        """This parameter's value in ``config``."""
        return float(self.read(config) if self.read is not None else getattr(config, self.name))


PARAMETERS: tuple[Parameter, ...] = (
    Parameter("dma_fixed_latency_ns", 50.0, 20000.0, ("dma",),
              "time from a DMA's trigger to its first byte moving"),
    Parameter("dma_hbm_write_bytes_per_ns", 1.0, 200.0, ("dma",),
              "bytes per ns one DMA engine writes to HBM (the suite's stores)"),
    Parameter("dma_buffer_overhead_ns", 0.1, 2000.0, ("dma",),
              "fixed time per DMA buffer (descriptor) on its engine"),
    Parameter("dge_ns_per_element", 0.01, 100.0, ("dge",),
              "software DGE's time per descriptor element (DMAs of kernel I/O with DGE on)"),
    Parameter("semaphore_latency_ns", 1.0, 1000.0, ("dependency",),
              "semaphore wait between an instruction's end and a dependent one's start"),
    Parameter("tensor_pipeline_latency_ns", 5.0, 2000.0, ("tensor",),
              "TensorE: from an instruction's end until its results are in PSUM"),
    Parameter("load_stationary_latency_ns", 1.0, 2000.0, ("load_stationary",),
              "TensorE: from a LoadStationary's start until the weights sit in the PE array"),
)

_BY_NAME = {p.name: p for p in PARAMETERS}


def parameter(name: str) -> Parameter:
    """The registry entry of ``name``.

    Raises:
        CalibrationError: not a calibrated parameter.
    """
    from .results import CalibrationError
    try:
        return _BY_NAME[name]
    except KeyError:
        raise CalibrationError(f"expected a calibrated parameter ({', '.join(_BY_NAME)}), "
                               f"found {name!r}") from None


def with_values(config: NeuronCoreConfig, values: dict[str, float]) -> NeuronCoreConfig:
    """``config`` with the named parameters set (checked like any config override)."""
    return override(config, dict(values), "calibrate")
