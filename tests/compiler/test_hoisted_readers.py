"""Readers of a loop-invariant repeat read the first result (neuroncore_sim/compiler/hoist.py,
``read_first_results``): the compiler computes ``nl.negative(m)`` once, so a ScalarE
activation that takes it as its bias in every iteration does not wait for VectorE to reach the
repeat in its in-order queue (behind the VectorE reduction of the previous iteration's
activation). The loop then times exactly as with the negation written before it; before, each activation
waited for the previous iteration's reduction (the VectorE <-> ScalarE handoff of AWS-style
attention loops)."""

from __future__ import annotations

import numpy as np

import neuroncore_sim as ncs
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl

from programs import AS_WRITTEN

R = 8


def invariant_bias(x, m):
    """sums[:, i] = row sums of exp(x[:, i] - m): -m is the same in every iteration."""
    out = nl.ndarray((128, R), dtype=x.dtype, buffer=nl.shared_hbm)
    xs, ms = nl.load(x), nl.load(m)
    sums = nl.ndarray((nl.par_dim(128), R), dtype=x.dtype, buffer=nl.sbuf)
    for i in nl.affine_range(R):
        nb = nl.negative(ms)  # (its own line: tiles of one line share a buffer ring)
        e = nisa.activation(op=nl.exp, data=xs[:, nl.ds(i * 128, 128)], bias=nb)
        sums[:, nl.ds(i, 1)] = nisa.tensor_reduce(op=nl.add, data=e, axis=[1], keepdims=True)
    nl.store(out, value=sums)
    return out


def hoisted_by_hand(x, m):
    """The same with the negation written before the loop."""
    out = nl.ndarray((128, R), dtype=x.dtype, buffer=nl.shared_hbm)
    xs, ms = nl.load(x), nl.load(m)
    sums = nl.ndarray((nl.par_dim(128), R), dtype=x.dtype, buffer=nl.sbuf)
    nb = nl.negative(ms)
    for i in nl.affine_range(R):
        e = nisa.activation(op=nl.exp, data=xs[:, nl.ds(i * 128, 128)], bias=nb)
        sums[:, nl.ds(i, 1)] = nisa.tensor_reduce(op=nl.add, data=e, axis=[1], keepdims=True)
    nl.store(out, value=sums)
    return out


def _run(kernel=invariant_bias):
    rng = np.random.default_rng(7)
    x = rng.random((128, R * 128)).astype(np.float32)
    m = rng.random((128, 1)).astype(np.float32)
    res = ncs.simulate(kernel, x, m, config=AS_WRITTEN)
    e = np.exp(x - m).reshape(128, R, 128)
    np.testing.assert_allclose(res.outputs[0], e.sum(axis=2), rtol=1e-4)
    return res


def _starts(res, engine, opcode):
    ev = res.events
    return ev[(ev.engine == engine) & (ev.opcode == opcode)].start_ns.sort_values().to_numpy()


def test_repeats_cost_nothing_and_order_nothing() -> None:
    res = _run()
    ev = res.events
    neg = ev[(ev.engine == "vector") & (ev.opcode == "tensor_scalar")]
    assert len(neg) == R and ((neg.end_ns - neg.start_ns) == 0).sum() == R - 1
    # the in-loop negation times exactly like the one the user hoisted by hand
    by_hand = _run(hoisted_by_hand)
    for engine, opcode in (("scalar", "activation"), ("vector", "tensor_reduce")):
        np.testing.assert_allclose(_starts(res, engine, opcode),
                                   _starts(by_hand, engine, opcode), atol=1e-6)
    assert res.latency_ns == by_hand.latency_ns


def test_first_negation_still_orders_its_readers() -> None:
    ev = _run().events
    neg = ev[(ev.engine == "vector") & (ev.opcode == "tensor_scalar")].sort_values("start_ns")
    act = ev[(ev.engine == "scalar") & (ev.opcode == "activation")].sort_values("start_ns")
    # the first activation reads the one computed negation: after it, plus the handoff
    assert act.start_ns.iloc[0] > neg.end_ns.iloc[0]
    assert act.waited_on.iloc[0].startswith("vector")
