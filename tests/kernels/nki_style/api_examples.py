"""Kernels written the way the NKI API reference examples are written (neuronxcc imports).

Our own code, in the docs' style: they import ``neuronxcc.nki`` and must run unmodified once
``neuroncore_sim.install_neuronxcc_alias()`` has been called.
"""

import numpy as np

import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
from neuronxcc import nki


@nki.jit
def scaled_exp_with_bias(in_tensor, bias_tensor):
    """out = exp(2 * x + bias), bias one value per partition."""
    out_tensor = nl.ndarray(in_tensor.shape, dtype=in_tensor.dtype, buffer=nl.shared_hbm)
    x = nl.load(in_tensor)
    b = nl.load(bias_tensor)
    y = nisa.activation(op=nl.exp, data=x, bias=b, scale=2.0)
    nl.store(out_tensor, value=y)
    return out_tensor


@nki.jit
def row_max_keepdims(in_tensor):
    """Maximum of every row, kept as a [P, 1] column."""
    out_tensor = nl.ndarray((in_tensor.shape[0], 1), dtype=in_tensor.dtype,
                            buffer=nl.shared_hbm)
    x = nl.load(in_tensor)
    m = nisa.tensor_reduce(np.max, data=x, axis=(1,), keepdims=True)
    nl.store(out_tensor, value=m)
    return out_tensor


@nki.jit
def causal_mask(in_tensor):
    """Keep the lower triangle (column <= row), fill the rest with -9984."""
    out_tensor = nl.ndarray(in_tensor.shape, dtype=in_tensor.dtype, buffer=nl.shared_hbm)
    i_p, i_f = nl.mgrid[0:in_tensor.shape[0], 0:in_tensor.shape[1]]
    x = nl.load(in_tensor)
    y = nisa.affine_select(pred=(i_f <= i_p), on_true_tile=x, on_false_value=-9984.0)
    nl.store(out_tensor, value=y)
    return out_tensor


@nki.jit
def transpose_then_matmul(a_tensor, b_tensor):
    """a.T @ b for a [K, M] and b [K, N]: TensorE transpose round trip, then a matmul."""
    k, m = a_tensor.shape
    _, n = b_tensor.shape
    out_tensor = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.shared_hbm)
    a = nl.load(a_tensor)
    b = nl.load(b_tensor)
    a_t = nl.copy(nisa.nc_transpose(a))  # [M, K], back in SBUF
    a_again = nl.copy(nisa.nc_transpose(a_t))  # [K, M]
    res = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.psum)
    res[...] = nisa.nc_matmul(a_again, b)
    nl.store(out_tensor, value=res)
    return out_tensor


@nki.jit
def dma_copy_rows(in_tensor, out_tensor):
    """Output-argument style: copy every 128-row tile through SBUF with nisa.dma_copy."""
    for i in nl.affine_range(in_tensor.shape[0] // 128):
        tile = nl.ndarray((128, in_tensor.shape[1]), dtype=in_tensor.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile, src=in_tensor[i * 128:(i + 1) * 128, :])
        nisa.dma_copy(dst=out_tensor[i * 128:(i + 1) * 128, :], src=tile)
