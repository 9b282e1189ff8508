"""Validate the timing model against every published NeuronCore-v2 set, side by side.

    python scripts/validate.py --tutorials DIR --autocomp DIR --nkibench DIR [--jobs 2]
    python scripts/validate.py -k 'probe|mamba_v1' --no-write        # some cases, print only
    python scripts/validate.py --fit dma_hbm_read_bytes_per_ns:3:20 --fit-cases 'probe|silu'

Sets (docs/model.md, "Calibration"; each runs under its own config, :func:`set_config`):

* ``aws``: AWS's tutorial tables and single-instruction profiles (always; ``--tutorials`` is
  the ``tutorials`` folder of aws-neuron/nki-samples, whose kernels then run unmodified);
* ``autocomp``: UC Berkeley Autocomp's traces (``--autocomp``: a checkout of ucb-bar/autocomp);
* ``nkibench``: NKIBench's 14 kernels and their profiles (``--nkibench``: zhang677/AccelOpt),
  and beside them AccelOpt's optimised RoPE against its baseline (``validation/nkibench.py``).

Every case is timing-only, runs in a fresh worker process (``--jobs N`` at once; a case that
fails is reported with its one-line error) and is cached in ``--cache`` (default
``reports/.validate_cache/``) under (case, kernel text, config fingerprint, package source).
``--fit FIELD[:LO:HI],...`` fits global config fields on the cases of ``--fit-sets`` matching
``--fit-cases`` and reports leave-one-set-out errors. Writes ``reports/validation.md``, keeping
its hand-written sections (from the first ``## Session`` heading), and the error band table
the package ships (``neuroncore_sim/data/error_bands.json``, section "Error bands": from the
leave-one-set-out refits with ``--fit``, else the shipped preset's leave-one-set-out residuals,
``validation/loso.py``). Not a test.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's package, not another installed copy
sys.path.insert(0, str(ROOT / "scripts"))  # validation/ and validate_traces.py

from neuroncore_sim.config import MODEL_VERSION, load_config, override  # noqa: E402
from validation import autocomp, aws, bands, loso, nkibench, report  # noqa: E402
from validation.cache import Cache, source_hash  # noqa: E402
from validation.fit import (apply_overrides, fit, get_field, leave_one_set_out,  # noqa: E402
                            parse_params)
from validation.runner import Case, Runner, child  # noqa: E402

REPORT = ROOT / "reports" / "validation.md"
CACHE = ROOT / "reports" / ".validate_cache"
SETS = {"aws": aws, "autocomp": autocomp, "nkibench": nkibench}
PATH_ARGS = {"aws": "tutorials", "autocomp": "autocomp", "nkibench": "nkibench"}
kept_notes = report.kept_notes


def set_config(set_name: str) -> Any:
    """The config a set's cases run under: its toolchain's options (shared/calibration.md
    section 3: AWS's tables SDK 2.20 defaults with DGE on; Autocomp SDK 2.26 defaults;
    NKIBench ``--disable-dge --auto-cast=none``), as compile options of the trn1 preset."""
    if set_name not in SETS:
        raise ValueError(f"set_config: unknown set {set_name!r}; expected one of {list(SETS)}")
    return override(load_config("trn1"), {"compiler": SET_OPTIONS[set_name]}, set_name)


#: Each set's compile options (named in the report).
SET_OPTIONS: dict[str, dict[str, object]] = {
    "aws": {"toolchain": "2.20"},
    "autocomp": {"toolchain": "2.26"},
    "nkibench": {"toolchain": "2.26", "dge": False, "auto_cast": "none"},
}


def make_config(set_name: str, overrides: dict) -> Any:
    """:func:`set_config` with the fit's trial values applied."""
    return apply_overrides(set_config(set_name), overrides)


def list_cases(paths: dict[str, str], sets: list[str], pattern: str) -> dict[str, list[Case]]:
    """The cases of each set to run (ids matching ``pattern``), by set, in report order."""
    out = {}
    for name in sets:
        cases = SETS[name].cases(paths)
        out[name] = [c for c in cases if re.search(pattern, c.id)] if pattern else cases
    return out


def _paths(a: argparse.Namespace) -> dict[str, str]:
    out = {}
    for name, arg in PATH_ARGS.items():
        value = getattr(a, arg)
        if value is not None:
            if not Path(value).is_dir():
                raise SystemExit(f"--{arg} {value}: no such folder")
            out[arg] = str(Path(value).resolve())
    return out


def _args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tutorials", type=Path, help="AWS's tutorials folder "
                    "(nki-samples/src/nki_samples/tutorials): AWS's kernels run unmodified")
    ap.add_argument("--autocomp", type=Path, help="checkout of ucb-bar/autocomp")
    ap.add_argument("--nkibench", type=Path, help="checkout of zhang677/AccelOpt")
    ap.add_argument("--sets", default="", help="comma-separated sets to run (default: aws and "
                    "every set whose checkout is given)")
    ap.add_argument("-k", default="", help="only cases whose id matches this regex")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes at once (default 1)")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per case")
    ap.add_argument("--cache", type=Path, default=CACHE, help="results cache folder")
    ap.add_argument("--no-cache", action="store_true", help="ignore the cache (and store nothing)")
    ap.add_argument("--fit", default="", help="FIELD[:LO:HI],... global config fields to fit")
    ap.add_argument("--fit-sets", default="aws,autocomp,nkibench",
                    help="sets whose cases the fit uses (default all three)")
    ap.add_argument("--fit-cases", default="", help="regex: only fit cases whose id matches")
    ap.add_argument("--fit-evals", type=int, default=30, help="max function evaluations per fit (scipy's max_nfev; "
                    "the finite-difference Jacobian adds one run of the cases per field and "
                    "iteration, counted in the report's evaluations)")
    ap.add_argument("--fit-apply", action="store_true",
                    help="run the report's tables under the fitted values")
    ap.add_argument("--no-write", action="store_true", help="print, do not write the report "
                    "(nor the error bands)")
    ap.add_argument("--no-bands", action="store_true", help="do not rewrite the error band "
                    "table the package ships (neuroncore_sim/data/error_bands.json)")
    ap.add_argument("--out", type=Path, default=REPORT, help="where to write the report")
    ap.add_argument("--extra", type=Path, help="a markdown file appended instead of the "
                    "hand-written sections the report already has")
    ap.add_argument("--child", help=argparse.SUPPRESS)  # a worker: one case, JSON spec
    return ap.parse_args(argv)


def run_child(spec: dict) -> int:
    """A worker process: run one case and print ``RESULT {json}``."""
    try:
        cases = SETS[spec["set"]].cases(spec["paths"])
        result = child(spec, cases, make_config(spec["set"], spec["overrides"]))
    except (Exception, SystemExit) as e:  # noqa: BLE001 - reported as the case's failure
        result = {"ok": False, "error": f"{type(e).__name__}: {e}"[:200]}
    print("RESULT " + json.dumps(result), flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    a = _args(argv)
    if a.child:
        return run_child(json.loads(a.child))
    t0 = time.time()
    paths = _paths(a)
    sets = [s for s in (a.sets.split(",") if a.sets else
                        ["aws"] + [s for s in ("autocomp", "nkibench") if PATH_ARGS[s] in paths])]
    for s in sets:
        if s not in SETS:
            raise SystemExit(f"--sets: unknown set {s!r}; expected some of {list(SETS)}")
        if s != "aws" and PATH_ARGS[s] not in paths:
            raise SystemExit(f"--sets {s}: give its checkout with --{PATH_ARGS[s]} DIR")
    runner = Runner(Path(__file__).resolve(), paths, make_config,
                    Cache(a.cache, enabled=not a.no_cache), source_hash(ROOT / "neuroncore_sim"),
                    jobs=a.jobs, timeout=a.timeout)
    fit_lines, fitted, basis_rows = fit_report(a, runner, paths) if a.fit else ([], {}, None)
    by_set = list_cases(paths, sets, a.k)
    applied = fitted if a.fit_apply else {}
    results = runner.run([c for cs in by_set.values() for c in cs], applied)
    every = [c for cs in by_set.values() for c in cs]
    rows = bands.ratios(every, results)
    if basis_rows is not None:
        basis = (f"leave-one-set-out: each set's fit cases under the refit without it "
                 f"({a.fit}); {len(basis_rows)} cases" + (f", -k {a.k!r}" if a.k else ""))
    else:
        basis_rows, basis = preset_basis(runner, paths, every, results, a.k)
    band_table = bands.table(basis_rows, basis, MODEL_VERSION)
    fit_lines = fit_lines + bands.section(rows, band_table, basis_rows, MODEL_VERSION)
    if band_table is not None and not (a.no_write or a.no_bands):
        bands.write_table(band_table)
    took = time.time() - t0
    cached = sum(1 for r in results.values() if r.get("cached"))
    options = "; ".join(f"{k}: " + ", ".join(f"{o}={v}" for o, v in opts.items())
                        for k, opts in SET_OPTIONS.items())
    header = (f"Written by `scripts/validate.py` (timing-only launches; each set under "
              f"`set_config(set)`, the trn1 preset with its toolchain's compile options: "
              f"{options}) in {took:.0f} s wall, "
              f"{len(results)} cases ({cached} from the results cache; the cases took "
              f"{sum(r.get('seconds', 0) for r in results.values()):.0f} s of worker time "
              "when they ran), "
              f"`--jobs {a.jobs}`{f', cases matching -k {a.k!r}' if a.k else ''}. Published "
              "figures and toolchains: `shared/calibration.md`. "
              + (f"The tables are under the fitted values {applied} (--fit-apply)." if applied
                 else "The tables are under the configs as they are (no fitted values)."))
    notes = a.extra.read_text() if a.extra else kept_notes(a.out)
    text = report.write(by_set, results, None if a.no_write else a.out, notes, fit_lines,
                        header)
    top = text[text.index("## All sets"):].split("\n\n")[1]
    print(top + f"\n\n{len(results)} cases in {took:.0f} s", flush=True)
    return 0


def preset_basis(runner: Runner, paths: dict[str, str], cases: list[Case],
                 results: dict[str, dict], pattern: str
                 ) -> tuple[list[tuple[str, str, float, float]], str]:
    """The error bands' basis without ``--fit``: the preset's leave-one-set-out residuals
    (``validation/loso.py``; the AWS ladder rows refitted when AWS's kernels ran)."""
    ids = {c.id for c in cases}
    refitted = {}
    if "tutorials" in paths and any(aws.ladder_case_id(n) in ids for n in aws.LADDER_FIT_CASES
                                    .values()):
        refitted = loso.ladder_leave_one_out(Path(paths["tutorials"]), SET_OPTIONS["aws"],
                                             load_config("trn1"), runner.cache, runner.source)
        refitted = {k: v for k, v in refitted.items() if k in ids}
    rows = loso.basis_rows(cases, results, refitted)
    return rows, loso.basis_text(refitted, len(rows), pattern)


def fit_report(a: argparse.Namespace, runner: Runner, paths: dict[str, str]
               ) -> tuple[list[str], dict[str, float], list[tuple[str, str, float, float]]]:
    """Run the fit and the leave-one-set-out refits: the report's Fit section, the fitted
    values and the held-out sets' cases under their refits (the error bands' basis)."""
    fit_sets = [s for s in a.fit_sets.split(",") if s]
    missing = [s for s in fit_sets if s not in SETS or (s != "aws" and PATH_ARGS[s] not in paths)]
    if missing:
        raise SystemExit(f"--fit-sets {missing}: unknown, or its checkout not given")
    cases = [c for cs in list_cases(paths, fit_sets, a.fit_cases).values() for c in cs
             if c.primary]
    if not cases:
        raise SystemExit("--fit: no primary case matches --fit-sets / --fit-cases")
    base = set_config(fit_sets[0])
    params = parse_params(a.fit, base)
    start = {p.name: float(get_field(base, p.name)) for p in params}
    result = fit(runner.run, cases, params, start, a.fit_evals)
    loso = leave_one_set_out(runner.run, cases, params, start, a.fit_evals)
    declared = (f"Fit sets {fit_sets}, cases matching {a.fit_cases!r} (primary cases only), "
                f"start {start}, at most {a.fit_evals} evaluations per fit.")
    return (report.fit_section(result, loso, params, declared), result.values,
            bands.loso_rows(runner.run, cases, loso))


if __name__ == "__main__":
    sys.exit(main())
