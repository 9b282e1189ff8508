"""Streamed loads (compiler/spill.py): a large hoisted site of kernel-input tiles that does not
stay in SBUF is loaded again for every read, the columns each reader reads, as neuronx-cc does
on NKIBench's matmul_M4096_N12288 (docs/model.md, "Spilling"); a small one is not."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import neuroncore_sim as ncs
import neuroncore_sim.compiler.spill as spill
import neuroncore_sim.nki.language as nl
from programs import AS_WRITTEN

W = 10240  # one weight tile: [128, 10240] fp32 = 40 KiB per partition; three: 120 KiB
HALF = W // 2
SHARE = spill.STREAMED_SITE_SHARE  # the shipped value


def streamed_weights(w, x, out):
    """Three weight tiles loaded before a loop whose iterations each read half of every one
    (beside their own row tiles: more than SBUF holds)."""
    wt = nl.ndarray((3, nl.par_dim(128), W), dtype=nl.float32, buffer=nl.sbuf)
    for j in nl.affine_range(3):
        wt[j] = nl.load(w[:, j * W:(j + 1) * W])
    for i in nl.affine_range(4):
        for h in nl.affine_range(2):
            cols = slice(h * HALF, (h + 1) * HALF)
            xt = nl.load(x[i * 128:(i + 1) * 128, cols])
            acc = nl.multiply(xt, wt[0, :, cols])
            for j in range(1, 3):
                acc = nl.add(acc, nl.multiply(xt, wt[j, :, cols]))
            nl.store(out[i * 128:(i + 1) * 128, cols], value=acc)


def run(share: float, monkeypatch) -> tuple[np.ndarray, np.ndarray, object]:
    monkeypatch.setattr(spill, "STREAMED_SITE_SHARE", share)
    rng = np.random.default_rng(0)
    w = rng.standard_normal((128, 3 * W)).astype(np.float32)
    x = rng.standard_normal((512, W)).astype(np.float32)
    out = np.zeros((512, W), np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (it spills: SpillWarning)
        res = ncs.simulate(streamed_weights, w, x, out, config=AS_WRITTEN)
    ref = sum(x.reshape(4, 128, W) * w[:, j * W:(j + 1) * W] for j in range(3)).reshape(512, W)
    return out, ref, res


def reload_sizes(res) -> list[int]:
    ev = res.events
    return sorted(ev[ev.opcode == "spill_reload"].groupby("instr_id").nbytes.sum())


def test_a_large_hoisted_site_is_reloaded_per_read_columns_only(monkeypatch):
    out, ref, res = run(SHARE, monkeypatch)
    np.testing.assert_array_equal(out, ref)
    sizes = reload_sizes(res)
    half = 128 * HALF * 4
    # 24 reads of a weight tile (4 x 2 iterations x 3 tiles); once one is evicted, each later
    # read loads its half again and keeps nothing
    assert sizes and set(sizes) == {half}
    assert 12 < len(sizes) <= 24
    assert res.summary()["memory"]["sbuf"]["spill_reload_bytes"] == len(sizes) * half


def test_a_site_under_the_share_is_kept_by_whole_tiles(monkeypatch):
    """The same kernel with the share above the weights' 120 of 176 KiB: Belady's choice,
    whole tiles reloaded, fewer bytes."""
    out, ref, res = run(1.0, monkeypatch)
    np.testing.assert_array_equal(out, ref)
    sizes = reload_sizes(res)
    assert sizes and set(sizes) == {128 * W * 4}
    streamed = run(SHARE, monkeypatch)[2]
    assert (res.summary()["memory"]["sbuf"]["spill_reload_bytes"]
            < streamed.summary()["memory"]["sbuf"]["spill_reload_bytes"])
