"""Stored event listings: what the timing model does on every sample kernel, event by event.

A listing is one line per event: instance, instruction id, row (engine), opcode, start and end
(float nanoseconds written with ``repr``, so they read back bit for bit). The listings guard
every speed change of the simulator: a change that only makes it faster leaves every event as
it was. ``tests/timing/test_event_listings.py`` recomputes them and compares exactly;
``scripts/update_event_listings.py`` rewrites them (after a modelling change only).

The cases are every kernel of ``kernels/`` at its sample inputs (``example_inputs()``, the
sample's ``GRID``), timing-only, plus a few larger shapes (``LARGER``) whose schedules have
many accesses to one tile (wide accumulators, long chains) where the sample sizes have few.
"""

from __future__ import annotations

import gzip
import importlib.util
import io
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Iterator

ROOT = Path(__file__).resolve().parent.parent
KERNEL_DIR = ROOT / "kernels"
LISTING_DIR = ROOT / "tests" / "timing" / "event_listings"
NOT_SAMPLES = {"run_sample"}
HEADER = "instance,instr_id,engine,opcode,start_ns,end_ns"

#: Larger cases: listing name -> (kernel file stem, kernel name or "kernel", example_inputs
#: keyword arguments, extra kernel keyword arguments).
LARGER: dict[str, tuple[str, str, dict[str, Any], dict[str, Any]]] = {
    "matmul_blocked@512x2048x4096": ("matmul_blocked", "kernel",
                                     {"M": 512, "K": 2048, "N": 4096}, {}),
    "matmul_ladder.blocked_all@2048x2048x2048": ("matmul_ladder", "blocked_all",
                                                 {"M": 2048, "K": 2048, "N": 2048},
                                                 {"BLOCK_M": 16, "BLOCK_N": 2, "BLOCK_K": 8}),
    "matmul_ladder.blocked_free@1024x2048x2048": ("matmul_ladder", "blocked_free",
                                                  {"M": 1024, "K": 2048, "N": 2048}, {}),
    "flash_attention@512x4096x64": ("flash_attention", "kernel",
                                    {"seq_q": 512, "seq_k": 4096, "d": 64}, {}),
    "elementwise@1024x2048": ("elementwise", "kernel", {"rows": 1024, "cols": 2048}, {}),
    "mamba.mamba_v3@1x256x4096x8": ("mamba", "mamba_v3",
                                    {"batch": 1, "channels": 256, "seq_len": 4096,
                                     "state_size": 8}, {}),
}


def load_sample(stem: str) -> ModuleType:
    """Import ``kernels/<stem>.py`` (a folder of scripts, not a package)."""
    import sys
    if str(KERNEL_DIR) not in sys.path:
        sys.path.insert(0, str(KERNEL_DIR))  # samples import their siblings
    spec = importlib.util.spec_from_file_location(f"ncs_listing_{stem}", KERNEL_DIR / f"{stem}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _kernels(module: ModuleType) -> dict[str, Any]:
    if hasattr(module, "KERNELS"):
        return dict(module.KERNELS)
    return {"kernel": module.kernel}


def cases() -> Iterator[tuple[str, Callable[[], Any]]]:
    """(listing name, run) for every case; ``run()`` returns the simulation's TimingResult."""
    for path in sorted(KERNEL_DIR.glob("*.py")):
        if path.stem in NOT_SAMPLES or path.stem.startswith("_"):
            continue
        for kname in sorted(_kernels(load_sample(path.stem))):
            name = path.stem if kname == "kernel" else f"{path.stem}.{kname}"
            yield name, (lambda stem=path.stem, k=kname: run_case(stem, k, {}, {}))
    for name, (stem, kname, sizes, extra) in LARGER.items():
        yield name, (lambda stem=stem, k=kname, s=sizes, e=extra: run_case(stem, k, s, e))


def run_case(stem: str, kname: str, sizes: dict[str, Any], extra: dict[str, Any]) -> Any:
    """Simulate one kernel of ``kernels/<stem>.py`` timing-only at ``example_inputs(**sizes)``."""
    import neuroncore_sim as ncs
    module = load_sample(stem)
    inputs = module.example_inputs(**sizes)
    pos, kw = ((), dict(inputs)) if isinstance(inputs, dict) else (tuple(inputs), {})
    res = ncs.simulate(_kernels(module)[kname], *pos, grid=getattr(module, "GRID", ()),
                       functional=False, **kw, **extra)
    return res.timing


def listing_text(timing: Any) -> str:
    """The listing of a TimingResult, one line per event in the result's order."""
    out = io.StringIO()
    out.write(HEADER + "\n")
    for e in timing.events:
        out.write(f"{e.instance},{e.instr_id},{e.engine},{e.opcode},"
                  f"{e.start_ns!r},{e.end_ns!r}\n")
    return out.getvalue()


def path_of(name: str) -> Path:
    """Where the listing ``name`` is stored."""
    return LISTING_DIR / f"{name}.csv.gz"


def read_listing(name: str) -> str:
    """The stored listing ``name`` as text."""
    return gzip.decompress(path_of(name).read_bytes()).decode()


def write_listing(name: str, text: str) -> None:
    """Store a listing (gzip without a timestamp: the same text gives the same bytes)."""
    LISTING_DIR.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0, compresslevel=9) as f:
        f.write(text.encode())
    path_of(name).write_bytes(buf.getvalue())
