"""What a fit hands back: the TOML that ``--config`` accepts, and the printed report."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

from ..config import PRESETS, NeuronCoreConfig
from .fit import FitReport
from .results import CalibrationError
from .runner_source import PROFILE_PREFIX


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, float):  # 6 digits: far below any fit's uncertainty, and readable
        return repr(float(f"{value:.6g}"))
    return repr(value)


def config_toml(config: NeuronCoreConfig, base: str, comment: str) -> str:
    """TOML text that ``load_config`` turns back into ``config``: ``base = PRESET`` and every
    field (and compile option) that differs from the preset."""
    preset = PRESETS[base]
    lines = [f"# {line}" for line in comment.splitlines()] + [f"base = {_toml_value(base)}"]
    for f in dataclasses.fields(config):
        if f.name in ("name", "compiler"):
            continue
        value = getattr(config, f.name)
        if value != getattr(preset, f.name):
            lines.append(f"{f.name} = {_toml_value(value)}")
    options = [f"{f.name} = {_toml_value(getattr(config.compiler, f.name))}"
               for f in dataclasses.fields(config.compiler)
               if getattr(config.compiler, f.name) != getattr(preset.compiler, f.name)]
    if options:
        lines += ["", "[compiler]"] + options
    return "\n".join(lines) + "\n"


def write_toml(report: FitReport, path: Path, results: str,
               command: str = "neuroncore-sim calibrate fit") -> None:
    """Write the fitted config as TOML (fitted values with their uncertainty in comments;
    ``command`` and ``results`` say where it came from)."""
    base = report.base.name if report.base.name in PRESETS else "trn1"
    notes = [f"fitted by `{command} {results}`"]
    notes += [f"{name}: {value:.6g} +- {_pct(report.uncertainty.get(name, math.nan))}"
              for name, value in report.values.items()]
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(config_toml(report.config, base, "\n".join(notes)), encoding="utf-8")
    except OSError as e:
        raise CalibrationError(f"{path}: cannot write the fitted config: {e.strerror or e}"
                               ) from None


def _pct(relative: float) -> str:
    return "unknown (no more rows than parameters)" if math.isnan(relative) else \
        f"{relative * 100:.2g} %"


def report_text(report: FitReport) -> str:
    """The fit as text: parameters (start, fitted, uncertainty), then each row's residual and
    leave-one-out error."""
    out = [f"fit: {report.message}; {len(report.rows)} rows, {len(report.values)} parameters",
           f"{'parameter':32} {'base':>12} {'fitted':>12}  uncertainty (1 sigma)"]
    for name, value in report.values.items():
        out.append(f"{name:32} {report.start[name]:12.6g} {value:12.6g}  "
                   f"{_pct(report.uncertainty.get(name, math.nan))}")
    for name, why in report.not_fitted.items():
        out.append(f"{name:32} not fitted: {why}")
    checks = sorted({report.mechanisms[case] for case, metric in report.checks
                     if not metric.startswith(PROFILE_PREFIX)})
    if checks:
        out.append(f"rows of {', '.join(checks)} (marked 'check'): not fitted, no fitted "
                   "parameter declares them; their residuals check the model's other costs")
    if any(metric.startswith(PROFILE_PREFIX) for _, metric in report.checks):
        out.append(f"{PROFILE_PREFIX} rows (marked 'check'): neuron-profile's summary (active "
                   "ns per engine, HBM bytes), never fitted: they check the mechanisms")
    out.append("")
    width = max([26] + [len(case) for case, _ in report.rows])
    out.append(f"{'case':{width}} {'metric':30} {'measured ns':>12} {'fitted ns':>12} "
               f"{'residual':>9} {'left out':>9}")
    for (case, metric), (measured, simulated) in report.rows.items():
        loo = report.leave_one_out.get((case, metric))
        loo_text = ("check" if (case, metric) in report.checks else "not run"
                    if not report.leave_one_out else "-" if loo is None else f"{loo * 100:+.1f}%")
        out.append(f"{case:{width}} {metric:30} {measured:12.1f} {simulated:12.1f} "
                   f"{(simulated / measured - 1) * 100:+8.2f}% {loo_text:>9}")
    if report.leave_one_out:
        errors = [abs(v) for v in report.leave_one_out.values() if v is not None]
        if errors:
            out.append(f"leave-one-out: median |error| {sorted(errors)[len(errors) // 2] * 100:.1f}"
                       f" %, max {max(errors) * 100:.1f} % over {len(errors)} rows ('-': the row "
                       "alone constrains a parameter)")
    return "\n".join(out) + "\n"
