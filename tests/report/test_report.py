"""Report tables and text summary, checked by hand on tensor_add with one [128, 512] tile.

One instance: two loads of 256 KiB (128 x 512 float32) split over 16 DMA engines, one vector
add, one store of 256 KiB. So 3 DMA instructions x 16 transfers of 16 KiB each.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import neuroncore_sim as ncs
from neuroncore_sim.report import tables as report

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "kernels"))
import tensor_add  # noqa: E402  (kernels/ is a folder of scripts)

TILE_BYTES = 128 * 512 * 4


@pytest.fixture(scope="module")
def result():
    a = np.ones((128, 512), np.float32)
    return ncs.simulate(tensor_add.kernel, a, a, grid=(1, 1))


def test_engine_table(result):
    t = report.engine_table(result)
    assert list(t.index) == ["tensor", "vector", "scalar", "gpsimd", "dma"]
    assert t.loc["vector", "instructions"] == 1
    assert t.loc["dma", "instructions"] == 3 and t.loc["dma", "events"] == 48
    assert t.loc["tensor", "busy_ns"] == 0.0 and t.loc["tensor", "busy_percent"] == 0.0
    ev = result.events
    vec = ev[ev.engine == "vector"].duration_ns.sum()
    assert t.loc["vector", "busy_ns"] == pytest.approx(vec)
    assert t.loc["vector", "busy_percent"] == pytest.approx(100 * vec / result.latency_ns)
    assert t.loc["vector", "tensor_tensor_ns"] == pytest.approx(vec)
    assert t.loc["dma", "tensor_tensor_ns"] == 0.0
    # DMA busy share is per engine: summed busy over the 16 engines.
    assert t.loc["dma", "busy_percent"] == pytest.approx(
        result.summary()["busy_percent"]["dma"])


def test_dma_table(result):
    t = report.dma_table(result)
    assert list(t.index) == [f"dma{i}" for i in range(16)] + ["total"]
    assert t.loc["total", "bytes"] == 3 * TILE_BYTES
    assert t.loc["total", "transfers"] == 48
    assert t.loc["dma0", "bytes"] == 3 * TILE_BYTES // 16
    assert t.loc["total", "avg_transfer_bytes"] == TILE_BYTES / 16
    cfg = result.config
    # the peak of this mix (two loads at the HBM read rate, one store at the write rate), as
    # the summary's dma_peak_bytes_per_ns; it was the write peak 16 x 18.1 for every kernel
    peak = 3 * 16 / (2 / cfg.dma_hbm_read_bytes_per_ns + 1 / cfg.dma_hbm_write_bytes_per_ns)
    assert t.loc["total", "peak_bytes_per_ns"] == pytest.approx(peak)  # 140.1 B/ns
    assert t.loc["dma0", "peak_bytes_per_ns"] == pytest.approx(peak / 16)
    assert t.loc["total", "bytes_per_ns"] == pytest.approx(3 * TILE_BYTES / result.latency_ns)
    assert 0 < t.loc["total", "bandwidth_percent_of_peak"] < 100


def test_source_table(result):
    t = report.source_table(result)
    # the DMA lines (two loads, the store: each 256 KiB at 17 B/ns per engine) are the busiest
    assert list(t.index)[0] in ("tensor_add.py:30", "tensor_add.py:31", "tensor_add.py:32")
    assert set(t.index) == {"tensor_add.py:30", "tensor_add.py:31", "tensor_add.py:32"}
    assert t["percent"].sum() == pytest.approx(100.0)
    assert t.loc["tensor_add.py:32", "engines"] == "dma,vector"
    assert t.loc["tensor_add.py:30", "instructions"] == 1
    assert (np.diff(t["busy_ns"].to_numpy()) <= 0).all()


def test_summary_text(result):
    text = report.summary_text(result)
    lat = result.latency_ns
    assert f"{lat:,.0f} ns" in text and f"{lat / 1000:,.2f} us" in text
    assert "cycles of the TensorE clock (2.8 GHz)" in text
    assert f"bottleneck : {result.summary()['bottleneck']}" in text
    assert "vector " in text and "dma " in text and "trn1" in text
    assert f"{3 * TILE_BYTES:,} bytes in 48 transfers" in text
