"""nki.benchmark / nki.profile on the simulator, and timing independent of values."""

from __future__ import annotations

import json

import numpy as np
import pytest

import neuroncore_sim as ncs
import neuroncore_sim.nki.language as nl
import neuroncore_sim.nki.typing as nt
from neuroncore_sim import nki
from neuroncore_sim.errors import SimulatorError


def add(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(a.shape[0] // 128):
        rows = slice(i * 128, (i + 1) * 128)
        nl.store(out[rows], value=nl.load(a[rows]) + nl.exp(nl.load(b[rows])))
    return out


def test_benchmark_reports_the_timing_only_estimate_in_microseconds():
    bench = nki.benchmark(warmup=2, iters=5)(add)
    spec = nt.tensor[[512, 256], nl.float32]
    assert bench(spec, spec) is None
    p50 = bench.benchmark_result.nc_latency.get_latency_percentile(50)
    expected = ncs.simulate(add, spec, spec, functional=False).latency_ns / 1000
    assert p50 == pytest.approx(expected) and p50 > 0
    assert bench.benchmark_result.nc_latency.get_latency_percentile(99) == p50
    with pytest.raises(SimulatorError, match="expected one of"):
        bench.benchmark_result.nc_latency.get_latency_percentile(42)


def test_benchmark_does_not_depend_on_input_values():
    bench = nki.benchmark(add)
    a = np.random.default_rng(0).random((512, 256), dtype=np.float32)
    bench(a, a)
    with_values = bench.benchmark_result.nc_latency.get_latency_percentile(50)
    bench(nt.tensor[[512, 256], nl.float32], nt.tensor[[512, 256], nl.float32])
    assert bench.benchmark_result.nc_latency.get_latency_percentile(50) == with_values


def test_timing_only_run_gives_the_same_events_as_a_full_run():
    a = np.random.default_rng(1).random((384, 128), dtype=np.float32)
    full = ncs.simulate(add, a, a)
    timing_only = ncs.simulate(add, a, a, functional=False)
    assert full.latency_ns == timing_only.latency_ns
    assert full.events.equals(timing_only.events)
    assert timing_only.outputs == (None,)


def test_profile_writes_summary_and_events(tmp_path):
    prof = nki.profile(working_directory=str(tmp_path))(add)
    a = np.ones((128, 64), np.float32)
    out = prof(a, a)
    np.testing.assert_allclose(out, 1 + np.e, rtol=1e-6)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["latency_ns"] > 0
    assert (tmp_path / "events.csv").read_text().startswith("instr_id")


def test_profile_of_placeholders_is_timing_only(tmp_path):
    """The profiler needs no values (AWS's profiling example passes nt.tensor placeholders):
    such a call is timed, writes its files and returns None; its latency is that of the same
    launch with arrays."""
    prof = nki.profile(working_directory=str(tmp_path))(add)
    spec = nt.tensor[[256, 64], nl.float32]
    assert prof(spec, spec) is None
    summary = json.loads((tmp_path / "summary.json").read_text())
    a = np.ones((256, 64), np.float32)
    assert summary["latency_ns"] == ncs.simulate(add, a, a).latency_ns > 0
    assert prof.profile_result.outputs == (None,)


def test_record_launches_times_every_jit_call():
    kernel = nki.jit(add)
    a = np.ones((128, 64), np.float32)
    with ncs.record_launches() as launches:
        kernel(a, a)
        kernel[1](a, a)
    assert len(launches) == 2 and all(r.latency_ns > 0 for r in launches)


def test_same_launch_is_deterministic():
    a = np.random.default_rng(2).random((256, 512), dtype=np.float32)
    one, two = ncs.simulate(add, a, a), ncs.simulate(add, a, a)
    assert one.events.equals(two.events)


def test_record_launches_applies_config_and_timing_only(tmp_path):
    toml = tmp_path / "slow_dma.toml"
    toml.write_text("dma_engine_bytes_per_ns = 1.0\ndma_hbm_read_bytes_per_ns = 1.0\n")
    kernel = nki.jit(add)
    a = np.ones((256, 512), np.float32)
    with ncs.record_launches() as fast:
        kernel(a, a)
    with ncs.record_launches(config=str(toml), functional=False) as slow:
        assert kernel(a, a) is None
    assert slow[0].latency_ns > 5 * fast[0].latency_ns


def _scaled(x, a=1.0, b=10.0):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.add(nl.multiply(nl.load(x), a), b))
    return out


@pytest.mark.parametrize("kwargs, want", [({}, 11.0), ({"b": 0.0}, 1.0), ({"a": 3.0}, 13.0),
                                          ({"b": 2.0, "a": 2.0}, 4.0)])
def test_keyword_arguments_keep_their_names_when_a_default_is_skipped(kwargs, want):
    """Regression: ``b=`` alone used to be passed positionally, landing in ``a``."""
    x = np.ones((128, 4), np.float32)
    assert (ncs.simulate(_scaled, x, timing=False, **kwargs).outputs[0] == want).all()


def test_keyword_after_a_defaulted_parameter_keeps_its_name():
    """kernel(x, cols=2, boom=False, tag="") called with tag= only: tag must not land in boom."""
    seen = {}

    def kernel(x, cols=2, boom=False, tag=""):
        seen.update(cols=cols, boom=boom, tag=tag)
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.load(x))
        return out

    ncs.simulate(kernel, np.zeros((128, 4), np.float32), tag="t", functional=False)
    assert seen == {"cols": 2, "boom": False, "tag": "t"}
    ncs.simulate(kernel, np.zeros((128, 4), np.float32), 3, tag="u", functional=False)
    assert seen == {"cols": 3, "boom": False, "tag": "u"}


def test_outputs_are_handed_over_and_repeats_are_independent_copies():
    """Results are the launch's own storage (no copy at the end), and a tensor returned twice
    gives two arrays that do not share memory."""
    def kernel(a):
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.add(nl.load(a), 1.0))
        return out, out

    a = np.arange(8 * 16, dtype=np.float32).reshape(8, 16)
    first, second = ncs.simulate(kernel, a, timing=False).outputs
    np.testing.assert_array_equal(first, a + 1)
    np.testing.assert_array_equal(second, a + 1)
    assert not np.shares_memory(first, second) and not np.shares_memory(first, a)
    first[0, 0] = -5
    assert second[0, 0] == 1


def test_simulate_pauses_the_garbage_collector_and_restores_it():
    """Tracing and timing run with Python's cyclic GC paused (simulate._gc_paused); it is on
    again afterwards, also after a kernel error, and stays off if the caller had turned it off."""
    import gc

    seen = []

    def k(a, b):
        seen.append(gc.isenabled())
        return add(a, b)

    def broken(a):
        return nl.exp(a)  # an HBM operand: a KernelError

    spec = nt.tensor[[256, 128], nl.float32]
    assert gc.isenabled()
    ncs.simulate(k, spec, spec, functional=False)
    assert seen == [False] and gc.isenabled()
    with pytest.raises(SimulatorError, match="expected a tile in sbuf"):
        ncs.simulate(broken, spec, functional=False)
    assert gc.isenabled()
    gc.disable()
    try:
        ncs.simulate(k, spec, spec, functional=False)
        assert not gc.isenabled()
    finally:
        gc.enable()
