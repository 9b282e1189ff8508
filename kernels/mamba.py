"""The selective-scan core of a Mamba layer, in three versions that differ only in loop order
and tiling (the fused-Mamba tutorial's progression; our own code).

For each batch b, state s, channel c and time t::

    h[t] = exp(delta[c, t] * A[c, s]) * h[t-1] + delta[c, t] * u[c, t] * B[s, t]
    out[c, t] = sum over s of h[t] * C[s, t]

Channels sit on the partition axis (128 per tile), time on the free axis. Per (state, channel
tile) the work is: one ScalarE ``activation`` (exp with a per-partition scale folds the
multiply by A into the exponential), two VectorE products (delta * u, then * B broadcast over the
partitions), one VectorE ``tensor_tensor_scan`` (the recurrence, carried inside the engine), one
product with C (broadcast) and the accumulation over states.

* :func:`mamba_v1`: state loop outside, channel tiles inside; ``delta`` and ``u`` are loaded
  again for every state, and one accumulator per channel tile lives for the whole kernel.
* :func:`mamba_v2`: channel tiles outside, states inside; ``delta`` and ``u`` are loaded once per
  channel tile and the accumulator is one tile.
* :func:`mamba_v3`: as v2, with the time axis cut into chunks of ``SEQ_TILE`` (512) elements;
  the scan carries its last column into the next chunk (``initial``), so the working tiles stay
  small however long the sequence is.
"""

import numpy as np

import neuroncore_sim.nki as nki
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl

PMAX = 128  # channels per tile (partitions)
SEQ_TILE = 512  # time steps per chunk in mamba_v3


def _shapes(delta, A):
    batch, channels, seq = delta.shape
    assert channels % PMAX == 0, "mamba: channels must be a multiple of 128"
    return batch, channels // PMAX, seq, A.shape[1]


def _state_step(delta_t, u_t, a_col, b_row, c_row, width, initial=0.0):
    """One state's contribution on one channel tile: returns (scan result, scan * C)."""
    decay = nisa.activation(op=nl.exp, data=delta_t, scale=a_col)
    du = nisa.tensor_tensor(delta_t, u_t, op=nl.multiply)
    dbu = nisa.tensor_tensor(du, b_row.broadcast_to((PMAX, width)), op=nl.multiply)
    h = nisa.tensor_tensor_scan(decay, dbu, initial=initial, op0=np.multiply, op1=np.add)
    return h, nisa.tensor_tensor(h, c_row.broadcast_to((PMAX, width)), op=nl.multiply)


@nki.jit
def mamba_v1(delta, u, A, B, C):
    """State loop outside the channel-tile loop; inputs reloaded per state."""
    batch, n_tiles, seq, n_state = _shapes(delta, A)
    out = nl.ndarray(delta.shape, dtype=delta.dtype, buffer=nl.shared_hbm)
    for b in nl.affine_range(batch):
        acc = nl.zeros((n_tiles, nl.par_dim(PMAX), seq), dtype=delta.dtype)
        for s in nl.affine_range(n_state):
            for t in nl.affine_range(n_tiles):
                rows = slice(t * PMAX, (t + 1) * PMAX)
                delta_t = nl.load(delta[b, rows, :])
                u_t = nl.load(u[b, rows, :])
                a_col = nl.load(A[rows, s:s + 1])
                b_row = nl.load(B[b, s:s + 1, :])
                c_row = nl.load(C[b, s:s + 1, :])
                _, contrib = _state_step(delta_t, u_t, a_col, b_row, c_row, seq)
                acc[t] += contrib
        for t in nl.affine_range(n_tiles):
            nl.store(out[b, t * PMAX:(t + 1) * PMAX, :], value=acc[t])
    return out


@nki.jit
def mamba_v2(delta, u, A, B, C):
    """Channel tiles outside, states inside: delta and u loaded once per channel tile."""
    batch, n_tiles, seq, n_state = _shapes(delta, A)
    out = nl.ndarray(delta.shape, dtype=delta.dtype, buffer=nl.shared_hbm)
    for b in nl.affine_range(batch):
        for t in nl.affine_range(n_tiles):
            rows = slice(t * PMAX, (t + 1) * PMAX)
            acc = nl.zeros((PMAX, seq), dtype=delta.dtype)
            delta_t = nl.load(delta[b, rows, :])
            u_t = nl.load(u[b, rows, :])
            for s in nl.affine_range(n_state):
                a_col = nl.load(A[rows, s:s + 1])
                b_row = nl.load(B[b, s:s + 1, :])
                c_row = nl.load(C[b, s:s + 1, :])
                _, contrib = _state_step(delta_t, u_t, a_col, b_row, c_row, seq)
                acc += contrib
            nl.store(out[b, rows, :], value=acc)
    return out


@nki.jit
def mamba_v3(delta, u, A, B, C):
    """As v2, with time cut into SEQ_TILE chunks; the scan state is carried between chunks."""
    batch, n_tiles, seq, n_state = _shapes(delta, A)
    assert seq % SEQ_TILE == 0, "mamba_v3: seq_len must be a multiple of 512"
    out = nl.ndarray(delta.shape, dtype=delta.dtype, buffer=nl.shared_hbm)
    for b in nl.affine_range(batch):
        for t in nl.affine_range(n_tiles):
            rows = slice(t * PMAX, (t + 1) * PMAX)
            acc = nl.zeros((PMAX, seq), dtype=delta.dtype)
            delta_t = nl.load(delta[b, rows, :])
            u_t = nl.load(u[b, rows, :])
            for s in nl.affine_range(n_state):
                a_col = nl.load(A[rows, s:s + 1])
                carry = nl.zeros((PMAX, 1), dtype=nl.float32)
                # The chunks depend on each other through the carried scan state.
                for k in nl.sequential_range(seq // SEQ_TILE):
                    cols = slice(k * SEQ_TILE, (k + 1) * SEQ_TILE)
                    b_row = nl.load(B[b, s:s + 1, cols])
                    c_row = nl.load(C[b, s:s + 1, cols])
                    h, contrib = _state_step(delta_t[:, cols], u_t[:, cols], a_col, b_row,
                                             c_row, SEQ_TILE, initial=carry)
                    carry[...] = nisa.tensor_copy(h[:, SEQ_TILE - 1:SEQ_TILE])
                    acc[:, cols] += contrib
            nl.store(out[b, rows, :], value=acc)
    return out


KERNELS = {"mamba_v1": mamba_v1, "mamba_v2": mamba_v2, "mamba_v3": mamba_v3}


def reference(delta, u, A, B, C):
    """The recurrence in float64, one time step at a time (vectorised over batch, channel and
    state), returned as float32."""
    d, uu = delta.astype(np.float64), u.astype(np.float64)
    decay = np.exp(d[:, :, None, :] * A.astype(np.float64)[None, :, :, None])  # [b, c, s, t]
    dbu = (d * uu)[:, :, None, :] * B.astype(np.float64)[:, None, :, :]
    h = np.zeros(decay.shape[:3])
    out = np.zeros(delta.shape)
    for t in range(delta.shape[2]):
        h = decay[..., t] * h + dbu[..., t]
        out[:, :, t] = (h * C.astype(np.float64)[:, None, :, t]).sum(axis=2)
    return out.astype(delta.dtype)


def example_inputs(batch=1, channels=256, seq_len=1024, state_size=4):
    """Seeded fp32 inputs; delta small and A negative so the recurrence decays, as in a
    trained layer. The defaults make two channel tiles and two v3 chunks."""
    rng = np.random.default_rng(7)
    f32 = np.float32
    return {
        "delta": (0.1 * rng.random((batch, channels, seq_len))).astype(f32),
        "u": rng.standard_normal((batch, channels, seq_len)).astype(f32),
        "A": -rng.random((channels, state_size)).astype(f32),
        "B": rng.standard_normal((batch, state_size, seq_len)).astype(f32),
        "C": rng.standard_normal((batch, state_size, seq_len)).astype(f32),
    }
