"""Every documented cost formula (shared/arch.md section 2): a single-instruction program's
simulated engine busy time equals the formula, for several shapes and dtypes."""

from __future__ import annotations

import dataclasses

import pytest
from programs import Builder, acc

from neuroncore_sim.config import TRN1, override
from neuroncore_sim.timing.cost import (dma_transfers, instruction_cycles, matmul_stage_cycles,
                                 roofline_ns, stride_penalty)
from neuroncore_sim.timing.engines import simulate_timing

#: GHz; TensorE's documented cycles run at its sustained fraction of the 2.8 GHz clock
#: (docs/model.md, "TensorE sustained rate")
CLOCK = {"tensor": 2.8 * TRN1.tensor_sustained_fraction, "vector": 1.12, "scalar": 1.4,
         "gpsimd": 1.4}
MIN_II = 64
SIZES = [1, 32, 64, 100, 512, 2048]


#: trn1 with neuronx-cc's --auto-cast=none and no engine balancing: the formulas here are the
#: hardware's, on the engine each instruction names (tests/compiler/test_passes.py shows both).
HW = override(TRN1, {"compiler": {"auto_cast": "none", "balance_engines": False}}, "tests")


def busy(program, engine: str) -> float:
    """Simulated busy ns of ``engine`` for a program."""
    return simulate_timing(program, HW).busy_ns.get(engine, 0.0)


def run_one(opcode: str, engine: str, n: int, dtype: str = "float32", *, p: int = 128,
            srcs: tuple[str, ...] = ("data",), spaces: tuple[str, ...] = (),
            out_dtype: str | None = None, out_n: int | None = None, extra_dsts=(),
            attrs: dict | None = None) -> tuple[float, float]:
    """Build a one-instruction program; return (simulated busy ns, cost-function cycles)."""
    b = Builder()
    operands = {}
    for k, role in enumerate(srcs):
        space = spaces[k] if k < len(spaces) else "sbuf"
        operands[role] = acc(b.tensor(role, (p, n), dtype, space, site=k + 1))
    out = b.tensor("out", (p, out_n or n), out_dtype or dtype, "sbuf", site=10)
    dsts = {r: acc(b.tensor(r, (p, 1), "float32", "sbuf", site=20 + k))
            for k, r in enumerate(extra_dsts)}
    ins = b.op(opcode, engine, out=acc(out), dsts=dsts, attrs=attrs or {}, **operands)
    return busy(b.program, engine), instruction_cycles(ins, TRN1)


def check(opcode, engine, expected_cycles, n, **kw):
    ns, cycles = run_one(opcode, engine, n, **kw)
    assert cycles == pytest.approx(expected_cycles)
    assert ns == pytest.approx(expected_cycles / CLOCK[engine])


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_activation(n, dtype):
    check("activation", "scalar", max(MIN_II, n), n, dtype=dtype, attrs={"op": "exp"})


@pytest.mark.parametrize("n", SIZES)
def test_activation_with_reduce_res_adds_read_accumulator(n):
    check("activation", "scalar", max(MIN_II, n) + 64, n, extra_dsts=("reduce_res",),
          attrs={"op": "exp", "reduce_op": "add", "reduce_cmd": "reset_reduce"})


@pytest.mark.parametrize("n", SIZES)
def test_activation_reduce(n):
    check("activation_reduce", "scalar", max(MIN_II, n) + MIN_II, n,
          extra_dsts=("reduce_res",), attrs={"op": "exp", "reduce_op": "add"})


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
def test_tensor_tensor_two_sbuf_inputs_is_2n(n, dtype):
    check("tensor_tensor", "vector", max(MIN_II, 2 * n), n, dtype=dtype,
          srcs=("data1", "data2"), attrs={"op": "maximum"})


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("op", ["add", "multiply", "subtract"])
def test_tensor_tensor_bf16_fast_path_is_n(n, op):
    check("tensor_tensor", "vector", max(MIN_II, n), n, dtype="bfloat16",
          srcs=("data1", "data2"), attrs={"op": op})


@pytest.mark.parametrize("n", [100, 512])
def test_tensor_tensor_bf16_fast_path_needs_bf16_out_and_listed_op(n):
    check("tensor_tensor", "vector", max(MIN_II, 2 * n), n, dtype="bfloat16",
          out_dtype="float32", srcs=("data1", "data2"), attrs={"op": "add"})
    check("tensor_tensor", "vector", max(MIN_II, 2 * n), n, dtype="bfloat16",
          srcs=("data1", "data2"), attrs={"op": "divide"})


def test_tensor_tensor_bf16_fast_path_needs_unit_stride():
    b = Builder()
    d1 = b.tensor("d1", (128, 1024), "bfloat16", "sbuf", site=1)
    d2 = b.tensor("d2", (128, 512), "bfloat16", "sbuf", site=2)
    out = b.tensor("out", (128, 512), "bfloat16", "sbuf", site=3)
    ins = b.op("tensor_tensor", "vector", out=acc(out), data1=acc(d1, slice(None),
               slice(0, 1024, 2)), data2=acc(d2), attrs={"op": "add"})
    assert instruction_cycles(ins, TRN1) == 2 * 512  # stride 4 bytes: no penalty, no fast path


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_tensor_tensor_one_input_in_psum_is_n(n, dtype):
    check("tensor_tensor", "vector", max(MIN_II, n), n, dtype=dtype, srcs=("data1", "data2"),
          spaces=("psum", "sbuf"), attrs={"op": "maximum"})


@pytest.mark.parametrize("n", SIZES)
def test_tensor_tensor_scan(n):
    check("tensor_tensor_scan", "vector", max(MIN_II, 2 * n), n, srcs=("data0", "data1"),
          attrs={"op0": "multiply", "op1": "add", "initial": 0.0})


@pytest.mark.parametrize("n", [2, 64, 100, 512])
def test_scalar_tensor_tensor_fast_path(n):
    # documented N, floored at MIN_II like every instruction (measured: see the reduce below)
    check("scalar_tensor_tensor", "vector", max(MIN_II, n), n, dtype="bfloat16",
          srcs=("data", "operand1"), attrs={"op0": "subtract", "op1": "multiply"})


@pytest.mark.parametrize("n, dtype, ops", [
    (3, "bfloat16", ("subtract", "multiply")),   # odd N
    (64, "float32", ("subtract", "multiply")),   # not bf16
    (64, "bfloat16", ("add", "multiply")),       # other ops
    (512, "bfloat16", ("subtract", "add")),
])
def test_scalar_tensor_tensor_otherwise_2n(n, dtype, ops):
    check("scalar_tensor_tensor", "vector", max(MIN_II, 2 * n), n, dtype=dtype,
          srcs=("data", "operand1"),
          attrs={"op0": ops[0], "op1": ops[1]})


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("engine", ["vector", "scalar"])
def test_tensor_scalar(n, engine):
    check("tensor_scalar", engine, max(MIN_II, n), n,
          attrs={"op0": "multiply", "operand0": 2.0, "op1": "add", "operand1": 1.0})


@pytest.mark.parametrize("n", [32, 512])
def test_tensor_scalar_rsqrt_on_gpsimd_is_4x_slower(n):
    check("tensor_scalar", "gpsimd", 4 * max(MIN_II, n), n,
          attrs={"op0": "rsqrt", "operand0": 0.0})


@pytest.mark.parametrize("n", SIZES)
def test_tensor_scalar_reduce(n):
    check("tensor_scalar_reduce", "vector", max(MIN_II, n) + MIN_II, n,
          extra_dsts=("reduce_res",), attrs={"op0": "multiply", "operand0": 2.0,
                                             "reduce_op": "add"})


@pytest.mark.parametrize("n", [2, 64, 100, 512, 2048])
@pytest.mark.parametrize("op", ["add", "maximum"])
def test_tensor_reduce_bf16_fast_path(n, op):
    check("tensor_reduce", "vector", max(MIN_II, n / 2), n, dtype="bfloat16", out_n=1,
          attrs={"op": op, "axes": (1,)})


@pytest.mark.parametrize("n, dtype, out_dtype, op", [
    (512, "float32", "float32", "add"), (100, "bfloat16", "float32", "add"),
    (2048, "bfloat16", "bfloat16", "multiply"), (64, "float16", "float16", "maximum"),
])
def test_tensor_reduce_otherwise_n(n, dtype, out_dtype, op):
    check("tensor_reduce", "vector", max(MIN_II, n), n, dtype=dtype, out_dtype=out_dtype,
          out_n=1, attrs={"op": op, "axes": (1,)})


def test_tensor_reduce_of_three_elements_takes_the_measured_floor():
    """Autocomp's conv1d profile (SDK 2.26): independent [128, 3] fp32 reduces at 62.9 ns
    each, where the documented N would be 3 cycles: MIN_II (57 ns at 1.12 GHz) is the floor."""
    ns, cycles = run_one("tensor_reduce", "vector", 3, out_n=1, attrs={"op": "add", "axes": (1,)})
    assert cycles == MIN_II
    assert ns == pytest.approx(62.9, rel=0.1)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("engine", ["vector", "scalar", "gpsimd"])
def test_tensor_copy(n, engine):
    check("tensor_copy", engine, max(MIN_II, n), n, srcs=("src",))


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype, value, divisor", [
    ("bfloat16", 0, 2), ("float16", 0.0, 2), ("bfloat16", 1.0, 1), ("float32", 0, 1),
])
def test_memset(n, dtype, value, divisor):
    check("memset", "vector", max(MIN_II, n / divisor), n, dtype=dtype, srcs=(),
          attrs={"value": value})


@pytest.mark.parametrize("n", SIZES)
def test_iota_and_affine_select(n):
    check("iota", "gpsimd", 150 + n, n, dtype="int32", srcs=(), attrs={"expr": None})
    check("affine_select", "gpsimd", 150 + n, n, srcs=("on_true",),
          attrs={"pred": None, "on_false_value": 0.0})


@pytest.mark.parametrize("n", SIZES)
def test_reciprocal(n):
    check("reciprocal", "vector", max(MIN_II, 8 * n), n)


@pytest.mark.parametrize("n", [1, 64, 512])
def test_bn_stats(n):
    check("bn_stats", "vector", max(MIN_II, n), n, out_n=6)


@pytest.mark.parametrize("n", [6, 12, 48, 96, 300])
def test_bn_aggr(n):
    check("bn_aggr", "vector", max(MIN_II, 13 * (n / 3)), n, out_n=2)


@pytest.mark.parametrize("n", [1, 32])
def test_vector_transpose(n):
    check("nc_transpose", "vector", max(MIN_II, n), n, p=32)


@pytest.mark.parametrize("p, f", [(128, 128), (128, 16), (32, 128), (16, 16), (64, 32)])
@pytest.mark.parametrize("dtype, passes", [("bfloat16", 1), ("float32", 4)])
def test_tensor_transpose(p, f, dtype, passes):
    """max(P, min(64, F)); fp32 data takes the fp32 matmul's four passes (a TensorE transpose
    is a matmul by the identity)."""
    ns, cycles = run_one("nc_transpose", "tensor", f, dtype, p=p, out_n=p)
    assert cycles == passes * max(p, min(64, f))
    assert ns == pytest.approx(cycles / CLOCK["tensor"])


@pytest.mark.parametrize("n", [1, 512])
def test_tensor_partition_reduce_assumption(n):
    check("tensor_partition_reduce", "gpsimd", 150 + 2 * n, n, attrs={"op": "add"})


# --- nc_matmul -----------------------------------------------------------------------------------

def matmul_program(k, m, n, dtype="bfloat16", count=1, same_stationary=False, **attrs):
    b = Builder()
    mv = b.tensor("mv", (k, n), dtype, "sbuf", site=2)
    ps = b.tensor("ps", (m, n), "float32", "psum", site=3)
    sts = [b.tensor(f"st{i}", (k, m), dtype, "sbuf", site=1) for i in range(count)]
    for i in range(count):
        st = sts[0] if same_stationary else sts[i]
        b.matmul(acc(ps), acc(st), acc(mv), accumulate=i > 0, **attrs)
    return b.program


@pytest.mark.parametrize("k, m, n", [(128, 128, 512), (128, 128, 128), (128, 128, 1),
                                     (128, 32, 16), (64, 1, 1), (128, 48, 40)])
@pytest.mark.parametrize("dtype, factor", [("bfloat16", 1), ("float16", 1), ("tfloat32", 1),
                                           ("float8_e4m3", 1), ("float32", 4)])
def test_matmul_single_busy_equals_formula(k, m, n, dtype, factor):
    expected = factor * max(min(64, m), n)
    prog = matmul_program(k, m, n, dtype)
    assert instruction_cycles(prog.instructions[0], TRN1) == expected
    assert busy(prog, "tensor") == pytest.approx(expected / CLOCK["tensor"])


@pytest.mark.parametrize("m, n", [(128, 512), (128, 128), (128, 1), (32, 16), (1, 1)])
@pytest.mark.parametrize("dtype, factor", [("bfloat16", 1), ("float32", 4)])
def test_matmul_stream_costs_formula_per_matmul(m, n, dtype, factor):
    """A long back-to-back stream of same-shape matmuls (new stationary each time): the
    issue interval of MultiplyMoving is exactly the documented average formula."""
    count = 40
    res = simulate_timing(matmul_program(128, m, n, dtype, count=count), HW)
    mm = [e for e in res.events if e.engine == "tensor"]
    starts = sorted(e.start_ns for e in mm)
    ii = [b - a for a, b in zip(starts, starts[1:])]
    expected = factor * max(min(64, m), n) / CLOCK["tensor"]
    assert ii == pytest.approx([expected] * (count - 1))


def test_matmul_onezero_halves_fp32_cost():
    prog = matmul_program(128, 128, 512, "float32", is_moving_onezero=True)
    assert instruction_cycles(prog.instructions[0], TRN1) == 2 * 512


def test_load_stationary_is_4x_faster_and_skipped_when_reused():
    prog = matmul_program(128, 128, 512, count=3, same_stationary=True)
    ls, mm = matmul_stage_cycles(prog.instructions[0], TRN1)
    assert (ls, mm) == (32, 512)
    res = simulate_timing(prog, TRN1)
    assert [e.opcode for e in res.events if e.engine == "tensor_ls"] == ["load_stationary"]


# --- access pattern and DMA ----------------------------------------------------------------------

@pytest.mark.parametrize("step, penalty", [(1, 1.0), (4, 1.0), (5, 2.0), (8, 2.0)])
def test_stride_penalty_above_16_bytes(step, penalty):
    b = Builder()
    src = b.tensor("src", (128, 8 * 256), "float32", "sbuf", site=1)
    out = b.tensor("out", (128, 256), "float32", "sbuf", site=2)
    ins = b.op("tensor_copy", "vector", out=acc(out),
               src=acc(src, slice(None), slice(0, step * 256, step)))
    assert stride_penalty(ins, TRN1) == penalty
    assert instruction_cycles(ins, TRN1) == 256 * penalty
    assert busy(b.program, "vector") == pytest.approx(256 * penalty / CLOCK["vector"])


@pytest.mark.parametrize("p, f, transfers, buffers_each", [
    (128, 512, 16, 8), (64, 512, 16, 4), (8, 64, 8, 1), (128, 1, 16, 8),
])
def test_dma_split_over_engines(p, f, transfers, buffers_each):
    b = Builder()
    h = b.tensor("h", (p, f), "float32", "hbm")
    s = b.tensor("s", (p, f), "float32", "sbuf", site=1)
    plan = dma_transfers(b.dma(acc(s), acc(h)), TRN1)
    assert len(plan) == transfers
    assert all(t.buffers == buffers_each for t in plan)
    assert sum(t.nbytes for t in plan) == p * f * 4
    # A load reads HBM at dma_hbm_read_bytes_per_ns; the store back writes it at
    # dma_hbm_write_bytes_per_ns; a copy on chip runs at dma_engine_bytes_per_ns.
    per_buffer = max(TRN1.dma_buffer_overhead_ns, f * 4 / TRN1.dma_hbm_read_bytes_per_ns)
    assert plan[0].engine_ns == pytest.approx(buffers_each * per_buffer)
    store = dma_transfers(b.dma(acc(h), acc(s)), TRN1)
    per_buffer = max(TRN1.dma_buffer_overhead_ns, f * 4 / TRN1.dma_hbm_write_bytes_per_ns)
    assert store[0].engine_ns == pytest.approx(buffers_each * per_buffer)
    s2 = b.tensor("s2", (p, f), "float32", "sbuf", site=2)
    copy = dma_transfers(b.dma(acc(s2), acc(s)), TRN1)
    per_buffer = max(TRN1.dma_buffer_overhead_ns, f * 4 / TRN1.dma_engine_bytes_per_ns)
    assert copy[0].engine_ns == pytest.approx(buffers_each * per_buffer)


def test_dma_noncontiguous_free_slice_needs_more_buffers():
    b = Builder()
    h = b.tensor("h", (128, 4, 256), "float32", "hbm")
    s = b.tensor("s", (128, 4, 512), "float32", "sbuf", site=1)
    ins = b.dma(acc(s, slice(None), slice(None), slice(0, 256)), acc(h))
    assert sum(t.buffers for t in dma_transfers(ins, TRN1)) == 128 * 4


def test_dma_transpose_is_slower():
    b = Builder()
    h = b.tensor("h", (128, 512), "bfloat16", "hbm")
    s = b.tensor("s", (128, 512), "bfloat16", "sbuf", site=1)
    plain = dma_transfers(b.dma(acc(s), acc(h)), TRN1)
    tr = dma_transfers(b.dma(acc(s), acc(h), transpose=True), TRN1)
    assert tr[0].engine_ns == pytest.approx(plain[0].engine_ns * TRN1.dma_transpose_slowdown)


def test_constants_come_from_config():
    cfg = dataclasses.replace(TRN1, min_ii_cycles=100, two_input_cycles_per_element=3)
    b = Builder()
    d = [b.tensor(f"d{i}", (128, 20), "float32", "sbuf", site=i) for i in range(3)]
    ins = b.op("tensor_tensor", "vector", out=acc(d[2]), data1=acc(d[0]), data2=acc(d[1]),
               attrs={"op": "maximum"})
    assert instruction_cycles(ins, cfg) == 100
    b2 = Builder()
    d = [b2.tensor(f"d{i}", (128, 50), "float32", "sbuf", site=i) for i in range(3)]
    ins = b2.op("tensor_tensor", "vector", out=acc(d[2]), data1=acc(d[0]), data2=acc(d[1]),
                attrs={"op": "maximum"})
    assert instruction_cycles(ins, cfg) == 150


def test_roofline_of_a_matmul():
    prog = matmul_program(128, 128, 512, count=10)
    assert roofline_ns(prog, TRN1) == pytest.approx(10 * 512 / 2.8)
