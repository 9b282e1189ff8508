"""NKI kernels in JAX programs (neuroncore_sim.frameworks.jax_ops): ``kernel[grid](a, b)`` and
``nki_call`` with jax arrays inside ``jax.jit`` on the CPU, ``jax.custom_vjp`` with NKI forward
and backward kernels under ``jax.grad``, each checked against jax's own ops; and the misuses
that get a SimulatorError. Skipped where jax is missing (it is in the ``test`` extra)."""

from __future__ import annotations

import numpy as np
import pytest

import neuroncore_sim.nki.language as nl
from neuroncore_sim import nki
from neuroncore_sim.errors import KernelError, SimulatorError
from neuroncore_sim.frameworks import nki_call

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")


@nki.jit
def add_tiles(a, b):
    """c = a + b over a grid of [128, 512] tiles (the SDK guide's example)."""
    c = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    ix = nl.program_id(0) * 128 + nl.arange(128)[:, None]
    iy = nl.program_id(1) * 512 + nl.arange(512)[None, :]
    nl.store(c[ix, iy], value=nl.load(a[ix, iy]) + nl.load(b[ix, iy]))
    return c


def nki_add(a, b):
    return add_tiles[a.shape[0] // 128, a.shape[1] // 512](a, b)


@nki.jit
def square(x):
    y = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    nl.store(y, value=nl.multiply(t, t))
    return y


@nki.jit
def square_bwd(x, g):
    """d(x*x)/dx * g = 2 * x * g."""
    dx = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(dx, value=nl.multiply(nl.multiply(nl.load(x), 2.0), nl.load(g)))
    return dx


@nki.jit
def sum_and_max(x):
    """Two outputs: per-row sum and max."""
    s = nl.ndarray((x.shape[0], 1), dtype=x.dtype, buffer=nl.shared_hbm)
    m = nl.ndarray((x.shape[0], 1), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    nl.store(s, value=nl.sum(t, axis=1, keepdims=True))
    nl.store(m, value=nl.max(t, axis=1, keepdims=True))
    return s, m


def scale_into(a, out):
    """Output-argument style: writes 3 * a into its last parameter, returns nothing."""
    nl.store(out, value=nl.multiply(nl.load(a), 3.0))


def _inputs(shape=(256, 1024), dtype=jnp.float32):
    ka, kb = jax.random.split(jax.random.PRNGKey(0))
    return (jax.random.normal(ka, shape, dtype=dtype), jax.random.normal(kb, shape, dtype=dtype))


def test_guide_example_inside_jit():
    a, b = _inputs()

    @jax.jit
    def step(a, b):
        c = nki_add(a, b)  # the NKI kernel instead of a + b
        return a * b * c

    out = step(a, b)
    assert isinstance(out, jax.Array) and out.shape == (256, 1024) and out.dtype == jnp.float32
    np.testing.assert_allclose(np.asarray(out), np.asarray(a * b * (a + b)), rtol=1e-6)


def test_concrete_jax_arrays_outside_jit_give_jax_arrays():
    a, b = _inputs((128, 512))
    out = nki_add(a, b)
    assert isinstance(out, jax.Array)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(a + b))


def test_guide_example_custom_vjp_and_grad():
    a, b = _inputs()

    @jax.custom_vjp
    def nki_add_func(a, b):
        return nki_add(a, b)

    nki_add_func.defvjp(lambda a, b: (nki_add_func(a, b), (a, b)), lambda res, g: (g, g))

    @jax.jit
    def step_and_grad(a, b):
        out = nki_add_func(a, b) * a * b
        grads = jax.grad(lambda x, y: (nki_add_func(x, y) * x * y).sum(), argnums=(0, 1))(a, b)
        return out, *grads

    out, ga, gb = step_and_grad(a, b)
    ra, rb = jax.grad(lambda x, y: ((x + y) * x * y).sum(), argnums=(0, 1))(a, b)
    np.testing.assert_allclose(np.asarray(out), np.asarray(a * b * (a + b)), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(ga), np.asarray(ra), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(gb), np.asarray(rb), rtol=1e-5, atol=1e-5)


def test_custom_vjp_with_nki_backward_kernel_matches_jax_grad():
    @jax.custom_vjp
    def nki_square(x):
        return square(x)

    nki_square.defvjp(lambda x: (square(x), x), lambda x, g: (square_bwd(x, g),))

    def loss(x, f):
        return jnp.sum(jnp.sin(f(x)))

    x = jax.random.normal(jax.random.PRNGKey(3), (128, 64), dtype=jnp.float32)
    got = jax.jit(jax.grad(lambda x: loss(x, nki_square)))(x)
    want = jax.grad(lambda x: loss(x, lambda v: v * v))(x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-6)


def test_nki_call_infers_or_checks_out_shape_and_gives_tuples():
    x = jax.random.normal(jax.random.PRNGKey(1), (128, 96), dtype=jnp.float32)
    s, m = jax.jit(lambda x: nki_call(sum_and_max, x))(x)
    np.testing.assert_allclose(np.asarray(s)[:, 0], np.asarray(x.sum(axis=1)),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(np.asarray(m)[:, 0], np.asarray(x.max(axis=1)))
    spec = jax.ShapeDtypeStruct((128, 1), jnp.float32)
    s2, _ = nki_call(sum_and_max, x, out_shape=(spec, spec))
    np.testing.assert_array_equal(np.asarray(s2), np.asarray(s))


def test_nki_call_output_argument_kernel_with_grid_and_out_shape():
    a = jnp.arange(128 * 32, dtype=jnp.float32).reshape(128, 32)
    out = jax.jit(lambda a: nki_call(scale_into, a, grid=(1,),
                                     out_shape=jax.ShapeDtypeStruct(a.shape, a.dtype)))(a)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(a) * 3)


def test_bfloat16_arrays_keep_their_dtype():
    a, b = _inputs((128, 512), jnp.bfloat16)
    out = jax.jit(nki_add)(a, b)
    assert out.dtype == jnp.bfloat16
    np.testing.assert_array_equal(np.asarray(out), np.asarray(a + b))


def test_vmap_runs_the_kernel_per_batch_element():
    x = jax.random.normal(jax.random.PRNGKey(2), (3, 128, 16), dtype=jnp.float32)
    out = jax.vmap(square)(x)
    np.testing.assert_allclose(np.asarray(out), np.asarray(x * x), rtol=1e-6)


@nki.jit
def scale_by(x, s):
    y = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(y, value=nl.multiply(nl.load(x), s))
    return y


def test_python_and_concrete_jax_scalars_are_constants():
    x = jnp.ones((128, 4), jnp.float32)
    np.testing.assert_array_equal(np.asarray(jax.jit(lambda x: scale_by(x, 2.5))(x)), 2.5)
    np.testing.assert_array_equal(np.asarray(scale_by(x, jnp.float32(3.0))), 3.0)


# --- misuse ------------------------------------------------------------------------------------

def test_kernel_rule_error_is_raised_at_jit_trace_time():
    a = jnp.ones((256, 64), jnp.float32)
    # A [256, 64] tile breaks the 128-partition limit: found by the shape trace, before XLA
    # runs anything, as our error naming the kernel's line.
    with pytest.raises(SimulatorError, match=r"test_frameworks_jax\.py:\d+.*(partition|128)"):
        jax.jit(square)(a)


def test_output_argument_kernel_without_out_shape_is_refused():
    a = jnp.ones((128, 32), jnp.float32)
    with pytest.raises(KernelError, match=r"returns no outputs.*out_shape") as e:
        nki_call(scale_into, a, jnp.zeros_like(a))
    assert "test_frameworks_jax.py:" in str(e.value)


def test_wrong_out_shape_is_refused():
    x = jnp.ones((128, 8), jnp.float32)
    with pytest.raises(KernelError, match=r"out_shape.*expected.*\(128, 8\)"):
        nki_call(square, x, out_shape=jax.ShapeDtypeStruct((128, 4), jnp.float32))
    with pytest.raises(KernelError, match=r"out_shape\[0\].*ShapeDtypeStruct"):
        nki_call(square, x, out_shape=[(128, 8)])


def test_traced_scalar_argument_is_refused():
    x = jnp.ones((128, 4), jnp.float32)
    with pytest.raises(KernelError, match=r"test_frameworks_jax\.py:\d+: scale_by: argument 1.*"
                                          r"found a traced jax scalar.*static_argnums"):
        jax.jit(scale_by)(x, 2.0)


def test_timing_only_session_is_refused_for_jax_programs():
    import neuroncore_sim as ncs
    x = jnp.ones((128, 4), jnp.float32)
    with ncs.profile_session(functional=False):
        with pytest.raises(KernelError, match=r"test_frameworks_jax\.py:\d+: square: .*"
                                              r"timing-only.*functional=True"):
            jax.jit(square)(x)


def test_nki_call_refuses_a_non_kernel():
    with pytest.raises(KernelError, match=r"nki_call kernel.*expected.*found int"):
        nki_call(3, jnp.ones((2, 2)))
