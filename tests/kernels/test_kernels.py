"""The sample kernels in ``kernels/``, simulated and compared with their numpy references.

Each sample module follows the convention the CLI relies on: a single ``kernel`` or a
``KERNELS = {name: kernel}`` table, ``reference(...)`` giving the expected output(s), and
``example_inputs()`` returning ``{parameter name: numpy array}`` in the kernel's parameter order.
A module may also set ``GRID`` (the SPMD launch grid for its example inputs).

Modules are imported inside the tests, not at collection time, so a broken sample fails its own
tests instead of stopping the whole session.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import ml_dtypes
import numpy as np
import pytest

KERNEL_DIR = Path(__file__).resolve().parents[2] / "kernels"
NOT_SAMPLES = {"run_sample"}  # scripts in kernels/ that are not kernel modules

#: (module, kernel name) for every sample kernel. "kernel" means the module's single kernel.
CASES = [
    ("tensor_add", "kernel"),
    ("exp_ragged", "kernel"),
    ("softmax", "kernel"),
    ("layernorm", "layernorm_nl"),
    ("layernorm", "layernorm_bn"),
    ("rmsnorm", "kernel"),
    ("transpose2d", "transpose_tensor_engine"),
    ("transpose2d", "transpose_vector_engine"),
    ("row_col_sum", "kernel"),
    ("relu", "kernel"),
    ("matmul_bf16", "kernel"),
    ("giou", "kernel"),
    ("matmul_blocked", "kernel"),
    ("matmul_single_tile", "kernel"),
    ("matmul_ladder", "tiled"),
    ("matmul_ladder", "hoisted"),
    ("matmul_ladder", "blocked_free"),
    ("matmul_ladder", "blocked_all"),
    ("matmul_strip", "kernel"),
    ("dma_rows", "row_per_partition"),
    ("dma_rows", "rows_grouped"),
    ("mamba", "mamba_v1"),
    ("mamba", "mamba_v2"),
    ("mamba", "mamba_v3"),
    ("layernorm_tutorial", "layernorm_v1"),
    ("layernorm_tutorial", "layernorm_v2"),
    ("flash_attention", "kernel"),
    ("elementwise", "kernel"),
]

# float32 results: the simulator computes in fp32 like the engines, the references in float64,
# so only rounding differences of the order of a few fp32 ulps (times reduction length) remain.
FP32_TOL = {"rtol": 1e-4, "atol": 1e-4}
# Anything that passes through bfloat16 (8 significant bits) is compared at ~1e-2.
BF16_TOL = {"rtol": 1e-2, "atol": 1e-2}


def load_sample(name: str) -> ModuleType:
    """Import ``kernels/<name>.py`` as a module (kernels/ is a folder of scripts, not a package)."""
    path = KERNEL_DIR / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"ncs_sample_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def kernels_of(module: ModuleType) -> dict:
    """The module's kernels by name (``{"kernel": kernel}`` for a single-kernel module)."""
    if hasattr(module, "KERNELS"):
        return dict(module.KERNELS)
    return {"kernel": module.kernel}


def param_names(name: str, func_name: str) -> list[str]:
    """Parameter names of a kernel function, read from its source (no import needed)."""
    tree = ast.parse((KERNEL_DIR / f"{name}.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == func_name:
            return [a.arg for a in node.args.args]
    raise AssertionError(f"kernels/{name}.py has no function {func_name}")


def tolerance(*arrays: np.ndarray) -> dict:
    """Comparison tolerance for the lowest-precision dtype among inputs and outputs."""
    low_precision = {np.dtype(ml_dtypes.bfloat16), np.dtype(np.float16)}
    return BF16_TOL if any(a.dtype in low_precision for a in arrays) else FP32_TOL


def as_tuple(value: object) -> tuple:
    """A kernel result or reference as a tuple of arrays."""
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def test_every_sample_module_is_listed() -> None:
    """A new file in kernels/ must get a line in CASES (and so a numerical test)."""
    files = {p.stem for p in KERNEL_DIR.glob("*.py") if not p.stem.startswith("_")}
    assert files - NOT_SAMPLES == {name for name, _ in CASES}


@pytest.mark.parametrize("name", sorted({name for name, _ in CASES}))
def test_sample_follows_convention(name: str) -> None:
    """Kernels, reference and seeded example inputs in parameter order, as the CLI expects."""
    module = load_sample(name)
    found = kernels_of(module)
    assert sorted(found) == sorted(k for n, k in CASES if n == name)
    assert callable(module.reference)
    inputs = module.example_inputs()
    again = module.example_inputs()
    assert all(isinstance(v, np.ndarray) for v in inputs.values())
    for key in inputs:  # seeded: the same arrays every call
        np.testing.assert_array_equal(inputs[key], again[key])
    for kernel_name, kernel in found.items():
        func_name = kernel_name if hasattr(module, "KERNELS") else "kernel"
        assert param_names(name, func_name)[: len(inputs)] == list(inputs), kernel_name


@pytest.mark.parametrize("name, kernel_name", CASES, ids=[f"{n}.{k}" for n, k in CASES])
def test_sample_matches_reference(name: str, kernel_name: str) -> None:
    """Simulating the kernel on its example inputs reproduces the numpy reference."""
    import neuroncore_sim

    module = load_sample(name)
    kernel = kernels_of(module)[kernel_name]
    inputs = module.example_inputs()
    launch = {"grid": module.GRID} if hasattr(module, "GRID") else {}

    res = neuroncore_sim.simulate(kernel, *inputs.values(), **launch)

    expected = as_tuple(module.reference(*inputs.values()))
    outputs = as_tuple(res.outputs)
    assert len(outputs) == len(expected)
    for got, want in zip(outputs, expected):
        got = np.asarray(got)
        assert got.shape == want.shape
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                                   **tolerance(*inputs.values(), want))


def test_sample_inputs_are_left_unchanged() -> None:
    """A return-style kernel must not write into its inputs."""
    import neuroncore_sim

    module = load_sample("tensor_add")
    inputs = module.example_inputs()
    copies = {k: v.copy() for k, v in inputs.items()}
    neuroncore_sim.simulate(module.kernel, *inputs.values(), grid=module.GRID)
    for key in inputs:
        np.testing.assert_array_equal(inputs[key], copies[key])


def test_run_sample_script() -> None:
    """kernels/run_sample.py (the README's sample script) runs and reports a correct result."""
    # The script expects an installed package; point it at this checkout in case it is not.
    repo = str(KERNEL_DIR.parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (repo, os.environ.get("PYTHONPATH", "")) if p)}
    proc = subprocess.run([sys.executable, str(KERNEL_DIR / "run_sample.py")],
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "max abs error" in proc.stdout
    assert "instructions" in proc.stdout
