"""A backend config names code (issue 25, class 9): run_backend_config launches only functions
declared as NKI kernels (nki.jit / nki.trace / nki.baremetal, or given to nki.FrameworkKernel);
anything else a config names (os.system, a plain helper, a class) is refused before it is called,
and a config of the wrong shape is a KernelError, not a KeyError."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import neuroncore_sim.nki as nki
import neuroncore_sim.nki.language as nl
from neuroncore_sim.errors import KernelError
from neuroncore_sim.frameworks import run_backend_config
from neuroncore_sim.frameworks.config import CONFIG_FORMAT, is_kernel

CALLED: list[str] = []


def not_a_kernel(*args, **kwargs):
    CALLED.append("not_a_kernel")


@nki.jit
def double(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.multiply(nl.load(a), 2.0))
    return out


def _config(module: str, qualname: str, file: str | None = None) -> str:
    return json.dumps({"format": CONFIG_FORMAT, "func_name": qualname,
                       "kernel": {"module": module, "qualname": qualname, "file": file},
                       "grid": [], "inputs": ["a"], "output_args": False,
                       "params": [{"name": "a", "shape": [128, 8], "dtype": "float32"}],
                       "outputs": [{"shape": [128, 8], "dtype": "float32"}]})


@pytest.mark.parametrize("module,qualname", [("os", "system"), ("builtins", "print"),
                                             (__name__, "not_a_kernel"),
                                             ("subprocess", "Popen"), ("json", "loads")])
def test_a_config_naming_anything_but_a_kernel_is_refused_before_the_call(module, qualname):
    with pytest.raises(KernelError, match="expected an NKI kernel") as info:
        run_backend_config(_config(module, qualname), np.ones((128, 8), np.float32))
    assert f"{module}.{qualname}" in str(info.value)
    assert CALLED == []


def test_os_system_runs_no_shell_command(tmp_path: Path) -> None:
    """In a fresh process (nothing marked yet): the shell command of os.system never runs."""
    marker = tmp_path / "ran"
    script = textwrap.dedent(f'''
        import json, numpy as np
        from neuroncore_sim.frameworks import run_backend_config
        from neuroncore_sim.frameworks.config import CONFIG_FORMAT
        cfg = {{"format": CONFIG_FORMAT, "func_name": "system", "kernel": {{"module": "os",
               "qualname": "system", "file": None}}, "grid": [], "inputs": [],
               "output_args": False, "outputs": [],
               "params": [{{"name": "command", "value": "touch {marker}"}}]}}
        run_backend_config(json.dumps(cfg))
    ''')
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 1 and not marker.exists()
    assert "KernelError" in done.stderr and "expected an NKI kernel" in done.stderr


def test_a_declared_kernel_still_runs() -> None:
    assert is_kernel(double) and is_kernel(double.func) and not is_kernel(not_a_kernel)
    a = np.arange(128 * 8, dtype=np.float32).reshape(128, 8)
    (out,) = run_backend_config(_config(__name__, "double"), a)
    np.testing.assert_array_equal(out, a * 2)


@pytest.mark.parametrize("kernel", [None, "os.system", ["os", "system"], {"module": 1}])
def test_a_malformed_kernel_reference_is_a_kernel_error(kernel) -> None:
    cfg = json.loads(_config("os", "system"))
    cfg["kernel"] = kernel
    with pytest.raises(KernelError, match="backend_config"):
        run_backend_config(json.dumps(cfg), np.ones((128, 8), np.float32))


@pytest.mark.parametrize("drop", ["kernel", "inputs", "params", "grid", "func_name"])
def test_a_config_missing_a_field_is_a_kernel_error(drop: str) -> None:
    cfg = json.loads(_config(__name__, "double"))
    del cfg[drop]
    with pytest.raises(KernelError, match="backend_config"):
        run_backend_config(json.dumps(cfg), np.ones((128, 8), np.float32))
