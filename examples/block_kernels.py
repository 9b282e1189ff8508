"""The NKI kernels of the transformer block examples that are not among the samples of
kernels/ (softmax backward, SwiGLU and its backward), and the sample kernels they use.

kernels/ is a folder of kernel scripts, not a package: it is put on the path here.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "kernels"))

import matmul_single_tile  # noqa: E402,F401
import rmsnorm  # noqa: E402,F401
import softmax  # noqa: E402,F401

import neuroncore_sim.nki.language as nl  # noqa: E402
from neuroncore_sim import nki  # noqa: E402


@nki.jit
def softmax_bwd(y, g):
    """dx = y * (g - sum(g * y)) per row, from the softmax output y and its gradient g."""
    dx = nl.ndarray(y.shape, dtype=y.dtype, buffer=nl.shared_hbm)
    yt, gt = nl.load(y), nl.load(g)
    dot = nl.sum(nl.multiply(gt, yt), axis=1, keepdims=True)
    nl.store(dx, value=nl.multiply(yt, nl.subtract(gt, dot)))
    return dx


@nki.jit
def swiglu(gate, up):
    """silu(gate) * up."""
    out = nl.ndarray(gate.shape, dtype=gate.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.multiply(nl.silu(nl.load(gate)), nl.load(up)))
    return out


@nki.jit
def swiglu_bwd(gate, up, g):
    """Gradients of silu(gate) * up: (g * up * silu'(gate), g * silu(gate))."""
    d_gate = nl.ndarray(gate.shape, dtype=gate.dtype, buffer=nl.shared_hbm)
    d_up = nl.ndarray(gate.shape, dtype=gate.dtype, buffer=nl.shared_hbm)
    gt, ut, gr = nl.load(gate), nl.load(up), nl.load(g)
    nl.store(d_gate, value=nl.multiply(nl.multiply(gr, ut), nl.silu_dx(gt)))
    nl.store(d_up, value=nl.multiply(gr, nl.silu(gt)))
    return d_gate, d_up
