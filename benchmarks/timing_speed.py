"""Speed of the timing model on a large synthetic Program (no front end involved).

The program is a [4096 x 8192] x [8192 x 8192] bf16 tiled matmul, C = A @ B, with A given
transposed in HBM (A_T [K, M]) so stationary tiles load contiguously:

    for mb in 8 blocks of 512 rows of M:
        for k in 64:  aT[k] = load A_T[k-tile, mb-block]              [128, 512] bf16
        for n in 16 tiles of 512 columns:
            for k in 64:
                b = load B[k-tile, n-tile]                              [128, 512] bf16
                for mi in 4: psum[mi] (+)= nc_matmul(aT[k][:, mi-tile], b)   [128,128]x[128,512]
            for mi in 4: o = copy psum[mi] (VectorE / ScalarE alternately); store C[...] = o

= 32768 nc_matmul, 8704 loads, 512 PSUM->SBUF copies, 512 stores (42,496 instructions).
It measures compile_program and simulate_timing (which schedules again) and writes
reports/timing_speed.txt.

Run:  python benchmarks/timing_speed.py
"""

from __future__ import annotations

import time
from pathlib import Path

from neuroncore_sim import dtypes
from neuroncore_sim.config import TRN1
from neuroncore_sim.timing.cost import roofline_ns
from neuroncore_sim.program.ir import Access, Engine, Instruction, MemSpace, Opcode, Program, SourceLoc
from neuroncore_sim.program.ir import TensorDecl
from neuroncore_sim.compiler.passes import compile_program
from neuroncore_sim.timing.engines import simulate_timing

ROOT = Path(__file__).resolve().parent.parent
M, K, N = 4096, 8192, 8192
TILE_K, TILE_M, TILE_N, M_BLOCK = 128, 128, 512, 512


def build() -> Program:
    """The synthetic tiled-matmul Program."""
    prog = Program("bench_matmul")
    bf16, f32 = dtypes.bfloat16, dtypes.float32

    def tensor(name: str, space: MemSpace, shape: tuple[int, int], dt, line: int | None,
               kind: str = "tile") -> TensorDecl:
        t = TensorDecl(len(prog.tensors), name, space, shape, dt, 0, kind,
                       SourceLoc("bench.py", line) if line else None)
        prog.tensors.append(t)
        return t

    def region(t: TensorDecl, r0: int, nr: int, c0: int, nc: int) -> Access:
        row = t.shape[1]
        return Access(t, r0 * row + c0, ((row, nr), (1, nc)))

    def emit(op: Opcode, eng: Engine, line: int, dsts: dict, srcs: dict, attrs=None) -> None:
        prog.instructions.append(Instruction(len(prog.instructions), op, eng, dsts, srcs,
                                             attrs or {}, SourceLoc("bench.py", line)))

    a_t = tensor("A_T", MemSpace.HBM, (K, M), bf16, None, "input")
    b_h = tensor("B", MemSpace.HBM, (K, N), bf16, None, "input")
    c_h = tensor("C", MemSpace.HBM, (M, N), f32, None, "output")
    for mb in range(M // M_BLOCK):
        a_tiles = []
        for k in range(K // TILE_K):
            t = tensor(f"aT{mb}_{k}", MemSpace.SBUF, (TILE_K, M_BLOCK), bf16, 10)
            emit(Opcode.DMA_COPY, Engine.DMA, 11, {"out": region(t, 0, TILE_K, 0, M_BLOCK)},
                 {"src": region(a_t, k * TILE_K, TILE_K, mb * M_BLOCK, M_BLOCK)})
            a_tiles.append(t)
        for n in range(N // TILE_N):
            ps = [tensor(f"ps{mb}_{n}_{i}", MemSpace.PSUM, (TILE_M, TILE_N), f32, 20)
                  for i in range(M_BLOCK // TILE_M)]
            for k in range(K // TILE_K):
                b = tensor(f"b{mb}_{n}_{k}", MemSpace.SBUF, (TILE_K, TILE_N), bf16, 30)
                emit(Opcode.DMA_COPY, Engine.DMA, 31, {"out": region(b, 0, TILE_K, 0, TILE_N)},
                     {"src": region(b_h, k * TILE_K, TILE_K, n * TILE_N, TILE_N)})
                for mi, p in enumerate(ps):
                    emit(Opcode.NC_MATMUL, Engine.TENSOR, 32,
                         {"out": region(p, 0, TILE_M, 0, TILE_N)},
                         {"stationary": region(a_tiles[k], 0, TILE_K, mi * TILE_M, TILE_M),
                          "moving": region(b, 0, TILE_K, 0, TILE_N)},
                         {"accumulate": k > 0})
            for mi, p in enumerate(ps):
                o = tensor(f"o{mb}_{n}_{mi}", MemSpace.SBUF, (TILE_M, TILE_N), f32, 40)
                eng = Engine.VECTOR if mi % 2 == 0 else Engine.SCALAR
                emit(Opcode.TENSOR_COPY, eng, 41, {"out": region(o, 0, TILE_M, 0, TILE_N)},
                     {"src": region(p, 0, TILE_M, 0, TILE_N)})
                emit(Opcode.DMA_COPY, Engine.DMA, 42,
                     {"out": region(c_h, mb * M_BLOCK + mi * TILE_M, TILE_M, n * TILE_N,
                                    TILE_N)},
                     {"src": region(o, 0, TILE_M, 0, TILE_N)})
    return prog


def main() -> None:
    t0 = time.perf_counter()
    prog = build()
    t1 = time.perf_counter()
    compile_program(prog, TRN1)
    t2 = time.perf_counter()
    res = simulate_timing(prog, TRN1)
    t3 = time.perf_counter()
    n = len(prog.instructions)
    busy = {k: v for k, v in res.busy_ns.items() if not k.startswith("dma")}
    lines = [
        f"program: {n} instructions ({sum(1 for i in prog.instructions if i.opcode is Opcode.NC_MATMUL)} nc_matmul), "
        f"{len(res.events)} events",
        f"build program (not timed): {t1 - t0:.2f} s",
        f"compile_program alone:      {t2 - t1:.2f} s  ({1e6 * (t2 - t1) / n:.1f} us/instruction)",
        f"simulate_timing (schedule + simulate): {t3 - t2:.2f} s  "
        f"({n / (t3 - t2):,.0f} instructions/s)",
        f"simulated latency: {res.latency_ns / 1e6:.3f} ms; roofline {roofline_ns(prog, TRN1) / 1e6:.3f} ms",
        f"busy ns: {({k: round(v) for k, v in busy.items()})}; "
        f"dma mean busy {res.dma_busy_ns / TRN1.dma_engines / 1e6:.3f} ms",
    ]
    text = "\n".join(lines)
    print(text)
    (ROOT / "reports").mkdir(exist_ok=True)
    (ROOT / "reports" / "timing_speed.txt").write_text(text + "\n")


if __name__ == "__main__":
    main()
