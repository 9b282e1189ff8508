"""Generate docs/compatibility.md: every NKI 2.26 API item's status, from the conformance suite.

    python scripts/compatibility.py                       # the suite only
    python scripts/compatibility.py --api-tests DIR --tutorials PEERS
        # also run AWS's API example tests (DIR = aws-neuron-sdk-2.26/general/nki/test) and the
        # tutorial kernels (PEERS = the folder run_tutorials.py takes) with the runners of
        # /work/shared/conformance (--runners to change), and list each failure with its reason

The item list is tests/conformance/api_inventory.py; each item's status comes from the outcomes
of the tests marked ``@pytest.mark.api(item)``: supported (semantics tests pass), present (only
the surface test covers it), partly (a strict xfail says what is missing), not available on
NeuronCore-v2 / not simulated (a test checks the clear error), or FAILS (a test fails: fix it).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's package and tests, not an installed copy

import pytest  # noqa: E402

from tests.conformance.api_inventory import (  # noqa: E402
    INVENTORY, MODULES, NOT_SIMULATED, V3_ONLY, Item)

DOC = ROOT / "docs" / "compatibility.md"
SURFACE_TEST = "test_api_surface.py::test_item_exists"

#: Why each known failure of AWS's API example tests / tutorials fails (matched on the runner's
#: line). A failure not listed here is reported as unexplained.
AWS_API_REASONS = {
    "test_nki_isa_dma_copy.py": "3 cases use dma_copy dge_mode=hwdge: hardware DGE is "
                                "NeuronCore-v3 or later (clear UnsupportedError)",
    "test_nki_isa_nc_matmul.py": "1 case uses nc_matmul perf_mode=double_row_gen3, a "
                                 "NeuronCore-v3 Tensor Engine mode (clear UnsupportedError)",
    "test_nki_isa_range_select.py": "range_select is NeuronCore-v3 or later (clear "
                                    "UnsupportedError)",
    "test_nki_isa_activation.py": "the test's golden compares a bfloat16 result with a float32 "
                                  "reference under np.allclose's default tolerance (rtol 1e-5), "
                                  "tighter than bfloat16's precision (a fault of the golden, "
                                  "not of the simulator)",
}
#: (none known: attn_fwd_v10, run after attn_fwd_v9 in one process, places tiles past the end of
#: SBUF from the tutorial's module-level allocator, and runs with an AllocationWarning)
TUTORIAL_REASONS: dict[str, str] = {}


@dataclass
class Outcomes:
    """Test outcomes per inventory item."""

    passed: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    failed: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    xfailed: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    total: dict[str, int] = field(default_factory=lambda: defaultdict(int))


class _Collector:
    """A pytest plugin: which api items each test names, and how it ended.

    Parametrized tests add their ``api`` mark while running (``request.node.add_marker``), so
    the names are read at teardown, and the reports are joined with them at the end.
    """

    def __init__(self) -> None:
        self.names: dict[str, tuple[str, ...]] = {}
        self.reports: list[pytest.TestReport] = []

    def pytest_runtest_teardown(self, item: pytest.Item) -> None:
        self.names[item.nodeid] = tuple(n for m in item.iter_markers("api") for n in m.args)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "call" or (report.when == "setup" and not report.passed):
            self.reports.append(report)

    def outcomes(self) -> Outcomes:
        """Outcomes per item name."""
        out = Outcomes()
        for report in self.reports:
            short = report.nodeid.split("conformance/", 1)[-1]
            for n in self.names.get(report.nodeid, ()):
                out.total[n] += 1
                if hasattr(report, "wasxfail"):
                    out.xfailed[n].append(report.wasxfail or short)
                elif report.passed:
                    out.passed[n].append(short)
                elif report.failed:
                    out.failed[n].append(short)
        return out


def run_suite() -> tuple[Outcomes, int]:
    """Run tests/conformance in this process; outcomes per item and pytest's exit code."""
    col = _Collector()
    code = pytest.main([str(ROOT / "tests" / "conformance"), "-q", "-p", "no:cacheprovider",
                        "--no-header", "-o", "addopts="], plugins=[col])
    return col.outcomes(), int(code)


def status(item: Item, out: Outcomes) -> tuple[str, str]:
    """(status, detail) of one item."""
    q = item.qualname
    if out.failed.get(q):
        return "FAILS", "failing tests: " + ", ".join(out.failed[q])
    if item.availability == V3_ONLY:
        checked = "refused with a clear error (tested)" if out.passed.get(q) else "untested"
        return "not on NeuronCore-v2", f"{item.note}; {checked}"
    if q in NOT_SIMULATED:
        return "not simulated", NOT_SIMULATED[q]
    modes = "".join(f"; NeuronCore-v3-only mode: {m} ({why})" for m, why in item.v3_modes)
    if out.xfailed.get(q):
        return "partly", "; ".join(sorted(set(out.xfailed[q]))) + modes
    semantic = [t for t in out.passed.get(q, []) if SURFACE_TEST not in t]
    if semantic:
        return "supported", f"{len(semantic)} semantics tests{modes}"
    if out.passed.get(q):
        return "present", f"exists; semantics not yet tested here{modes}"
    return "untested", "no conformance test names it"


def run_runner(script: Path, arg: str) -> str:
    """The output of one of the shared conformance runners."""
    res = subprocess.run([sys.executable, str(script), arg], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=1800)
    return res.stdout + res.stderr


def aws_section(title: str, log: str, reasons: dict[str, str], line_re: str) -> list[str]:
    """A section for one runner: its totals line, then each failure with its reason."""
    total = re.findall(r"^(\d+ passed, \d+ failed)\s*$", log, re.M)
    lines = [f"## {title}", "", f"Result: {total[-1] if total else 'no totals line found'}.", ""]
    fails = re.findall(line_re, log, re.M)
    if fails:
        lines += ["| case | reason |", "|---|---|"]
        for name in fails:
            lines.append(f"| `{name}` | {reasons.get(name, 'UNEXPLAINED: investigate')} |")
    else:
        lines.append("No failures.")
    return lines + [""]


def render(out: Outcomes, suite_code: int, api_log: str | None, tut_log: str | None) -> str:
    """The markdown document."""
    rows = [(i, *status(i, out)) for i in INVENTORY]
    known = {i.qualname for i in INVENTORY}
    unknown = sorted(n for n in out.total if n not in known)
    counts: dict[str, int] = defaultdict(int)
    for _, st, _ in rows:
        counts[st] += 1
    lines = [
        "# NKI 2.26 API compatibility (NeuronCore-v2)",
        "",
        "Generated by `scripts/compatibility.py` from `tests/conformance/` (do not edit by hand).",
        "Every public item of the NKI 2.26 API reference (`nki`, `nki.language`, `nki.isa`,",
        "`nki.compiler`, `nki.typing`) with its status in neuroncore_sim:",
        "",
        "- **supported**: conformance tests of its documented semantics pass (against numpy);",
        "- **present**: it exists and is callable, its semantics are not yet tested here;",
        "- **partly**: what is missing is named (a strict xfail in the suite);",
        "- **not on NeuronCore-v2**: the reference documents it for NeuronCore-v3 or later; "
        "the simulator refuses it with a clear SimulatorError;",
        "- **not simulated**: on NeuronCore-v2 but outside what the simulator models.",
        "",
        f"Conformance suite: pytest exit code {suite_code}. Totals: "
        + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) + f" (of {len(rows)}).",
        "",
    ]
    gaps = [(i, st, d) for i, st, d in rows if st in ("partly", "FAILS", "untested")]
    if gaps:
        lines += ["## Differences from the reference", ""]
        lines += [f"- `{i.qualname}` ({st}): {d}" for i, st, d in gaps] + [""]
    if unknown:
        lines += ["**Tests name items the inventory lacks (fix the marks):** "
                  + ", ".join(f"`{n}`" for n in unknown), ""]
    for module in MODULES:
        lines += [f"## `{module}`", "", "| item | kind | status | detail |", "|---|---|---|---|"]
        for item, st, detail in rows:
            if item.module == module:
                lines.append(f"| `{item.name}` | {item.kind} | {st} | {detail} |")
        lines.append("")
    if api_log is not None:
        lines += aws_section("AWS's API example tests (SDK 2.26 `general/nki/test`)", api_log,
                             AWS_API_REASONS, r"^FAIL\s+(\S+?):")
    if tut_log is not None:
        lines += aws_section("AWS's tutorial kernels (unmodified)", tut_log, TUTORIAL_REASONS,
                             r"^FAIL\s+(\S+)")
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--api-tests", help="AWS's general/nki/test folder (runs run_api_tests.py)")
    ap.add_argument("--tutorials", help="the peers folder run_tutorials.py takes")
    ap.add_argument("--runners", default="/work/shared/conformance",
                    help="folder of run_api_tests.py and run_tutorials.py")
    ap.add_argument("--output", default=str(DOC))
    args = ap.parse_args(argv)
    out, code = run_suite()
    runners = Path(args.runners)
    api_log = run_runner(runners / "run_api_tests.py", args.api_tests) if args.api_tests else None
    tut_log = run_runner(runners / "run_tutorials.py", args.tutorials) if args.tutorials else None
    Path(args.output).write_text(render(out, code, api_log, tut_log))
    print(f"wrote {args.output}")
    return code


if __name__ == "__main__":
    raise SystemExit(main())
