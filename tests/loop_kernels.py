"""One body, load / exp / store, in two kinds of loop: a Python loop (unrolled by the tracer:
one iteration to the compiler, whose DMA triggers keep their order) and an ``nl.affine_range``
loop (independent iterations). Shared by the trigger-order and advice tests."""

from __future__ import annotations

import inspect

import neuroncore_sim.nki as nki
import neuroncore_sim.nki.language as nl


@nki.jit
def python_loop(x):
    """load / exp / store per leading index, in a Python loop."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in range(x.shape[0]):
        t = nl.load(x[i])
        nl.store(out[i], value=nl.exp(t))
    return out


@nki.jit
def affine_loop(x):
    """The same body in an affine_range loop."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(x.shape[0]):
        t = nl.load(x[i])
        nl.store(out[i], value=nl.exp(t))
    return out


def load_line(kernel) -> str:
    """"loop_kernels.py:LINE" of ``kernel``'s load."""
    lines, first = inspect.getsourcelines(kernel.func)
    return f"loop_kernels.py:{first + next(i for i, l in enumerate(lines) if 'nl.load' in l)}"
