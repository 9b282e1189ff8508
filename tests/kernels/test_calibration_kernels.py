"""The kernels behind the calibration cases (kernels/mamba.py, kernels/layernorm_tutorial.py)
on small shapes other than their example inputs: every loop really iterates (two batches, two
channel tiles, several v3 chunks, several bn_stats chunks), values checked against numpy."""

from __future__ import annotations

import numpy as np
import pytest

import neuroncore_sim as ncs
from test_kernels import load_sample


@pytest.mark.parametrize("name", ["mamba_v1", "mamba_v2", "mamba_v3"])
def test_mamba_versions_match_numpy(name: str) -> None:
    mamba = load_sample("mamba")
    inputs = mamba.example_inputs(batch=2, channels=256, seq_len=1536, state_size=3)
    res = ncs.simulate(mamba.KERNELS[name], *inputs.values())
    # fp32 scan over 1536 steps against a float64 reference: rounding grows along the sequence.
    np.testing.assert_allclose(res.outputs[0], mamba.reference(*inputs.values()),
                               rtol=1e-3, atol=2e-4)


def test_mamba_v3_needs_whole_chunks() -> None:
    mamba = load_sample("mamba")
    inputs = mamba.example_inputs(channels=128, seq_len=640, state_size=1)
    with pytest.raises(Exception, match="multiple of 512"):
        ncs.simulate(mamba.mamba_v3, *inputs.values())


@pytest.mark.parametrize("name", ["layernorm_v1", "layernorm_v2"])
@pytest.mark.parametrize("n, f", [(128, 512), (384, 1536)])
def test_layernorm_versions_match_numpy(name: str, n: int, f: int) -> None:
    ln = load_sample("layernorm_tutorial")
    inputs = ln.example_inputs(N=n, F=f)
    res = ncs.simulate(ln.KERNELS[name], *inputs.values())
    np.testing.assert_allclose(res.outputs[0], ln.reference(*inputs.values()),
                               rtol=1e-4, atol=1e-4)
