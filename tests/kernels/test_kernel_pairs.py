"""Kernel pairs that teach one thing each: the faster version must be right and faster.

* kernels/layernorm.py: ``nl.mean``/``nl.var`` versus ``nisa.bn_stats``/``nisa.bn_aggr``.
* kernels/dma_rows.py: one 128-byte row per partition versus 2 KiB of rows per partition.

Both members of a pair take the same inputs; test_kernels.py checks each against its numpy
reference on the example inputs, these tests add other shapes and the timing comparison.
"""

from __future__ import annotations

import numpy as np
import pytest

import neuroncore_sim as ncs
from test_kernels import load_sample


@pytest.fixture(scope="module")
def layernorm():
    return load_sample("layernorm")


@pytest.fixture(scope="module")
def dma_rows():
    return load_sample("dma_rows")


@pytest.mark.parametrize("n, f", [(128, 512), (256, 300), (128, 1536)])  # bn: F <= 512 or k*512
@pytest.mark.parametrize("name", ["layernorm_nl", "layernorm_bn"])
def test_layernorm_pair_matches_numpy(layernorm, name, n, f) -> None:
    inputs = layernorm.example_inputs(N=n, F=f)
    res = ncs.simulate(layernorm.KERNELS[name], **inputs)
    np.testing.assert_allclose(res.outputs[0], layernorm.reference(**inputs),
                               rtol=1e-4, atol=1e-4)


def test_layernorm_bn_rejects_a_ragged_chunking(layernorm) -> None:
    inputs = layernorm.example_inputs(N=128, F=768)
    with pytest.raises(AssertionError, match="multiple of 512"):
        ncs.simulate(layernorm.layernorm_bn, **inputs, functional=False)


def test_bn_stats_beats_mean_and_var(layernorm) -> None:
    """bn_stats reads each element once for both statistics; nl.var makes several passes."""
    inputs = layernorm.example_inputs()
    nl_version = ncs.simulate(layernorm.layernorm_nl, **inputs, functional=False)
    bn_version = ncs.simulate(layernorm.layernorm_bn, **inputs, functional=False)
    assert bn_version.latency_ns < 0.75 * nl_version.latency_ns
    assert (bn_version.summary()["busy_ns"]["vector"]
            < 0.5 * nl_version.summary()["busy_ns"]["vector"])


@pytest.mark.parametrize("rows_per_partition, r, c", [(1, 256, 32), (4, 1024, 32),
                                                      (16, 4096, 32), (2, 512, 100)])
def test_rows_grouped_matches_numpy(dma_rows, rows_per_partition, r, c) -> None:
    inputs = dma_rows.example_inputs(R=r, C=c)
    res = ncs.simulate(dma_rows.rows_grouped, **inputs, ROWS_PER_PARTITION=rows_per_partition)
    np.testing.assert_array_equal(res.outputs[0], dma_rows.reference(**inputs))


def test_rows_grouped_needs_whole_tiles(dma_rows) -> None:
    inputs = dma_rows.example_inputs(R=1024)
    with pytest.raises(AssertionError, match="multiple of 128 \\* ROWS_PER_PARTITION"):
        ncs.simulate(dma_rows.rows_grouped, **inputs, ROWS_PER_PARTITION=16, functional=False)
    ncs.simulate(dma_rows.rows_grouped, **inputs, ROWS_PER_PARTITION=8, functional=False)


def test_two_kib_rows_move_the_same_bytes_faster(dma_rows) -> None:
    """Same bytes, same VectorE work, 1/16 of the DMA instructions: each DMA pays its fixed
    latency and each 128 B load row still costs its bytes (trn1: loads are byte-bound down to
    ~49 B rows), so grouping wins on latency, and the wide kernel is bound by its loads."""
    inputs = dma_rows.example_inputs()
    narrow = ncs.simulate(dma_rows.row_per_partition, **inputs, functional=False)
    wide = ncs.simulate(dma_rows.rows_grouped, **inputs, functional=False)
    assert narrow.summary()["dma_bytes"] == wide.summary()["dma_bytes"]
    assert wide.summary()["bottleneck"] == "dma"
    assert wide.latency_ns < 0.7 * narrow.latency_ns


def test_dma_time_falls_with_bytes_per_partition_until_the_knee(dma_rows) -> None:
    """Grouping rows pays while the DMAs are few and latency-bound, and stops paying once the
    loads are bound by the HBM read rate (a few hundred bytes per partition: a buffer costs at
    least the 7 ns descriptor floor, 119 B at 17 B/ns)."""
    inputs = dma_rows.example_inputs(R=16384)
    latency = {g: ncs.simulate(dma_rows.rows_grouped, **inputs, ROWS_PER_PARTITION=g,
                               functional=False).latency_ns for g in (1, 2, 4, 16, 32)}
    assert latency[1] > 1.5 * latency[2] > latency[4]
    assert latency[4] > latency[16]  # 64 B per partition: still under the 7 ns descriptor floor
    assert latency[16] == pytest.approx(latency[32], rel=0.05)
