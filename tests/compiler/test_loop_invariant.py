"""Loop-invariant compute instructions cost once (neuroncore_sim/compiler/hoist.py): a VectorE
product of two tiles loaded outside an affine loop, repeated in every iteration, takes VectorE
time only in the first; a repeat whose input changed in between, or whose loop differs, pays."""

from __future__ import annotations

import numpy as np

import neuroncore_sim as ncs
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl

REPEATS = 8


def invariant_product(a, b, c):
    """out[i] = a * b + c[i]: a * b is the same in every iteration."""
    out = nl.ndarray((REPEATS, 128, 512), dtype=a.dtype, buffer=nl.shared_hbm)
    x, y = nl.load(a), nl.load(b)
    for i in nl.affine_range(REPEATS):
        z = nl.load(c[i])
        prod = nisa.tensor_tensor(x, y, op=nl.multiply)
        nl.store(out[i], value=nisa.tensor_tensor(prod, z, op=nl.add))
    return out


def changing_product(a, b, c):
    """The same, but x is updated in place each iteration: a * b is not invariant."""
    out = nl.ndarray((REPEATS, 128, 512), dtype=a.dtype, buffer=nl.shared_hbm)
    x, y = nl.load(a), nl.load(b)
    for i in nl.sequential_range(REPEATS):
        z = nl.load(c[i])
        prod = nisa.tensor_tensor(x, y, op=nl.multiply)
        x[...] = nisa.tensor_tensor(x, z, op=nl.add)
        nl.store(out[i], value=prod)
    return out


def _inputs():
    rng = np.random.default_rng(4)
    return (rng.random((128, 512)).astype(np.float32), rng.random((128, 512)).astype(np.float32),
            rng.random((REPEATS, 128, 512)).astype(np.float32))


def _vector_busy(res, opcode="tensor_tensor"):
    ev = res.events
    ev = ev[(ev.engine == "vector") & (ev.opcode == opcode)]
    return (ev.end_ns - ev.start_ns).to_numpy()


def test_invariant_product_is_computed_once() -> None:
    a, b, c = _inputs()
    res = ncs.simulate(invariant_product, a, b, c)
    np.testing.assert_allclose(res.outputs[0], a * b + c, rtol=1e-6)
    busy = _vector_busy(res)
    two_n = 1024 / 1.12  # fp32 SBUF + SBUF: 2N cycles
    assert (busy > 0).sum() == REPEATS + 1  # the product once, the add every iteration
    assert (busy == 0).sum() == REPEATS - 1
    assert busy.max() >= two_n


def test_product_of_a_changing_input_is_recomputed() -> None:
    a, b, c = _inputs()
    res = ncs.simulate(changing_product, a, b, c)
    x, want = a.copy(), []
    for i in range(REPEATS):
        want.append(x * b)
        x = x + c[i]
    np.testing.assert_allclose(res.outputs[0], np.stack(want), rtol=1e-6)
    assert (_vector_busy(res) > 0).all()
