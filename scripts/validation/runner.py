"""Run validation cases: each in a fresh worker process, up to ``jobs`` at once, cached.

A case is one published figure and how to estimate it (:class:`Case`). The parent process
looks each case up in the cache (:mod:`.cache`) and runs the misses as
``python scripts/validate.py --child SPEC`` subprocesses: a case that raises, crashes the
interpreter or runs past the timeout is a failed result with a one-line error, and the run
goes on. Progress lines go to stderr.
"""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .cache import Cache, cache_key, config_fingerprint
from .stats import pct_error

#: engine rows whose busy fraction is recorded
ROWS = ("tensor", "vector", "scalar", "gpsimd", "dma")


@dataclass
class Case:
    """One published figure of a set and how to estimate it.

    ``run(config)`` (called in the worker process) returns :func:`measure`'s dict; ``texts``
    are the texts the estimate depends on besides the package (kernel and harness files), for
    the cache key; ``primary`` cases are the set's statistics and fit cases (secondary ones,
    e.g. our own rewrites of AWS's kernels, are reported beside them)."""

    id: str
    set: str
    published: float
    unit: str
    texts: Callable[[], tuple[str, ...]]
    run: Callable[[Any], dict]
    meta: dict = field(default_factory=dict)
    primary: bool = True


def hbm_split(res: Any) -> tuple[int, int]:
    """(bytes read from, bytes written to) HBM by the kernel's own DMA instructions as compiled
    (loads kept resident counted once, spill copies not included; the timing model's
    ``KernelWork``). The summary has only their sum, ``hbm_bytes``."""
    work = res.timing.work
    read = work.dma_hbm_read_bytes
    return read, work.hbm_bytes - read


def measure(res: Any, estimate: float) -> dict:
    """What the report keeps of one launch: ``estimate`` (in the case's unit), the latency,
    the summary's bottleneck verdict (for the error bands), busy % per engine row, HBM bytes
    read/written and SBUF spill bytes (to and from HBM)."""
    s = res.summary()
    read, write = hbm_split(res)
    sbuf = s["memory"].get("sbuf", {})
    return {"ok": True, "estimate": float(estimate), "latency_ns": float(s["latency_ns"]),
            "bottleneck": s["bottleneck"],
            "busy_percent": {r: round(float(s["busy_percent"].get(r, 0.0)), 4) for r in ROWS},
            "hbm_read_bytes": int(read), "hbm_write_bytes": int(write),
            "spill_save_bytes": int(sbuf.get("spill_save_bytes", 0)),
            "spill_reload_bytes": int(sbuf.get("spill_reload_bytes", 0))}


def one_line(e: BaseException) -> str:
    """An exception as ``Type: first line of its message`` (at most 200 characters)."""
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}"[:200]


def child(spec: dict, cases: list[Case], config: Any) -> dict:
    """In the worker process: run the case ``spec["id"]`` of ``cases`` under ``config``."""
    found = [c for c in cases if c.id == spec["id"]]
    if not found:
        return {"ok": False, "error": f"no case {spec['id']!r} in this checkout"}
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            return found[0].run(config)
    except Exception as e:  # noqa: BLE001 - a case that does not run is a result
        return {"ok": False, "error": one_line(e)}


def _spawn(script: Path, spec: dict, timeout: float) -> dict:
    cmd = [sys.executable, str(script), "--child", json.dumps(spec)]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": f"timeout after {timeout:.0f} s"}
    found = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")]
    if found:
        return json.loads(found[-1][len("RESULT "):])
    tail = [ln for ln in done.stderr.strip().splitlines() if ln.strip()]
    return {"ok": False, "error": f"worker exited {done.returncode}: "
                                  f"{tail[-1].strip() if tail else 'no output'}"[:200]}


@dataclass
class Runner:
    """Runs cases under a config per set (``make_config(set_name, overrides)``)."""

    script: Path
    paths: dict[str, str]
    make_config: Callable[[str, dict], Any]
    cache: Cache
    source: str
    jobs: int = 1
    timeout: float = 1800.0
    quiet: bool = False
    _texts: dict[str, str] = field(default_factory=dict)

    def key(self, case: Case, overrides: dict) -> str:
        """The cache key of ``case`` under ``overrides``."""
        if case.id not in self._texts:
            from .cache import text_hash
            self._texts[case.id] = text_hash(*case.texts())
        fp = config_fingerprint(self.make_config(case.set, overrides))
        return cache_key(case.id, self._texts[case.id], fp, self.source)

    def run(self, cases: list[Case], overrides: dict | None = None) -> dict[str, dict]:
        """Results of ``cases`` (by id) under the sets' configs with ``overrides`` applied."""
        overrides = overrides or {}
        out: dict[str, dict] = {}
        todo = []
        for case in cases:
            key = self.key(case, overrides)
            hit = self.cache.get(key)
            if hit is not None:
                out[case.id] = dict(hit, cached=True)
            else:
                todo.append((case, key))
        if not self.quiet and cases:
            self._say(f"{len(cases)} cases: {len(cases) - len(todo)} cached, {len(todo)} to run"
                      f" ({self.jobs} worker{'s' if self.jobs > 1 else ''})"
                      + (f", overrides {overrides}" if overrides else ""))
        count = [0]

        def work(item: tuple[Case, str]) -> None:
            case, key = item
            t0 = time.time()
            spec = {"set": case.set, "id": case.id, "paths": self.paths, "overrides": overrides}
            result = _spawn(self.script, spec, self.timeout)
            result["seconds"] = round(time.time() - t0, 2)
            self.cache.put(key, result)
            out[case.id] = result
            count[0] += 1
            self._progress(count[0], len(todo), case, result)

        with ThreadPoolExecutor(max_workers=max(1, self.jobs)) as pool:
            list(pool.map(work, todo))
        return out

    def _progress(self, i: int, n: int, case: Case, r: dict) -> None:
        if self.quiet:
            return
        if r.get("ok"):
            err = pct_error(r["estimate"], case.published)
            what = (f"{r['estimate']:.4g} {case.unit} vs {case.published:g} ({err:+.1f} %)")
        else:
            what = f"FAILED {r.get('error')}"
        self._say(f"[{i}/{n}] {case.id}: {what} [{r['seconds']:.1f} s]")

    @staticmethod
    def _say(text: str) -> None:
        print(text, file=sys.stderr, flush=True)
