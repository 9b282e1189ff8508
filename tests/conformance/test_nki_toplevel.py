"""nki decorators, nki.compiler allocation control, nki.typing, random numbers, device_print,
dynamic copies and launch-grid constants."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import neuroncore_sim as ncs
import neuroncore_sim.nki as nki
import neuroncore_sim.nki.compiler as ncc
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl
import neuroncore_sim.nki.typing as nt

from .helpers import apply, run

RNG = np.random.default_rng(13)


def _add_one(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.add(nl.load(a), 1.0))
    return out


@pytest.mark.api("nki.jit", "nki.simulate_kernel", "nki.baremetal")
@pytest.mark.parametrize("wrap", ["jit", "baremetal", "simulate_kernel"])
def test_decorators_run_the_kernel(wrap):
    x = RNG.normal(size=(8, 16)).astype(np.float32)
    if wrap == "simulate_kernel":
        got = nki.simulate_kernel(nki.jit(_add_one), x)
    else:
        got = getattr(nki, wrap)(_add_one)(x)
    np.testing.assert_allclose(np.asarray(got), x + 1, rtol=1e-6)


@pytest.mark.api("nki.benchmark", "nki.profile")
def test_benchmark_and_profile_run_and_report_a_latency(tmp_path):
    x = RNG.normal(size=(8, 16)).astype(np.float32)
    bench = nki.benchmark(warmup=1, iters=2)(_add_one)
    bench(x)
    assert bench.benchmark_result.nc_latency.get_latency_percentile(50) > 0
    prof = nki.profile(working_directory=str(tmp_path))(_add_one)
    prof(x)


@pytest.mark.api("nki.language.spmd_dim", "nki.language.nc", "nki.language.program_id")
def test_spmd_dim_and_nc_in_a_launch_grid():
    @nki.jit
    def k(a, out):
        i = nl.program_id(0)
        nl.store(out[i], value=nl.multiply(nl.load(a[i]), 2.0))

    x = RNG.normal(size=(2, 4, 8)).astype(np.float32)
    out = np.zeros_like(x)
    nki.simulate_kernel(k[nl.spmd_dim(nl.nc(2))], x, out)
    np.testing.assert_allclose(out, 2 * x, rtol=1e-6)


@pytest.mark.api("nki.compiler.sbuf.mod_alloc", "nki.compiler.psum.mod_alloc",
                 "nki.compiler.sbuf.alloc", "nki.compiler.psum.alloc",
                 "nki.compiler.sbuf.auto_alloc", "nki.compiler.psum.auto_alloc",
                 "nki.compiler.skip_middle_end_transformations",
                 "nki.compiler.enable_stack_allocator", "nki.compiler.force_auto_alloc")
@pytest.mark.parametrize("how", ["mod_alloc", "alloc", "auto_alloc"])
def test_allocated_tiles_compute_like_auto_ones(how):
    x = RNG.normal(size=(2, 32, 16)).astype(np.float32)
    sbuf = {"mod_alloc": lambda: ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(2,)),
            "alloc": lambda: ncc.sbuf.alloc(lambda idx, p, f: (0, idx[0] * 64)),
            "auto_alloc": ncc.sbuf.auto_alloc}[how]
    psum = {"mod_alloc": lambda: ncc.psum.mod_alloc(base_bank=0, num_bank_tiles=(2,)),
            "alloc": lambda: ncc.psum.alloc(lambda idx, p, f: (idx[0], 0, 0)),
            "auto_alloc": ncc.psum.auto_alloc}[how]
    decorate = {"mod_alloc": ncc.skip_middle_end_transformations,
                "alloc": functools.partial(ncc.enable_stack_allocator),
                "auto_alloc": ncc.force_auto_alloc}[how]

    @decorate
    def k(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray((2, nl.par_dim(32), 16), dtype=nl.float32, buffer=sbuf())
        p = nl.ndarray((2, nl.par_dim(32), 16), dtype=nl.float32, buffer=psum())
        for i in nl.affine_range(2):
            t[i] = nl.load(a[i])
            p[i] = nisa.tensor_scalar(t[i], op0=nl.multiply, operand0=3.0)
            nl.store(out[i], value=nl.copy(p[i]))
        return out
    np.testing.assert_allclose(run(k, x), 3 * x, rtol=1e-6)


@pytest.mark.api("nki.typing.tensor", "nki.typing.mutable_tensor")
def test_typing_annotations_are_accepted():
    def k(a: nt.tensor, out: nt.mutable_tensor):
        nl.store(out, value=nl.exp(nl.load(a)))

    x = RNG.normal(size=(4, 8)).astype(np.float32)
    out = np.zeros_like(x)
    nki.simulate_kernel(nki.jit(k), x, out)
    np.testing.assert_allclose(out, np.exp(x), rtol=1e-6)


@pytest.mark.api("nki.language.rand", "nki.language.random_seed")
def test_rand_is_uniform_in_0_1_and_seeded():
    def k():
        nl.random_seed(seed=nl.full((1, 1), 7, dtype=nl.int32, buffer=nl.sbuf))
        r = nl.rand((128, 64), dtype=nl.float32)
        out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, value=r)
        return out
    a, b = run(k), run(k)
    assert a.min() >= 0 and a.max() < 1 and 0.4 < a.mean() < 0.6
    np.testing.assert_array_equal(a, b)


@pytest.mark.api("nki.language.dropout", "nki.isa.dropout")
@pytest.mark.parametrize("fn", [lambda t: nl.dropout(t, rate=0.5),
                                lambda t: nisa.dropout(t, prob=0.5)], ids=["nl", "nisa"])
def test_dropout_zeroes_about_rate_of_the_elements(fn):
    x = RNG.uniform(1, 2, (128, 64)).astype(np.float32)
    got = apply(fn, x)
    kept = got != 0
    assert 0.4 < 1 - kept.mean() < 0.6
    # kept elements are x, or x scaled by 1/(1-rate) (inverted dropout): either way a fixed ratio
    ratio = np.unique(np.round(got[kept] / x[kept], 4))
    assert len(ratio) == 1


@pytest.mark.api("nki.language.device_print")
def test_device_print_prints_the_tile_values(capsys):
    x = np.arange(8, dtype=np.float32).reshape(2, 4)

    def k(a):
        t = nl.load(a)
        nl.device_print("value of t:", t)
        return _add_one(a)
    run(k, x)
    printed = capsys.readouterr().out
    assert "value of t:" in printed and "7." in printed


@pytest.mark.api("nki.isa.tensor_copy_dynamic_src")
def test_dynamic_src_copies_a_window_at_a_runtime_offset():
    a = RNG.normal(size=(8, 32)).astype(np.float32)
    off = np.array([[5]], dtype=np.int32)

    def k(x, o):
        src, offs = nl.load(x), nl.load(o)
        i_p, i_f = nl.mgrid[0:8, 0:4]
        col = nisa.tensor_copy_dynamic_src(src[i_p, offs[0, 0] + i_f])
        out = nl.ndarray((8, 4), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, value=col)
        return out
    np.testing.assert_array_equal(run(k, a, off), a[:, 5:9])


@pytest.mark.api("nki.isa.tensor_copy_dynamic_dst")
@pytest.mark.xfail(strict=True, reason="tensor_copy_dynamic_dst into a window of several "
                   "elements per partition writes only the window's first element")
def test_dynamic_dst_writes_a_window_at_a_runtime_offset():
    a = RNG.normal(size=(8, 4)).astype(np.float32)
    off = np.array([[20]], dtype=np.int32)

    def k(x, o):
        offs = nl.load(o)
        i_p, i_f = nl.mgrid[0:8, 0:4]
        dst = nl.zeros((8, 32), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy_dynamic_dst(dst=dst[i_p, offs[0, 0] + i_f], src=nl.load(x))
        out = nl.ndarray((8, 32), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, value=dst)
        return out
    want = np.zeros((8, 32), np.float32)
    want[:, 20:24] = a
    np.testing.assert_array_equal(run(k, a, off), want)


@pytest.mark.api("nki.isa.tensor_copy_dynamic_dst")
def test_dynamic_dst_writes_one_column_at_a_runtime_offset():
    a = RNG.normal(size=(8, 1)).astype(np.float32)
    off = np.array([[11]], dtype=np.int32)

    def k(x, o):
        offs = nl.load(o)
        i_p, i_f = nl.mgrid[0:8, 0:1]
        dst = nl.zeros((8, 16), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy_dynamic_dst(dst=dst[i_p, offs[0, 0] + i_f], src=nl.load(x))
        out = nl.ndarray((8, 16), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, value=dst)
        return out
    want = np.zeros((8, 16), np.float32)
    want[:, 11:12] = a
    np.testing.assert_array_equal(run(k, a, off), want)
