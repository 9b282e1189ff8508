"""``reports/validation.md``: the top table (every set side by side), one section per set, the
fit and its leave-one-set-out errors, then the hand-written notes the report already had."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from . import aws_section
from .runner import Case
from .stats import error_stats, pct_error, spearman, step_signs, weighted_abs_error, within

TOOLCHAINS = {"aws": "SDK 2.20 / neuronx-cc 2.15, defaults (DGE on), nki.benchmark P99",
              "autocomp": "SDK 2.26 / neuronx-cc 2.21, defaults, nki.benchmark P99",
              "nkibench": "SDK 2.24-2.25 / neuronx-cc 2.19-2.20, --disable-dge "
                          "--auto-cast=none, neuron-profile total_time"}
#: The first heading of the hand-written part of the report, which a rewrite keeps.
NOTES_FROM = "## Session "
HBM_TOL = 0.30


def kept_notes(path: Path) -> str:
    """The hand-written sections of the report at ``path`` (from the first ``## Session``
    heading on), so that regenerating the tables keeps them; empty when there are none."""
    if not path.exists():
        return ""
    text = path.read_text()
    at = text.find("\n" + NOTES_FROM)
    return text[at + 1:].rstrip("\n") if at >= 0 else ""


def ok(results: dict[str, dict], case: Case) -> dict | None:
    r = results.get(case.id)
    return r if r and r.get("ok") else None


def sim_hbm(r: dict) -> int:
    """Our HBM traffic as the profile counts it: the kernel's DMAs and the SBUF spill copies."""
    return (r["hbm_read_bytes"] + r["hbm_write_bytes"] + r["spill_save_bytes"]
            + r["spill_reload_bytes"])


def nkibench_stats(cases: list[Case], results: dict[str, dict]) -> dict[str, Any]:
    """ScalarE+VectorE weighted abs busy error (%) and kernels with HBM bytes within 30 %."""
    pairs, hbm_ok, n = [], 0, 0
    for c in cases:
        r = ok(results, c) if c.primary else None
        if r is None:
            continue
        p = c.meta["profile"]
        for eng in ("scalar", "vector"):
            pairs.append((r["busy_percent"][eng] / 100, p[f"{eng}_engine_active_time_percent"]))
        n += 1
        hbm_ok += within(sim_hbm(r), p["hbm_read_bytes"] + p["hbm_write_bytes"], HBM_TOL)
    return {"busy_error": weighted_abs_error(pairs), "hbm_within": hbm_ok, "hbm_of": n}


def autocomp_stats(cases: list[Case], results: dict[str, dict]) -> dict[str, Any]:
    """Per trace: Spearman of estimates against published over the versions that ran, and the
    published steps > 3 % whose estimates move the same way."""
    out: dict[str, Any] = {}
    for trace in dict.fromkeys(c.meta["trace"] for c in cases):
        ran = [(c.published, ok(results, c)["estimate"]) for c in cases
               if c.meta["trace"] == trace and ok(results, c)]
        pub, est = [p for p, _ in ran], [e for _, e in ran]
        out[trace] = {"spearman": spearman(pub, est) if ran else None,
                      "steps": step_signs(pub, est, 0.03), "ran": len(ran)}
    return out


def set_stats(cases: list[Case], results: dict[str, dict]) -> dict[str, Any]:
    """Cases run / failed and median / max absolute latency error of the primary cases."""
    prim = [c for c in cases if c.primary]
    done = [(ok(results, c)["estimate"], c.published) for c in prim if ok(results, c)]
    stats = error_stats(done)
    return {"run": len(prim), "failed": len(prim) - len(done),
            "median": stats[0] if stats else None, "max": stats[1] if stats else None}


def _pct(v: float | None, fmt: str = "{:.1f} %") -> str:
    return "n/a" if v is None else fmt.format(v)


def top_table(sets: dict[str, list[Case]], results: dict[str, dict]) -> list[str]:
    lines = ["| set | toolchain | cases | failed | median abs error | max abs error | "
             "set-specific |", "|---|---|---|---|---|---|---|"]
    for name, cases in sets.items():
        s = set_stats(cases, results)
        extra = ""
        if name == "nkibench":
            n = nkibench_stats(cases, results)
            extra = (f"ScalarE+VectorE weighted abs busy error {_pct(n['busy_error'])}; HBM "
                     f"bytes within 30 %: {n['hbm_within']} of {n['hbm_of']}")
            extra += "".join(f"; {name} over its baseline: {ours} ours, {meas} measured"
                             for name, ours, meas in optimised_speedups(cases, results))
        elif name == "autocomp":
            a = autocomp_stats(cases, results)
            agree = sum(v["steps"][0] for v in a.values())
            total = sum(v["steps"][1] for v in a.values())
            rho = ", ".join(f"{t} {_pct(v['spearman'], '{:+.2f}')}" for t, v in a.items())
            extra = f"Spearman per trace: {rho}; steps > 3 % same sign: {agree} of {total}"
        elif name == "aws":
            orders = aws_section.orderings(cases, results, primary_key(cases))
            checked = [v for _, v in orders if v is not None]
            extra = (f"published orderings right: {sum(checked)} of {len(checked)} checked "
                     f"({primary_key(cases)} kernels)")
        lines.append(f"| {name} | {TOOLCHAINS.get(name, '')} | {s['run']} | {s['failed']} | "
                     f"{_pct(s['median'])} | {_pct(s['max'])} | {extra} |")
    return lines


def primary_key(cases: list[Case]) -> str:
    return "AWS" if any(c.meta.get("key") == "AWS" for c in cases) else "ours"


def _bytes(v: float) -> str:
    return f"{v / 2**20:,.1f}"


def optimised_speedups(cases: list[Case], results: dict[str, dict]
                       ) -> list[tuple[str, str, str]]:
    """(name, our speedup, the measured one) of each optimised case over its baseline."""
    by_id = {c.id: c for c in cases}
    out = []
    for c in cases:
        base = by_id.get(c.meta.get("baseline", ""))
        if base is None:
            continue
        r, rb = ok(results, c), ok(results, base)
        ours = f"{rb['estimate'] / r['estimate']:.2f}x" if r and rb else "n/a"
        out.append((c.meta["name"], ours, f"{base.published / c.published:.2f}x"))
    return out


def nkibench_section(cases: list[Case], results: dict[str, dict]) -> list[str]:
    header = ["| kernel | measured ms | sim ms | error | ScalarE | VectorE | GpSimd | "
              "HBM read MiB | HBM write MiB | spill save / reload MiB |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    lines = ["Per kernel: latency, busy fractions (ours: busy time over our latency; measured: "
             "the profile's active time over its total time), HBM MiB read / written (ours: "
             "the kernel's DMAs + SBUF spill reloads / saves; measured: the profile's, spill "
             "traffic included) and spill MiB saved / reloaded. meas / sim in each cell.", "",
             *header]
    lines += [_nkibench_row(c, results.get(c.id, {})) for c in cases if c.primary]
    optimised = [c for c in cases if not c.primary]
    if optimised:
        speedups = "; ".join(f"{n} {o} ours, {m} measured"
                             for n, o, m in optimised_speedups(cases, results))
        lines += ["", "AccelOpt's optimised kernels (`samples/nki`), each measured by its "
                  "problem's best plan (`experiments/full_complete_local/results/`), outside the "
                  f"set's statistics. Speedup over the NKIBench baseline: {speedups}.", "",
                  *header]
        lines += [_nkibench_row(c, results.get(c.id, {})) for c in optimised]
    return lines


def _nkibench_row(c: Case, r: dict) -> str:
    p = c.meta["profile"]
    if not r.get("ok"):
        return f"| {c.meta['name']} | {c.published:.3f} | FAILED: {r.get('error')} | | | | | | | |"
    b = r["busy_percent"]
    eng = [f"{p[f'{e}_engine_active_time_percent']:.2f} / {b[e] / 100:.2f}"
           for e in ("scalar", "vector", "gpsimd")]
    return (f"| {c.meta['name']} | {c.published:.3f} | {r['estimate']:.3f} | "
            f"{pct_error(r['estimate'], c.published):+.1f} % | " + " | ".join(eng) + " | "
            f"{_bytes(p['hbm_read_bytes'])} / {_bytes(r['hbm_read_bytes'] + r['spill_reload_bytes'])}"
            f" | {_bytes(p['hbm_write_bytes'])} / "
            f"{_bytes(r['hbm_write_bytes'] + r['spill_save_bytes'])} | "
            f"{_bytes(p['spill_save_bytes'])}, {_bytes(p['spill_reload_bytes'])} / "
            f"{_bytes(r['spill_save_bytes'])}, {_bytes(r['spill_reload_bytes'])} |")


def autocomp_section(cases: list[Case], results: dict[str, dict]) -> list[str]:
    lines = ["| trace | version | published ms | estimate ms | error | busy % |",
             "|---|---|---|---|---|---|"]
    for c in cases:
        r = results.get(c.id, {})
        if r.get("ok"):
            lines.append(f"| {c.meta['trace']} | {c.meta['version']} | {c.published:.3f} | "
                         f"{r['estimate']:.3f} | {pct_error(r['estimate'], c.published):+.1f} % "
                         f"| {aws_section.busy(r)} |")
        else:
            lines.append(f"| {c.meta['trace']} | {c.meta['version']} | {c.published:.3f} | | | "
                         f"FAILED: {r.get('error')} |")
    lines.append("")
    for trace, v in autocomp_stats(cases, results).items():
        agree, total = v["steps"]
        lines.append(f"* {trace}: Spearman {_pct(v['spearman'], '{:+.2f}')} over {v['ran']} "
                     f"versions; {agree} of {total} published steps > 3 % move the same way.")
    return lines


def fit_section(fit: Any, loso: dict, params: list, declared: str) -> list[str]:
    lines = ["## Fit", "", f"Fitted fields (bounds): " + ", ".join(
        f"`{p.name}` [{p.lo:g}, {p.hi:g}]" for p in params) + f". {declared}", "",
             f"Values: " + ", ".join(f"`{k}` = {v:.6g}" for k, v in fit.values.items())
             + f" ({fit.evaluations} evaluations, {fit.seconds:.0f} s; {fit.message})", "",
             f"Cases used ({len(fit.case_ids)}): " + ", ".join(f"`{i}`" for i in fit.case_ids),
             "", "| set | median / max abs error before | after the fit |", "|---|---|---|"]
    for s in fit.before:
        b, a = fit.before[s], fit.after.get(s)
        lines.append(f"| {s} | {_pair(b)} | {_pair(a)} |")
    lines += ["", "Leave-one-set-out (refit without the set, the set's fit cases under the "
              "refit):", ""]
    if not loso:
        lines.append("* n/a: the fit's cases come from one set only.")
    for s, (refit, errs) in loso.items():
        vals = ", ".join(f"`{k}` = {v:.6g}" for k, v in refit.values.items())
        lines.append(f"* without {s}: {vals} ({refit.evaluations} evaluations); {s}'s "
                     f"median / max abs error {_pair(errs)}")
    return lines + [""]


def _pair(v: tuple[float, float] | None) -> str:
    return "n/a" if v is None else f"{v[0]:.1f} % / {v[1]:.1f} %"


def write(sets: dict[str, list[Case]], results: dict[str, dict], path: Path | None,
          notes: str, fit_lines: list[str], header: str) -> str:
    """The report's text (written to ``path`` unless None)."""
    lines = ["# Validation against published NeuronCore-v2 measurements", "", header, "",
             "## All sets", ""] + top_table(sets, results) + [""]
    titles = {"aws": "AWS's tutorial tables", "autocomp": "Autocomp traces",
              "nkibench": "NKIBench"}
    for name, cases in sets.items():
        lines += [f"## {titles.get(name, name)} ({TOOLCHAINS.get(name, '')})", ""]
        if name == "aws":
            lines += aws_section.section(cases, results)
        elif name == "autocomp":
            lines += autocomp_section(cases, results)
        elif name == "nkibench":
            lines += nkibench_section(cases, results)
        lines.append("")
    lines += fit_lines
    if notes:
        lines += [notes, ""]
    text = "\n".join(lines)
    if path is not None:
        path.write_text(text)
    return text

