"""The kernel errors of the 2.26 reference's NKI errors page: each misuse is a SimulatorError whose
message names this file's line (never a Python exception from inside the package), and the
page's correct form runs."""

from __future__ import annotations

import numpy as np
import pytest

import neuroncore_sim as ncs
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl
from neuroncore_sim.errors import SimulatorError

HERE = "test_nki_errors.py:"


def _out(t):
    out = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=t)
    return out


def _fails(kernel, *arrays, match=None):
    with pytest.raises(SimulatorError, match=match) as e:
        ncs.trace(kernel, *arrays)
    assert HERE in str(e.value), f"the error names the kernel's line: {e.value}"


def _runs(kernel, *arrays):
    return ncs.trace(kernel, *arrays).outputs


@pytest.mark.api("nki.language.arange")
@pytest.mark.xfail(strict=True, reason="indexing with a 1-D nl.arange (err_1d_arange_not_"
                   "supported) is accepted")
def test_1d_arange_index():
    def bad():
        tmp = nl.zeros((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        return _out(nl.exp(tmp[nl.arange(64), 0]))
    _fails(bad)


@pytest.mark.api("nki.language.arange", "nki.language.exp")
def test_2d_arange_index():
    def good():
        tmp = nl.zeros((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        return _out(nl.exp(tmp[nl.arange(64)[:, None], 0]))
    np.testing.assert_array_equal(_runs(good)[0], np.ones((64, 1), np.float32))


@pytest.mark.api("nki.isa.activation")
@pytest.mark.parametrize("kw", [
    pytest.param(dict(bias=(128, 1, np.int8)), marks=pytest.mark.xfail(
        strict=True, reason="an int8 activation bias (err_activation_bias_invalid_type) is "
        "accepted")),
    pytest.param(dict(scale=(128, 1, np.float16)), marks=pytest.mark.xfail(
        strict=True, reason="a float16 activation scale vector (err_activation_scale_invalid_"
        "type) is accepted")),
    dict(scale=(1, 128, np.float32)), dict(scale=(128, 128, np.float32))],
    ids=["int8-bias", "fp16-scale", "row-scale", "square-scale"])
def test_activation_bias_and_scale_types(kw):
    (name, (p, f, dt)), = kw.items()

    def bad(a):
        arg = nisa.memset((p, f), 1.0, dtype=dt)
        return _out(nisa.activation(op=nl.exp, data=nl.load(a), **{name: arg}))
    _fails(bad, np.zeros((128, 128), np.float32))


@pytest.mark.api("nki.isa.activation", "nki.isa.memset")
def test_activation_bias_and_scale_vectors_run():
    def good(a):
        b = nisa.memset((128, 1), 1.0, dtype=nl.bfloat16)
        s = nisa.memset((128, 1), 2.0, dtype=np.float32)
        return _out(nisa.activation(op=nl.exp, data=nl.load(a), bias=b, scale=s))
    x = np.zeros((128, 4), np.float32)
    np.testing.assert_allclose(_runs(good, x)[0], np.full((128, 4), np.e, np.float32), rtol=1e-6)


@pytest.mark.api("nki.language.greater")
def test_truth_value_of_a_tile():
    def bad(a):
        t = nl.load(a)
        if t > 0:
            pass
        return _out(t)
    _fails(bad, np.zeros((4, 4), np.float32))


@pytest.mark.api("nki.language.full")
@pytest.mark.xfail(strict=True, reason="nl.full with buffer=nl.shared_hbm (err_hbm_tensor_with_"
                   "init_value_not_supported) is accepted: the simulator fills the HBM tensor")
def test_hbm_tensor_with_init_value():
    def bad():
        t = nl.full((4, 8), fill_value=1.0, dtype=nl.float32, buffer=nl.shared_hbm)
        return t
    _fails(bad)


@pytest.mark.api("nki.isa.tensor_tensor", "nki.language.broadcast_to")
def test_partition_mismatch_and_broadcast_to():
    def bad(a, b):
        return _out(nisa.tensor_tensor(nl.load(a), nl.load(b), op=nl.add))

    def good(a, b):
        return _out(nisa.tensor_tensor(nl.load(a), nl.load(b).broadcast_to((128, 8)), op=nl.add))
    x, y = np.ones((128, 8), np.float32), np.full((1, 8), 2, np.float32)
    _fails(bad, x, y)
    np.testing.assert_array_equal(_runs(good, x, y)[0], np.full((128, 8), 3, np.float32))


@pytest.mark.api("nki.language.transpose")
def test_transpose_over_128():
    def bad():
        return _out(nl.transpose(nl.zeros((128, 512), dtype=nl.float32, buffer=nl.sbuf)))
    _fails(bad)


@pytest.mark.api("nki.language.store")
def test_store_destination_smaller_than_value():
    def bad(a):
        y = nl.zeros((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        y[...] = nl.load(a)
        return _out(y)

    def good(a):
        x = nl.zeros((128, 8), dtype=nl.float32, buffer=nl.sbuf)
        x[...] = nl.load(a[:, 0:1])
        return _out(x)
    v = np.arange(128 * 8, dtype=np.float32).reshape(128, 8)
    _fails(bad, v)
    np.testing.assert_array_equal(_runs(good, v)[0], np.repeat(v[:, :1], 8, axis=1))


@pytest.mark.api("nki.language.store", "nki.language.mgrid")
def test_out_of_bound_access_and_its_mask():
    def kernel(masked):
        def k():
            x = nl.ndarray([128, 1000], dtype=nl.float32, buffer=nl.shared_hbm)
            for i in nl.affine_range(2):
                t = nl.mgrid[0:128, 0:512]
                nl.store(x[t.p, i * 512 + t.x], value=0.0,
                         mask=(i * 512 + t.x < 1000) if masked else None)
            return x
        return k
    _fails(kernel(False), match="1000|bound")
    assert not _runs(kernel(True))[0].any()


@pytest.mark.api("nki.language.load", "nki.language.exp")
def test_unsupported_memory():
    def bad_load():
        tmp = nl.ndarray((4, 4), dtype=nl.float32, buffer=nl.sbuf)
        return _out(nl.load(tmp))

    def bad_exp(a):
        return _out(nl.exp(a))
    _fails(bad_load, match="hbm")
    _fails(bad_exp, np.zeros((4, 4), np.float32), match="hbm")


def _same_slot_each_iteration(rng):
    def k():
        a = nl.ndarray((4, nl.par_dim(8), 16), dtype=nl.float32, buffer=nl.sbuf)
        for i in rng(4):
            a[0] = 1.0
        return _out(a[0])
    return k


@pytest.mark.api("nki.language.affine_range")
@pytest.mark.xfail(strict=True, reason="affine_range iterations writing one location (err_"
                   "unexpected_output_dependencies) are accepted")
def test_unexpected_output_dependencies_of_affine_range():
    _fails(_same_slot_each_iteration(nl.affine_range))


@pytest.mark.api("nki.language.sequential_range")
def test_sequential_range_may_write_one_location():
    np.testing.assert_array_equal(_runs(_same_slot_each_iteration(nl.sequential_range))[0],
                                  np.ones((8, 16), np.float32))


@pytest.mark.api("nki.language.shared_hbm")
@pytest.mark.xfail(strict=True, reason="a shared_hbm tensor created inside a loop (err_shared_"
                   "hbm_must_in_kernel_level) is accepted")
def test_shared_hbm_inside_a_loop():
    def bad():
        for i in nl.affine_range(2):
            b = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.shared_hbm)
            nl.store(b, value=0.0)
        return b
    _fails(bad)
