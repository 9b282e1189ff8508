"""DMA traffic per source line (report.dma_line_table) and the timeline's DMA colouring by line."""

from __future__ import annotations

import numpy as np
import pytest

import neuroncore_sim as ncs
import neuroncore_sim.nki as nki
import neuroncore_sim.nki.language as nl
from neuroncore_sim import report
from neuroncore_sim.config import TRN1
from neuroncore_sim.report.plot import DMA_LINES_SHOWN, OTHER_DMA, dma_labels


@nki.jit
def narrow_then_wide(a, b):
    out = nl.ndarray(b.shape, dtype=b.dtype, buffer=nl.shared_hbm)
    for j in nl.affine_range(a.shape[1] // 32):
        t = nl.load(a[:, j * 32:(j + 1) * 32])          # 128 B per partition
        nl.store(out[:, j * 32:(j + 1) * 32], value=t)
    w = nl.load(b[:, 2048:4096])                         # 8 KiB per partition
    nl.store(out[:, 2048:4096], value=w)
    return out


@nki.jit
def many_lines(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    # twelve DMA lines: one load and store each
    nl.store(out[:, 0:64], value=nl.load(a[:, 0:64]))
    nl.store(out[:, 64:128], value=nl.load(a[:, 64:128]))
    nl.store(out[:, 128:192], value=nl.load(a[:, 128:192]))
    nl.store(out[:, 192:256], value=nl.load(a[:, 192:256]))
    nl.store(out[:, 256:320], value=nl.load(a[:, 256:320]))
    nl.store(out[:, 320:384], value=nl.load(a[:, 320:384]))
    nl.store(out[:, 384:448], value=nl.load(a[:, 384:448]))
    nl.store(out[:, 448:512], value=nl.load(a[:, 448:512]))
    nl.store(out[:, 512:576], value=nl.load(a[:, 512:576]))
    nl.store(out[:, 576:640], value=nl.load(a[:, 576:640]))
    nl.store(out[:, 640:704], value=nl.load(a[:, 640:704]))
    nl.store(out[:, 704:768], value=nl.load(a[:, 704:768]))
    return out


def test_bytes_per_partition_and_efficiency_by_line() -> None:
    a = np.zeros((128, 2048), np.float32)
    res = ncs.simulate(narrow_then_wide, a, np.zeros((128, 4096), np.float32), functional=False)
    table = report.dma_line_table(res)
    narrow = table[table["tensors"] == "a"].iloc[0]
    wide = table[table["tensors"] == "b"].iloc[0]
    assert narrow["dmas"] == 64 and narrow["bytes"] == a.nbytes
    assert narrow["bytes_per_partition"] == 128 and wide["bytes_per_partition"] == 8192
    for row in (narrow, wide):  # efficiency: bytes over what the engines move in that time
        # (loads read HBM at dma_hbm_read_bytes_per_ns; rows of 128 B are above the 7 ns
        # descriptor floor on trn1, so both lines keep their engines moving data)
        assert row["efficiency_percent"] == pytest.approx(
            100 * row["bytes"] / (row["busy_ns"] * TRN1.dma_hbm_read_bytes_per_ns))
        assert row["efficiency_percent"] == pytest.approx(100)
    # the narrow line's cost is its 64 DMAs, each paying the fixed DMA latency
    assert narrow["dmas"] == 64 * wide["dmas"]
    assert list(table["busy_ns"]) == sorted(table["busy_ns"], reverse=True)


def test_heaviest_lines_get_colours_the_rest_other() -> None:
    res = ncs.simulate(many_lines, np.zeros((128, 768), np.float32), functional=False)
    labels = dma_labels(res)
    assert len(labels) == DMA_LINES_SHOWN
    assert all(label.startswith("dma: test_dma_lines.py:") for label in labels.values())
    import matplotlib.pyplot as plt

    fig = report.plot.timeline(res)
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert OTHER_DMA in legend and sum(t.startswith("dma: test_dma") for t in legend) == 8
    plt.close(fig)
