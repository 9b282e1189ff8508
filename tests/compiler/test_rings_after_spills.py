"""PSUM buffer rings still hold when SBUF spills: the rings' first uses are indices into the
instruction stream the plan was made on, before the SBUF spill copies are inserted, so a PSUM
tile reusing a ring slot waits for the previous occupant's reader (NKIBench's GQA ran 128 PSUM
transposes ahead of their copies, 2112 % of PSUM, before this was fixed)."""

from __future__ import annotations

import warnings

import numpy as np

import neuroncore_sim as ncs
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl

N = 64  # transposes through one PSUM site


def transposes_under_spills(a, big, hog_in):
    """256 computed 4 KiB SBUF tiles live to the end (1 MiB: some 200 saves inserted first),
    then PSUM transposes, each copied out by a slow VectorE step."""
    out = nl.ndarray((N, 128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    hog_out = nl.ndarray((256, 128, 1024), dtype=nl.float32, buffer=nl.shared_hbm)
    hog = nl.ndarray((256, nl.par_dim(128), 1024), dtype=nl.float32, buffer=nl.sbuf)
    for j in nl.affine_range(256):
        hog[j] = nl.multiply(nl.load(hog_in[j]), 2.0)  # computed: spilled by saves
    ident = nl.load(nl.shared_constant(np.identity(128, dtype=np.float32)))
    pt = nl.zeros((N, nl.par_dim(128), 128), dtype=nl.float32, buffer=nl.psum,
                  lazy_initialization=True)
    x = nl.load(a)
    b = nl.load(big)
    for i in nl.affine_range(N):
        pt[i] = nisa.nc_matmul(x, ident, is_transpose=True, is_moving_onezero=True)
        c = nl.multiply(b, 2.0)  # slow VectorE work before each copy
        nl.store(out[i], nl.add(nl.copy(pt[i]), c[:, 0:128]))
    for j in nl.affine_range(256):
        nl.store(hog_out[j], hog[j])
    return out, hog_out


def test_psum_ring_holds_when_sbuf_spills():
    rng = np.random.default_rng(0)
    args = (rng.random((128, 128), dtype=np.float32), rng.random((128, 8192), dtype=np.float32),
            rng.random((256, 128, 1024), dtype=np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the SBUF SpillWarning is the point
        res = ncs.simulate(transposes_under_spills, *args, functional=False)
    mem = res.summary()["memory"]
    assert mem["sbuf"]["spill_save_bytes"] > 0
    assert mem["psum"]["peak_bytes_per_partition"] <= mem["psum"]["capacity_bytes_per_partition"]
