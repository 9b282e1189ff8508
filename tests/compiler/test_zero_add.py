"""The compile stage's ``fold_zero_adds`` pass: an addition to a memset's zeros is a copy."""

from __future__ import annotations

import numpy as np

import neuroncore_sim as ncs
import neuroncore_sim.nki as nki
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl
import neuroncore_sim.nki.typing as nt
from tests.compiler.test_passes import listing, options, program_of

PLAIN = dict(balance_engines=False, reorder=False, vectorize=False)
TT, RED, COPY = (("vector", op, "") for op in ("tensor_tensor", "tensor_reduce", "tensor_copy"))


@nki.jit
def sums_into_zeroed_psum(img, filt):
    """A 1-D convolution summing each [128, 3] product into one column of a zeroed PSUM tile."""
    out = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.shared_hbm)
    x, f = nl.load(img), nl.load(filt)
    i_p, i_f = nl.arange(128)[:, None], nl.arange(3)[None, :]
    acc = nl.zeros((128, 8), dtype=nl.float32, buffer=nl.psum)
    for o in nl.affine_range(8):
        prod = nisa.tensor_tensor(x[i_p, i_f + o], f, op=np.multiply)
        acc[i_p, o] += nisa.tensor_reduce(np.add, prod, axis=[1], keepdims=True)
    nl.store(out, nisa.tensor_copy(acc))
    return out


def test_an_add_to_zeros_becomes_a_copy_folded_into_its_producer():
    img = np.random.default_rng(5).standard_normal((128, 10)).astype(np.float32)
    filt = np.random.default_rng(6).standard_normal((128, 3)).astype(np.float32)
    prog = program_of(sums_into_zeroed_psum, img, filt)
    off = listing(prog, options(fold_zero_adds=False, **PLAIN))
    on = listing(prog, options(**PLAIN))
    assert off.count(TT) == 16 and off.count(RED) == 8  # a product, a sum, an add per column
    assert on.count(TT) == 8 and on.count(RED) == 8 and on.count(COPY) == 1  # the adds are gone
    # without copy folding the adds are copies, still there
    assert listing(prog, options(fold_copies=False, **PLAIN)).count(COPY) == 9
    res = ncs.simulate(sums_into_zeroed_psum, img, filt)  # values as the kernel wrote them
    want = np.stack([(img[:, o:o + 3] * filt).sum(axis=1) for o in range(8)], axis=1)
    np.testing.assert_allclose(res.outputs[0], want, rtol=1e-5, atol=1e-5)


@nki.jit
def accumulate_twice(x, y, z):
    """Two products added into one zeroed tile, and a third into a column written before."""
    out = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.zeros((128, 8), dtype=nl.float32, buffer=nl.sbuf)
    a, b, c = nl.load(x), nl.load(y), nl.load(z)
    acc[:, 0:4] += nisa.tensor_tensor(a, b, op=np.multiply)  # zeros: a copy
    acc[:, 0:4] += nisa.tensor_tensor(a, c, op=np.multiply)  # no longer zeros: an add
    acc[0:64, 4:8] = nisa.tensor_tensor(a[0:64, :], c[0:64, :], op=np.multiply)
    acc[64:128, 4:8] += nisa.tensor_tensor(a[64:128, :], b[64:128, :], op=np.multiply)
    nl.store(out, acc)  # (the last add: other rows of its columns were written, so it stays)
    return out


def test_only_an_add_to_untouched_zeros_is_a_copy():
    args = [np.random.default_rng(s).standard_normal((128, 4)).astype(np.float32)
            for s in (7, 8, 9)]
    prog = program_of(accumulate_twice, *args)
    off = listing(prog, options(fold_zero_adds=False, **PLAIN))
    on = listing(prog, options(**PLAIN))
    assert off.count(TT) == 7  # four products, three adds
    assert on.count(TT) == 6 and COPY not in on  # the first add went into its product
    res = ncs.simulate(accumulate_twice, *args)
    a, b, c = args
    want = np.concatenate([a * b + a * c, np.concatenate([a[:64] * c[:64], a[64:] * b[64:]])],
                          axis=1)
    np.testing.assert_allclose(res.outputs[0], want, rtol=1e-5)


@nki.jit
def accumulate_over_a_loop(x, y):
    """Four products accumulated into one zeroed tile by one line of an affine_range loop."""
    out = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.zeros((128, 4), dtype=nl.float32, buffer=nl.sbuf)
    b = nl.load(y)
    for s in nl.affine_range(4):
        acc += nisa.tensor_tensor(nl.load(x[s]), b, op=np.multiply)
    nl.store(out, acc)
    return out


def test_a_loop_whose_later_iterations_add_to_nonzero_keeps_all_its_adds():
    x = np.random.default_rng(10).standard_normal((4, 128, 4)).astype(np.float32)
    y = np.random.default_rng(11).standard_normal((128, 4)).astype(np.float32)
    prog = program_of(accumulate_over_a_loop, x, y)
    assert listing(prog, options(**PLAIN)) == listing(prog, options(fold_zero_adds=False,
                                                                     **PLAIN))
    assert listing(prog, options(**PLAIN)).count(TT) == 8  # four products, four adds
    res = ncs.simulate(accumulate_over_a_loop, x, y)
    np.testing.assert_allclose(res.outputs[0], (x * y).sum(axis=0), rtol=1e-5)


def test_switching_the_pass_off_keeps_the_timing_of_the_adds():
    prog_args = (nt.tensor[[128, 10], nl.float32], nt.tensor[[128, 3], nl.float32])
    prog = program_of(sums_into_zeroed_psum, *prog_args)
    on = ncs.simulate(sums_into_zeroed_psum, *prog_args, functional=False,
                      config=options(**PLAIN))
    off = ncs.simulate(sums_into_zeroed_psum, *prog_args, functional=False,
                       config=options(fold_zero_adds=False, **PLAIN))
    assert len(off.events) - len(on.events) == 8 == len(prog.instructions) - len(
        listing(prog, options(**PLAIN)))
    assert on.latency_ns < off.latency_ns
