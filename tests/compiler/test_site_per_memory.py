"""A kernel line that makes a PSUM tile and an SBUF tile (``nisa.tensor_copy(nisa.nc_transpose(
x))``) has two allocation sites, one per memory, for the scheduler as for the memory plan.

Autocomp's attention v5 and v6 (SDK 2.26) differ only in that: v5 names the transposes' PSUM
results on lines of their own, v6 copies them out on the line that transposes. The hardware runs
both in 0.68 ms. Before the scheduler keyed sites by memory too, it counted v6's PSUM and SBUF
tiles as one ring and estimated v6 25 % faster than v5."""

from __future__ import annotations

import neuroncore_sim as ncs
import neuroncore_sim.nki as nki
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl
import neuroncore_sim.nki.typing as nt
from neuroncore_sim.program.ir import MemSpace, SourceLoc, TensorDecl
from neuroncore_sim.compiler.tiles import site_key


def _attention_tail(one_line: bool):
    """softmax(s) @ v for 8 query tiles: each 128-column block of the probabilities and of v is
    transposed on TensorE, copied out of PSUM and multiplied into a PSUM accumulator."""

    def kernel(s, v):
        out = nl.ndarray((8, 128, 128), dtype=nl.bfloat16, buffer=nl.shared_hbm)
        for q in nl.affine_range(8):
            acc = nl.zeros((nl.par_dim(128), 128), dtype=nl.float32, buffer=nl.psum)
            e = nisa.activation(op=nl.exp, data=nl.load(s[q]), dtype=nl.bfloat16)
            for j in nl.affine_range(4):
                vj = nl.load(v[j])
                if one_line:
                    sT = nisa.tensor_copy(nisa.nc_transpose(e[:, nl.ds(j * 128, 128)]))
                    vT = nisa.tensor_copy(nisa.nc_transpose(vj))
                else:
                    sT_ps = nisa.nc_transpose(e[:, nl.ds(j * 128, 128)])
                    sT = nisa.tensor_copy(sT_ps)
                    vT_ps = nisa.nc_transpose(vj)
                    vT = nisa.tensor_copy(vT_ps)
                acc += nisa.nc_matmul(stationary=sT, moving=vT)
            nl.store(out[q], value=nisa.tensor_copy(acc, dtype=nl.bfloat16))
        return out

    return nki.jit(kernel)


def test_copying_a_transpose_out_on_its_own_line_changes_nothing():
    args = (nt.tensor[[8, 128, 512], nl.bfloat16], nt.tensor[[4, 128, 128], nl.bfloat16])
    split, one_line = (ncs.simulate(_attention_tail(one), *args, functional=False)
                       for one in (False, True))
    assert one_line.latency_ns == split.latency_ns  # (14,375 vs 14,243 ns before)


def test_site_key_separates_memories_and_lines():
    loc = SourceLoc("k.py", 3)
    p = TensorDecl(1, "p", MemSpace.PSUM, (128, 128), "float32", site=loc)
    s = TensorDecl(2, "s", MemSpace.SBUF, (128, 128), "bfloat16", site=loc)
    s2 = TensorDecl(3, "s2", MemSpace.SBUF, (128, 64), "bfloat16", site=loc)
    lone = TensorDecl(4, "t", MemSpace.SBUF, (128, 64), "bfloat16")
    assert site_key(p) != site_key(s) == site_key(s2)
    assert site_key(lone) not in {site_key(p), site_key(s)}
