"""One unit per kind of number (issue 27, item 6): per engine row the row's own time (the dma
row: the mean over its queues, in summary.txt as in summary.json); per source line the time
summed over rows; each table of summary.txt says which."""

from __future__ import annotations

from pathlib import Path

import pytest

import neuroncore_sim as ncs
from neuroncore_sim import report
from neuroncore_sim.sweep.kernel_file import example_inputs, load_kernel_file

KERNEL = Path(__file__).resolve().parents[2] / "kernels" / "matmul_bf16.py"


@pytest.fixture(scope="module")
def result():
    module = load_kernel_file(KERNEL)
    pos, kw = example_inputs(module, KERNEL)
    return ncs.simulate(module.kernel, *pos, functional=False, **kw)


def test_engine_rows_agree_with_summary_json(result):
    table = report.engine_table(result)
    s = result.summary()
    for row in ("tensor", "vector", "scalar", "gpsimd", "dma"):
        assert table.loc[row, "busy_ns"] == pytest.approx(s["busy_ns"][row])
        assert table.loc[row, "busy_percent"] == pytest.approx(s["busy_percent"][row])
        assert table.loc[row, "busy_ns"] <= result.latency_ns  # a row's own time
    assert table.loc["dma", "rows"] == result.config.dma_engines
    assert table.loc["dma", "dma_copy_ns"] == pytest.approx(table.loc["dma", "busy_ns"])
    dma = result.events[result.events["engine"].str.startswith("dma")]
    assert table.loc["dma", "busy_ns"] == pytest.approx(dma["duration_ns"].sum() / 16)


def test_line_times_are_summed_over_rows_and_say_so(result):
    lines = report.source_table(result)
    assert lines["busy_ns"].sum() == pytest.approx(result.events["duration_ns"].sum())
    assert lines["busy_ns"].iloc[0] > result.latency_ns  # 16 queues' work on one line
    text = report.full_text(result)
    assert "per engine (busy_ns and <opcode>_ns: time the row was busy; dma: the mean over " \
           "its 16 queues, as summary.json's busy_ns.dma):" in text
    assert "per source line (busy_ns: engine time summed over all rows, each of the 16 DMA " \
           "queues counted; percent: of all engine time):" in text
    assert "dma (all engines; busy_ns summed over the 16 queues" in text
    assert "(of all engine time, each DMA queue's counted)" in report.summary_text(result)
