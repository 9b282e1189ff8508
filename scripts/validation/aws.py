"""Set 1: AWS's published NeuronCore-v2 tables (``shared/calibration.md`` sections 1-2).

Whole kernels (the matmul ladder, fused Mamba v1-v3 with the sequence sweeps, LayerNorm v1/v2)
run as our kernels in ``kernels/`` ("ours", written from the tutorials' descriptions) and, with a
tutorials folder, as AWS's tutorial kernels unmodified through the ``neuronxcc`` alias ("AWS",
the set's primary cases). Single instructions are measured on small probe kernels of our own,
the way the profile shows them. Every launch is timing-only.
"""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path
from typing import Any, Callable

import ml_dtypes
import numpy as np

from .runner import Case, measure

NAME = "aws"
ROOT = Path(__file__).resolve().parents[2]
BF16 = np.dtype(ml_dtypes.bfloat16)
F32 = np.dtype(np.float32)
SEQS = (512, 1024, 2048, 3072, 4096, 5120, 6144, 7168, 8192)
V2_MS = (1.61, 4.4, 8.9, 13.1, 17.6, 23.7, 27.5, 41.3, 52.2)  # seq 512: the text's 1.61 ms
V3_MS = (1.6, 3.3, 6.6, 10.1, 13.3, 17.3, 19.6, 24.2, 27.8)
MM = "general/nki/tutorials/matrix_multiplication.rst"
MAMBA = "general/nki/tutorials/fused_mamba.rst"
LN = "general/nki/tutorials/layernorm.rst"
PERF = "general/nki/nki_perf_guide.rst"
OURS = {"ladder": "kernels/matmul_ladder.py", "strip": "kernels/matmul_strip.py",
        "mamba": "kernels/mamba.py", "ln": "kernels/layernorm_tutorial.py"}
TUTORIALS = {"mm": "matrix_multiplication/matrix_multiplication_nki_kernels.py",
             "mamba": "fused_mamba/mamba_nki_kernels.py", "ln": "layernorm/layernorm_nki_kernel.py"}


def load_module(path: Path, name: str) -> types.ModuleType:
    """Import a kernel file by path (kernels/ and the tutorials are folders of scripts)."""
    if name in sys.modules:
        return sys.modules[name]
    sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _ours(which: str) -> types.ModuleType:
    return load_module(ROOT / OURS[which], f"ncs_validate_{which}")


def _aws(tutorials: Path, which: str) -> types.ModuleType:
    import neuroncore_sim as ncs
    ncs.install_neuronxcc_alias()
    for m in ("torch_xla", "torch_xla.core", "torch_xla.core.xla_model"):
        sys.modules.setdefault(m, types.ModuleType(m))
    return load_module(tutorials / TUTORIALS[which], f"aws_{which}")


# --- inputs (zeros: timing does not depend on values) -------------------------------------------

def matmul_inputs() -> tuple[np.ndarray, np.ndarray]:
    return np.zeros((8192, 4096), BF16), np.zeros((8192, 8192), BF16)


def mamba_inputs(channels: int, seq: int) -> tuple[np.ndarray, ...]:
    return (np.zeros((1, channels, seq), F32), np.zeros((1, channels, seq), F32),
            np.zeros((channels, 16), F32), np.zeros((1, 16, seq), F32),
            np.zeros((1, 16, seq), F32))


def layernorm_inputs() -> tuple[np.ndarray, ...]:
    return np.zeros((4096, 8192), F32), np.zeros((1, 8192), F32), np.zeros((1, 8192), F32)


# --- section 2: single-instruction probes (our own small kernels) --------------------------------

def _nki():
    import neuroncore_sim.nki.isa as nisa
    import neuroncore_sim.nki.language as nl
    return nisa, nl


def probe_tensor_tensor(a, b):
    """One VectorE fp32 add of two [64, 8192] SBUF tiles."""
    nisa, nl = _nki()
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    x, y = nl.load(a), nl.load(b)
    nl.store(out, value=nisa.tensor_tensor(x, y, op=nl.add))
    return out


CHAIN = 32


def probe_scalar_chain(x, scale, bias):
    """CHAIN dependent ScalarE activations (identity with scale and bias) on [128, 1]."""
    nisa, nl = _nki()
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t, s, b = nl.load(x), nl.load(scale), nl.load(bias)
    for _ in range(CHAIN):
        t = nisa.activation(op=nl.copy, data=t, scale=s, bias=b)
    nl.store(out, value=t)
    return out


def probe_matmul(stationary, moving):
    """One nc_matmul (its LoadStationary and MultiplyMoving)."""
    nisa, nl = _nki()
    out = nl.ndarray((stationary.shape[1], moving.shape[1]), dtype=nl.float32,
                     buffer=nl.shared_hbm)
    st, mv = nl.load(stationary), nl.load(moving)
    res = nisa.nc_matmul(st, mv)
    nl.store(out, value=nl.copy(res, dtype=nl.float32))
    return out


def probe_transpose(x):
    """One TensorE transpose of a [128, 128] bf16 tile."""
    nisa, nl = _nki()
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    res = nisa.nc_transpose(t, engine=nisa.tensor_engine)
    nl.store(out, value=nl.copy(res, dtype=x.dtype))
    return out


def probe_load(x):
    """One nl.load (HBM -> SBUF) and its nl.store back (SBUF -> HBM)."""
    _, nl = _nki()
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    nl.store(out, value=t)
    return out


def _events(res, engine: str, opcode: str | None = None):
    ev = res.events
    ev = ev[ev.engine == engine] if not engine.endswith("*") else \
        ev[ev.engine.str.startswith(engine[:-1])]
    return ev[ev.opcode == opcode] if opcode is not None else ev


def completion_ns(engine: str, cfg: Any) -> float:
    """Time after an instruction's engine occupancy ends until its result is written: what a
    profiler's instruction 'duration' includes beyond our occupancy."""
    from neuroncore_sim.program.ir import Engine
    from neuroncore_sim.timing.cost import pipeline_latency_ns
    return pipeline_latency_ns(Engine(engine), cfg)


def first_duration(res, engine: str, opcode: str) -> float:
    ev = _events(res, engine, opcode)
    return float(ev.iloc[0].end_ns - ev.iloc[0].start_ns)


def _probe(kernel: Callable, shapes: list[tuple[tuple[int, ...], np.dtype]],
           read: Callable[[Any, Any], float]) -> Callable[[Any], dict]:
    def run(cfg):
        import neuroncore_sim as ncs
        res = ncs.simulate(kernel, *(np.zeros(s, d) for s, d in shapes), functional=False,
                           config=cfg)
        return measure(res, read(res, cfg))
    return run


def _interval(res, cfg) -> float:
    return float(np.median(np.diff(_events(res, "scalar", "activation").start_ns.to_numpy())))


def _dma_store(res, cfg) -> float:
    ev = _events(res, "dma*", "dma_copy")
    ev = ev[ev.instr_id == ev.instr_id.max()]  # the profiled transfer: the store (SBUF -> HBM)
    return float((ev.end_ns - ev.start_ns).max())


def instruction_cases() -> list[Case]:
    """Section 2 of the calibration set, each measured the way the profile shows it."""
    mm = ((128, 96), BF16), ((128, 128), BF16)
    one = ((128, 1), BF16), ((128, 128), BF16)
    chain = [((128, 1), F32)] * 3
    mmdur = lambda r, c: first_duration(r, "tensor", "multiply_moving") + completion_ns("tensor", c)  # noqa: E731
    rows = [
        ("VectorE tensor_tensor fp32 add [64, 8192] SBUF+SBUF (duration)", 14968, "fig. 17",
         _probe(probe_tensor_tensor, [((64, 8192), F32)] * 2,
                lambda r, c: first_duration(r, "vector", "tensor_tensor"))),
        ("ScalarE dependent activation [128, 1] (initiation interval)", 189, "opt. 5a, fig. 16",
         _probe(probe_scalar_chain, chain, _interval)),
        ("ScalarE dependent activation [128, 1] (duration)", 159, "fig. 16",
         _probe(probe_scalar_chain, chain, lambda r, c: first_duration(r, "scalar", "activation")
                + completion_ns("scalar", c))),
        ("TensorE matmul bf16 128 rows x 96 cols, moving 128 (duration)", 219, "fig. 18",
         _probe(probe_matmul, list(mm), mmdur)),
        ("TensorE LoadStationary 1 element per partition (duration)", 67, "fig. 20",
         _probe(probe_matmul, list(one), lambda r, c: first_duration(r, "tensor_ls",
                "load_stationary") + c.load_stationary_latency_ns)),
        ("TensorE matmul of 1 column, moving 128 (duration)", 188, "fig. 21",
         _probe(probe_matmul, list(one), mmdur)),
        ("TensorE transpose bf16 128 x 128 (duration)", 195, "fig. 26",
         _probe(probe_transpose, [((128, 128), BF16)], lambda r, c: first_duration(
             r, "tensor", "nc_transpose") + completion_ns("tensor", c))),
        ("DMA: one 32 KiB transfer on one engine ([128, 1024] fp32 store)", 1810, "fig. 30",
         _probe(probe_load, [((128, 1024), F32)], _dma_store)),
        ("DMA: a 4-byte transfer ([1, 1] fp32 store)", 7, "fig. 29",
         _probe(probe_load, [((1, 1), F32)], _dma_store)),
    ]
    me = Path(__file__).read_text
    return [Case(f"aws/probe/{name}", NAME, ns, "ns", lambda: (me(),), run,
                 meta={"name": name, "key": "probe", "source": f"{PERF} {where}",
                       "section": "instructions"})
            for name, ns, where, run in rows]


# --- section 1: whole kernels -------------------------------------------------------------------

#: AWS's matmul ladder at [4096x8192]x[8192x8192] bf16 (SDK 2.20 table): (tutorial kernel,
#: our rewrite, our rewrite's blocks, published ms, published engine activity). The first
#: three are DMA-bound: scripts/calibrate_trn1.py fits ``dge_ns_per_element`` on them.
LADDER = (
    ("nki_matmul_tiled_", "tiled", {}, 51.80, "HFU 10.98 %"),
    ("nki_matmul_hoist_load_", "hoisted", {}, 42.96, "HFU 13.24 %"),
    ("nki_matmul_block_free_dimension_", "blocked_free", {"BLOCK_M": 2, "BLOCK_N": 2},
     22.07, "HFU 26.51 %"),
    ("nki_matmul_fully_optimized_", "matmul_strip",
     {"BLOCK_M": 16, "BLOCK_N": 2, "BLOCK_K": 8}, 6.97, "HFU 85.24 %"),
)

#: Results-file case id of each DMA-bound ladder row (scripts/calibration/published_trn1.csv)
#: -> AWS's tutorial kernel it names.
LADDER_FIT_CASES = {f"aws_{name.rstrip('_')}": name for name, *_ in LADDER[:3]}


def ladder_case_id(kernel_name: str) -> str:
    """This set's case id of AWS's ladder kernel ``kernel_name``."""
    return f"aws/AWS/matmul {kernel_name} [4096x8192]x[8192x8192] bf16"


def ladder_fit_cases(tutorials: Path, options: dict[str, object]) -> list[Any]:
    """The three DMA-bound ladder rows as calibrate fit cases (``dge_ns_per_element``'s):
    AWS's kernels from ``tutorials``, zero inputs (timing reads no values), the set's compile
    ``options``, mechanism ``dge``."""
    from neuroncore_sim.calibrate.measure import LoadedCase
    module = _aws(tutorials, "mm")
    return [LoadedCase(case, getattr(module, name), list(matmul_inputs()), dict(options),
                       ("latency_ns",), mechanism="dge")
            for case, name in LADDER_FIT_CASES.items()]


def _latency(get: Callable[[], Callable], args: Callable[[], tuple], scale: float,
             **kwargs) -> Callable[[Any], dict]:
    def run(cfg):
        import neuroncore_sim as ncs
        res = ncs.simulate(get(), *args(), functional=False, config=cfg, **kwargs)
        return measure(res, res.latency_ns / scale)
    return run


def _aws_layernorm_args() -> tuple:
    x, g, b = layernorm_inputs()
    return x, 1e-5, g[0], b[0]


def kernel_cases(tutorials: Path | None) -> list[Case]:
    """Section 1: each published whole kernel as ours and (with ``tutorials``) as AWS's (the
    cache key hashes the kernel's file; its inputs and blocks are named by the case id)."""
    out: list[Case] = []

    def add(name, value, unit, source, ours_file, ours_get, aws_file, aws_get, args, scale,
            blocks=None, activity="", note=""):
        meta = {"name": name, "source": source, "activity": activity, "note": note,
                "section": "kernels"}
        out.append(Case(f"aws/ours/{name}", NAME, value, unit,
                        lambda: ((ROOT / OURS[ours_file]).read_text(), repr(blocks)),
                        _latency(ours_get, args, scale, **(blocks or {})),
                        meta=dict(meta, key="ours"), primary=tutorials is None))
        if tutorials is not None:
            out.append(Case(f"aws/AWS/{name}", NAME, value, unit,
                            lambda: ((tutorials / TUTORIALS[aws_file]).read_text(),),
                            _latency(aws_get, args, scale), meta=dict(meta, key="AWS")))

    for aws_name, ours, blocks, ms, act in LADDER:
        strip = ours == "matmul_strip"
        add(f"matmul {aws_name} [4096x8192]x[8192x8192] bf16", ms, "ms", MM,
            "strip" if strip else "ladder",
            (lambda: _ours("strip").kernel) if strip else
            (lambda o=ours: _ours("ladder").KERNELS[o]),
            "mm", lambda n=aws_name: getattr(_aws(tutorials, "mm"), n), matmul_inputs, 1e6,
            blocks, act, f"ours: kernels/matmul_strip.py::kernel {blocks}" if strip else
            f"ours: kernels/matmul_ladder.py::{ours} {blocks or ''}")
    runs = [("mamba_v1", 256, 512, 172.93, "us", "VectorE 98.71 %"),
            ("mamba_v1", 4096, 512, 2340.0, "us", "VectorE 92.16 %")]
    acts = {("mamba_v2", 512): "VectorE 99.63 %", ("mamba_v2", 8192): "VectorE 58.93 %, spills",
            ("mamba_v3", 8192): "VectorE 94.85 %"}
    for version, figures in (("mamba_v2", V2_MS), ("mamba_v3", V3_MS)):
        runs += [(version, 4096, s, ms, "ms", acts.get((version, s), ""))
                 for s, ms in zip(SEQS, figures)]
    for version, ch, seq, value, unit, act in runs:
        add(f"{version} ch {ch} seq {seq} state 16 fp32", value, unit, MAMBA, "mamba",
            lambda v=version: _ours("mamba").KERNELS[v], "mamba",
            lambda v=version: getattr(_aws(tutorials, "mamba"), v),
            lambda c=ch, s=seq: mamba_inputs(c, s), 1e3 if unit == "us" else 1e6, activity=act)
    ln_note = ("shape (4096, 8192) fp32, the tutorial script's default: the page states "
               "(300, 1000), but 2.3 ms is ~100x what that shape costs; (4096, 8192) moves "
               "256 MiB and its VectorE work is ms-sized")
    for version, aws_name, us in (("layernorm_v1", "nki_layernorm_kernel_v1", 2311.0),
                                  ("layernorm_v2", "nki_layernorm_kernel_v2", 1969.0)):
        name = f"{version} (4096, 8192) fp32 p50"
        meta = {"name": name, "source": f"{LN} l.111-137", "note": ln_note,
                "section": "kernels", "activity": ""}
        out.append(Case(f"aws/ours/{name}", NAME, us, "us",
                        lambda: ((ROOT / OURS["ln"]).read_text(),),
                        _latency(lambda v=version: _ours("ln").KERNELS[v], layernorm_inputs,
                                 1e3), meta=dict(meta, key="ours"), primary=tutorials is None))
        if tutorials is not None:
            out.append(Case(f"aws/AWS/{name}", NAME, us, "us",
                            lambda: ((tutorials / TUTORIALS["ln"]).read_text(),),
                            _latency(lambda n=aws_name: getattr(_aws(tutorials, "ln"), n),
                                     _aws_layernorm_args, 1e3),
                            meta=dict(meta, key="AWS")))
    return out


def cases(paths: dict[str, str]) -> list[Case]:
    """Every case of the set (``paths["tutorials"]``: AWS's tutorials folder, or absent)."""
    tutorials = Path(paths["tutorials"]) if paths.get("tutorials") else None
    if tutorials is not None and not all((tutorials / f).is_file() for f in TUTORIALS.values()):
        raise SystemExit(f"--tutorials {tutorials}: expected AWS's tutorials folder "
                         f"(nki-samples src/nki_samples/tutorials) with {TUTORIALS['mm']}")
    return kernel_cases(tutorials) + instruction_cases()
