"""Fit the registry's parameters to a results file: values, uncertainties, residuals, LOO.

Only the rows of the mechanisms the registry declares for the fitted parameters are fitted;
the rest are check rows (their residuals are reported), and so are the neuron-profile summary
rows of the runner's ``--profile`` (``profile:`` metrics: engine active times, HBM bytes). The residual of a (case, metric) row
is ``log(simulated / measured)``: relative errors, so a
2 us kernel and a 60 ns instruction weigh alike. The fit runs in the log of each parameter (a
rate and a latency move on the same footing, and bounds stay positive) with :mod:`.lm`.

Uncertainty: the covariance ``s^2 (J'J)^-1`` of the log-parameters at the solution, with
``s^2`` the residual variance (sum of squares over the rows some fitted parameter moves, over
their count minus the fitted parameters); a parameter's
one-sigma relative uncertainty is the square root of its diagonal entry. With no more rows than
parameters it is not known (shown as such).

Leave-one-out: each row is dropped in turn, the parameters refitted from the fit's values, and
the dropped row predicted: its error is what a case the fit has not seen can expect. A row that
alone constrains a parameter has no leave-one-out error (the parameter would be free).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..config import NeuronCoreConfig, load_config
from .lm import least_squares
from .measure import LoadedCase, SuiteModel, load_builtin
from .params import PARAMETERS, Parameter, parameter, with_values
from .results import CalibrationError, averaged
from .runner_source import PROFILE_PREFIX
from .suite import SUITE_VERSION

#: A parameter whose column of the Jacobian is smaller than this is not seen by the rows.
_UNSEEN = 1e-9


@dataclass
class FitReport:
    """What :func:`fit` found."""

    base: NeuronCoreConfig
    config: NeuronCoreConfig
    values: dict[str, float]
    #: one-sigma relative uncertainty per fitted parameter (nan: not enough rows)
    uncertainty: dict[str, float]
    start: dict[str, float]
    #: parameters left at the base value, with the reason
    not_fitted: dict[str, str]
    #: (case, metric) -> (measured, simulated after the fit)
    rows: dict[tuple[str, str], tuple[float, float]]
    #: (case, metric) -> relative error of the row when left out of the fit (None: cannot)
    leave_one_out: dict[tuple[str, str], float | None] = field(default_factory=dict)
    #: rows of mechanisms no fitted parameter declares: shown, not fitted
    checks: set[tuple[str, str]] = field(default_factory=set)
    #: case id -> its mechanism
    mechanisms: dict[str, str] = field(default_factory=dict)
    message: str = ""


class _Problem:
    """The residual function of one fit: rows, model, which parameters move."""

    def __init__(self, model: SuiteModel, measured: dict[tuple[str, str], float],
                 params: list[Parameter]) -> None:
        self.model, self.measured, self.params = model, measured, params
        self._seen: dict[tuple[float, ...], dict[tuple[str, str], float]] = {}
        # only the rows of the mechanisms the registry declares for the fitted parameters:
        # a check row (a VectorE chain also waits on semaphores) must not pull a parameter
        mechanisms = {m for p in params for m in p.mechanisms}
        # neuron-profile summary rows (engine active times, HBM bytes) check mechanisms: the
        # parameters are fitted on the latencies and durations alone
        self.keys = sorted(k for k in measured if model.mechanism[k[0]] in mechanisms
                           and not k[1].startswith(PROFILE_PREFIX))

    def config(self, x: np.ndarray) -> NeuronCoreConfig:
        return with_values(self.model.base, {p.name: float(math.exp(v))
                                             for p, v in zip(self.params, x)})

    def values(self, x: np.ndarray) -> dict[tuple[str, str], float]:
        """The suite's values at ``x``, remembered: the leave-one-out refits start from the
        fit's point and its Jacobian, whole re-timings each (seconds for large kernels)."""
        key = tuple(float(v) for v in x)
        if key not in self._seen:
            self._seen[key] = self.model.evaluate(self.config(x))
        return self._seen[key]

    def residuals(self, x: np.ndarray, keys: list[tuple[str, str]] | None = None) -> np.ndarray:
        values = self.values(x)
        return np.array([math.log(values[k] / self.measured[k]) for k in (keys or self.keys)])


def _choose(mechanisms: set[str], names: list[str] | None
            ) -> tuple[list[Parameter], dict[str, str]]:
    """The parameters the rows' mechanisms constrain (of those asked for), and why the others
    are left."""
    asked = [parameter(n) for n in names] if names else list(PARAMETERS)
    chosen = [p for p in asked if mechanisms & set(p.mechanisms)]
    skipped = {p.name: f"no rows of its mechanisms ({', '.join(p.mechanisms)})"
               for p in asked if p not in chosen}
    return chosen, skipped


def fit(rows: list[dict[str, str]], base: Any = None, names: list[str] | None = None,
        leave_one_out: bool = True, extra: list[LoadedCase] | None = None) -> FitReport:
    """Fit the registry's parameters (or those named) to results rows, from ``base``'s values.

    ``extra``: cases besides the suite's that rows may name (a whole published kernel, with
    its mechanism), e.g. the SDK 2.20 matmul ladder of scripts/calibrate_trn1.py.

    Raises:
        CalibrationError: rows of another suite version or of unknown cases, or no parameter
            constrained by the rows.
    """
    other = sorted({r.get("suite") or SUITE_VERSION for r in rows} - {SUITE_VERSION})
    if other:
        raise CalibrationError(f"expected results of calibration suite {SUITE_VERSION}, found "
                               f"suite {', '.join(other)}: re-run the runner of a fresh "
                               "`neuroncore-sim calibrate emit`")
    cfg = load_config(base)
    measured = averaged(rows)
    others = {c.id: c for c in extra or []}
    loaded = load_builtin(sorted({case for case, _ in measured} - set(others)))
    loaded += [others[case] for case in sorted({case for case, _ in measured} & set(others))]
    ids = {c.id for c in loaded}
    known = {(c.id, m) for c in loaded for m in c.metrics}
    unknown = sorted(k for k in measured if k not in known
                     and not (k[0] in ids and k[1].startswith(PROFILE_PREFIX)))
    if unknown:
        raise CalibrationError(f"expected metrics the suite's cases define, found "
                               f"{', '.join(f'{c} {m}' for c, m in unknown)}")
    params, skipped = _choose({c.mechanism for c in loaded}, names)
    if not params:
        raise CalibrationError("the results constrain none of the parameters asked for: "
                               + "; ".join(f"{n}: {why}" for n, why in skipped.items()))
    model = SuiteModel(loaded, cfg)
    for case, metric in measured:
        if metric.startswith(PROFILE_PREFIX):
            model.profile_metrics[case] = model.profile_metrics.get(case, ()) + (metric,)
    problem = _Problem(model, measured, params)
    start = {p.name: p.value(cfg) for p in params}
    lo = np.log([p.lo for p in params])
    hi = np.log([p.hi for p in params])
    x0 = np.clip(np.log([start[p.name] for p in params]), lo, hi)
    sol = least_squares(problem.residuals, x0, lo, hi)
    seen = np.abs(sol.jacobian).max(axis=0) > _UNSEEN
    for p, ok in zip(params, seen):
        if not ok:
            skipped[p.name] = "the rows do not depend on it (not on any critical path)"
    values = {p.name: float(math.exp(v)) for p, v in zip(params, sol.x)}
    fitted = dict(values)
    for p, ok in zip(params, seen):
        if not ok:
            fitted.pop(p.name)
    final = with_values(cfg, fitted)
    # every parameter seen: the final config is the solver's last point, already timed
    simulated = problem.values(sol.x) if seen.all() else problem.model.evaluate(final)
    report = FitReport(cfg, final, fitted, _uncertainty(sol.jacobian[:, seen], sol.residuals,
                                                        [p.name for p, ok in zip(params, seen)
                                                         if ok]),
                       start, skipped, {k: (measured[k], simulated[k]) for k in sorted(measured)},
                       message=sol.message,
                       checks={k for k in measured if k not in problem.keys},
                       mechanisms=dict(problem.model.mechanism))
    if leave_one_out:
        report.leave_one_out = _leave_one_out(problem, sol.x, lo, hi, sol.jacobian)
    return report


def _uncertainty(J: np.ndarray, r: np.ndarray, names: list[str]) -> dict[str, float]:
    # rows no fitted parameter moves (the check cases) say nothing about the parameters:
    # their residuals stay out of s^2
    informative = np.abs(J).max(axis=1, initial=0.0) > _UNSEEN
    J, r = J[informative], r[informative]
    m, n = J.shape
    if m <= n or n == 0:
        return {name: math.nan for name in names}
    s2 = float(r @ r) / (m - n)
    cov = s2 * np.linalg.pinv(J.T @ J)
    return {name: float(math.sqrt(max(cov[i, i], 0.0))) for i, name in enumerate(names)}


def _leave_one_out(problem: _Problem, x: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                   J: np.ndarray) -> dict[tuple[str, str], float | None]:
    out: dict[tuple[str, str], float | None] = {}
    for i, key in enumerate(problem.keys):
        kept = [k for k in problem.keys if k != key]
        rest = np.delete(J, i, axis=0)
        # a parameter only this row sees would be free without it: no prediction
        if not kept or np.any((np.abs(J).max(axis=0) > _UNSEEN)
                              & (np.abs(rest).max(axis=0, initial=0.0) <= _UNSEEN)):
            out[key] = None
            continue
        sol = least_squares(lambda v: problem.residuals(v, kept), x, lo, hi)
        out[key] = math.expm1(float(problem.residuals(sol.x, [key])[0]))
    return out
