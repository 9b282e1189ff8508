"""Front end: indexing, masks, instruction recording, launch conventions, errors, alias."""

from __future__ import annotations

import numpy as np
import pytest

import neuroncore_sim as ncs
from neuroncore_sim import nki
from neuroncore_sim.errors import AccessError, KernelError, MemorySpaceError, ShapeError, \
    UnsupportedError
from neuroncore_sim.program.ir import Opcode
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl
import neuroncore_sim.nki.typing as nt

RNG = np.random.default_rng(0)


def run(kernel, *args, **kw):
    """Trace a kernel functionally (no timing) and return the Launch."""
    return ncs.trace(kernel, *args, **kw)


def opcodes(launch):
    return [i.opcode.value for i in launch.program.instructions]


# --- indexing ------------------------------------------------------------------------------------
def test_basic_slices_ints_steps_and_ds():
    def k(a):
        out = nl.ndarray((64, 16), dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.load(a[1, 0:128:2, nl.ds(8, 16)])
        nl.store(out, value=t)
        return out

    a = RNG.random((3, 128, 64), dtype=np.float32)
    (got,) = run(k, a).outputs
    np.testing.assert_array_equal(got, a[1, 0:128:2, 8:24])


def test_affine_index_expressions_strided_and_offset():
    def k(a):
        out = nl.ndarray((128, 32), dtype=a.dtype, buffer=nl.shared_hbm)
        i_p, i_f = nl.mgrid[0:128, 0:32]
        t = nl.load(a[i_p, 2 * i_f + 1])
        nl.store(out[i_p, i_f], value=t)
        return out

    a = RNG.random((128, 64), dtype=np.float32)
    launch = run(k, a)
    np.testing.assert_array_equal(launch.outputs[0], a[:, 1::2])
    load = launch.program.instructions[0]
    assert load.srcs["src"].pattern == ((64, 128), (2, 32))
    assert load.srcs["src"].offset == 1


def test_block_dims_and_par_dim():
    def k(a):
        out = nl.ndarray((128, 4 * 32), dtype=a.dtype, buffer=nl.shared_hbm)
        buf = nl.ndarray((4, nl.par_dim(128), 32), dtype=a.dtype, buffer=nl.sbuf)
        for b in nl.affine_range(4):
            buf[b] = nl.load(a[:, b * 32:(b + 1) * 32])
        for b in nl.affine_range(4):
            nl.store(out[:, b * 32:(b + 1) * 32], value=nl.exp(buf[b]))
        return out

    a = RNG.random((128, 128), dtype=np.float32)
    launch = run(k, a)
    np.testing.assert_allclose(launch.outputs[0], np.exp(a), rtol=1e-6)
    tile = launch.program.tensors[2]
    assert tile.partition_axis == 1 and tile.row_size == 128  # blocks live in the free space


def test_out_of_bounds_index_names_the_kernel_line():
    def k(a):
        t = nl.load(a[0:128, 0:600])  # a is only 512 wide
        return t

    a = np.zeros((128, 512), np.float32)
    with pytest.raises(AccessError, match=r"test_frontend.py:\d+: load src: out of bounds"):
        run(k, a)


def test_row_overrun_is_caught_per_dim_not_by_flat_offset():
    def k(a):
        i_p, i_f = nl.mgrid[0:2, 0:8]
        return nl.load(a[i_p, i_f + 4])  # flat offsets stay in range, column 8..11 do not

    with pytest.raises(AccessError, match="dim 1"):
        run(k, np.zeros((4, 8), np.float32))


# --- masks -------------------------------------------------------------------------------------------
def ragged_exp(x):
    n, f = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(f)[None, :]
    for i in nl.affine_range((n + 127) // 128):
        t = nl.load(x[i * 128 + i_p, i_f], mask=(i * 128 + i_p < n))
        e = nl.exp(t, mask=(i * 128 + i_p < n))
        nl.store(out[i * 128 + i_p, i_f], value=e, mask=(i * 128 + i_p < n))
    return out


def test_rectangular_mask_shrinks_the_instruction():
    x = RNG.random((300, 32), dtype=np.float32)
    launch = run(ragged_exp, x)
    np.testing.assert_allclose(launch.outputs[0], np.exp(x), rtol=1e-6)
    last_load = [i for i in launch.program.instructions if i.opcode is Opcode.DMA_COPY][-2]
    assert last_load.out.shape == (44, 32) and last_load.mask is None


def test_triangular_mask_keeps_a_residual_predicate():
    def k(a):
        out = nl.ndarray((8, 8), dtype=a.dtype, buffer=nl.shared_hbm)
        i_p, i_f = nl.mgrid[0:8, 0:8]
        t = nl.load(a)
        z = nl.zeros((8, 8), a.dtype)
        z[i_p, i_f] = nl.copy(t, mask=(i_f <= i_p))
        nl.store(out, value=z)
        return out

    a = RNG.random((8, 8), dtype=np.float32)
    launch = run(k, a)
    np.testing.assert_array_equal(launch.outputs[0], np.tril(a))
    copy = [i for i in launch.program.instructions if i.opcode is Opcode.TENSOR_COPY][0]
    assert copy.mask is not None


def test_fully_masked_instruction_is_dropped():
    def k(a):
        i_p = nl.arange(128)[:, None]
        t = nl.load(a)
        nl.exp(t, mask=(i_p < 0))
        return None

    launch = run(k, np.zeros((128, 4), np.float32))
    assert opcodes(launch) == ["dma_copy"]


# --- instruction recording ---------------------------------------------------------------------
def test_assignment_writes_the_instruction_result_in_place():
    def k(a):
        t = nl.ndarray((128, 64), dtype=nl.float32)
        x = nl.load(a)
        t[...] = nl.exp(x)
        return None

    launch = run(k, np.zeros((128, 64), np.float32))
    assert opcodes(launch) == ["dma_copy", "activation"]
    act = launch.program.instructions[1]
    assert act.out.tensor.id == 1  # the nl.ndarray tile (0 is the input, 2 the loaded tile)


def test_psum_accumulation_is_one_matmul_per_step():
    def k(a, b):
        out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
        for kk in nl.affine_range(2):
            s = nl.load(a[kk * 128:(kk + 1) * 128, :])
            m = nl.load(b[kk * 128:(kk + 1) * 128, :])
            acc += nisa.nc_matmul(s, m)
        nl.store(out, value=nl.copy(acc))
        return out

    a = RNG.random((256, 128), dtype=np.float32)
    b = RNG.random((256, 512), dtype=np.float32)
    launch = run(k, a, b)
    np.testing.assert_allclose(launch.outputs[0], a.T @ b, rtol=1e-5)
    mms = [i for i in launch.program.instructions if i.opcode is Opcode.NC_MATMUL]
    assert len(mms) == 2 and all(i.attrs["accumulate"] for i in mms)
    assert "tensor_tensor" not in opcodes(launch)


def test_indexed_psum_accumulation():
    def k(a, b):
        out = nl.ndarray((128, 256), dtype=nl.float32, buffer=nl.shared_hbm)
        acc = nl.zeros((2, nl.par_dim(128), 128), nl.float32, buffer=nl.psum)
        s = nl.load(a)
        for j in nl.affine_range(2):
            m = nl.load(b[:, j * 128:(j + 1) * 128])
            acc[j] += nisa.nc_matmul(s, m)
            nl.store(out[:, j * 128:(j + 1) * 128], value=nl.copy(acc[j]))
        return out

    a = RNG.random((128, 128), dtype=np.float32)
    b = RNG.random((128, 256), dtype=np.float32)
    launch = run(k, a, b)
    np.testing.assert_allclose(launch.outputs[0], a.T @ b, rtol=1e-5)
    assert opcodes(launch).count("tensor_copy") == 2  # only the explicit nl.copy calls


def test_nl_matmul_lowers_to_transpose_and_matmul():
    def k(x, y):
        out = nl.ndarray((128, 256), dtype=nl.float32, buffer=nl.shared_hbm)
        r = nl.matmul(nl.load(x), nl.load(y))
        nl.store(out, value=r)
        return out

    x = RNG.random((128, 64), dtype=np.float32)
    y = RNG.random((64, 256), dtype=np.float32)
    launch = run(k, x, y)
    np.testing.assert_allclose(launch.outputs[0], x @ y, rtol=1e-5)
    ops = opcodes(launch)
    assert ops.index("nc_transpose") < ops.index("nc_matmul")


def test_source_locations_point_at_kernel_lines():
    def k(a):
        x = nl.load(a)  # LOAD
        nl.exp(x)  # EXP
        return None

    launch = run(k, np.zeros((4, 4), np.float32))
    import inspect
    src, start = inspect.getsourcelines(k)
    load_line = start + next(i for i, s in enumerate(src) if "# LOAD" in s)
    assert str(launch.program.instructions[0].loc) == f"test_frontend.py:{load_line}"
    assert launch.program.instructions[1].loc.lineno == load_line + 1


# --- launch conventions --------------------------------------------------------------------------
@nki.jit
def spmd_add(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i, j = nl.program_id(0), nl.program_id(1)
    rows, cols = a.shape[0] // nl.num_programs(0), a.shape[1] // nl.num_programs(1)
    sl = (slice(i * rows, (i + 1) * rows), slice(j * cols, (j + 1) * cols))
    nl.store(out[sl], value=nl.load(a[sl]) + nl.load(b[sl]))
    return out


def test_spmd_grid_shares_one_output():
    a = RNG.random((256, 256), dtype=np.float32)
    b = RNG.random((256, 256), dtype=np.float32)
    np.testing.assert_allclose(spmd_add[2, 2](a, b), a + b)
    launch = ncs.trace(spmd_add, a, b, grid=(2, 2))
    assert sum(t.kind == "output" for t in launch.program.tensors) == 1
    assert sorted({i.instance for i in launch.program.instructions}) == [0, 1, 2, 3]


def test_output_argument_kernel_updates_the_array():
    def k(a, out):
        nl.store(out, value=nl.load(a) * 2.0)

    a = RNG.random((16, 8), dtype=np.float32)
    out = np.zeros_like(a)
    assert nki.simulate_kernel(k, a, out) is out or True
    np.testing.assert_allclose(out, a * 2)


def test_sub_kernel_calls_are_inlined():
    @nki.jit
    def double(t):
        return t * 2.0

    @nki.jit
    def outer(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=double(nl.load(a)))
        return out

    a = RNG.random((8, 8), dtype=np.float32)
    np.testing.assert_allclose(outer(a), a * 2)


def test_scalar_arguments_and_jit_with_options():
    @nki.jit(mode="simulation", platform_target="trn1")
    def scale(a, factor):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.load(a) * factor)
        return out

    a = RNG.random((8, 8), dtype=np.float32)
    np.testing.assert_allclose(scale(a, 3.0), a * 3)


def test_placeholder_inputs_need_timing_only():
    spec = nt.tensor[[128, 64], nl.float32]
    launch = ncs.trace(spmd_add, spec, spec, functional=False)
    assert len(launch.program.instructions) == 4
    with pytest.raises(KernelError, match="placeholder"):
        ncs.trace(spmd_add, spec, spec)


# --- errors and the rest of the surface ---------------------------------------------------------------
def test_unsupported_names_raise_simulator_errors_not_attribute_errors():
    with pytest.raises(UnsupportedError, match="nl.no_such_function"):
        nl.no_such_function  # noqa: B018
    with pytest.raises(UnsupportedError, match="nisa.no_such_instruction"):
        nisa.no_such_instruction  # noqa: B018


def test_matmul_operand_rules():
    def bad_space(a):
        s = nl.load(a)
        return nisa.nc_matmul(s, a)  # an HBM operand (a PSUM one is copied to SBUF first)

    with pytest.raises(MemorySpaceError, match="moving: expected a tile in sbuf, found hbm"):
        run(bad_space, np.zeros((128, 128), np.float32))

    def bad_k(a, b):
        return nisa.nc_matmul(nl.load(a), nl.load(b))

    with pytest.raises(ShapeError, match="expected moving K = 128, found 64"):
        run(bad_k, np.zeros((128, 128), np.float32), np.zeros((64, 128), np.float32))


def test_neuronxcc_alias_resolves_to_our_modules():
    import sys
    ncs.install_neuronxcc_alias()
    from neuronxcc import nki as alias_nki  # type: ignore[import-not-found]
    import neuronxcc.nki.language as alias_nl  # type: ignore[import-not-found]
    import neuronxcc.nki.isa as alias_isa  # type: ignore[import-not-found]
    assert alias_nki is nki and alias_nl is nl and alias_isa is nisa
    assert sys.modules["neuronxcc.nki.typing"] is nt


def test_kernel_returning_a_tile_is_an_error():
    def k(a):
        return nl.load(a)

    with pytest.raises(KernelError, match="found a tile in sbuf made at test_frontend.py:"):
        run(k, np.zeros((4, 4), np.float32))


def test_device_print_and_print_show_values(capsys):
    def k(a):
        t = nl.load(a)
        nl.device_print("tile:", t)
        print(t)
        return None

    run(k, np.arange(4, dtype=np.float32).reshape(2, 2))
    out = capsys.readouterr().out
    assert "tile: [[0. 1.]" in out and "NkiTensor(" in out and "[2. 3.]" in out
    ncs.trace(k, np.zeros((2, 2), np.float32), functional=False)
    assert "timing-only run" in capsys.readouterr().out


def test_baremetal_and_trace_decorators_run_on_the_simulator():
    def k(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.load(a) + 1.0)
        return out

    a = RNG.random((8, 8), dtype=np.float32)
    np.testing.assert_allclose(nki.baremetal(k)(a), a + 1)
    np.testing.assert_allclose(nki.baremetal(save_neff_name="x.neff")(k)(a), a + 1)
    np.testing.assert_allclose(nki.trace(k)(a), a + 1)


def test_tile_size_program_ndim_and_shared_constant():
    table = np.arange(12, dtype=np.float32).reshape(3, 4)

    def k(a):
        assert nl.tile_size.pmax == 128 and nl.tile_size.psum_fmax == 512
        assert nl.tile_size.gemm_stationary_fmax == 128 and nl.tile_size.gemm_moving_fmax == 512
        assert nl.program_ndim() == 2 and nl.num_programs() == 2
        out = nl.ndarray((3, 4), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, value=nl.load(nl.shared_constant(table)) + nl.load(a))
        return out

    a = np.ones((3, 4), np.float32)
    np.testing.assert_array_equal(ncs.trace(k, a, grid=(1, 2)).outputs[0], table + 1)


def test_assignment_never_makes_an_engine_write_where_it_cannot():
    def k(a):
        out = nl.ndarray((32, 64), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.ndarray((32, 64), dtype=nl.float32)  # SBUF
        t[...] = nisa.nc_transpose(nl.load(a), engine=nisa.tensor_engine)  # TensorE -> PSUM only
        nl.store(out, value=t)
        return out

    a = RNG.random((64, 32), dtype=np.float32)
    launch = run(k, a)
    np.testing.assert_array_equal(launch.outputs[0], a.T)
    for ins in launch.program.instructions:
        if ins.engine.value == "tensor":
            assert ins.out.space.value == "psum"
