"""2-D transpose of an HBM matrix, on TensorE and on VectorE.

* :func:`transpose_tensor_engine` moves [128, 128] blocks through TensorE: ``nc_transpose`` is a
  matmul against an identity matrix, reads SBUF and writes PSUM, so each block is copied back to
  SBUF before it is stored.
* :func:`transpose_vector_engine` uses VectorE's 32-partition reshape banks, which transpose
  blocks of at most 32 x 32 and may write SBUF directly.

Both load the input in full-width row strips (one large DMA per strip) and store each
transposed block to its mirrored place in the output.
"""

import numpy as np

import neuroncore_sim.nki as nki
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl

PE_BLOCK = 128  # largest TensorE transpose (128 x 128)
VE_BLOCK = 32  # largest VectorE transpose (32 x 32)


@nki.jit
def transpose_tensor_engine(x):
    """Return ``x.T`` for an [R, C] HBM matrix with R and C multiples of 128."""
    n_rows, n_cols = x.shape
    xt = nl.ndarray((n_cols, n_rows), dtype=x.dtype, buffer=nl.shared_hbm)
    b = PE_BLOCK

    for i in nl.affine_range(n_rows // b):
        strip = nl.load(x[i * b:(i + 1) * b, :])
        for j in nl.affine_range(n_cols // b):
            flipped = nisa.nc_transpose(strip[:, j * b:(j + 1) * b], engine=nisa.tensor_engine)
            # TensorE results land in PSUM; DMA stores go out from SBUF.
            nl.store(xt[j * b:(j + 1) * b, i * b:(i + 1) * b], value=nl.copy(flipped))
    return xt


@nki.jit
def transpose_vector_engine(x):
    """Return ``x.T`` for an [R, C] HBM matrix with R and C multiples of 32."""
    n_rows, n_cols = x.shape
    xt = nl.ndarray((n_cols, n_rows), dtype=x.dtype, buffer=nl.shared_hbm)
    b = VE_BLOCK

    for i in nl.affine_range(n_rows // b):
        strip = nl.load(x[i * b:(i + 1) * b, :])
        for j in nl.affine_range(n_cols // b):
            flipped = nisa.nc_transpose(strip[:, j * b:(j + 1) * b], engine=nisa.vector_engine)
            nl.store(xt[j * b:(j + 1) * b, i * b:(i + 1) * b], value=flipped)
    return xt


KERNELS = {
    "transpose_tensor_engine": transpose_tensor_engine,
    "transpose_vector_engine": transpose_vector_engine,
}


def reference(x):
    """numpy meaning of both kernels."""
    return np.ascontiguousarray(x.T)


def example_inputs():
    """A seeded float32 [128, 256] matrix."""
    rng = np.random.default_rng(5)
    return {"x": rng.standard_normal((128, 256)).astype(np.float32)}
