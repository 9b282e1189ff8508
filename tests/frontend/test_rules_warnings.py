"""Rules checked on the whole launch or on values (issue 4): SBUF / PSUM capacity in
functional-only runs, reads of memory nothing wrote, activation inputs outside the documented
range, and loop-carried dependencies inside ``nl.affine_range``. Each bad kernel gives the exact
error or warning at its ``# BAD`` line; the nearest correct kernel runs without any.
"""

from __future__ import annotations

import inspect
import os
import re
import warnings
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import neuroncore_sim as ncs
from neuroncore_sim.values import checks
from neuroncore_sim import nki
from neuroncore_sim.errors import ActivationRangeWarning, CapacityError, SpillWarning, \
    LoopDependencyWarning, SimulatorWarning, UninitializedReadWarning
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl
from event_listings import load_sample

F32 = np.float32
HERE = os.path.basename(__file__)
RNG = np.random.default_rng(4)


def line(kernel, mark: str = "# BAD") -> str:
    """``file.py:LINE`` of the first kernel line containing ``mark``."""
    src, start = inspect.getsourcelines(kernel)
    return f"{HERE}:{start + next(i for i, s in enumerate(src) if mark in s)}"


def expect_warnings(cls, message: str, kernel, *args, count: int = 1, **kw):
    """A functional trace of ``kernel`` warns ``count`` times, each a ``cls`` at the ``# BAD``
    line matching ``message``."""
    with pytest.warns(SimulatorWarning) as record:
        launch = ncs.trace(kernel, *args, **kw)
    found = [w.message for w in record if isinstance(w.message, SimulatorWarning)]
    assert len(found) == count == len(launch.warnings), [str(w) for w in found]
    for w in found:
        assert type(w) is cls
        assert str(w).startswith(f"{line(kernel)}: "), str(w)
        assert re.search(message, str(w)), str(w)
    return launch


def clean(kernel, *args, **kw):
    """The kernel traces with no warning at all."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        launch = ncs.trace(kernel, *args, **kw)
    assert launch.warnings == []
    return launch


# --- capacity --------------------------------------------------------------------------------
def _sbuf_kernel(cols_b):
    def k():
        a = nl.zeros((128, 16384), nl.float32)  # 64 KiB per partition
        b = nl.zeros((128, cols_b), nl.float32)  # BAD  (the largest allocation site)
        nisa.tensor_tensor(a[:, 0:8], b[:, 0:8], nl.add)
    return k


def test_sbuf_capacity_is_checked_without_timing():
    bad, good = _sbuf_kernel(32768), _sbuf_kernel(24576)  # 64 + 128 KiB vs 64 + 96 KiB
    # one instruction reads both tiles: they must be in SBUF together, so no spill helps
    msg = (r"SBUF capacity: tensor_tensor needs its tiles in SBUF at once \(spilling cannot "
           r"help\); expected at most 180224 bytes per partition, found 196640; tiles allocated "
           r"at: " + re.escape(line(bad)) + r" \(131072 B\)")
    for run in (lambda k: ncs.simulate(k, timing=False), nki.simulate_kernel,
                lambda k: ncs.simulate(k, functional=False)):  # one rule, with or without timing
        with pytest.raises(CapacityError, match=msg) as info:
            run(bad)
        assert info.value.loc == line(bad, "nisa.tensor_tensor")
    ncs.simulate(good, timing=False)
    nki.simulate_kernel(good)


def _psum_kernel(n):
    def k():
        accs = [nl.zeros((128, 512), nl.float32, buffer=nl.psum) for _ in range(n)]  # BAD
        for acc in accs:  # computed values (a tile holding only zeros is rematerialised)
            acc[...] = nl.add(acc, 1.0)
        for acc in accs:
            nl.copy(acc)
    return k


def test_psum_over_subscription_spills_to_sbuf_also_without_timing():
    bad, good = _psum_kernel(9), _psum_kernel(8)  # 9 live one-bank tiles; 8 banks
    for run in (nki.simulate_kernel, lambda k: ncs.simulate(k)):
        with pytest.warns(SpillWarning, match=re.escape(line(bad)) + r": PSUM over-subscribed: "
                          r"tiles live at once need up to 18432 bytes per partition, 16384 "
                          r"available; the compiler spills to SBUF 262144 bytes"):
            run(bad)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nki.simulate_kernel(good)


# --- reads of memory nothing wrote -------------------------------------------------------------
def test_reading_a_partly_written_tile_warns():
    def bad(a):
        out = nl.ndarray((128, 64), nl.float32, buffer=nl.shared_hbm)
        t = nl.ndarray((128, 64), nl.float32)
        t[:, 0:32] = nl.load(a[:, 0:32])
        nl.store(out, value=nl.exp(t))  # BAD
        return out

    def good(a):
        out = nl.ndarray((128, 64), nl.float32, buffer=nl.shared_hbm)
        t = nl.ndarray((128, 64), nl.float32)
        t[:, 0:32] = nl.load(a[:, 0:32])
        t[:, 32:64] = nl.load(a[:, 32:64])
        nl.store(out, value=nl.exp(t))
        return out

    a = RNG.random((128, 64), dtype=F32)
    # exp keeps the garbage in the elements it came from; the store of them warns, naming the
    # first read of memory nothing wrote
    launch = expect_warnings(
        UninitializedReadWarning, r"dma_copy src: reads 4096 element\(s\) of t1 \(allocated "
        rf"at {HERE}:\d+\) that hold garbage computed from memory nothing wrote \(first read "
        rf"at {HERE}:\d+: activation data, 4096 element\(s\) of t0 \(allocated at {HERE}:\d+\)\), "
        r"first at operand index \[0, 32\]; expected written memory, found uninitialised "
        r"memory \(garbage on the hardware, NaN here\)", bad, a)
    assert np.isnan(launch.outputs[0][:, 32:]).all()  # NaN, like hardware garbage
    np.testing.assert_allclose(clean(good, a).outputs[0], np.exp(a), rtol=1e-6)


def test_accumulating_into_fresh_psum_starts_the_group_but_reading_it_warns():
    """``acc += nc_matmul(...)`` into a PSUM tile nothing wrote starts its accumulation group
    (AWS's attention tutorials do this; the compiler sets the first matmul's accumulate flag
    off): no warning, the values are the product. Reading the fresh tile otherwise warns."""
    def fresh(a, b):
        acc = nl.ndarray((64, 64), nl.float32, buffer=nl.psum)
        for _ in nl.sequential_range(2):
            acc += nisa.nc_matmul(nl.load(a), nl.load(b))
        out = nl.ndarray((64, 64), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, nl.copy(acc))
        return out

    def bad(a):
        acc = nl.ndarray((64, 64), nl.float32, buffer=nl.psum)
        out = nl.ndarray((64, 64), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, nl.copy(acc))  # BAD
        return out

    a = RNG.random((32, 64), dtype=F32)
    for functional in (True, "reference"):
        out = clean(fresh, a, a, functional=functional).outputs[0]
        np.testing.assert_allclose(out, 2 * (a.T @ a), rtol=1e-5)
    expect_warnings(UninitializedReadWarning, r"dma_copy src: reads 4096 element\(s\) .* "
                    r"\(first read at .*: tensor_copy src, 4096 element\(s\)", bad, a)


def test_integer_tiles_start_at_zero_and_warn_too():
    def bad():
        t = nl.ndarray((8, 8), nl.int32)
        out = nl.ndarray((8, 8), dtype=nl.int32, buffer=nl.shared_hbm)
        nl.store(out, nl.add(t, 1))  # BAD
        return out

    def good():
        t = nl.zeros((8, 8), nl.int32)
        out = nl.ndarray((8, 8), dtype=nl.int32, buffer=nl.shared_hbm)
        nl.store(out, nl.add(t, 1))
        return out

    expect_warnings(UninitializedReadWarning, r"found uninitialised memory \(garbage on the "
                    r"hardware, 0 here\)", bad)
    clean(good)


def test_unwritten_reads_warn_once_per_line_and_follow_masks():
    def bad(a):
        out = nl.ndarray((3, 128, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.ndarray((128, 8), nl.float32)
        i_p = nl.arange(128)[:, None]
        t[...] = nl.load(a, mask=(i_p < 64))  # rows 0..63 only
        for k in nl.affine_range(3):
            nl.store(out[k], t)  # BAD  (rows 64..127 unwritten; one warning for the three)
        return out

    def good(a):
        out = nl.ndarray((3, 64, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.ndarray((128, 8), nl.float32)
        i_p = nl.arange(128)[:, None]
        t[...] = nl.load(a, mask=(i_p < 64))
        for k in nl.affine_range(3):
            nl.store(out[k], t[0:64])
        return out

    expect_warnings(UninitializedReadWarning, r"reads 512 element\(s\) .* first at operand "
                    r"index \[64, 0\]", bad, np.ones((128, 8), F32))
    clean(good, np.ones((128, 8), F32))


def ragged_rows(a):
    """The ragged last tile of AWS's softmax tutorial: loaded under a mask, computed on all 128
    partitions (the partitions past the last row hold garbage), stored under the mask."""
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    ix, iy = nl.arange(128)[:, None], nl.arange(a.shape[1])[None, :]
    rows = a.shape[0]
    for i in nl.affine_range((rows + 127) // 128):
        keep = (i * 128 + ix < rows)
        t = nl.load(a[i * 128 + ix, iy], mask=keep)
        e = nl.exp(nl.subtract(t, nl.max(t, axis=[1], keepdims=True, mask=keep), mask=keep))
        nl.store(out[i * 128 + ix, iy], value=e / nl.sum(e, axis=[1]), mask=keep)
    return out


def garbage_into_matmul(a):
    out = nl.ndarray((64, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    ix = nl.arange(128)[:, None]
    t = nl.load(a, mask=(ix < 100))  # partitions 100..127 unwritten
    e = nl.exp(t)  # computes on them: not reported (partition by partition)
    nl.store(out, nl.copy(nisa.nc_matmul(e, e)))  # BAD: contracts over every partition
    return out


def test_garbage_never_stored_is_silent_and_garbage_that_reaches_a_result_warns_once():
    """A partition-local instruction reading memory nothing wrote passes the garbage on to the
    same partitions of its output, silently; a read that is not partition by partition (a
    store, a matmul) warns, naming where the garbage was first read (docs/frontend.md)."""
    a = RNG.random((250, 64), dtype=F32)
    want = np.exp(a - a.max(axis=1, keepdims=True))
    want /= want.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(clean(ragged_rows, a).outputs[0], want, rtol=1e-5)
    launch = expect_warnings(
        UninitializedReadWarning, r"nc_matmul stationary: reads 1792 element\(s\) of t1 .* that "
        rf"hold garbage computed from memory nothing wrote \(first read at {HERE}:\d+: "
        r"activation data, 1792 element\(s\) of t0 ", garbage_into_matmul,
        RNG.random((128, 64), dtype=F32))
    assert np.isnan(launch.outputs[0]).all()


# --- activation input ranges --------------------------------------------------------------------
def test_activation_input_outside_the_documented_range_warns():
    def bad(a):
        for _ in nl.affine_range(2):
            nl.log(nl.load(a))  # BAD

    def good(a):
        nl.log(nl.load(a[:, 1:4]))

    a = np.array([[0.0, 0.5, 1.0, 4.0]] * 8, F32)
    expect_warnings(ActivationRangeWarning, r"activation 'log': input outside the documented "
                    r"valid range; expected \[5.42101e-20, 1.84467e\+19\], found min 0, max 4 "
                    r"\(the hardware gives invalid results there\)", bad, a)
    clean(good, a)


def test_activation_range_uses_scale_and_bias_and_magnitudes():
    def bad(a):
        nisa.activation(nl.sin, nl.load(a), scale=4.0)  # BAD  (4 * 1.0 > pi)

    def bad_reciprocal(a):
        nisa.activation(nl.reciprocal, nl.load(a), scale=1e-20)  # BAD

    def good(a):
        nisa.activation(nl.sin, nl.load(a), scale=3.0)
        nisa.activation(nl.reciprocal, nisa.activation(nl.negative, nl.load(a)))

    a = np.linspace(0.25, 1.0, 32, dtype=F32).reshape(8, 4)
    expect_warnings(ActivationRangeWarning, r"'sin': input .* found min 1, max 4 \(the", bad, a)
    expect_warnings(ActivationRangeWarning, r"'reciprocal': \|input\| outside .* expected "
                    r"\[2.27374e-13, 4.39805e\+12\], found min 2.5e-21, max 1e-20", bad_reciprocal,
                    a)
    clean(good, a)


# --- loop-carried dependencies in affine_range ------------------------------------------------
def test_affine_range_loop_carried_dependency_warns():
    def bad(a):
        state = nl.zeros((128, 64), nl.float32)
        for i in nl.affine_range(4):
            t = nl.load(a[i * 128:(i + 1) * 128])
            x = nl.exp(state)  # BAD  (reads what the previous iteration stored in state)
            state[...] = nl.subtract(x, t)

    def good(a):  # the same computation, declared sequential
        state = nl.zeros((128, 64), nl.float32)
        for i in nl.sequential_range(4):
            t = nl.load(a[i * 128:(i + 1) * 128])
            x = nl.exp(state)
            state[...] = nl.subtract(x, t)

    a = RNG.random((512, 64), dtype=F32)
    loop = line(bad, "affine_range")
    expect_warnings(LoopDependencyWarning, rf"activation data: iteration 1 of the "
                    rf"nl.affine_range loop at {loop} reads t0 rows 0..127, written by iteration "
                    rf"0 \(tensor_tensor at {line(bad, 'subtract')}\); expected independent "
                    r"iterations .* use nl.sequential_range for this loop", bad, a,
                    functional=False)
    clean(good, a)


@pytest.mark.parametrize("directive", ["skip_middle_end_transformations", "no_reorder"])
@pytest.mark.parametrize("outer", [False, True])
def test_kernels_compiled_in_their_own_order_do_not_warn(directive, outer):
    # Hand-pipelined kernels (AWS's pipelined attention) carry values across affine iterations
    # on purpose and tell the compiler not to reorder: nothing to warn about.
    def body(a):
        state = nl.zeros((128, 64), nl.float32)
        for i in nl.affine_range(4):
            t = nl.load(a[i * 128:(i + 1) * 128])
            state[...] = nl.subtract(nl.exp(state), t)

    mark = getattr(nki.compiler, directive)
    kernel = mark(nki.jit(body)) if outer else nki.jit(mark(body))
    clean(kernel, RNG.random((512, 64), dtype=F32))


def test_affine_range_dependency_across_an_inner_loop_and_an_hbm_scratch():
    def rewritten(a):
        scratch = nl.ndarray((2, 128, 8), nl.float32, buffer=nl.hbm)
        for i in nl.affine_range(2):
            for j in nl.affine_range(2):
                nl.store(scratch[j], value=nl.load(a[j]))
            if i == 1:
                nl.load(scratch[1])  # the store of this very iteration i is the latest writer

    def good(a):
        scratch = nl.ndarray((2, 128, 8), nl.float32, buffer=nl.hbm)
        for i in nl.affine_range(2):
            nl.store(scratch[i], value=nl.load(a[i]))
            nl.load(scratch[i])

    a = RNG.random((2, 128, 8), dtype=F32)
    clean(rewritten, a)
    clean(good, a)

    def carried(a):
        scratch = nl.ndarray((2, 128, 8), nl.float32, buffer=nl.hbm)
        for i in nl.affine_range(2):
            nl.store(scratch[i], value=nl.load(a[i]))
            nl.load(scratch[0])  # BAD  (iteration 1 reads iteration 0's store)

    expect_warnings(LoopDependencyWarning, r"dma_copy src: iteration 1 .* reads hbm0 rows 0..0, written by "
                    r"iteration 0",
                    carried, a)


def test_accumulation_idioms_in_affine_range_are_not_reported():
    def k(a, b):
        acc = nl.zeros((64, 64), nl.float32, buffer=nl.psum)
        total = nl.zeros((128, 64), nl.float32)
        peak = nl.full((128, 64), -1e30, nl.float32)
        chain = nl.zeros((128, 64), nl.float32)
        for i in nl.affine_range(4):
            st = nl.load(a[i * 128:(i + 1) * 128])
            mv = nl.load(b[i * 128:(i + 1) * 128])
            acc += nisa.nc_matmul(st, mv)            # PSUM accumulation
            total += mv                              # SBUF += (nl.loop_reduce docs)
            total += st                              # a second += line into the same tile
            peak[...] = nl.maximum(peak, mv)         # another associative in-place reduction
            chain = nisa.tensor_tensor(chain, mv, nl.add)  # rebinding chain of one line
            tmp = nl.ndarray((128, 64), nl.float32)  # declared in the loop: private
            tmp[...] = nl.exp(mv)
            nl.copy(tmp)
        for t in (acc, total, peak, chain):
            nl.copy(t)

    a = RNG.random((512, 64), dtype=F32)
    b = RNG.random((512, 64), dtype=F32)
    launch = clean(k, a, b)
    assert {ins.loops[0][0] for ins in launch.program.instructions if ins.loops} == {0}
    assert len(launch.program.loops) == 1


def test_the_sample_blocked_matmul_has_no_loop_carried_dependency():
    sample = load_sample("matmul_blocked")  # by file: `import kernels` may be the HF library
    clean(sample.kernel, **sample.example_inputs())



RECT = st.tuples(st.integers(0, 15), st.integers(1, 16), st.integers(0, 15),
                 st.integers(1, 16)).map(lambda r: (r[0], min(16, r[0] + r[1]), r[2],
                                                    min(16, r[2] + r[3])))


@settings(max_examples=40, deadline=None)
@given(writes=st.lists(RECT, max_size=4), read=RECT, batch=st.sampled_from([1, 2, 256]))
def test_unwritten_read_warning_matches_the_written_elements(writes, read, batch):
    """Property: a read warns exactly when some element it reads was not written before
    (whether partial writes are marked one by one, in batches, or at the read)."""
    with mock.patch.object(checks, "_PENDING_WRITES", batch):
        _unwritten_read_property(writes, read)


def _unwritten_read_property(writes, read):
    def k(a):
        out = nl.ndarray((16, 16), nl.float32, buffer=nl.shared_hbm)
        t = nl.ndarray((16, 16), nl.float32)
        for r0, r1, c0, c1 in writes:
            t[r0:r1, c0:c1] = nl.load(a[r0:r1, c0:c1])
        r0, r1, c0, c1 = read
        nl.store(out[r0:r1, c0:c1], value=t[r0:r1, c0:c1])

    written = np.zeros((16, 16), bool)
    for r0, r1, c0, c1 in writes:
        written[r0:r1, c0:c1] = True
    r0, r1, c0, c1 = read
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        launch = ncs.trace(k, np.ones((16, 16), F32))
    found = [w for w in launch.warnings if "uninitialised memory" in str(w)]
    assert bool(found) == (not written[r0:r1, c0:c1].all()), launch.warnings


@settings(max_examples=60, deadline=None)
@given(body=st.lists(st.tuples(st.booleans(), RECT), min_size=1, max_size=5))
def test_loop_dependency_warning_matches_the_latest_writers(body):
    """Property: iteration 1 of an affine loop warns exactly when one of its reads touches an
    element whose latest writer is iteration 0 (per-element reference)."""
    def k(a):
        out = nl.ndarray((16, 16), nl.float32, buffer=nl.shared_hbm)
        t = nl.ndarray((16, 16), nl.float32)
        for _ in nl.affine_range(2):
            for is_write, (r0, r1, c0, c1) in body:
                if is_write:
                    t[r0:r1, c0:c1] = nl.load(a[r0:r1, c0:c1])
                else:
                    nl.store(out[r0:r1, c0:c1], value=t[r0:r1, c0:c1])

    last = np.full((16, 16), -1)
    carried = False
    for it in range(2):
        for is_write, (r0, r1, c0, c1) in body:
            if is_write:
                last[r0:r1, c0:c1] = it
            elif it == 1 and (last[r0:r1, c0:c1] == 0).any():
                carried = True
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        launch = ncs.trace(k, np.ones((16, 16), F32), functional=False)
    found = [w for w in launch.warnings if "nl.affine_range loop" in str(w)]
    assert bool(found) == carried, (body, launch.warnings)


def test_loop_check_compares_strided_accesses_element_by_element():
    def own_columns(a):
        t = nl.ndarray((128, 8), nl.float32)
        for i in nl.affine_range(2):
            t[:, i::2] = nl.load(a[:, i::2])  # strided: columns i, i+2, ...
            nl.exp(t[:, i::2])

    def other_columns(a):
        t = nl.ndarray((128, 8), nl.float32)
        for i in nl.affine_range(2):
            t[:, i::2] = nl.load(a[:, i::2])
            nl.exp(t[:, (1 - i)::2])  # BAD  (iteration 1 reads iteration 0's columns)

    a = np.ones((128, 8), F32)
    clean(own_columns, a, functional=False)
    expect_warnings(LoopDependencyWarning, r"activation data: iteration 1", other_columns, a,
                    functional=False)


def test_affine_range_tags_iterations_and_restores_after_break():
    def k(a):
        t = nl.load(a)
        loop = nl.affine_range(3)
        assert len(loop) == 3
        for i in loop:
            for j in nl.affine_range(2):
                nl.exp(t)
                break  # leaving the inner loop ends its tagging
            nl.exp(t)
        nl.exp(t)

    launch = ncs.trace(k, np.ones((8, 8), F32), functional=False)
    tags = [ins.loops for ins in launch.program.instructions if ins.opcode.value == "activation"]
    assert tags == [((0, 0), (1, 0)), ((0, 0),), ((0, 1), (2, 0)), ((0, 1),),
                    ((0, 2), (3, 0)), ((0, 2),), ()]
    assert [str(loc).split(":")[0] for loc in launch.program.loops] == [HERE] * 4
