"""Each pass of the compile stage on a small kernel: its instruction listing with the pass off
and on (what the pass changes, and nothing else), and its switch in ``config.compiler``."""

from __future__ import annotations

import numpy as np
import pytest

import neuroncore_sim as ncs
import neuroncore_sim.nki as nki
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl
import neuroncore_sim.nki.typing as nt
from neuroncore_sim.compiler.passes import compile_program
from neuroncore_sim.config import TRN1, override
from neuroncore_sim.errors import ConfigError


def options(**opts) -> object:
    return override(TRN1, {"compiler": opts}, "tests")


def listing(program, config) -> list[tuple[str, str, str]]:
    """(queue, opcode, the marks the passes add) of every instruction the hardware runs, in
    stream order; hoisted repeats are listed as 'hoisted'."""
    inst = compile_program(program, config).instances[0]
    by_id = {ins.id: ins for ins in inst.instructions}
    rows = []
    for queue, ids in sorted(inst.queues.items()):
        for i in ids:
            ins = by_id[i]
            marks = ",".join(k for k in ("dge", "auto_cast") if ins.attrs.get(k))
            rows.append((queue, ins.opcode.value, "hoisted" if i in inst.hoisted else marks))
    return rows


def program_of(kernel, *args):
    return ncs.simulate(kernel, *args, functional=False).program


@nki.jit
def scale_rows(x):
    """load, multiply, store: one DMA of a kernel input, one of its output."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    nl.store(out, value=nl.multiply(t, 2.0))
    return out


def test_dge_marks_the_loads_of_kernel_inputs():
    prog = program_of(scale_rows, nt.tensor[[128, 512], nl.float32])
    assert listing(prog, options(dge=False, balance_engines=False)) == [
        ("dma", "dma_copy", ""), ("dma", "dma_copy", ""), ("vector", "tensor_scalar", "")]
    assert listing(prog, options(dge=True, balance_engines=False)) == [
        ("dma", "dma_copy", "dge"), ("dma", "dma_copy", ""), ("vector", "tensor_scalar", "")]


def test_dge_generation_delays_the_load_by_its_elements():
    """[128, 512] fp32: 128 buffers of 2 KiB = 8 elements of 256 B each, 1024 elements at
    dge_ns_per_element from the load's ready time; its transfers (16 engines x 8 buffers of
    2 KiB at 17 B/ns, after the 1300 ns fixed latency) end before that, so the load, and the
    launch, end later by the difference."""
    x = nt.tensor[[128, 512], nl.float32]
    off = ncs.simulate(scale_rows, x, functional=False, config=options(dge=False))
    on = ncs.simulate(scale_rows, x, functional=False, config=options(dge=True))
    gen = 128 * (2048 // TRN1.dge_element_bytes) * TRN1.dge_ns_per_element
    transfers = TRN1.dma_fixed_latency_ns + 8 * 2048 / TRN1.dma_hbm_read_bytes_per_ns
    assert gen > transfers
    assert on.latency_ns - off.latency_ns == pytest.approx(gen - transfers)


@nki.jit
def fp32_matmul(a, b):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    ps = nisa.nc_matmul(nl.load(a), nl.load(b))
    nl.store(out, value=nl.copy(ps))
    return out


def test_auto_cast_runs_fp32_matmuls_as_bf16():
    args = nt.tensor[[128, 128], nl.float32], nt.tensor[[128, 512], nl.float32]
    prog = program_of(fp32_matmul, *args)
    assert ("tensor", "nc_matmul", "auto_cast") in listing(prog, options(auto_cast="matmult"))
    assert ("tensor", "nc_matmul", "") in listing(prog, options(auto_cast="none"))
    busy = {mode: ncs.simulate(fp32_matmul, *args, functional=False,
                               config=options(auto_cast=mode)).summary()["busy_ns"]["tensor"]
            for mode in ("none", "matmult", "all")}
    assert busy["none"] == pytest.approx(4 * busy["matmult"])
    assert busy["all"] == busy["matmult"]


@nki.jit
def zero_then_accumulate(a, b):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
    for k in nl.affine_range(2):
        acc += nisa.nc_matmul(nl.load(a[k * 128:(k + 1) * 128, :]),
                              nl.load(b[k * 128:(k + 1) * 128, :]))
    nl.store(out, value=nl.copy(acc))
    return out


def test_fold_psum_zeros_drops_the_memset_the_matmuls_start():
    prog = program_of(zero_then_accumulate, nt.tensor[[256, 128], nl.bfloat16],
                      nt.tensor[[256, 512], nl.bfloat16])
    on, off = listing(prog, options()), listing(prog, options(fold_psum_zeros=False))
    assert ("vector", "memset", "") in off
    assert [r for r in off if r != ("vector", "memset", "")] == on


@nki.jit
def exp_then_cast(x):
    """An activation into an fp32 temporary, copied whole to bf16 (Autocomp's SD attention v3),
    and a temporary read twice, which is not folded."""
    out = nl.ndarray(x.shape, dtype=nl.bfloat16, buffer=nl.shared_hbm)
    twice = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    e = nisa.activation(op=nl.exp, data=t, dtype=nl.float32)
    nl.store(out, value=nisa.tensor_copy(e, dtype=nl.bfloat16))
    s = nisa.activation(op=nl.exp, data=t, dtype=nl.float32)
    nl.store(twice, value=nl.add(nisa.tensor_copy(s), s))
    return out, twice


def test_fold_copies_drops_the_only_reader_copy_of_a_temporary():
    x = np.random.default_rng(3).standard_normal((128, 512)).astype(np.float32)
    prog = program_of(exp_then_cast, x)
    off = listing(prog, options(fold_copies=False, balance_engines=False, reorder=False))
    on = listing(prog, options(balance_engines=False, reorder=False))
    assert off.count(("vector", "tensor_copy", "")) == 2
    assert on.count(("vector", "tensor_copy", "")) == 1  # the copy of s stays: s is read twice
    assert [r for r in off if r != ("vector", "tensor_copy", "")] == [
        r for r in on if r != ("vector", "tensor_copy", "")]
    inst = compile_program(prog, options()).instances[0]
    act = [ins for ins in inst.instructions if ins.opcode.value == "activation"]
    assert {str(a.out.dtype) for a in act} == {"bfloat16", "float32"}  # the first writes bf16
    res = ncs.simulate(exp_then_cast, x)  # values as the kernel wrote them
    np.testing.assert_allclose(res.outputs[0].astype(np.float32), np.exp(x), rtol=1e-2)
    np.testing.assert_allclose(res.outputs[1], 2 * np.exp(x), rtol=1e-5)


@nki.jit
def sliding_products(img, filt):
    """A 1-D convolution written one output column per iteration: [128, 3] products summed."""
    out = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.shared_hbm)
    x, f = nl.load(img), nl.load(filt)
    acc = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf)
    i_p, i_f = nl.arange(128)[:, None], nl.arange(3)[None, :]
    for o in nl.affine_range(8):
        prod = nisa.tensor_tensor(x[i_p, i_f + o], f, op=np.multiply)
        acc[i_p, o] = nisa.tensor_reduce(np.add, prod, axis=[1])
    nl.store(out, acc)
    return out


def test_vectorize_merges_the_iterations_of_an_affine_loop():
    prog = program_of(sliding_products, nt.tensor[[128, 10], nl.float32],
                      nt.tensor[[128, 3], nl.float32])
    plain = dict(balance_engines=False, reorder=False)
    off = listing(prog, options(vectorize=False, **plain))
    on = listing(prog, options(**plain))
    assert off == [("dma", "dma_copy", "")] * 2 + [("dma", "dma_copy", "")] + [
        ("vector", "tensor_tensor", ""), ("vector", "tensor_reduce", "")] * 8
    assert on == [("dma", "dma_copy", "")] * 3 + [
        ("vector", "tensor_tensor", ""), ("vector", "tensor_reduce", "")]
    merged = [ins for ins in compile_program(prog, options(**plain)).instances[0].instructions
              if ins.engine.value == "vector"]
    assert [ins.attrs["vectorized"] for ins in merged] == [8, 8]
    assert [ins.out.free_size for ins in merged] == [24, 8]  # [128, 8, 3] products, 8 sums


@nki.jit
def weights_per_row_tile(x, w):
    """Each row tile multiplies the same two weight tiles, loaded again in every iteration."""
    out = nl.ndarray((x.shape[0], 512), dtype=nl.float32, buffer=nl.shared_hbm)
    for i in nl.affine_range(x.shape[0] // 128):
        xt = nl.load(x[i * 128:(i + 1) * 128, :])
        acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
        for k in nl.affine_range(2):
            acc += nl.matmul(xt[:, k * 128:(k + 1) * 128], nl.load(w[k * 128:(k + 1) * 128, :]),
                             transpose_x=True)
        nl.store(out[i * 128:(i + 1) * 128, :], value=nl.copy(acc))
    return out


def test_keep_resident_loads_drops_the_repeated_weight_loads():
    """4 row tiles x 2 weight tiles: 8 weight loads as written, 2 kept resident (they fit),
    the row tiles' 4 loads and 4 stores unchanged; the launch reads 3/5 fewer HBM bytes."""
    args = nt.tensor[[512, 256], nl.bfloat16], nt.tensor[[256, 512], nl.bfloat16]
    prog = program_of(weights_per_row_tile, *args)
    plain = dict(balance_engines=False, reorder=False)
    off = listing(prog, options(keep_resident_loads=False, **plain))
    on = listing(prog, options(**plain))
    dmas = lambda rows: sum(r[1] == "dma_copy" for r in rows)
    assert (dmas(off), dmas(on)) == (16, 10)
    assert [r for r in off if r[0] != "dma"] == [r for r in on if r[0] != "dma"]
    hbm = {keep: ncs.simulate(weights_per_row_tile, *args, functional=False,
                              config=options(keep_resident_loads=keep)).summary()["hbm_bytes"]
           for keep in (False, True)}
    weight_tile, row_tile, out_tile = 128 * 512 * 2, 128 * 256 * 2, 128 * 512 * 4
    assert hbm[False] == 8 * weight_tile + 4 * row_tile + 4 * out_tile
    assert hbm[True] == 2 * weight_tile + 4 * row_tile + 4 * out_tile


def test_loads_too_large_to_keep_are_loaded_again():
    """The same kernel with SBUF shrunk below the two weight tiles and what the row tiles need
    live at once beside them (2.5 KiB usable): nothing is kept."""
    args = nt.tensor[[512, 256], nl.bfloat16], nt.tensor[[256, 512], nl.bfloat16]
    prog = program_of(weights_per_row_tile, *args)
    small = override(options(balance_engines=False, reorder=False),
                     {"sbuf_bytes_per_partition": 16 * 1024 + 2560}, "tests")
    assert sum(r[1] == "dma_copy" for r in listing(prog, small)) == 16


@nki.jit
def negate_in_loop(x, bias):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    b = nl.load(bias)
    for i in nl.affine_range(4):
        t = nl.load(x[i * 128:(i + 1) * 128, :])
        nb = nl.negative(b)  # the same every iteration: computed once
        nl.store(out[i * 128:(i + 1) * 128, :], value=nl.add(t, nb))
    return out


def test_hoist_invariants_computes_a_repeat_once():
    prog = program_of(negate_in_loop, nt.tensor[[512, 64], nl.float32],
                      nt.tensor[[128, 64], nl.float32])
    on = listing(prog, options(balance_engines=False, reorder=False))
    off = listing(prog, options(balance_engines=False, reorder=False, hoist_invariants=False))
    assert sum(r == ("vector", "tensor_scalar", "hoisted") for r in on) == 3
    assert sum(r == ("vector", "tensor_scalar", "") for r in off) == 4
    assert [r[:2] for r in on] == [r[:2] for r in off]  # same streams, the repeats marked


def test_every_switch_off_gives_the_kernel_as_written():
    """No DGE, no cast, no folding, no hoisting: one instruction per recorded instruction, in
    program order per queue, unmarked."""
    prog = program_of(zero_then_accumulate, nt.tensor[[256, 128], nl.float32],
                      nt.tensor[[256, 512], nl.float32])
    plain = options(dge=False, auto_cast="none", fold_psum_zeros=False, fold_zero_adds=False,
                    fold_copies=False, vectorize=False, merge_repeated_loads=False,
                    keep_resident_loads=False, hoist_invariants=False, balance_engines=False,
                    reorder=False)
    rows = listing(prog, plain)
    assert len(rows) == len(prog.instructions) and all(m == "" for *_, m in rows)
    inst = compile_program(prog, plain).instances[0]
    assert [ins.id for ins in inst.instructions] == [ins.id for ins in prog.instructions]


def test_toolchain_sets_its_release_defaults_and_refuses_unknown_options():
    assert options(toolchain="2.20").compiler.dge is True
    assert options(toolchain="2.20", dge=False).compiler.dge is False
    assert options(toolchain="2.27").compiler.auto_cast == "none"
    with pytest.raises(ConfigError, match="unknown compile option"):
        options(vectorise=True)
    with pytest.raises(ConfigError, match="'toolchain' must be one of 2.20, 2.26, 2.27"):
        options(toolchain="2.15")


@nki.jit
def vector_heavy(x, y):
    """Per tile: two fp32 tensor_tensor (VectorE only, 2N each) and two scalings the compiler
    may put on either engine."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(x.shape[0] // 128):
        a, b = nl.load(x[i * 128:(i + 1) * 128, :]), nl.load(y[i * 128:(i + 1) * 128, :])
        s = nl.multiply(nl.add(a, b), 0.5)
        t = nl.add(nl.multiply(s, b), 1.0)
        nl.store(out[i * 128:(i + 1) * 128, :], value=t)
    return out


def test_balance_engines_moves_picked_scalings_to_scalare():
    args = nt.tensor[[512, 512], nl.float32], nt.tensor[[512, 512], nl.float32]
    prog = program_of(vector_heavy, *args)
    off = listing(prog, options(balance_engines=False))
    on = listing(prog, options())
    assert ("scalar", "tensor_scalar", "") not in off
    assert sum(r == ("vector", "tensor_tensor", "") for r in on) == 8  # never moved
    assert sum(r[1] == "tensor_scalar" for r in on) == 8
    assert sum(r == ("scalar", "tensor_scalar", "") for r in on) == 8  # VectorE has 2 x 2N
    fast = ncs.simulate(vector_heavy, *args, functional=False, config=options())
    slow = ncs.simulate(vector_heavy, *args, functional=False,
                        config=options(balance_engines=False))
    assert fast.summary()["busy_ns"]["vector"] < slow.summary()["busy_ns"]["vector"]


@nki.jit
def evacuate_products(a, b):
    """Four matmuls whose PSUM results are copied out with ``nl.copy`` (engine left to the
    compiler), and nothing else on VectorE or ScalarE."""
    out = nl.ndarray((512, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    for i in nl.affine_range(4):
        ps = nl.matmul(nl.load(a[:, i * 128:(i + 1) * 128]), nl.load(b), transpose_x=True)
        nl.store(out[i * 128:(i + 1) * 128, :], value=nl.copy(ps))
    return out


def test_copies_out_of_psum_go_to_scalare():
    """A balance would put every other copy on VectorE (nothing else runs there); the compiler
    gives ScalarE all of them (NKIBench profiles, docs/model.md "Engine choice")."""
    prog = program_of(evacuate_products, nt.tensor[[128, 512], nl.bfloat16],
                      nt.tensor[[128, 512], nl.bfloat16])
    on = listing(prog, options())
    assert sum(r == ("scalar", "tensor_copy", "") for r in on) == 4
    assert not any(r[0] == "vector" for r in on)
    off = listing(prog, options(balance_engines=False))
    assert sum(r == ("vector", "tensor_copy", "") for r in off) == 4


def test_an_engine_the_kernel_names_is_kept():
    @nki.jit
    def named(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.load(x)
        u = nisa.tensor_tensor(t, t, op=nl.multiply)
        nl.store(out, value=nisa.tensor_scalar(u, np.multiply, 2.0, engine=nisa.vector_engine))
        return out
    prog = program_of(named, nt.tensor[[128, 512], nl.float32])
    assert ("vector", "tensor_scalar", "") in listing(prog, options())


def ping_pong_kernel():
    """A fresh kernel (ncc.no_reorder marks the function it decorates)."""
    @nki.jit
    def ping_pong(x):
        """Per iteration a chain VectorE -> ScalarE -> VectorE: in program order each engine
        waits for the other; interleaved, one iteration's VectorE work overlaps another's
        ScalarE work."""
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        for i in nl.affine_range(x.shape[0] // 128):
            t = nl.load(x[i * 128:(i + 1) * 128, :])
            u = nisa.tensor_tensor(t, t, op=nl.multiply)
            v = nisa.activation(op=nl.exp, data=u)
            nl.store(out[i * 128:(i + 1) * 128, :], value=nisa.tensor_tensor(v, t, op=nl.add))
        return out
    return ping_pong


ping_pong = ping_pong_kernel()


def test_reorder_interleaves_iterations_and_keeps_each_iterations_order():
    x = nt.tensor[[8 * 128, 512], nl.float32]
    prog = program_of(ping_pong, x)
    kept = compile_program(prog, options(reorder=False)).instances[0]
    moved = compile_program(prog, options()).instances[0]
    assert sorted(ins.id for ins in moved.instructions) == [ins.id for ins in kept.instructions]
    vec_kept, vec_moved = kept.queues["vector"], moved.queues["vector"]
    assert vec_moved != vec_kept  # a later iteration's first multiply goes before an add
    loops = {ins.id: ins.loops for ins in prog.instructions}
    for it in {loops[i] for i in vec_kept}:  # within one iteration: program order
        mine = [i for i in vec_moved if loops[i] == it]
        assert mine == sorted(mine)
    fast = ncs.simulate(ping_pong, x, functional=False, config=options())
    slow = ncs.simulate(ping_pong, x, functional=False, config=options(reorder=False))
    assert fast.latency_ns < 0.9 * slow.latency_ns


def test_no_reorder_keeps_the_kernels_order():
    from neuroncore_sim.nki import compiler as ncc
    kept_kernel = ncc.no_reorder(ping_pong_kernel())
    prog = program_of(kept_kernel, nt.tensor[[8 * 128, 512], nl.float32])
    assert prog.keeps_order
    inst = compile_program(prog, options()).instances[0]
    assert list(inst.queues["vector"]) == sorted(inst.queues["vector"])


@nki.jit
def psum_hungry(x, y):
    """Per iteration two [128, 512] fp32 PSUM results (two banks each iteration): interleaving
    more than four iterations would need more than PSUM's 8 banks."""
    out = nl.ndarray((16 * 128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    for i in nl.affine_range(16):
        a = nl.load(x[:, i * 128:(i + 1) * 128])
        b = nl.load(y[:, i * 512:(i + 1) * 512])
        p1 = nisa.nc_matmul(a, b)
        p2 = nisa.nc_matmul(a, b)
        nl.store(out[i * 128:(i + 1) * 128, :], value=nl.add(p1, p2))
    return out


def test_reorder_stays_within_psum_and_spills_nothing_more():
    args = nt.tensor[[128, 16 * 128], nl.bfloat16], nt.tensor[[128, 16 * 512], nl.bfloat16]
    res = ncs.simulate(psum_hungry, *args, functional=False, config=options())
    psum = res.summary()["memory"]["psum"]
    assert psum["spill_save_bytes"] == 0 and psum["peak_bytes_per_partition"] <= 16384
    kept = ncs.simulate(psum_hungry, *args, functional=False, config=options(reorder=False))
    assert res.latency_ns <= kept.latency_ns


@nki.jit
def invariant_in_loop(x, bias):
    """A loop-invariant repeat (hoisted) read in every iteration: the readers read the first
    computation's result, so no reordering may put a reader before that first one."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    b = nl.load(bias)
    for _ in range(24):  # a long chain: the first negation is ready late, its repeats at once
        b = nisa.activation(op=nl.exp, data=b)
    for i in nl.affine_range(8):
        t = nl.load(x[i * 128:(i + 1) * 128, :])
        u = nisa.activation(op=nl.exp, data=t, bias=nl.negative(b))
        nl.store(out[i * 128:(i + 1) * 128, :], value=nl.add(u, t))
    return out


def test_reordered_streams_never_wait_on_an_instruction_behind_them():
    prog = program_of(invariant_in_loop, nt.tensor[[1024, 512], nl.float32],
                      nt.tensor[[128, 1], nl.float32])
    inst = compile_program(prog, options()).instances[0]
    assert inst.hoisted  # the negation is computed once
    where = {ins.id: i for i, ins in enumerate(inst.instructions)}
    for ins in inst.instructions:
        for p, _ in inst.deps.get(ins.id, ()):
            assert where[p] < where[ins.id], (p, ins.id)
    res = ncs.simulate(invariant_in_loop, nt.tensor[[1024, 512], nl.float32],
                       nt.tensor[[128, 1], nl.float32], functional=False, config=options())
    assert (res.events.opcode == "activation").sum() == 24 + 8  # every activation ran


def test_a_reader_of_a_kept_load_keeps_its_view_dtype():
    """A reader of a dropped repeat reads the first tile through the same dtype view."""
    from neuroncore_sim.compiler.load_cse import _retarget
    from neuroncore_sim.program.ir import Access, MemSpace, TensorDecl
    first = TensorDecl(0, "t0", MemSpace.SBUF, (128, 64), np.dtype(np.float32))
    repeat = TensorDecl(1, "t1", MemSpace.SBUF, (128, 64), np.dtype(np.float32))
    read = Access(repeat, 0, ((64, 128), (1, 64)), np.dtype(np.int32))
    moved = _retarget(read, {repeat.id: first})
    assert (moved.tensor, moved.offset, moved.pattern, moved.view_dtype) == (
        first, 0, ((64, 128), (1, 64)), np.dtype(np.int32))
