"""Direct allocation (ncc.sbuf/psum.alloc and mod_alloc): placements as documented, values,
the timing model honouring physical addresses (aliasing serialises), and capacity errors."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import neuroncore_sim as ncs
import neuroncore_sim.nki.compiler as ncc
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl
from kernel_checks import expect_error
from neuroncore_sim.config import TRN1, override
from neuroncore_sim.errors import AllocationWarning, CapacityError, KernelError

F32 = np.float32


def _decl(program, name):
    return next(t for t in program.tensors if t.name == name)


def test_mod_alloc_placements_follow_the_documented_formula():
    def kernel():
        t = nl.ndarray((4, nl.par_dim(128), 512), dtype=nl.bfloat16, name="t",
                       buffer=ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(2,)))
        nl.ndarray((4, nl.par_dim(128), 512), dtype=nl.float32, name="p",
                       buffer=ncc.psum.mod_alloc(base_bank=2, num_bank_tiles=(2,)))
        nl.ndarray((2, 3, nl.par_dim(32), 8), dtype=nl.float32, name="s",
                       buffer=ncc.sbuf.mod_alloc(base_addr=64, num_par_tiles=(2, 2),
                                                 num_free_tiles=(1, 3)))
        out = nl.ndarray((1, 1), nl.float32, buffer=nl.shared_hbm)
        nl.store(out, value=t[0, 0:1, 0:1])
        return out
    prog = ncs.trace(kernel, functional=False).program
    t, p, s = (_decl(prog, n).placement for n in "tps")
    assert t.tiles == ((0, 0), (0, 1024), (0, 0), (0, 1024)) and t.tile_bytes == 1024
    assert p.tiles == ((0, 2 * 2048), (0, 3 * 2048), (0, 2 * 2048), (0, 3 * 2048))
    # partition: base 0 + (i0 % 2 * 2 + i1 % 2) * 32; bytes: 64 + (i1 % 3) * 32
    want = [(((i0 % 2) * 2 + i1 % 2) * 32, 64 + (i1 % 3) * 32) for i0 in range(2)
            for i1 in range(3)]
    assert list(s.tiles) == want and s.partitions == 32


def transpose_kernel(a, out):
    """The direct-allocation guide's transpose example, in our words."""
    n, m = a.shape
    ident = nl.shared_constant(np.identity(128, dtype=np.int8), dtype=nl.float32)
    for i in nl.affine_range(n // 128):
        for j in nl.affine_range(m // 128):
            src = nl.ndarray((nl.par_dim(128), 128), dtype=a.dtype,
                             buffer=ncc.sbuf.mod_alloc(base_addr=1024))
            src[...] = nl.load(a[i * 128:(i + 1) * 128, j * 128:(j + 1) * 128])
            eye = nl.ndarray((nl.par_dim(128), 128), dtype=a.dtype,
                             buffer=ncc.sbuf.mod_alloc(base_addr=0))
            eye[...] = nl.load(ident)
            tp = nl.ndarray((nl.par_dim(128), 128), dtype=nl.float32,
                            buffer=ncc.psum.mod_alloc(base_bank=0))
            tp[...] = nisa.nc_matmul(src, eye)
            back = nl.ndarray((nl.par_dim(128), 128), dtype=a.dtype,
                              buffer=ncc.sbuf.mod_alloc(base_addr=2048))
            back[...] = nl.copy(tp)
            nl.store(out[j * 128:(j + 1) * 128, i * 128:(i + 1) * 128], value=back)


def test_directly_allocated_kernel_computes_and_serialises_on_shared_addresses():
    a = np.random.default_rng(0).standard_normal((256, 256)).astype(F32)
    out = np.zeros((256, 256), F32)
    res = ncs.simulate(transpose_kernel, a, out)
    np.testing.assert_allclose(out, a.T, rtol=1e-6)
    # every iteration reuses the same four addresses: nothing of one iteration overlaps the
    # next, so each load of `src` waits for the matmul of the previous iteration to read it
    ev = res.events
    mm = ev[ev.opcode == "multiply_moving"].sort_values("start_ns")
    src, first = inspect.getsourcelines(transpose_kernel)
    line = first + next(k for k, text in enumerate(src) if "src[...] = nl.load" in text)
    loads = ev[(ev.opcode == "dma_copy") & ev.source.str.endswith(f":{line}")]
    starts = loads.groupby("instr_id").start_ns.min().sort_values().to_numpy()
    assert len(mm) == 4 and len(starts) == 4
    assert (starts[1:] >= mm.end_ns.to_numpy()[:-1]).all()


def _pipeline(distinct: bool):
    def kernel(a):
        out = nl.ndarray((8, 128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        # static_range: unrolled, so Python runs the body per iteration and i is an int here
        # (an affine_range body is traced once: its allocations are placed once)
        for i in nl.static_range(8):
            addr = (i * 2048) if distinct else 0
            t = nl.ndarray((nl.par_dim(128), 512), dtype=nl.float32,
                           buffer=ncc.sbuf.alloc(lambda idx, p, f, addr=addr: (0, addr)))
            t[...] = nl.load(a[i])
            u = nl.ndarray((nl.par_dim(128), 512), dtype=nl.float32,
                           buffer=ncc.sbuf.mod_alloc(base_addr=65536 + (addr if distinct else 0)))
            u[...] = nl.exp(t)
            nl.store(out[i], value=u)
        return out
    # (the triggers of an unrolled loop's DMAs issue in program order, so each load would also
    # wait behind the previous iteration's store, compiler/dma_triggers.py: off here, to show
    # what the addresses alone do)
    config = override(TRN1, {"compiler": {"order_dma_triggers": False}}, "tests")
    return ncs.simulate(kernel, np.zeros((8, 128, 512), F32), functional=False, config=config)


def test_same_address_serialises_distinct_addresses_overlap():
    same, distinct = _pipeline(False), _pipeline(True)
    assert distinct.latency_ns < 0.7 * same.latency_ns  # the loads themselves bind too
    ev = same.events
    exps = ev[ev.opcode == "activation"].sort_values("start_ns")
    loads = ev[(ev.opcode == "dma_copy") & (ev.nbytes > 0)]
    first = loads.groupby("instr_id").start_ns.min().sort_values().to_numpy()
    loads_in = first[::2]  # load, store, load, store, ... (program order)
    assert (loads_in[1:] >= exps.end_ns.to_numpy()[:-1]).all()  # WAR on the shared address


def test_block_dims_double_buffer():
    def kernel(a, double):
        out = nl.ndarray((4, 128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.ndarray((4, nl.par_dim(128), 512), dtype=nl.float32,
                       buffer=ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(double,)))
        for i in nl.affine_range(4):
            t[i] = nl.load(a[i])
            nl.store(out[i], value=nl.exp(t[i]))
        return out
    a = np.random.default_rng(1).standard_normal((4, 128, 512)).astype(F32)
    one, two = (ncs.simulate(kernel, a, n) for n in (1, 2))
    np.testing.assert_allclose(one.outputs[0], np.exp(a), rtol=1e-6)
    np.testing.assert_allclose(two.outputs[0], np.exp(a), rtol=1e-6)
    assert two.latency_ns < one.latency_ns


def test_direct_allocation_errors():
    def negative_addr():
        nl.ndarray((nl.par_dim(128), 512), dtype=nl.float32,  # BAD
                   buffer=ncc.sbuf.alloc(lambda idx, p, f: (0, -1024)))

    def bad_partition():
        nl.ndarray((nl.par_dim(128), 8), dtype=nl.float32,  # BAD
                   buffer=ncc.sbuf.alloc(lambda idx, p, f: (32, 0)))

    def bad_bank():
        nl.ndarray((3, nl.par_dim(128), 8), dtype=nl.float32,  # BAD
                   buffer=ncc.psum.mod_alloc(base_bank=6, num_bank_tiles=(3,)))

    def psum_offset():
        nl.ndarray((nl.par_dim(128), 8), dtype=nl.float32,  # BAD
                   buffer=ncc.psum.alloc(lambda idx, p, f: (0, 0, 512)))

    def bad_func():
        nl.ndarray((nl.par_dim(128), 8), dtype=nl.float32,  # BAD
                   buffer=ncc.sbuf.alloc(lambda idx, p, f: 0))

    def good():
        nl.ndarray((nl.par_dim(128), 512), dtype=nl.float32,
                   buffer=ncc.sbuf.mod_alloc(base_addr=176 * 1024 - 2048))
        nl.ndarray((nl.par_dim(32), 8), dtype=nl.float32,
                   buffer=ncc.sbuf.alloc(lambda idx, p, f: (32, 0)))
        nl.ndarray((2, nl.par_dim(128), 8), dtype=nl.float32,
                   buffer=ncc.psum.mod_alloc(base_bank=6, num_bank_tiles=(2,)))

    expect_error(CapacityError, r"block \(\): byte_addr -1024; expected 0 <= byte_addr",
                 negative_addr)
    expect_error(KernelError, r"a tile of 128 partitions must start at partition 0; found 32",
                 bad_partition)
    expect_error(CapacityError, r"block \(2,\): expected a PSUM bank 0..7, found bank 8",
                 bad_bank)
    expect_error(KernelError, r"expected start_partition 0 and byte_addr 0 .* found 0 and 512",
                 psum_offset)
    expect_error(KernelError, r"must return \(start_partition, byte_addr\) as ints; for block "
                 r"\(\) found 0", bad_func)
    ncs.simulate(good, timing=False)


def test_direct_tiles_take_capacity_from_auto_allocated_ones():
    def kernel(a):
        big = nl.ndarray((nl.par_dim(128), 44 * 1024 - 256), dtype=nl.float32,
                         buffer=ncc.sbuf.mod_alloc(base_addr=0))
        big[:, 0:512] = nl.load(a)
        t = nl.load(a)  # auto-allocated: 2 KiB per partition, only 1 KiB left
        nl.store(a, value=nl.add(t, big[:, 0:512]))
    with pytest.raises(CapacityError, match="directly allocated tiles take another 179200"):
        ncs.simulate(kernel, np.zeros((128, 512), F32), functional=False)

    def fits(a):
        big = nl.ndarray((nl.par_dim(128), 30 * 1024), dtype=nl.float32,
                         buffer=ncc.sbuf.mod_alloc(base_addr=0))
        big[:, 0:512] = nl.load(a)
        t = nl.load(a)
        nl.store(a, value=nl.add(t, big[:, 0:512]))
    ncs.simulate(fits, np.zeros((128, 512), F32), functional=False)


def past_the_partition():
    t = nl.ndarray((2, nl.par_dim(128), 512), dtype=nl.float32,  # PAST
                   buffer=ncc.sbuf.mod_alloc(base_addr=192 * 1024 - 1024, num_free_tiles=(2,)))
    out = nl.ndarray((2, 128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    for i in nl.affine_range(2):
        t[i] = nl.full((128, 512), float(i + 1), dtype=nl.float32)
        nl.store(out[i], value=t[i])
    return out


def test_a_tile_past_the_end_of_a_partition_is_a_warning():
    """The compiler checks no address bound (AWS's allocated attention kernel, run on the
    hardware, starts tiles past the guide's 176 KiB bound), so a directly allocated tile that
    runs past the 192 KiB partition is a warning naming the allocation, once per tensor; the
    kernel runs, each tile with storage of its own."""
    with pytest.warns(AllocationWarning) as caught:
        res = ncs.simulate(past_the_partition)
    assert len(caught) == 1
    src, start = inspect.getsourcelines(past_the_partition)
    bad = start + next(i for i, s in enumerate(src) if "# PAST" in s)
    assert str(caught[0].message) == (
        f"test_ncc_alloc.py:{bad}: ncc.sbuf.mod_alloc: block (0,) (and 1 more of its 2 blocks): "
        "a tile of 2048 bytes per partition at byte_addr 195584 ends at 197632, past the 196608 "
        "bytes of an SBUF partition: on the hardware those bytes do not exist (the simulator "
        "gives them storage of their own)")
    np.testing.assert_array_equal(res.outputs[0][0], 1.0)
    np.testing.assert_array_equal(res.outputs[0][1], 2.0)
