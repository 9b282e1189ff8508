"""Flash-attention-like forward pass: out = softmax(q k^T * scale) v, without the [S, S] matrix.

Inputs are in the layouts TensorE wants: ``qT [D, Sq]`` and ``kT [D, Sk]`` (head dim on the
partitions, D <= 128) and ``v [Sk, D]``. For each 128-query tile the kernel walks the keys in
blocks of 512 with an online softmax (running row max ``m``, row sum ``l`` and output ``acc``,
rescaled by ``exp(m_old - m_new)`` as each block arrives), so the key loop is a
``nl.sequential_range``. Per key block:

* one ``nc_matmul`` for the [128, 512] scores (PSUM), scaled into SBUF;
* VectorE row max, ScalarE exp, VectorE row sum;
* four TensorE transposes of 128-column slices of the probabilities (PSUM, copied to SBUF), each
  the stationary of an ``nc_matmul`` with a [128, D] block of v, accumulated in one PSUM tile.

Many small tiles, transposes and PSUM traffic: the attention shape of the simulator's speed
benchmarks (benchmarks/scaling.py). Our own code.
"""

import numpy as np

import neuroncore_sim.nki as nki
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl

Q_TILE = 128  # queries per tile (output partitions)
K_BLOCK = 512  # keys per block (one PSUM bank of fp32 scores)
T = 128  # transpose / matmul contraction tile


@nki.jit
def kernel(qT, kT, v):
    """softmax(q k^T / sqrt(D)) v for qT [D, Sq], kT [D, Sk], v [Sk, D]; Sq % 128 == 0,
    Sk % 512 == 0, D <= 128."""
    d, seq_q = qT.shape
    _, seq_k = kT.shape
    out = nl.ndarray((seq_q, d), dtype=v.dtype, buffer=nl.shared_hbm)
    scale = 1.0 / float(np.sqrt(d))
    for i in nl.affine_range(seq_q // Q_TILE):
        q_t = nl.load(qT[:, i * Q_TILE:(i + 1) * Q_TILE])
        m = nl.full((Q_TILE, 1), -1.0e30, dtype=nl.float32)
        l = nl.zeros((Q_TILE, 1), dtype=nl.float32)
        acc = nl.zeros((Q_TILE, d), dtype=nl.float32)
        # Each key block rescales the running m, l and acc: a carried dependency.
        for j in nl.sequential_range(seq_k // K_BLOCK):
            k_t = nl.load(kT[:, j * K_BLOCK:(j + 1) * K_BLOCK])
            scores = nl.multiply(nisa.nc_matmul(q_t, k_t), scale)
            m_new = nl.maximum(m, nl.max(scores, axis=1, keepdims=True))
            p = nl.exp(nl.subtract(scores, m_new))
            corr = nl.exp(nl.subtract(m, m_new))
            l[...] = nl.add(nl.multiply(l, corr), nl.sum(p, axis=1, keepdims=True))
            pv = nl.zeros((Q_TILE, d), dtype=nl.float32, buffer=nl.psum)
            for c in nl.affine_range(K_BLOCK // T):
                p_t = nl.copy(nisa.nc_transpose(p[:, c * T:(c + 1) * T]))
                v_t = nl.load(v[j * K_BLOCK + c * T:j * K_BLOCK + (c + 1) * T, :])
                pv += nisa.nc_matmul(p_t, v_t)
            acc[...] = nl.add(nl.multiply(acc, corr), pv)
            m[...] = m_new
        nl.store(out[i * Q_TILE:(i + 1) * Q_TILE, :], value=nl.divide(acc, l))
    return out


def reference(qT, kT, v):
    """numpy meaning of :func:`kernel` (float64, returned as float32)."""
    q, k = qT.astype(np.float64).T, kT.astype(np.float64).T
    s = q @ k.T / np.sqrt(q.shape[1])
    p = np.exp(s - s.max(axis=1, keepdims=True))
    return ((p / p.sum(axis=1, keepdims=True)) @ v.astype(np.float64)).astype(np.float32)


def example_inputs(seq_q=256, seq_k=1024, d=128):
    """Seeded float32 qT [d, seq_q], kT [d, seq_k], v [seq_k, d]."""
    rng = np.random.default_rng(5)
    f32 = np.float32
    return {"qT": rng.standard_normal((d, seq_q)).astype(f32),
            "kT": rng.standard_normal((d, seq_k)).astype(f32),
            "v": rng.standard_normal((seq_k, d)).astype(f32)}
