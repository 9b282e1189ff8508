"""SBUF spill reloads issued ahead of their readers (compiler/spill.py, ``lead``): the tiles the
instructions just before one touched are not evicted to make room for it while another tile
can be, so a reload does not wait for the read that came just before it."""

from __future__ import annotations

import warnings

import numpy as np

import neuroncore_sim as ncs
import neuroncore_sim.nki.language as nl
from neuroncore_sim.config import override
from neuroncore_sim.errors import SpillWarning
from programs import AS_WRITTEN

B, F = 128, 512  # 128 blocks of 2 KiB per partition: 256 KiB, SBUF has 176


def three_passes(x):
    """A block tensor computed in one pass and read block by block in two more: the blocks do
    not fit, so the second and third passes reload what was spilled, in order."""
    y = nl.ndarray((B, 128, F), dtype=nl.float32, buffer=nl.shared_hbm)
    z = nl.ndarray((B, 128, F), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.ndarray((B, nl.par_dim(128), F), dtype=nl.float32, buffer=nl.sbuf)
    for i in nl.affine_range(B):
        acc[i] = nl.multiply(nl.load(x[i]), 2.0)
    for i in nl.affine_range(B):
        nl.store(y[i], nl.add(acc[i], 1.0))
    for i in nl.affine_range(B):
        nl.store(z[i], nl.multiply(acc[i], 3.0))
    return y, z


def lead(n: int):
    return override(AS_WRITTEN, {"spill_reload_lead_instructions": n}, "tests")


def _x():
    return np.random.default_rng(0).standard_normal((B, 128, F)).astype(np.float32)


def test_the_victim_is_the_furthest_next_use_among_tiles_not_touched_just_now():
    from neuroncore_sim.compiler.evictable import Evictable
    resident = {k: 2048 for k in (1, 2, 3, 4)}
    # (tile, next use, last touched by): tile 4 was read just now and is read again last
    uses = {1: (20, 2), 2: (30, 3), 3: (12, 4), 4: (90, 9)}
    for lead_n, want in ((0, 4), (5, 2)):
        ev = Evictable(lead_n)
        for k, (nxt, at) in uses.items():
            ev.push(k, nxt, 2048, 2 * 2048, at)
        assert ev.victim(resident, [], 10) == want  # Belady alone: the tile just read
    ev = Evictable(50)  # every tile touched within the lead: Belady's choice after all
    for k, (nxt, at) in uses.items():
        ev.push(k, nxt, 2048, 2 * 2048, at)
    assert ev.victim(resident, [], 10) == 4


def test_the_reloads_overlap_and_the_values_hold():
    x = _x()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SpillWarning)
        serial = ncs.simulate(three_passes, x, config=lead(0))
        ahead = ncs.simulate(three_passes, x, config=lead(5))
    for r in (serial, ahead):
        np.testing.assert_allclose(r.outputs[0], x * 2 + 1, rtol=1e-6)
        np.testing.assert_allclose(r.outputs[1], x * 6, rtol=1e-6)
    assert ahead.latency_ns < serial.latency_ns
