"""``nki.FrameworkKernel``: a framework's subclass gets a backend config, input names and
output names from ``dump_config``, specialised to the argument shapes; ``run_backend_config``
executes the kernel from that config alone (checked against numpy), and refuses operands that
do not match it."""

from __future__ import annotations

import json

import numpy as np
import pytest

import neuroncore_sim.nki.language as nl
from neuroncore_sim import nki
from neuroncore_sim.errors import KernelError
from neuroncore_sim.frameworks import run_backend_config


@nki.jit
def scaled_add(a, b, scale=1.0):
    c = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    ix = nl.program_id(0) * 128 + nl.arange(128)[:, None]
    iy = nl.arange(a.shape[1])[None, :]
    nl.store(c[ix, iy], value=nl.multiply(nl.add(nl.load(a[ix, iy]), nl.load(b[ix, iy])), scale))
    return c


def add_into(in1, in2, out):
    """Output-argument style, as the SDK's example: reads in1, in2, writes out."""
    nl.store(out, value=nl.add(nl.load(in1), nl.load(in2)))


class NumpyFrameworkKernel(nki.FrameworkKernel):
    """A 'framework' whose tensors are numpy arrays."""

    def translate_to_neuron_dtype(self, _dtype):
        return np.dtype(_dtype)

    def is_framework_tensor(self, t):
        return isinstance(t, np.ndarray)

    def map_framework_tensor(self, t):
        return t.shape, t.dtype


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_config_names_and_run_from_config_alone():
    a, b = _rand(256, 64), _rand(256, 64, seed=1)
    fk = NumpyFrameworkKernel(func_name="scaled_add", func=scaled_add, grid=(2,))
    config, ins, outs = fk.dump_config(a, b, scale=0.5)
    assert ins == ["input0", "input1"] and outs == ["output0"]
    cfg = json.loads(config)
    assert cfg["custom_call_target"] == "AwsNeuronCustomNativeKernel" and cfg["grid"] == [2]
    assert cfg["outputs"] == [{"shape": [256, 64], "dtype": "float32"}]
    (c,) = run_backend_config(config, a, b)
    np.testing.assert_allclose(c, (a + b) * 0.5, rtol=1e-6)


def test_config_is_specialised_to_shapes_and_cached():
    fk = NumpyFrameworkKernel(func_name="scaled_add", func=scaled_add, grid=(1,))
    c1, _, _ = fk.dump_config(_rand(128, 64), _rand(128, 64))
    c2, _, _ = fk.dump_config(_rand(128, 32), _rand(128, 32))
    assert c1 != c2 and json.loads(c2)["outputs"][0]["shape"] == [128, 32]
    assert fk.dump_config(_rand(128, 64, seed=5), _rand(128, 64))[0] is c1  # cached
    with pytest.raises(KernelError, match=r"operand 'a'.*expected shape \[128, 32\].*found "
                                          r"shape \[128, 64\]"):
        run_backend_config(c2, _rand(128, 64), _rand(128, 64))
    with pytest.raises(KernelError, match=r"operands.*expected 2.*found 1"):
        run_backend_config(c2, _rand(128, 32))


def test_output_argument_kernel_returns_its_written_argument():
    in1, in2, out = _rand(128, 16), _rand(128, 16, seed=2), np.zeros((128, 16), np.float32)
    config, ins, outs = NumpyFrameworkKernel(func=add_into).dump_config(in1, in2, out=out)
    assert (ins, outs) == (["input0", "input1"], ["output0"])
    assert json.loads(config)["inputs"] == ["in1", "in2"]
    (res,) = run_backend_config(config, in1, in2)
    np.testing.assert_allclose(res, in1 + in2, rtol=1e-6)


def test_bad_configs_and_arguments_are_refused():
    with pytest.raises(KernelError, match=r"backend_config.*expected the JSON"):
        run_backend_config("not json", _rand(2, 2))
    with pytest.raises(KernelError, match=r"backend_config format.*expected"):
        run_backend_config(json.dumps({"format": "other"}))
    fk = NumpyFrameworkKernel(func=scaled_add)
    with pytest.raises(KernelError, match=r"constant argument 'scale'.*JSON value.*found object"):
        fk.dump_config(_rand(128, 4), _rand(128, 4), scale=object())
    with pytest.raises(KernelError, match=r"FrameworkKernel func.*expected an NKI kernel"):
        NumpyFrameworkKernel(func=None)
    with pytest.raises(NotImplementedError):
        nki.FrameworkKernel(func=scaled_add).dump_config(_rand(128, 4), _rand(128, 4))


def test_jax_subclass_config_runs_bfloat16_kernel():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy

    class JaxFrameworkKernel(nki.FrameworkKernel):
        def translate_to_neuron_dtype(self, _dtype):
            return np.dtype(_dtype)  # jax's bfloat16 is ml_dtypes.bfloat16, as nl.bfloat16

        def is_framework_tensor(self, t):
            return isinstance(t, jax.Array)

        def map_framework_tensor(self, t):
            return t.shape, t.dtype

    a = jnp.asarray(_rand(128, 32), jnp.bfloat16)
    b = jnp.asarray(_rand(128, 32, seed=3), jnp.bfloat16)
    config, ins, outs = JaxFrameworkKernel(func=scaled_add, grid=(1,)).dump_config(a, b, 2.0)
    assert json.loads(config)["params"][0] == {"name": "a", "shape": [128, 32],
                                               "dtype": "bfloat16"}
    (c,) = run_backend_config(config, np.asarray(a), np.asarray(b))
    assert c.dtype == np.asarray(a).dtype
    np.testing.assert_array_equal(c, np.asarray((a + b) * 2))
