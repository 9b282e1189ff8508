"""The torch_xla / torch_neuronx stand-ins of ``neuroncore-sim run`` (frameworks/device_alias.py):
a script written for Trainium (``xm.xla_device()``, ``torch_neuronx.nki_jit``) runs unmodified
on CPU tensors; anything else of those packages is a clear error. The script tests need torch
(skipped where it is missing, as the other PyTorch tests)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from neuroncore_sim.errors import UnsupportedError
from neuroncore_sim.frameworks import device_alias

HAS_TORCH = device_alias.importlib.util.find_spec("torch") is not None
needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="torch is not installed")


@pytest.mark.skipif(HAS_TORCH, reason="torch is installed")
def test_without_torch_nothing_is_registered():
    assert device_alias.install_device_aliases() == []
    assert "torch_xla" not in sys.modules and "torch_neuronx" not in sys.modules

SCRIPT = textwrap.dedent('''
    import torch
    from torch_xla.core import xla_model as xm
    import torch_xla
    from torch_neuronx import nki_jit
    import neuronxcc.nki.language as nl

    @nki_jit
    def double(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.multiply(nl.load(a), 2.0))
        return out

    device = xm.xla_device()
    assert device == torch_xla.device() == torch.device("cpu")
    a = torch.arange(128 * 64, dtype=torch.float32).reshape(128, 64).to(device)
    out = double(a)
    xm.mark_step()
    assert torch.equal(out, a * 2), out
    print("matched")
''')


@needs_torch
@pytest.mark.skipif(device_alias.importlib.util.find_spec("torch_xla") is not None,
                    reason="a real torch_xla is installed (the stand-in never shadows it)")
def test_a_trainium_script_runs_unmodified(tmp_path):
    script = tmp_path / "trainium_script.py"
    script.write_text(SCRIPT)
    done = subprocess.run([sys.executable, "-m", "neuroncore_sim", "run", "--out",
                           str(tmp_path / "out"), str(script)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert "matched" in done.stdout
    assert (tmp_path / "out").is_dir()


@needs_torch
def test_what_the_stand_in_lacks_is_a_clear_error():
    if "torch_xla" not in device_alias.install_device_aliases():
        pytest.skip("a real torch_xla is installed")
    import torch_xla.core.xla_model as xm
    with pytest.raises(UnsupportedError, match=r"torch_xla.core.xla_model.all_reduce: not part "
                       r"of neuroncore_sim's stand-in for torch_xla .* it offers xla_device"):
        xm.all_reduce  # noqa: B018
    assert device_alias.install_device_aliases() == ["torch_xla", "torch_neuronx"]  # idempotent
