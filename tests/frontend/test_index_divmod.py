"""Floor division and modulo of index expressions by positive integers (``i // K``, ``i % K``
on ``nl.arange`` values): exact over a split grid, usable as indices when each view axis walks
memory with one stride, clear errors otherwise."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import neuroncore_sim as ncs
from neuroncore_sim.errors import SimulatorError, UnsupportedError
from neuroncore_sim.frontend.index.index_expr import SplitExpr
import neuroncore_sim.nki.language as nl

RNG = np.random.default_rng(11)


def _values(e) -> np.ndarray:
    return e.values() if isinstance(e, SplitExpr) else np.broadcast_to(e.values(), e.shape)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 4), st.integers(1, 6), st.integers(-3, 3), st.integers(0, 9),
       st.integers(1, 12), st.integers(1, 6), st.integers(1, 5))
def test_divmod_is_exact_or_refused(a, n_factor, b, const, k, m, j_size):
    """Wherever // and % give an expression, its values are numpy's on the whole grid."""
    n = k * n_factor
    e = a * nl.arange(n)[:, None] + b * nl.arange(j_size)[None, :] + const
    want = np.broadcast_to(e.values(), e.shape)
    for op, ref in (("//", want // k), ("%", want % k)):
        try:
            got = e // k if op == "//" else e % k
        except UnsupportedError as err:
            assert "not one access pattern" in str(err)
            continue
        np.testing.assert_array_equal(_values(got), ref)
        # and once more: the result composes (another // by m, then + an int)
        try:
            again = got // m + 1
        except UnsupportedError:
            continue
        np.testing.assert_array_equal(_values(again), ref // m + 1)


def test_divisible_cases_are_plain_affine():
    i = nl.arange(16)[None, :]
    assert type(8 * i // 4).__name__ == "IndexExpr"
    np.testing.assert_array_equal((8 * i // 4).values(), 2 * np.arange(16)[None, :])
    np.testing.assert_array_equal(((i * 4 + 3) % 4).values(), np.full((1, 16), 3))


@pytest.mark.parametrize("space", ["hbm", "sbuf"])
def test_flattened_index_reads_and_writes_the_right_elements(space):
    K0, K1 = 4, 8

    def k(a):  # a: [16, K0, K1], read and written through one flat free axis
        out = nl.ndarray((16, K0 * K1), a.dtype, buffer=nl.shared_hbm)
        i_p = nl.arange(16)[:, None]
        i_f = nl.arange(K0 * K1)[None, :]
        if space == "hbm":
            t = nl.load(a[i_p, i_f // K1, i_f % K1])
        else:
            whole = nl.load(a)
            t = nl.copy(whole[i_p, i_f // K1, i_f % K1])
        back = nl.ndarray((16, K0, K1), a.dtype, buffer=nl.sbuf)
        back[i_p, i_f // K1, i_f % K1] = nl.multiply(t, 3.0)
        nl.store(out[i_p, i_f], value=back[i_p, i_f // K1, i_f % K1])
        return out

    a = RNG.random((16, K0, K1), dtype=np.float32)
    np.testing.assert_allclose(ncs.trace(k, a).outputs[0], 3 * a.reshape(16, -1), rtol=1e-6)


def test_flattened_partition_axis_of_an_hbm_tensor():
    """Rows of a [4, 4, 6] tensor read as 16 partitions: (i // 4, i % 4) walk one stride."""
    def k(a):
        out = nl.ndarray((16, 6), a.dtype, buffer=nl.shared_hbm)
        i = nl.arange(16)[:, None]
        j = nl.arange(6)[None, :]
        nl.store(out, value=nl.load(a[i // 4, i % 4, j]))
        return out

    a = RNG.random((4, 4, 6), dtype=np.float32)
    np.testing.assert_array_equal(ncs.trace(k, a).outputs[0], a.reshape(16, 6))


def _windows(a):
    i = nl.arange(16)[None, :]
    return nl.load(a[nl.arange(8)[:, None], (i // 2) * 4 + i % 2])  # BAD: pairs out of 4


def _line(k) -> str:
    src, start = inspect.getsourcelines(k)
    return f"test_index_divmod.py:{start + next(i for i, s in enumerate(src) if '# BAD' in s)}"


def _uneven(a):
    i = nl.arange(8)[None, :]
    return a[nl.arange(4)[:, None], i // 3]  # BAD: 3 does not divide 8


def _transposed(a):
    i_f = nl.arange(32)[None, :]
    return nl.load(a[nl.arange(4)[:, None], i_f % 8, i_f // 8])  # BAD: two strides in one axis


def _masked(a):
    i = nl.arange(8)[None, :]
    return nl.load(a, mask=(i // 2 < 2))  # BAD


@pytest.mark.parametrize("k,shape,message", [
    (_uneven, (4, 8), r"index expression // 3: not one access pattern"),
    (_transposed, (4, 8, 4), r"walks memory as 4 x stride 1, 8 x stride 4, not with one stride"),
    (_masked, (4, 8), r"masks, comparisons, / and iota need affine expressions"),
    (_windows, (8, 32), r"walks memory as 8 x stride 4, 2 x stride 1, not with one stride"),
])
def test_unrepresentable_divmod_is_a_clear_error(k, shape, message):
    with pytest.raises(SimulatorError, match=message) as info:
        ncs.trace(k, np.zeros(shape, np.float32))
    assert info.value.loc == _line(k)


def test_partitions_are_never_merged_with_free_elements():
    def k(a):  # a [32, 4] tile read as 128 "partitions": not one partition axis
        t = nl.load(a)
        i = nl.arange(128)[:, None]
        return nl.copy(t[i // 4, i % 4])  # BAD

    with pytest.raises(SimulatorError, match=r"axis 0 walks the partitions of t\d+ and other "
                       r"elements together") as info:
        ncs.trace(k, np.zeros((32, 4), np.float32))
    assert info.value.loc == _line(k)


@pytest.mark.parametrize("expr,message", [
    (lambda i: i + 1.5, r"index expression arithmetic: expected an int or an index expression, "
                        r"found 1.5"),
    (lambda i: 1.5 - i, r"found 1.5 \(float\)"),
    (lambda i: (i // 2) + 0.5, r"found 0.5 \(float\)"),
    (lambda i: i ** 2, r"only \+, -, \* by an integer"),
    (lambda i: i & 1, r"only \+, -, \* by an integer"),
    (lambda i: abs(i), r"only \+, -, \* by an integer"),
    (lambda i: i == 2.5, r"index comparison == 2.5: expected an integer bound"),
    (lambda i: i.foo, r"index expression .foo: expected shape or ndim"),
    (lambda i: nl.arange(2.5), r"nl.arange: expected 1 to 3 integers"),
    (lambda i: nl.mgrid[0:4:0], r"nl.mgrid: expected integer bounds and a nonzero step"),
])
def test_index_expression_misuse_is_a_simulator_error(expr, message):
    def k(a):
        expr(nl.arange(8)[None, :])

    with pytest.raises(SimulatorError, match=message):
        ncs.trace(k, np.zeros((2, 2), np.float32))


def test_fractional_bounds_round_like_integer_comparisons():
    i = nl.arange(8)[None, :]
    from neuroncore_sim.frontend.operands import mask_box
    for mask, cols in ((i < 2.5, (0, 3)), (i <= 2.5, (0, 3)), (i < 3.0, (0, 3)),
                       (i >= 2.5, (3, 8)), (i > 2.5, (3, 8)), (i > 3.0, (4, 8))):
        box, _, _ = mask_box(mask, (1, 8))
        assert box[1] == cols
    assert not hasattr(i, "foo")
