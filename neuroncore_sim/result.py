"""What one simulated kernel launch gives back: :class:`SimResult`.

It bundles the recorded program, the output values (filled by the caller) and the timing, and
offers the user-facing views: ``latency_ns``, the ``events`` DataFrame and ``summary()``. pandas
is imported only inside :attr:`SimResult.events`, so the core loads without it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .timing import analysis, bounds, critical_path, mechanisms, memory_use
from . import error_band
from .config import NeuronCoreConfig
from .errors import UnsupportedError
from .timing.events import COMPUTE_ROWS, TENSOR_LS_ROW, TimingResult, is_dma_row
from .program.ir import DMA_OPCODES, Program

if TYPE_CHECKING:
    import pandas as pd

#: Columns of :attr:`SimResult.events`, in order.
EVENT_COLUMNS = ("instr_id", "engine", "opcode", "start_ns", "end_ns", "duration_ns", "nbytes",
                 "waited_on", "source", "instance")


@dataclass(frozen=True, slots=True)
class SimResult:
    """The result of simulating one kernel launch.

    Attributes:
        program: the recorded instruction stream.
        outputs: the kernel's output arrays (empty for a timing-only run).
        config: the hardware it was timed on.
        timing: the timing model's result, or None when timing was not run.
        entry: the entry point that made the launch ("neuroncore_sim.simulate", "nki.jit",
            "nki.baremetal", "nki.simulate_kernel", "nki.benchmark", "nki.profile").
        kernel_loc: the kernel's ``def`` line ("file.py:LINE"), when known.
        launch_key: inside a ``record_launches`` block that tells launches apart, what makes
            this launch the same as another (:func:`neuroncore_sim.launches.launch_key`);
            launches with equal keys share one timing. None elsewhere.
    """

    program: Program
    outputs: tuple[Any, ...]
    config: NeuronCoreConfig
    timing: TimingResult | None
    entry: str = "neuroncore_sim.simulate"
    kernel_loc: str | None = None
    launch_key: Any = field(default=None, repr=False, compare=False)

    def _timing(self) -> TimingResult:
        if self.timing is None:
            raise UnsupportedError(self._untimed_message(), self.kernel_loc)
        return self.timing

    def _untimed_message(self) -> str:
        """Why this launch has no timing, and how to get it."""
        if self.entry == "neuroncore_sim.simulate":
            how = "was simulated with neuroncore_sim.simulate(..., timing=False)"
        else:
            how = (f"was launched through {self.entry}, which computes values only "
                   "(timing=False) to stay fast outside `neuroncore-sim run`")
        return (f"kernel {self.program.name}: this launch {how}; expected a timing result, "
                "found none. To time it, call neuroncore_sim.simulate(kernel, *args) (timing=True is the default), "
                "or run the script with `neuroncore-sim run SCRIPT.py`, which times every "
                "launch")

    @property
    def latency_ns(self) -> float:
        """Estimated device time of the whole launch, in nanoseconds."""
        return self._timing().latency_ns

    @property
    def events(self) -> "pd.DataFrame":
        """One row per executed instruction stage / DMA transfer, ordered by start time, with
        columns :data:`EVENT_COLUMNS`."""
        import pandas as pd

        rows = [(e.instr_id, e.engine, e.opcode, e.start_ns, e.end_ns, e.end_ns - e.start_ns,
                 e.nbytes, e.waited_on, e.source, e.instance) for e in self._timing().events]
        return pd.DataFrame(rows, columns=list(EVENT_COLUMNS))

    def summary(self) -> dict[str, Any]:
        """Headline numbers of the launch (JSON-ready; docs/reports.md lists every field).

        Returns:
            dict with ``latency_ns``, ``latency_tensor_cycles`` (latency at the TensorE clock),
            ``busy_ns`` and ``busy_percent`` per engine row (compute rows, "tensor_ls", and
            "dma" = the DMA engines' summed busy time over their count), ``instructions`` per
            engine, ``dma_transfers``, ``dma_bytes``, ``dma_bytes_per_ns``; the roofline bound
            (``roofline_ns``, ``roofline_limit``, ``roofline_terms_ns``,
            ``latency_over_roofline``, ``roofline_percent``); ``matmul_flops``,
            ``achieved_tflops``, ``mfu_percent``; ``dma_queue_busy_percent`` versus
            ``dma_bandwidth_percent_of_peak`` (and ``dma_peak_bytes_per_ns``), ``hbm_bytes``,
            ``hbm_bytes_per_ns``, ``hbm_bandwidth_percent_of_peak``, ``hbm_peak_bytes_per_ns``;
            ``bottleneck`` (the busiest of tensor/vector/scalar/gpsimd/dma, or "latency" when
            none is busy more than half the time) with ``bottleneck_evidence``;
            ``latency_band`` (the likely range of the latency from the validation errors of
            kernels with the same kind of bottleneck, :mod:`neuroncore_sim.error_band`; None
            when no band table is shipped); ``top_stalls``,
            ``critical_path`` (the chain of events and waits that sets the latency: time per
            engine, top opcodes, lines and stalls with their root causes), Neuron Explorer's
            bounds under its names (``memory_bound``, ``memory_bound_ideal``,
            ``memory_bound_ideal_no_reloads``, ``compute_bound``, ``compute_bound_ideal_flops``,
            ``compute_bound_ideal_useful_flops``, ``perfect_pipeline``, ``bn_speedup`` of each,
            ``engine_active_ns``: :mod:`neuroncore_sim.timing.bounds`), ``trust`` (the
            modelled mechanisms that dominate the critical path and those only approximated:
            :mod:`neuroncore_sim.timing.mechanisms`) and ``memory`` (peak SBUF/PSUM bytes per
            partition). Definitions: see
            :mod:`neuroncore_sim.timing.analysis` and :mod:`neuroncore_sim.timing.memory_use`.
        """
        t = self._timing()
        cfg = self.config
        latency = t.latency_ns
        busy = {row: t.busy_ns.get(row, 0.0) for row in COMPUTE_ROWS + (TENSOR_LS_ROW,)}
        busy["dma"] = t.dma_busy_ns / cfg.dma_engines
        pct = {row: (100.0 * v / latency if latency > 0 else 0.0) for row, v in busy.items()}
        counts: dict[str, int] = {}
        for ins in self.program.instructions:
            row = "dma" if ins.opcode in DMA_OPCODES else ins.engine.value
            counts[row] = counts.get(row, 0) + 1
        use = analysis.utilisation(t, cfg, pct["dma"])
        stalls = analysis.top_stalls(self.program, t)
        verdict, evidence = analysis.bottleneck(pct, stalls, use["dma_bandwidth_percent_of_peak"])
        path = critical_path.critical_path(t)
        return {
            "latency_ns": latency,
            "latency_tensor_cycles": latency * cfg.tensor_clock_hz / 1e9,
            "busy_ns": busy,
            "busy_percent": pct,
            "instructions": counts,
            "dma_transfers": sum(1 for e in t.events if is_dma_row(e.engine)),
            "dma_bytes": t.work.dma_bytes,
            "dma_bytes_per_ns": t.work.dma_bytes / latency if latency > 0 else 0.0,
            **analysis.roofline(t, cfg),
            **use,
            "bottleneck": verdict,
            "bottleneck_evidence": evidence,
            "latency_band": error_band.band_for(verdict, latency),
            "top_stalls": stalls,
            "critical_path": critical_path.summary(path),
            "trust": mechanisms.summary(path, self.program.instructions),
            **bounds.aws_bounds(self.program, t, cfg),
            "memory": memory_use.memory_summary(self.program, t, cfg),
        }
