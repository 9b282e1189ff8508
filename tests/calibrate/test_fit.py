"""The fit: closed loop on the simulator (perturbed preset recovered), uncertainty, LOO."""

from __future__ import annotations

import math

import numpy as np
import pytest

from neuroncore_sim.calibrate.fit import fit
from neuroncore_sim.calibrate.lm import least_squares
from neuroncore_sim.calibrate.measure import SuiteModel, load_builtin
from neuroncore_sim.calibrate.params import PARAMETERS, with_values
from neuroncore_sim.calibrate.results import CalibrationError
from neuroncore_sim.config import TRN1

#: every registered parameter moved by 10 to 40 %, up and down
FACTORS = (1.1, 0.7, 1.4, 0.8, 1.25, 0.6, 1.35, 0.9, 1.3)


@pytest.fixture(scope="module")
def model() -> SuiteModel:
    return SuiteModel(load_builtin(), TRN1)


def _rows(values: dict) -> list[dict[str, str]]:
    return [{"case": c, "metric": m, "value_ns": repr(v), "suite": "1"}
            for (c, m), v in values.items()]


def test_every_parameter_has_a_case_that_sees_it(model: SuiteModel) -> None:
    base = model.evaluate(TRN1)
    for p in PARAMETERS:
        moved = model.evaluate(with_values(TRN1, {p.name: p.value(TRN1) * 1.2}))
        assert any(moved[k] != base[k] for k in base), p.name


def test_closed_loop_recovers_every_parameter_within_2_percent(model: SuiteModel) -> None:
    truth = {p.name: p.value(TRN1) * f for p, f in zip(PARAMETERS, FACTORS)}
    assert len(truth) == len(PARAMETERS)
    measured = model.evaluate(with_values(TRN1, truth))
    report = fit(_rows(measured), TRN1, leave_one_out=False)
    assert set(report.values) == set(truth) and not report.not_fitted
    for name, value in report.values.items():
        assert value == pytest.approx(truth[name], rel=0.02), name
        assert value != pytest.approx(TRN1.__getattribute__(name), rel=0.05), name  # it moved


def test_rows_of_one_mechanism_fit_only_its_parameters(model: SuiteModel) -> None:
    measured = model.evaluate(with_values(TRN1, {"semaphore_latency_ns": 45.0}))
    rows = [r for r in _rows(measured) if r["case"].startswith(("scalar_chain",
                                                                "profile_activation"))]
    report = fit(rows, TRN1, leave_one_out=False)
    assert list(report.values) == ["semaphore_latency_ns"]
    assert report.values["semaphore_latency_ns"] == pytest.approx(45.0, rel=1e-3)
    assert "dma_fixed_latency_ns" in report.not_fitted


def test_uncertainty_and_leave_one_out_follow_their_definitions(model: SuiteModel) -> None:
    # Noisy "measurements" of the scalar chains: the fit's sigma is s^2 (J'J)^-1's diagonal
    # and a row's leave-one-out error is the refit without it predicting it.
    measured = model.evaluate(with_values(TRN1, {"semaphore_latency_ns": 41.0}))
    noise = {"scalar_chain_4": 1.03, "scalar_chain_32": 0.98, "profile_activation": 1.05}
    rows = [{"case": c, "metric": m, "value_ns": repr(v * noise[c]), "suite": "1"}
            for (c, m), v in measured.items() if c in noise]
    report = fit(rows, TRN1, names=["semaphore_latency_ns"])
    keys = sorted(report.rows)
    cases = load_builtin(sorted(noise))
    sub = SuiteModel(cases, TRN1)

    def residuals(x, use):
        sim = sub.evaluate(with_values(TRN1, {"semaphore_latency_ns": math.exp(x[0])}))
        return np.array([math.log(sim[k] / report.rows[k][0]) for k in use])

    x = np.array([math.log(report.values["semaphore_latency_ns"])])
    h = 1e-6
    J = ((residuals(x + h, keys) - residuals(x, keys)) / h)[:, None]
    r = residuals(x, keys)
    sigma = math.sqrt(float(r @ r) / (len(keys) - 1) / float((J.T @ J)[0, 0]))
    assert report.uncertainty["semaphore_latency_ns"] == pytest.approx(sigma, rel=1e-3)
    assert sigma > 0
    held = keys[0]
    rest = keys[1:]
    sol = least_squares(lambda v: residuals(v, rest), x, np.log([1.0]), np.log([1000.0]))
    expect = math.expm1(float(residuals(sol.x, [held])[0]))
    assert report.leave_one_out[held] == pytest.approx(expect, rel=1e-3, abs=1e-6)
    assert all(v is not None for v in report.leave_one_out.values())


@pytest.mark.parametrize("rows, expected", [
    ([{"case": "no_such_case", "metric": "latency_ns", "value_ns": "10", "suite": "1"}],
     "no_such_case"),
    ([{"case": "dma_copy_1", "metric": "latency_ns", "value_ns": "10", "suite": "0"}],
     "suite 0"),
    ([{"case": "dma_copy_1", "metric": "duration_ns:activation", "value_ns": "10",
       "suite": "1"}], "dma_copy_1 duration_ns:activation"),
])
def test_bad_rows_are_refused_with_what_was_expected(rows, expected) -> None:
    with pytest.raises(CalibrationError, match="expected") as info:
        fit(rows, TRN1)
    assert expected in str(info.value)


def test_an_unknown_parameter_name_is_refused() -> None:
    rows = [{"case": "dma_copy_1", "metric": "latency_ns", "value_ns": "2700", "suite": "1"}]
    with pytest.raises(CalibrationError, match="calibrated parameter.*'dma_speed'"):
        fit(rows, TRN1, names=["dma_speed"])


def test_rows_that_constrain_no_asked_parameter_are_refused() -> None:
    rows = [{"case": "dma_copy_1", "metric": "latency_ns", "value_ns": "2700", "suite": "1"}]
    with pytest.raises(CalibrationError, match="constrain none"):
        fit(rows, TRN1, names=["tensor_pipeline_latency_ns"])


def test_check_rows_show_residuals_but_leave_the_uncertainty_alone(model: SuiteModel) -> None:
    measured = model.evaluate(with_values(TRN1, {"semaphore_latency_ns": 41.0}))
    noise = {"scalar_chain_4": 1.03, "scalar_chain_32": 0.98, "profile_activation": 1.05}
    rows = [{"case": c, "metric": m, "value_ns": repr(v * noise[c]), "suite": "1"}
            for (c, m), v in measured.items() if c in noise]
    check = {"case": "vector_chain_16x512", "metric": "latency_ns", "suite": "1",
             "value_ns": repr(measured[("vector_chain_16x512", "latency_ns")] * 1.5)}
    alone = fit(rows, TRN1, leave_one_out=False)
    both = fit(rows + [check], TRN1, leave_one_out=False)
    assert both.values == pytest.approx(alone.values, rel=1e-9)
    assert both.uncertainty == pytest.approx(alone.uncertainty, rel=1e-9)
    key = ("vector_chain_16x512", "latency_ns")
    assert both.checks == {key} and key not in both.leave_one_out
    assert both.rows[key] == (float(check["value_ns"]),
                              pytest.approx(model.evaluate(both.config)[key]))


def test_a_published_kernel_beside_the_suite_fits_its_mechanism() -> None:
    # an outside case (as a published whole kernel would be): its own kernel, inputs and
    # compile options (DGE on), declared with its mechanism
    import neuroncore_sim.nki.language as nl
    from neuroncore_sim.calibrate.measure import LoadedCase

    def copy_kernel(src, ROWS=128):
        out = nl.ndarray(src.shape, dtype=src.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.load(src[0:ROWS, :]))
        return out

    case = LoadedCase("published_copy", copy_kernel, [np.zeros((128, 4096), np.float32)],
                      {"dge": True}, ("latency_ns",), mechanism="dge", kwargs={"ROWS": 128})
    truth = with_values(TRN1, {"dge_ns_per_element": 3.2})
    measured = SuiteModel([case], TRN1).evaluate(truth)
    rows = _rows(measured)
    report = fit(rows, TRN1, extra=[case], leave_one_out=False)
    assert list(report.values) == ["dge_ns_per_element"]
    assert report.values["dge_ns_per_element"] == pytest.approx(3.2, rel=1e-3)
    assert report.mechanisms == {"published_copy": "dge"}
    with pytest.raises(CalibrationError, match="published_copy"):
        fit(rows, TRN1)  # without the case it is not a suite case
