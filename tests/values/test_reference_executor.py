"""The fast executor against the reference executor (the spec run one instruction at a time).

Every sample kernel in ``kernels/`` runs through both (``simulate(..., functional=True)`` and
``functional="reference"``). Results agree bit for bit, except where the fast path reorders fp32
sums: a PSUM accumulation chain of ``nc_matmul`` is evaluated as one GEMM, so its K products are
summed in another order than one instruction at a time. docs/model.md ("Reference and fast
executors") derives the bound tested here: two fp32 summations of the same K products differ by
at most ``2 * gamma_K * sum_k |a_k b_k|``, ``gamma_K = K u / (1 - K u)``, ``u = 2**-24``, plus one
unit in the last place of the output dtype when the result is then rounded to a narrower dtype.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import neuroncore_sim as ncs
from exec_helpers import (F32, U32, chain_lengths, gamma, ins, products_per_element, rect,
                          tile)
from neuroncore_sim.config import TRN1
from neuroncore_sim.errors import ConfigError
from neuroncore_sim.program.ir import Engine, MemSpace, Opcode
from neuroncore_sim.sweep.kernel_file import example_inputs, find_kernel, load_kernel_file
from neuroncore_sim.values.execute import Executor
from neuroncore_sim.values.fast.executor import FastExecutor

KERNEL_DIR = Path(__file__).resolve().parents[2] / "kernels"


def _sample_kernels() -> list[tuple[str, str]]:
    """(file, kernel name) of every sample kernel in kernels/."""
    found = []
    for path in sorted(KERNEL_DIR.glob("*.py")):
        text = path.read_text()
        if "def example_inputs" not in text:
            continue  # a script, not a kernel module
        module = load_kernel_file(path)
        names = list(getattr(module, "KERNELS", {}) or {}) or ["kernel"]
        found += [(path.name, name) for name in names]
    return found


def _run(path: Path, name: str, functional, absolute: bool = False):
    module = load_kernel_file(path)
    _, kernel = find_kernel(module, name)
    args, kwargs = example_inputs(module, path)
    if absolute:
        args = tuple(np.abs(a) if isinstance(a, np.ndarray) else a for a in args)
        kwargs = {k: np.abs(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    grid = getattr(module, "GRID", ())
    return ncs.simulate(kernel, *args, grid=grid, functional=functional, timing=False, **kwargs)


@pytest.mark.parametrize("file, name", _sample_kernels())
def test_sample_kernel_agrees_with_the_reference(file: str, name: str) -> None:
    path = KERNEL_DIR / file
    fast = _run(path, name, True)
    ref = _run(path, name, "reference")
    k = chain_lengths(ref.program)
    assert len(fast.outputs) == len(ref.outputs)
    for index, (got, want) in enumerate(zip(fast.outputs, ref.outputs)):
        assert got.dtype == want.dtype and got.shape == want.shape
        if k <= 128:  # no merged chain (one matmul per PSUM element): bit for bit
            np.testing.assert_array_equal(got, want, err_msg=f"{file}::{name}")
            continue
        # merged chains: within the bound; S = sum |a_k b_k| from the kernel on |inputs| (the
        # matmul samples are products and copies only), rounded up for its own output dtype
        sums = _run(path, name, "reference", absolute=True).outputs
        s = np.abs(sums[index].astype(np.float64))
        s *= 1 + 2.0 ** -7
        w = want.astype(np.float64)
        bound = 2 * gamma(k) * s
        if want.dtype != np.float32:
            # one output ulp per rounding of the running sum: once at the end, or once per
            # chain when chains add into a running sum kept in the output dtype (a result
            # strip in bf16: kernels/matmul_strip.py); the running sums of |inputs| grow to s,
            # so s's ulp bounds each one's
            rounds = max(1, -(-products_per_element(ref.program, want.size) // k))
            bound += rounds * np.spacing(s.astype(want.dtype)).astype(np.float64)
        diff = np.abs(got.astype(np.float64) - w)
        assert (diff <= bound).all(), (file, name, float((diff - bound).max()))


def test_reference_is_what_functional_reference_runs(monkeypatch) -> None:
    """functional="reference" takes the reference executor (the fast one is never built);
    anything else but a bool fails with a clear error."""
    simulate_module = importlib.import_module("neuroncore_sim.simulate")

    def no_fast(*args, **kwargs):
        raise AssertionError("the fast executor was built")

    monkeypatch.setattr(simulate_module, "FastExecutor", no_fast)
    path = KERNEL_DIR / "tensor_add.py"
    res = _run(path, "kernel", "reference")
    assert res.outputs and res.outputs[0] is not None
    with pytest.raises(AssertionError, match="the fast executor was built"):
        _run(path, "kernel", True)
    with pytest.raises(ConfigError, match='functional; expected True, False or "reference"'):
        _run(path, "kernel", "fast")


def _chain(ex, k_parts: list[int], a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """nc_matmul accumulation chain psum += a[part].T @ b[part] over the K parts, read back."""
    m, n = a.shape[1], b.shape[1]
    psum = tile(ex, np.zeros((m, n), F32), space=MemSpace.PSUM)
    start = 0
    for j, kp in enumerate(k_parts):
        sa = tile(ex, a[start:start + kp])
        sb = tile(ex, b[start:start + kp])
        ex.execute(ins(Opcode.NC_MATMUL, {"out": rect(psum, slice(None), slice(None))},
                       {"stationary": rect(sa, slice(None), slice(None)),
                        "moving": rect(sb, slice(None), slice(None))},
                       engine=Engine.TENSOR, accumulate=j > 0))
        start += kp
    return ex.logical(psum)


@settings(max_examples=40, deadline=None)
@given(parts=st.lists(st.integers(1, 128), min_size=2, max_size=12),
       seed=st.integers(0, 2 ** 16), scale=st.sampled_from([1e-3, 1.0, 1e4]))
def test_merged_chain_is_within_the_derived_bound(parts: list[int], seed: int,
                                                  scale: float) -> None:
    """One GEMM per chain (fast) against one fp32 accumulation per instruction (reference), on
    values of mixed signs and magnitudes: |fast - ref| <= 2 gamma_K sum_k |a_k b_k|."""
    rng = np.random.default_rng(seed)
    k = sum(parts)
    a = (rng.standard_normal((k, 16)) * scale).astype(F32)
    b = (rng.standard_normal((k, 24)) * rng.choice([1e-2, 1.0, 1e2], (k, 1))).astype(F32)
    fast = _chain(FastExecutor(TRN1), parts, a, b)
    ref = _chain(Executor(TRN1), parts, a, b)
    s = np.abs(a.astype(np.float64)).T @ np.abs(b.astype(np.float64))
    assert (np.abs(fast.astype(np.float64) - ref) <= 2 * gamma(k) * s).all()


def test_bf16_output_rounding_adds_one_ulp_at_most() -> None:
    """The bound's ulp term: two fp32 values within the sum bound round to bf16 values at most
    one bf16 ulp apart (beyond their own difference)."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal(10_000).astype(F32)
    y = (x * (1 + rng.uniform(-4, 4, x.shape) * U32)).astype(F32)
    bx, by = x.astype(ml_dtypes.bfloat16), y.astype(ml_dtypes.bfloat16)
    diff = np.abs(bx.astype(np.float64) - by.astype(np.float64))
    ulp = np.spacing(np.abs(bx)).astype(np.float64)
    assert (diff <= np.abs(x.astype(np.float64) - y) + ulp).all()
