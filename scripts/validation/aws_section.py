"""The AWS set's part of the report: whole kernels (ours beside AWS's), single instructions,
the published orderings, and a closing line per kernel source."""

from __future__ import annotations

from typing import Any

from .runner import Case
from .stats import error_stats, pct_error

ENGINES = ("tensor", "vector", "scalar", "gpsimd", "dma")
SEQS = (512, 1024, 2048, 3072, 4096, 5120, 6144, 7168, 8192)


def busy(r: dict) -> str:
    """Busy % per engine row at or above 1 %: ``ten 12, vec 80, dma 96``."""
    pct = r["busy_percent"]
    return ", ".join(f"{e[:3]} {pct.get(e, 0.0):.0f}" for e in ENGINES if pct.get(e, 0.0) >= 1)


def _estimates(cases: list[Case], results: dict[str, dict], key: str) -> dict[str, Any]:
    out = {}
    for c in cases:
        if c.meta.get("key") == key:
            r = results.get(c.id, {})
            out[c.meta["name"]] = r["estimate"] if r.get("ok") else None
    return out


def orderings(cases: list[Case], results: dict[str, dict], key: str
              ) -> list[tuple[str, bool | None]]:
    """The published orderings of calibration.md, checked on ``key``'s estimates."""
    est = _estimates(cases, results, key)

    def get(prefix):
        hits = [v for k, v in est.items() if k.startswith(prefix)]
        return hits[0] if hits else None

    out = []
    ladder = [get(f"matmul {n}") for n in ("nki_matmul_tiled_", "nki_matmul_hoist_load_",
                                           "nki_matmul_block_free_dimension_",
                                           "nki_matmul_fully_optimized_")]
    out.append(("matmul ladder strictly decreasing",
                None if None in ladder else all(a > b for a, b in zip(ladder, ladder[1:]))))
    v1, v2 = get("mamba_v1 ch 4096"), get("mamba_v2 ch 4096 seq 512 ")
    out.append(("Mamba v1 > v2 at ch 4096 seq 512", None if None in (v1, v2) else v1 > v2))
    long = [(get(f"mamba_v2 ch 4096 seq {s} "), get(f"mamba_v3 ch 4096 seq {s} "))
            for s in SEQS if s >= 4096]
    out.append(("Mamba v2 > v3 at seq >= 4096", None if any(None in p for p in long)
                else all(a > b for a, b in long)))
    v3 = [get(f"mamba_v3 ch 4096 seq {s} ") for s in SEQS]
    name = "Mamba v3 about linear in seq (per-512 cost within 25 % of seq 512's)"
    if None in v3:
        out.append((name, None))
    else:
        per = [t / (s / 512) for t, s in zip(v3, SEQS)]
        out.append((name, all(abs(p / per[0] - 1) <= 0.25 for p in per)))
    l1, l2 = get("layernorm_v1"), get("layernorm_v2")
    out.append(("LayerNorm v1 > v2", None if None in (l1, l2) else l1 > l2))
    return out


def closing(cases: list[Case], results: dict[str, dict], key: str) -> str:
    """One line: cases run, median and max absolute error, every ordering right or wrong."""
    mine = [c for c in cases if c.meta.get("key") in (key, "probe")]
    done = [c for c in mine if results.get(c.id, {}).get("ok")]
    stats = error_stats((results[c.id]["estimate"], c.published) for c in done)
    if stats is None:
        return f"**{key}**: no case ran."
    worst = max(done, key=lambda c: abs(pct_error(results[c.id]["estimate"], c.published)))
    text = ", ".join(f"{n}: {'right' if v else 'WRONG' if v is False else 'not run'}"
                     for n, v in orderings(cases, results, key))
    return (f"**{key}** (with the probes): {len(done)} cases ran ({len(mine) - len(done)} "
            f"failed); median absolute error {stats[0]:.1f} %, max {stats[1]:.1f} % "
            f"({worst.meta['name']}). Orderings: {text}.")


def _cells(case: Case | None, results: dict[str, dict]) -> list[str]:
    if case is None:
        return ["", "", ""]
    r = results.get(case.id)
    if r is None:
        return ["", "", ""]
    if not r.get("ok"):
        return [f"FAILED: {r.get('error')}", "", ""]
    return [f"{r['estimate']:.4g}", f"{pct_error(r['estimate'], case.published):+.1f} %", busy(r)]


def section(cases: list[Case], results: dict[str, dict]) -> list[str]:
    """Markdown lines of the AWS set (our kernels in ``kernels/``, written from the tutorials'
    descriptions, beside AWS's tutorial kernels run unmodified)."""
    keys = ["ours"] + (["AWS"] if any(c.meta.get("key") == "AWS" for c in cases) else [])
    lines = ["\"ours\" = our kernels in `kernels/`, written from the tutorials' descriptions; "
             "\"AWS\" = AWS's tutorial kernels run unmodified through the `neuronxcc` alias (the "
             "set's cases in the top table when run). Busy % per engine row (ten/vec/sca/gps, "
             "dma = mean over the 16 DMA engines) is of our estimated latency.", "",
             "### Whole kernels", "",
             "| case | published | " + " | ".join(f"{k} estimate | {k} error | {k} busy %"
                                                  for k in keys) + " | published activity |",
             "|" + "---|" * (2 + 3 * len(keys) + 1)]
    by = {(c.meta.get("key"), c.meta["name"]): c for c in cases}
    names = list(dict.fromkeys(c.meta["name"] for c in cases
                               if c.meta.get("section") == "kernels"))
    for name in names:
        first = by.get(("ours", name)) or by.get(("AWS", name))
        cells = sum((_cells(by.get((k, name)), results) for k in keys), [])
        lines.append(f"| {name} | {first.published:g} {first.unit} | " + " | ".join(cells)
                     + f" | {first.meta.get('activity', '')} |")
    notes = sorted({c.meta["note"] for c in cases if c.meta.get("note")})
    lines += ([""] + [f"* {n}" for n in notes] if notes else [])
    lines += ["", "### Single instructions (our probe kernels)", "",
              "| case | published | estimate | error | busy % | source |",
              "|---|---|---|---|---|---|"]
    for c in cases:
        if c.meta.get("section") == "instructions":
            lines.append(f"| {c.meta['name']} | {c.published:g} {c.unit} | "
                         + " | ".join(_cells(c, results)) + f" | {c.meta['source']} |")
    lines += [""] + [f"* {closing(cases, results, k)}" for k in keys]
    return lines
