"""A small transformer block in JAX whose layers run as NKI kernels on the simulator, forward
and backward, with the per-layer profile of one training step.

    PYTHONPATH=. python examples/transformer_block_jax.py

Layers and their kernels (the sample kernels of kernels/ where one fits, the others in
block_kernels.py):

    RMSNorm     kernels/rmsnorm.py            backward: jax ops (jax.vjp of the reference)
    matmuls     kernels/matmul_single_tile.py backward: the same NKI matmul (dA = g B^T, dB = A^T g)
    softmax     kernels/softmax.py            backward: softmax_bwd (NKI, block_kernels.py)
    SwiGLU      swiglu (block_kernels.py)     backward: swiglu_bwd (NKI, block_kernels.py)

Each NKI layer is a ``jax.custom_vjp``; the whole step is ``jax.jit(jax.value_and_grad(...))``.
Forward launches are named by the ``ncs.layer`` block they were traced in; backward launches,
traced later by jax, by their backward function (``matmul_bwd``, ...).
The result and the gradients are checked against the same block written with jax's own ops.
Sizes fit single tiles: 128 tokens, model width 128, one head, MLP width 128, float32.
"""

from __future__ import annotations

import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from block_kernels import (matmul_single_tile, rmsnorm, softmax, softmax_bwd,  # noqa: E402
                           swiglu, swiglu_bwd)

import neuroncore_sim as ncs  # noqa: E402

S, D, F = 128, 128, 128  # tokens, model width, MLP width


# --- the layers as custom_vjp functions ----------------------------------------------------------
@jax.custom_vjp
def matmul(a, b):
    """a @ b on TensorE (the kernel takes the stationary operand transposed)."""
    return matmul_single_tile.kernel(a.T, b)


def matmul_bwd(res, g):
    a, b = res
    return matmul(g, b.T), matmul(a.T, g)


matmul.defvjp(lambda a, b: (matmul(a, b), (a, b)), matmul_bwd)


def _rmsnorm_ref(x, w):
    return x * jax.lax.rsqrt(jnp.mean(x * x, axis=1, keepdims=True) + rmsnorm.EPS) * w


@jax.custom_vjp
def rms_norm(x, w):
    return rmsnorm.kernel(x, w)


def rms_norm_bwd(res, g):
    return jax.vjp(_rmsnorm_ref, *res)[1](g)


rms_norm.defvjp(lambda x, w: (rms_norm(x, w), (x, w)), rms_norm_bwd)


@jax.custom_vjp
def softmax_rows(x):
    return softmax.kernel(x)


def _softmax_fwd(x):
    y = softmax_rows(x)
    return y, y


def softmax_rows_bwd(y, g):
    return (softmax_bwd(y, g),)


softmax_rows.defvjp(_softmax_fwd, softmax_rows_bwd)


@jax.custom_vjp
def swiglu_op(gate, up):
    return swiglu(gate, up)


def swiglu_op_bwd(res, g):
    return swiglu_bwd(res[0], res[1], g)


swiglu_op.defvjp(lambda gate, up: (swiglu(gate, up), (gate, up)), swiglu_op_bwd)


# --- the block -----------------------------------------------------------------------------------
def block(params, x, ops):
    """Pre-norm block: x + attn(norm(x)), then + mlp(norm(.)). ``ops`` picks NKI or jax."""
    mm, norm, smax, glu = ops
    with ncs.layer("attn_norm"):
        h = norm(x, params["norm1"])
    with ncs.layer("attention"):
        q, k, v = mm(h, params["wq"]), mm(h, params["wk"]), mm(h, params["wv"])
        p = smax(mm(q, k.T) * (1.0 / np.sqrt(D)))
        x = x + mm(mm(p, v), params["wo"])
    with ncs.layer("mlp_norm"):
        h = norm(x, params["norm2"])
    with ncs.layer("mlp"):
        x = x + mm(glu(mm(h, params["wg"]), mm(h, params["wu"])), params["wd"])
    return x


NKI_OPS = (matmul, rms_norm, softmax_rows, swiglu_op)
JAX_OPS = (jnp.matmul, _rmsnorm_ref, lambda x: jax.nn.softmax(x, axis=1),
           lambda g, u: jax.nn.silu(g) * u)


def loss(params, x, ops):
    return jnp.mean(block(params, x, ops) ** 2)


def init(seed=0):
    keys = jax.random.split(jax.random.PRNGKey(seed), 9)
    w = {n: jax.random.normal(k, s, jnp.float32) / np.sqrt(s[0])
         for n, k, s in zip(["wq", "wk", "wv", "wo", "wg", "wu", "wd"], keys,
                            [(D, D)] * 4 + [(D, F), (D, F), (F, D)])}
    w["norm1"] = jnp.ones((1, D), jnp.float32)
    w["norm2"] = jnp.ones((1, D), jnp.float32) * 1.1
    return w, jax.random.normal(keys[8], (S, D), jnp.float32)


def main() -> dict:
    params, x = init()
    step = jax.jit(jax.value_and_grad(lambda p, x: loss(p, x, NKI_OPS)))
    with ncs.profile_session() as session:
        value, grads = step(params, x)
        jax.block_until_ready(grads)
    ref_value, ref_grads = jax.value_and_grad(lambda p, x: loss(p, x, JAX_OPS))(params, x)
    worst = max(float(jnp.max(jnp.abs(grads[k] - ref_grads[k])) /
                      (float(jnp.max(jnp.abs(ref_grads[k]))) + 1e-30)) for k in grads)
    print(session.table())
    print(f"\nloss {float(value):.6f} (jax ops {float(ref_value):.6f}); "
          f"worst relative gradient difference {worst:.2e}")
    assert abs(float(value) - float(ref_value)) <= 1e-4 * abs(float(ref_value))
    assert worst < 1e-3, worst
    return {"session": session, "loss": float(value), "worst": worst}


if __name__ == "__main__":
    main()
