"""Orderings a kernel engineer knows, on real front-end kernels (timing-only runs).

tests/timing/test_engines.py checks the same facts on hand-built Programs; these check that they survive
the whole path from NKI code: tracing, engine selection, hazards, buffer rings and DMA splitting.
"""

from __future__ import annotations

import pytest

import neuroncore_sim as ncs
import neuroncore_sim.nki as nki
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl
import neuroncore_sim.nki.typing as nt
from neuroncore_sim.config import TRN1, override


#: trn1 under SDK 2.20's compile options (AWS's tutorial tables were measured with it).
# AWS's tables were measured at sizes whose repeated loads do not fit in SBUF (the tiled
# matmul's right-hand tiles total 128 MiB), so the compiler reloads them; at these tests' small
# sizes they would fit and be kept resident (compiler/resident_loads.py): state them as written.
SDK_2_20 = override(TRN1, {"compiler": {"toolchain": "2.20", "keep_resident_loads": False}},
                    "tests")


#: trn1 with neuronx-cc's --auto-cast=none.
NO_AUTO_CAST = override(TRN1, {"compiler": {"auto_cast": "none"}}, "tests")


def latency(kernel, *args, **kwargs) -> float:
    return ncs.simulate(kernel, *args, functional=False, **kwargs).latency_ns


# --- hoisting loads out of the inner loop ---------------------------------------------------------

@nki.jit
def matmul_loads_inside(lhsT, rhs):
    """Both operands are loaded again for every (n, k): the stationary block once per n."""
    k_size, m_size = lhsT.shape
    n_size = rhs.shape[1]
    out = nl.ndarray((m_size, n_size), dtype=nl.float32, buffer=nl.shared_hbm)
    for m in nl.affine_range(m_size // 128):
        for n in nl.affine_range(n_size // 512):
            acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(k_size // 128):
                s = nl.load(lhsT[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128])
                v = nl.load(rhs[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512])
                acc += nisa.nc_matmul(s, v)
            nl.store(out[m * 128:(m + 1) * 128, n * 512:(n + 1) * 512], value=nl.copy(acc))
    return out


@nki.jit
def matmul_stationary_hoisted(lhsT, rhs):
    """The stationary column block of lhsT is loaded once per m, outside the n loop."""
    k_size, m_size = lhsT.shape
    n_size = rhs.shape[1]
    out = nl.ndarray((m_size, n_size), dtype=nl.float32, buffer=nl.shared_hbm)
    for m in nl.affine_range(m_size // 128):
        stationary = [nl.load(lhsT[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128])
                      for k in range(k_size // 128)]
        for n in nl.affine_range(n_size // 512):
            acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(k_size // 128):
                v = nl.load(rhs[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512])
                acc += nisa.nc_matmul(stationary[k], v)
            nl.store(out[m * 128:(m + 1) * 128, n * 512:(n + 1) * 512], value=nl.copy(acc))
    return out


def test_hoisting_loads_out_of_the_inner_loop_is_faster():
    """AWS's matmul tutorial measured this step (SDK 2.20, DGE on): under its toolchain's
    options the loads are what hoisting saves."""
    lhsT, rhs = nt.tensor[[512, 256], nl.bfloat16], nt.tensor[[512, 2048], nl.bfloat16]
    inside = latency(matmul_loads_inside, lhsT, rhs, config=SDK_2_20)
    hoisted = latency(matmul_stationary_hoisted, lhsT, rhs, config=SDK_2_20)
    assert hoisted < 0.9 * inside, (hoisted, inside)


# --- moving tile width and matmul dtype (TensorE-bound: operands resident in SBUF) ------------------

@nki.jit
def matmul_resident(lhsT, rhs, tn=512, repeats=8):
    """Operands are loaded once; the matmuls then run ``repeats`` times over them and only the
    last round is stored, so TensorE, not DMA, decides the time. ``tn`` is the moving tile
    width."""
    k_size, m_size = lhsT.shape
    n_size = rhs.shape[1]
    out = nl.ndarray((m_size, n_size), dtype=nl.float32, buffer=nl.shared_hbm)
    kt = k_size // 128
    stationary = [nl.load(lhsT[k * 128:(k + 1) * 128, :]) for k in range(kt)]
    moving = [nl.load(rhs[k * 128:(k + 1) * 128, :]) for k in range(kt)]
    for r in range(repeats):
        for m in nl.affine_range(m_size // 128):
            for n in nl.affine_range(n_size // tn):
                acc = nl.zeros((128, tn), nl.float32, buffer=nl.psum)
                for k in nl.affine_range(kt):
                    acc += nisa.nc_matmul(stationary[k][:, m * 128:(m + 1) * 128],
                                          moving[k][:, n * tn:(n + 1) * tn])
                if r == repeats - 1:
                    nl.store(out[m * 128:(m + 1) * 128, n * tn:(n + 1) * tn],
                             value=nl.copy(acc))
    return out


def test_moving_tiles_of_512_beat_128_on_a_large_matmul():
    lhsT, rhs = nt.tensor[[512, 256], nl.bfloat16], nt.tensor[[512, 2048], nl.bfloat16]
    wide = ncs.simulate(matmul_resident, lhsT, rhs, tn=512, functional=False)
    narrow = ncs.simulate(matmul_resident, lhsT, rhs, tn=128, functional=False)
    assert wide.summary()["bottleneck"] == "tensor"
    # TensorE streams moving columns at the same rate either way (II = max(N, 64) per matmul,
    # LoadStationary hidden behind it); the narrow tiling loses on 4x the PSUM evictions and
    # stores of 512-byte rows, most of which the compiler's interleaving of iterations hides.
    assert wide.latency_ns < 0.98 * narrow.latency_ns, (wide.latency_ns, narrow.latency_ns)


def test_bf16_matmul_about_4x_faster_than_fp32_when_tensor_bound():
    """With --auto-cast=none (fp32 matmuls run as fp32: [ISA-nc_matmul] 4x)."""
    shapes = ([512, 256], [512, 2048])
    bf16 = ncs.simulate(matmul_resident, *(nt.tensor[s, nl.bfloat16] for s in shapes),
                        repeats=16, functional=False, config=NO_AUTO_CAST)
    fp32 = ncs.simulate(matmul_resident, *(nt.tensor[s, nl.float32] for s in shapes),
                        repeats=16, functional=False, config=NO_AUTO_CAST)
    assert bf16.summary()["bottleneck"] == fp32.summary()["bottleneck"] == "tensor"
    tensor_ratio = fp32.summary()["busy_ns"]["tensor"] / bf16.summary()["busy_ns"]["tensor"]
    assert tensor_ratio == pytest.approx(4.0, rel=0.1)
    assert 3.0 < fp32.latency_ns / bf16.latency_ns < 4.5


# --- DMA row size -------------------------------------------------------------------------------

@nki.jit
def copy_through_sbuf(x, cols=512):
    """HBM -> SBUF -> HBM in [128, cols] tiles: each DMA moves ``cols * 4`` bytes per partition."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for r in nl.affine_range(x.shape[0] // 128):
        for c in nl.affine_range(x.shape[1] // cols):
            t = nl.load(x[r * 128:(r + 1) * 128, c * cols:(c + 1) * cols])
            nl.store(out[r * 128:(r + 1) * 128, c * cols:(c + 1) * cols], value=t)
    return out


def test_dma_rows_of_2kib_far_more_efficient_than_128_bytes():
    x = nt.tensor[[1024, 2048], nl.float32]  # 8 MiB, the same bytes either way
    rows_2k = latency(copy_through_sbuf, x, cols=512)   # 2 KiB per partition per DMA
    rows_128 = latency(copy_through_sbuf, x, cols=32)   # 128 B per partition per DMA
    assert rows_128 > 3 * rows_2k, (rows_2k, rows_128)
