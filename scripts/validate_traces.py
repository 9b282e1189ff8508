"""Our estimates against a second published set: UC Berkeley Autocomp's Trainium1 traces.

Autocomp (github.com/ucb-bar/autocomp) publishes optimisation traces of NKI kernels measured on
a trn1.2xlarge (NeuronCore-v2): ``examples/trn-tutorial/*_trace.py`` and
``examples/trn-advanced/*_trace.py``, each one Python expression ``CodeCandidate(parent=...,
code='''...''', score=MS)``, a chain of kernel versions, root first, with the latency measured
for each (ms, P99 of ``nki.benchmark``). Its harnesses (``harnesses/trn-*-nki1/*_test.py``) put
a version's code in place of ``# SUBSTITUTE HERE`` and call it ``solution``; ``benchmark_nki``
benchmarks it at the published shapes and ``test_nki`` checks it against the reference kernel.

This script runs every version of every trace from a local checkout, unmodified (nothing of it
is copied here): each version in a fresh process, its harness's ``benchmark_nki`` through our
``nki.benchmark`` (timing-only), and with ``--check`` the harness's ``test_nki`` too (its loop
cut to one repetition). It writes reports/autocomp_traces.md: published figure, estimate and
error per version, and per trace whether the estimates order the versions as the hardware does.

    python scripts/validate_traces.py --autocomp DIR [-k TEXT] [--check] [--no-write]

DIR is a checkout of ucb-bar/autocomp. Not a test: nothing is asserted. ``scripts/validate.py
--autocomp DIR`` runs the same versions (through ``TRACES``, ``versions`` and
``harness_module`` here) as one set of the validation report, cached, beside the other sets.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's package, not another installed copy
REPORT = ROOT / "reports" / "autocomp_traces.md"

#: trace file (under examples/) -> its harness (under harnesses/)
TRACES = {
    "trn-tutorial/2_gemm_trace.py": "trn-tutorial-nki1/2_gemm_test.py",
    "trn-tutorial/3_mamba_trace.py": "trn-tutorial-nki1/3_mamba_test.py",
    "trn-tutorial/4_attention_trace.py": "trn-tutorial-nki1/4_attention_test.py",
    "trn-tutorial/5_sd_attention_trace.py": "trn-tutorial-nki1/5_sdattention_test.py",
    "trn-advanced/4_conv1d_trace.py": "trn-advanced-nki1/4_conv1d_test.py",
}
# (1_gemm_trace.py repeats 2_gemm's first two versions; its later ones lost characters)


class _Candidate:
    """Stands for Autocomp's CodeCandidate when a trace file is read."""

    def __init__(self, **fields: object) -> None:
        self.__dict__.update(fields)


def versions(trace: Path) -> list[tuple[str, float]]:
    """(code, published ms) of every version of a trace, root first."""
    cand = eval(trace.read_text(), {"CodeCandidate": _Candidate})  # noqa: S307 (a data file)
    out = []
    while cand is not None:
        out.append((cand.code, float(cand.score)))
        cand = getattr(cand, "parent", None)
    return out[::-1]


def harness_module(harness: Path, code: str, where: Path) -> Path:
    """The harness with ``code`` substituted, its main block cut, written under ``where``."""
    text = harness.read_text().replace("# SUBSTITUTE HERE", code)
    text = text[:text.index('if __name__')]
    head, tail = text.split("def test_nki", 1)
    tail = re.sub(r"for _ in range\(\d+\):", "for _ in range(1):", tail, count=1)
    path = where / "version.py"
    path.write_text(head + "def test_nki" + tail + "\nsolution = test\n")
    return path


def run_version(module_path: Path, ref_name: str, check: bool) -> dict:
    """In this process: the estimate (ms) of one built version, and its check if asked."""
    import importlib.util

    import numpy as np

    import neuroncore_sim as ncs
    ncs.install_neuronxcc_alias()
    import neuronxcc.nki as nki  # our alias

    spec = importlib.util.spec_from_file_location("autocomp_version", module_path)
    mod = importlib.util.module_from_spec(spec)
    out: dict = {"estimate_ms": None, "correct": None, "error": None}
    try:
        spec.loader.exec_module(mod)
    except Exception as e:  # the version's own text does not import
        out["error"] = f"import: {type(e).__name__}: {e}"
        return out
    if check:
        np.random.seed(1234)
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                out["correct"] = bool(mod.test_nki(getattr(mod, ref_name), mod.solution))
        except Exception as e:
            out["correct"], out["error"] = False, f"check: {type(e).__name__}: {e}"
    made = []
    real = nki.benchmark

    def recording(*args, **kwargs):
        def wrap(fn):
            made.append(real(*args, **kwargs)(fn))
            return made[-1]
        return wrap

    nki.benchmark = recording
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            mod.benchmark_nki(mod.solution)
        out["estimate_ms"] = made[-1].benchmark_result.sim_result.latency_ns / 1e6
    except Exception as e:
        out["error"] = (out["error"] or "") + f" benchmark: {type(e).__name__}: {e}"
    finally:
        nki.benchmark = real
    return out


def _pairs_right(rows: list[dict]) -> tuple[int, int]:
    """Pairs of versions whose published figures differ by more than 5 %, and how many of them
    the estimates order the same way."""
    done = [r for r in rows if r["estimate_ms"]]
    right = total = 0
    for i, a in enumerate(done):
        for b in done[i + 1:]:
            if abs(a["published_ms"] - b["published_ms"]) <= 0.05 * max(a["published_ms"],
                                                                      b["published_ms"]):
                continue
            total += 1
            right += (a["published_ms"] < b["published_ms"]) == (a["estimate_ms"] < b["estimate_ms"])
    return right, total


def report(rows: list[dict]) -> str:
    lines = ["# Estimates against Autocomp's published Trainium1 traces", "",
             "Written by `scripts/validate_traces.py` (timing-only, trn1 config) from a checkout of "
             "ucb-bar/autocomp, run unmodified. Published: the latency Autocomp measured for each "
             "version on a trn1.2xlarge (P99 of nki.benchmark, ms). These figures are not in "
             "`shared/calibration.md` and nothing was fitted on them.", "",
             "| trace | version | published ms | estimate ms | error | check |", "|---|---|---|---|---|---|"]
    errors = []
    for r in rows:
        est = r["estimate_ms"]
        err = "" if est is None else f"{100 * (est - r['published_ms']) / r['published_ms']:+.1f} %"
        if est is not None:
            errors.append(abs(est - r["published_ms"]) / r["published_ms"])
        check = {True: "pass", False: "FAIL", None: ""}[r["correct"]]
        if r["error"]:
            check = (check + " " if check else "") + r["error"].splitlines()[0][:120]
        lines.append(f"| {r['trace']} | {r['version']} | {r['published_ms']:.3f} | "
                     f"{'' if est is None else f'{est:.3f}'} | {err} | {check} |")
    lines += ["", "## Summary", ""]
    if errors:
        lines.append(f"* {len(errors)} of {len(rows)} versions estimated; median absolute error "
                     f"{100 * statistics.median(errors):.1f} %, max {100 * max(errors):.1f} %.")
    for trace in dict.fromkeys(r["trace"] for r in rows):
        right, total = _pairs_right([r for r in rows if r["trace"] == trace])
        lines.append(f"* {trace}: {right} of {total} pairs of versions (published figures more "
                     f"than 5 % apart) ordered as the hardware orders them.")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--autocomp", type=Path, required=True, help="checkout of ucb-bar/autocomp")
    ap.add_argument("-k", default="", help="only traces whose file name contains this")
    ap.add_argument("--check", action="store_true", help="also run each harness's test_nki")
    ap.add_argument("--no-write", action="store_true", help="print, do not write the report")
    ap.add_argument("--timeout", type=float, default=900, help="seconds per version")
    ap.add_argument("--one", nargs=2, help=argparse.SUPPRESS)  # (child: MODULE REF_NAME)
    a = ap.parse_args(argv)
    if a.one:
        print("RESULT " + json.dumps(run_version(Path(a.one[0]), a.one[1], a.check)))
        return 0
    rows = []
    for trace_file, harness_file in TRACES.items():
        if a.k not in trace_file:
            continue
        harness = a.autocomp / "harnesses" / harness_file
        ref_name = re.search(r"test_nki\((\w+),\s*solution\)", harness.read_text()).group(1)
        name = Path(trace_file).stem.removesuffix("_trace")
        for index, (code, published) in enumerate(versions(a.autocomp / "examples" / trace_file)):
            start = time.time()
            with tempfile.TemporaryDirectory() as tmp:
                path = harness_module(harness, code, Path(tmp))
                cmd = [sys.executable, __file__, "--autocomp", str(a.autocomp), "--one", str(path),
                       ref_name] + (["--check"] if a.check else [])
                try:
                    done = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout)
                    found = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")]
                    row = (json.loads(found[-1][7:]) if found else
                           {"estimate_ms": None, "correct": None,
                            "error": "crashed: " + done.stderr.strip()[-300:]})
                except subprocess.TimeoutExpired:
                    row = {"estimate_ms": None, "correct": None,
                           "error": f"timeout after {a.timeout:.0f} s"}
            row.update(trace=name, version=index, published_ms=published)
            rows.append(row)
            est = row["estimate_ms"]
            print(f"{name} v{index}: published {published:.3f} ms, estimate "
                  f"{'n/a' if est is None else f'{est:.3f} ms'} [{time.time() - start:.0f} s]"
                  f"{'  ' + row['error'].splitlines()[0][:160] if row['error'] else ''}",
                  flush=True)
    text = report(rows)
    print(text)
    if not a.no_write:
        REPORT.write_text(text)
        print(f"wrote {REPORT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
