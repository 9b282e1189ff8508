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
from neuroncore_sim.frameworks.config import CONFIG_FORMAT
from neuroncore_sim.frameworks.kernel_ref import declares_kernel, is_kernel

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


def test_a_module_or_file_that_declares_no_such_kernel_is_not_run(tmp_path: Path) -> None:
    """Not imported, not executed: a config naming a module not yet imported (antigravity
    opens a browser when imported) or a script file whose source declares no kernel of that
    name runs none of their code."""
    marker = tmp_path / "ran"
    evil = tmp_path / "evil_module_of_ours.py"
    evil.write_text(f"open({str(marker)!r}, 'w').close()\n\ndef kernel(a):\n    pass\n")
    for module, file in (("antigravity", None), ("nonexistent_module_xyz", str(evil)),
                         ("__main__", str(evil))):
        with pytest.raises(KernelError, match="expected an NKI kernel.*found nothing"):
            run_backend_config(_config(module, "kernel", file), np.ones((128, 8), np.float32))
    sys.path.insert(0, str(tmp_path))
    try:
        with pytest.raises(KernelError, match="expected an NKI kernel"):
            run_backend_config(_config("evil_module_of_ours", "kernel"),
                               np.ones((128, 8), np.float32))
    finally:
        sys.path.remove(str(tmp_path))
    assert not marker.exists()
    assert "antigravity" not in sys.modules and "evil_module_of_ours" not in sys.modules


def test_a_file_declaring_the_kernel_is_loaded_and_run(tmp_path: Path) -> None:
    path = tmp_path / "kfile.py"
    path.write_text(textwrap.dedent('''
        import neuroncore_sim.nki as nki
        import neuroncore_sim.nki.language as nl

        @nki.jit
        def triple(a):
            out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
            nl.store(out, value=nl.multiply(nl.load(a), 3.0))
            return out
    '''))
    assert declares_kernel(str(path), "triple") and not declares_kernel(str(path), "nl")
    a = np.ones((128, 8), np.float32)
    (out,) = run_backend_config(_config("__main__", "triple", str(path)), a)
    np.testing.assert_array_equal(out, a * 3)
