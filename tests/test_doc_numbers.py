"""Numbers the docs quote from runs are re-run here, so they cannot go stale (issue 27, item 6),
and every repository path the docs name exists.

A quote is (doc, kernel target, text with ``{summary_field:format}`` holes): the test runs the
target on its example inputs (timing only), fills the holes from ``summary()`` and looks for the
text in the doc. When the model moves a number, the failure prints the text to put in the doc.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

import neuroncore_sim as ncs
from neuroncore_sim.config import TRN1
from neuroncore_sim.report import chrome_trace
from neuroncore_sim.sweep.kernel_file import example_inputs, find_kernel, load_kernel_file

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]

#: (doc, target, quoted text): the numbers docs quote from sample runs.
QUOTES = [
    ("docs/reports.md", "kernels/matmul_bf16.py",
     'reads "dma queues\n{dma_queue_busy_percent:.1f}%" and "bandwidth '
     '{dma_bandwidth_percent_of_peak:.0f}% of peak"'),
    ("docs/reports.md", "kernels/giou.py",
     "`giou`'s queues are busy {dma_queue_busy_percent:.1f}% of its latency\nwhile moving "
     "{dma_bandwidth_percent_of_peak:.1f}% of the peak bytes ({dma_transfers} transfers of "
     "{bytes_per_transfer} bytes each)"),
]


def _run(target: str) -> ncs.SimResult:
    file, _, name = target.partition("::")
    module = load_kernel_file(ROOT / file)
    pos, kw = example_inputs(module, file)
    kernel = find_kernel(module, name or None)[1]
    return ncs.simulate(kernel, *pos, grid=getattr(module, "GRID", ()), functional=False, **kw)


def _flat(text: str) -> str:
    """Line breaks of the doc's prose do not matter."""
    return re.sub(r"\s+", " ", text)


@pytest.mark.parametrize("doc, target, quote", QUOTES, ids=[f"{d}:{t}" for d, t, _ in QUOTES])
def test_quoted_run_numbers_are_todays(doc, target, quote):
    s = _run(target).summary()
    s["bytes_per_transfer"] = s["dma_bytes"] // max(s["dma_transfers"], 1)
    want = quote.format(**s)
    assert _flat(want) in _flat((ROOT / doc).read_text()), \
        f"{doc} quotes an old run of {target}; today it reads: {want!r}"


def test_config_numbers_quoted_in_reports_md():
    text = _flat((ROOT / "docs" / "reports.md").read_text())
    c = TRN1
    assert f"peaks at {c.dma_engines * c.dma_hbm_read_bytes_per_ns:g} B/ns ({c.dma_engines} x " \
           f"{c.dma_hbm_read_bytes_per_ns:g} B/ns" in text
    assert f"only stores at {c.dma_engines * c.dma_hbm_write_bytes_per_ns:g} B/ns" in text
    assert f"({c.hbm_bytes_per_ns:g} B/ns: 820 GB/s per chip over 2 cores)" in text
    peak_tflops = c.num_partitions * c.gemm_stationary_fmax * 2 * c.tensor_clock_hz / 1e12
    assert f"{peak_tflops:.2f} TFLOPS bf16" in text
    assert f"`fp32_matmul_slowdown` = {c.fp32_matmul_slowdown:g}x slower" in text


def test_trace_bytes_per_event_quoted_in_reports_md(tmp_path):
    quoted = re.search(r"a trace takes about (\d+) bytes per event",
                       _flat((ROOT / "docs" / "reports.md").read_text()))
    assert quoted, "docs/reports.md no longer quotes the trace size"
    res = _run("kernels/matmul_ladder.py::tiled")
    path = tmp_path / "trace.json"
    chrome_trace.write(res, path)
    per_event = path.stat().st_size / len(res.timing.events)
    assert abs(per_event - int(quoted.group(1))) <= 0.25 * int(quoted.group(1)), per_event
    assert json.loads(path.read_text())["traceEvents"]


def test_fast_and_reference_values_differ_as_model_md_says():
    quoted = re.search(r"matmul_bf16 differs on about (\d+) % of its fp32 outputs",
                       _flat((ROOT / "docs" / "model.md").read_text()))
    assert quoted, "docs/model.md no longer quotes the matmul_bf16 difference"
    module = load_kernel_file(ROOT / "kernels" / "matmul_bf16.py")
    pos, kw = example_inputs(module, "matmul_bf16.py")
    fast = ncs.simulate(module.kernel, *pos, timing=False, **kw).outputs[0]
    ref = ncs.simulate(module.kernel, *pos, timing=False, functional="reference", **kw).outputs[0]
    # The share of differing outputs depends on the BLAS build's summation order (62 % with
    # one OpenBLAS, 63 % with another); the docs say "about", so a few points either way.
    share = 100 * float(np.mean(fast != ref))
    assert abs(share - int(quoted.group(1))) <= 5, share
    assert np.any(fast != ref)  # the two paths do differ (the sentence's point)


def _ignored(paths: list[str]) -> set[str]:
    """Those of ``paths`` the repository's .gitignore ignores (caches the docs describe, made by
    a run). Read from .gitignore itself: CI tests a copy of the tree without git."""
    import fnmatch
    rules = [line.strip() for line in (ROOT / ".gitignore").read_text().splitlines()
             if line.strip() and not line.startswith("#")]

    def ignored(path: str) -> bool:
        parts = path.strip("/").split("/")
        for rule in rules:
            anchored, body = rule.startswith("/"), rule.strip("/")
            for k in range(1, len(parts) + 1):
                prefix = "/".join(parts[:k])
                if fnmatch.fnmatch(prefix if anchored else parts[k - 1], body):
                    return True
        return False

    return {p for p in paths if ignored(p)}


def test_every_repository_path_the_docs_name_exists():
    pattern = re.compile(r"`((?:tests|neuroncore_sim|scripts|benchmarks|reports|kernels|"
                         r"examples|docs)/[\w./-]+)`")
    named = {(doc.relative_to(ROOT).as_posix(), m.rstrip("/.,"))
             for doc in DOCS for m in pattern.findall(doc.read_text())}
    missing = [(d, p) for d, p in sorted(named) if not (ROOT / p).exists()]
    ignored = _ignored([p for _, p in missing] + [p + "/" for _, p in missing])
    missing = [(d, p) for d, p in missing if p not in ignored and p + "/" not in ignored]
    assert missing == []
