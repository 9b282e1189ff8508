"""A loop-invariant repeat (compiler/hoist.py) under SBUF pressure: the compiler computes it once,
before it allocates and spills, so the repeats read nothing. A tile read only by the invariant
instruction is then dead after its first use: it is never spilled and reloaded to feed a repeat,
and a spill reload of a tile the invariant instruction reads (it restores the same values) does
not make the instruction computed again (issue 15: AWS's fused Mamba v2 at seq 8192 reloaded
`u` for such a repeat, 4 MiB per state and channel tile)."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import neuroncore_sim as ncs
from neuroncore_sim.errors import SpillWarning
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl

STEPS = 4
F = 8192  # fp32: 32 KiB per partition per tile; six such tiles are more than SBUF holds


def pressured(x_in, y_in, c_in):
    """acc = sum_i exp(c[i] * x) * (x * y): x * y is the same in every iteration."""
    out = nl.ndarray((128, F), dtype=x_in.dtype, buffer=nl.shared_hbm)
    acc = nl.zeros((nl.par_dim(128), F), dtype=x_in.dtype)
    x = nl.load(x_in)
    y = nl.load(y_in)  # read by the invariant product only
    for i in nl.affine_range(STEPS):
        e = nisa.activation(op=nl.exp, data=x, scale=c_in[i])
        prod = nisa.tensor_tensor(x, y, op=nl.multiply)
        t = nisa.tensor_tensor(prod, e, op=nl.multiply)
        acc[...] += t
    nl.store(out, value=acc)
    return out


def pressured_more(x_in, y_in, w_in, c_in):
    """The same times w, a third tile live through the loop: now something must spill."""
    out = nl.ndarray((128, F), dtype=x_in.dtype, buffer=nl.shared_hbm)
    acc = nl.zeros((nl.par_dim(128), F), dtype=x_in.dtype)
    x = nl.load(x_in)
    y = nl.load(y_in)
    w = nl.load(w_in)
    for i in nl.affine_range(STEPS):
        e = nisa.activation(op=nl.exp, data=x, scale=c_in[i])
        prod = nisa.tensor_tensor(x, y, op=nl.multiply)
        t = nisa.tensor_tensor(prod, e, op=nl.multiply)
        acc[...] += nisa.tensor_tensor(t, w, op=nl.multiply)
    nl.store(out, value=acc)
    return out


def _line(fn, text: str) -> str:
    src, first = inspect.getsourcelines(fn)
    n = next(i for i, line in enumerate(src) if text in line)
    return f"{__name__.rsplit('.', 1)[-1]}.py:{first + n}"


def _inputs():
    rng = np.random.default_rng(7)
    return (rng.random((128, F), dtype=np.float32) * 0.1,
            rng.random((128, F), dtype=np.float32),
            (rng.random(STEPS) * 0.5).astype(np.float32).tolist())


@pytest.fixture(scope="module")
def result():
    x, y, c = _inputs()
    return ncs.simulate(pressured, x, y, c)


def test_values_are_unchanged(result) -> None:
    x, y, c = _inputs()
    want = sum(np.exp(x * s) * (x * y) for s in c)
    np.testing.assert_allclose(result.outputs[0], want, rtol=1e-5)


def test_the_invariant_product_is_computed_once_despite_spills(result) -> None:
    ev = result.events
    prod = ev[(ev.engine == "vector") & (ev.opcode == "tensor_tensor")
              & (ev.source == _line(pressured, "prod = "))]
    assert len(prod) == STEPS
    assert ((prod.end_ns - prod.start_ns) > 0).sum() == 1


def test_an_input_read_only_by_the_repeats_is_not_kept_live(result) -> None:
    # Kept live for the repeats, y would make six 32 KiB tiles live at `t` (x, y, acc, e, prod,
    # t: 192 KiB, more than the 176 KiB usable) and be spilled and reloaded every iteration;
    # dead after its first use, five fit and nothing spills.
    sbuf = result.summary()["memory"]["sbuf"]
    assert sbuf["spill_reload_bytes"] == 0, sbuf["spill_sites"]
    assert sbuf["spill_save_bytes"] == 0


def test_a_reloaded_input_does_not_undo_the_hoist() -> None:
    x, y, c = _inputs()
    w = np.random.default_rng(8).random((128, F), dtype=np.float32)
    with pytest.warns(SpillWarning):
        res = ncs.simulate(pressured_more, x, y, w, c)
    want = sum(np.exp(x * s) * (x * y) * w for s in c)
    np.testing.assert_allclose(res.outputs[0], want, rtol=1e-5)
    sbuf = res.summary()["memory"]["sbuf"]
    assert _line(pressured_more, "x = nl.load") in sbuf["spill_sites"]  # x is reloaded...
    ev = res.events
    prod = ev[(ev.engine == "vector") & (ev.source == _line(pressured_more, "prod = "))]
    assert ((prod.end_ns - prod.start_ns) > 0).sum() == 1  # ...yet x * y is computed once
