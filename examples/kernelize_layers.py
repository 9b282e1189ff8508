"""The layers module of the layer repository that examples/kernelize_torch.py writes: NKI
forward and backward kernels for two stateless layers, made into layer classes the Hugging Face
``kernels`` library accepts with :func:`neuroncore_sim.frameworks.nki_layer`.

``kernels`` imports this file as ``build/torch-<backend>/layers.py`` of the repository, so it is
self-contained: it imports only neuroncore_sim. Every kernel works on [rows, width] tensors,
rows a multiple of 128 (``nki_layer`` flattens the leading dims into rows).
"""

from __future__ import annotations

import neuroncore_sim.nki.language as nl
from neuroncore_sim import nki
from neuroncore_sim.frameworks import nki_layer

P = 128  # partitions: rows per tile
EPS = 1e-6


@nki.jit
def silu_and_mul(x):
    """silu(x[:, :d]) * x[:, d:] for x [N, 2d]."""
    n, d = x.shape[0], x.shape[1] // 2
    out = nl.ndarray((n, d), dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(n // P):
        t = nl.load(x[i * P:(i + 1) * P, :])
        nl.store(out[i * P:(i + 1) * P, :], value=nl.multiply(nl.silu(t[:, 0:d]), t[:, d:2 * d]))
    return out


@nki.jit
def silu_and_mul_bwd(x, g):
    """Gradient of silu_and_mul at x for the output gradient g: [g * up * silu'(gate), g *
    silu(gate)] side by side."""
    n, d = x.shape[0], x.shape[1] // 2
    dx = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(n // P):
        rows = slice(i * P, (i + 1) * P)
        t, gr = nl.load(x[rows, :]), nl.load(g[rows, :])
        gate, up = t[:, 0:d], t[:, d:2 * d]
        nl.store(dx[rows, 0:d], value=nl.multiply(nl.multiply(gr, up), nl.silu_dx(gate)))
        nl.store(dx[rows, d:2 * d], value=nl.multiply(gr, nl.silu(gate)))
    return dx


@nki.jit
def rms_norm(x):
    """x / sqrt(mean(x**2) + EPS) per row (no weight: the layer is stateless)."""
    n, f = x.shape
    y = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(n // P):
        t = nl.load(x[i * P:(i + 1) * P, :])
        inv_rms = nl.rsqrt(nl.add(nl.multiply(nl.sum(nl.square(t), axis=1, keepdims=True),
                                              1.0 / f), EPS))
        nl.store(y[i * P:(i + 1) * P, :], value=nl.multiply(t, inv_rms))
    return y


@nki.jit
def rms_norm_bwd(x, g):
    """Gradient of rms_norm: (g - y * mean(g * y)) / rms, with y = x / rms."""
    n, f = x.shape
    dx = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(n // P):
        rows = slice(i * P, (i + 1) * P)
        t, gr = nl.load(x[rows, :]), nl.load(g[rows, :])
        inv_rms = nl.rsqrt(nl.add(nl.multiply(nl.sum(nl.square(t), axis=1, keepdims=True),
                                              1.0 / f), EPS))
        y = nl.multiply(t, inv_rms)
        mean_gy = nl.multiply(nl.sum(nl.multiply(gr, y), axis=1, keepdims=True), 1.0 / f)
        nl.store(dx[rows, :], value=nl.multiply(nl.subtract(gr, nl.multiply(y, mean_gy)),
                                                inv_rms))
    return dx


SiluAndMul = nki_layer(silu_and_mul, silu_and_mul_bwd, name="SiluAndMul")
RMSNorm = nki_layer(rms_norm, rms_norm_bwd, name="RMSNorm")
