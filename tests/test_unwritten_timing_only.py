"""Timing-only launches (no values) also warn when a returned output is surely written only in
part (launch_outputs._surely_unwritten: its writes hold fewer elements than it), so a sweep
point whose loop stops short is flagged like one that writes nothing."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import neuroncore_sim as ncs
import neuroncore_sim.nki.language as nl
from neuroncore_sim.errors import UnwrittenOutputWarning
from neuroncore_sim.sweep.run import sweep

KERNELS = Path(__file__).resolve().parent.parent / "kernels"


def blocks_of_256(x):  # DEF
    """Stores x.shape[1] // 256 column blocks: a width that is not a multiple leaves a tail."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(x.shape[1] // 256):
        nl.store(out[:, i * 256:(i + 1) * 256], value=nl.load(x[:, i * 256:(i + 1) * 256]))
    return out


def overlapping_halves(x):
    """Two overlapping stores that together cover every element (more than its size)."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    w = x.shape[1]
    nl.store(out[:, 0:w // 2 + 64], value=nl.load(x[:, 0:w // 2 + 64]))
    nl.store(out[:, w // 2 - 64:w], value=nl.load(x[:, w // 2 - 64:w]))
    return out


def _def_line() -> int:
    return next(i for i, t in enumerate(Path(__file__).read_text().splitlines(), 1)
                if t.endswith("# DEF"))


def test_a_loop_that_stops_short_warns_in_a_timing_only_run() -> None:
    x = np.zeros((128, 640), np.float32)  # 2 blocks of 256: 128 columns never stored
    with pytest.warns(UnwrittenOutputWarning) as caught:
        ncs.simulate(blocks_of_256, x, functional=False)
    [w] = caught
    assert str(w.message).startswith(
        f"test_unwritten_timing_only.py:{_def_line()}: kernel return value hbm0 (allocated at "
        f"test_unwritten_timing_only.py:{_def_line() + 2}) is written only in part: "
        f"{128 * 128} of its {128 * 640} elements never written")
    # the functional run finds the same elements unwritten
    with pytest.warns(UnwrittenOutputWarning, match=f"{128 * 128} of its {128 * 640}"):
        ncs.simulate(blocks_of_256, x, timing=False)


def test_full_and_overlapping_writes_do_not_warn() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnwrittenOutputWarning)
        ncs.simulate(blocks_of_256, np.zeros((128, 512), np.float32), functional=False)
        ncs.simulate(overlapping_halves, np.zeros((128, 512), np.float32), functional=False)


def test_a_sweep_point_whose_loop_stops_short_is_flagged() -> None:
    """matmul_blocked with n_block=4 at N=3072: one 2048-wide block, 1024 columns unstored."""
    table = sweep(f"{KERNELS / 'matmul_blocked.py'}::kernel", {"n_block": [1, 4], "N": [3072]},
                  workers=1)
    short = table[table["n_block"] == 4].iloc[0]
    assert short["instructions"] > 0 and not short["best"]
    assert short["flag"].endswith("is written only in part: 131072 of its 393216 elements "
                                  "never written")
    assert table.loc[table["best"], "n_block"].tolist() == [1]
