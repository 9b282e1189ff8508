"""Kernels that each break one rule, at the line marked ``# BAD <case id>``.

Not a test module: :data:`tests.reliability.corpus.cases.KERNEL_CASES` names each kernel with
its inputs and the error (or warning) it must give at that line.
"""

# ruff: noqa: E501
import numpy as np

import neuroncore_sim.nki.compiler as ncc
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl


def _out(shape, dtype=nl.float32):
    return nl.ndarray(shape, dtype=dtype, buffer=nl.shared_hbm)


# --- partition dim -----------------------------------------------------------------------------
def ndarray_129_partitions():
    nl.ndarray((129, 4), nl.float32)  # BAD ndarray_129_partitions


def par_dim_129():
    nl.ndarray((2, nl.par_dim(129), 4), nl.float32)  # BAD par_dim_129


def load_129_rows(a):
    nl.load(a)  # BAD load_129_rows


def zero_partitions():
    nl.ndarray((0, 4), nl.float32)  # BAD zero_partitions


# --- operands: partition axis -------------------------------------------------------------------
def strided_partitions(a):
    t = nl.load(a)
    nl.exp(t[0:128:2, :])  # BAD strided_partitions


def repeated_partition(a):
    t = nl.load(a)
    ix, iy = nl.mgrid[0:128, 0:4]
    nl.exp(t[0 * ix, iy])  # BAD repeated_partition


def start_partition(a):
    t = nl.ndarray((128, 16), nl.float32)
    t[...] = nl.load(a)
    nl.exp(t[16:80])  # BAD start_partition


# --- nc_matmul ----------------------------------------------------------------------------------
def matmul_stationary_129(a, b):
    nisa.nc_matmul(nl.load(a), nl.load(b))  # BAD matmul_stationary_129


def matmul_moving_513(a, b):
    nisa.nc_matmul(nl.load(a), nl.load(b))  # BAD matmul_moving_513


def matmul_contraction(a, b):
    nisa.nc_matmul(nl.load(a), nl.load(b))  # BAD matmul_contraction


def matmul_hbm_operand(a, b):
    nisa.nc_matmul(a, nl.load(b))  # BAD matmul_hbm_operand


def matmul_int_operands(a, b):
    nisa.nc_matmul(nl.load(a), nl.load(b))  # BAD matmul_int_operands


def matmul_stationary_3d(a, b):
    nisa.nc_matmul(nl.load(a), nl.load(b))  # BAD matmul_stationary_3d


def gather_float_index(table, idx):
    ix = nl.load(idx)
    nl.load(table[ix, nl.arange(4)[None, :]])  # BAD gather_float_index


def matmul_operator(a):
    t = nl.load(a)
    return t @ t  # BAD matmul_operator


# --- PSUM and capacity --------------------------------------------------------------------------
def psum_tile_over_a_bank():
    nl.ndarray((128, 513), nl.float32, buffer=nl.psum)  # BAD psum_tile_over_a_bank


def one_instruction_over_sbuf(a):
    nl.exp(nl.load(a))  # BAD one_instruction_over_sbuf


# --- memory spaces ------------------------------------------------------------------------------
def gpsimd_reads_psum():
    p = nl.zeros((128, 64), nl.float32, buffer=nl.psum)
    nisa.tensor_copy(p, engine=nisa.gpsimd_engine)  # BAD gpsimd_reads_psum


def compute_reads_hbm(a):
    nl.exp(a)  # BAD compute_reads_hbm


def dma_copy_oob_mode_of_a_string(a):
    out = _out((128, 4))
    nisa.dma_copy(dst=out, src=a, oob_mode="ignore")  # BAD dma_copy_oob_mode_of_a_string
    return out


def dma_into_psum(a):
    p = nl.ndarray((128, 4), nl.float32, buffer=nl.psum)
    nisa.dma_copy(dst=p, src=a)  # BAD dma_into_psum


def tensor_engine_transposes_psum():
    p = nl.zeros((128, 64), nl.float32, buffer=nl.psum)
    nisa.nc_transpose(p, engine=nisa.tensor_engine)  # BAD tensor_engine_transposes_psum


def two_psum_operands():
    p = nl.zeros((128, 64), nl.float32, buffer=nl.psum)
    q = nl.zeros((128, 64), nl.float32, buffer=nl.psum)
    nisa.tensor_tensor(p, q, nl.add)  # BAD two_psum_operands


def gpsimd_result_into_psum():
    p = nl.ndarray((128, 64), nl.float32, buffer=nl.psum)
    p[...] = nisa.iota(nl.arange(64)[None, :], dtype=nl.float32)  # BAD gpsimd_result_into_psum


# --- transposes, statistics ---------------------------------------------------------------------
def vector_transpose_over_128(a):
    nisa.nc_transpose(nl.load(a), engine=nisa.vector_engine)  # BAD vector_transpose_over_128


def tensor_transpose_over_128(a):
    nisa.nc_transpose(nl.load(a), engine=nisa.tensor_engine)  # BAD tensor_transpose_over_128


def transpose_on_gpsimd(a):
    nisa.nc_transpose(nl.load(a), engine=nisa.gpsimd_engine)  # BAD transpose_on_gpsimd


def tensor_tensor_on_tensor_engine(a):
    t = nl.load(a)
    nisa.tensor_tensor(t, t, nl.add, engine=nisa.tensor_engine)  # BAD tensor_tensor_on_tensor_engine


def memset_on_tensor_engine():
    nisa.memset((128, 4), 1.0, nl.float32, engine=nisa.tensor_engine)  # BAD memset_on_tensor_engine


def bn_stats_over_512(a):
    nisa.bn_stats(nl.load(a))  # BAD bn_stats_over_512


def bn_aggr_not_6k(a):
    nisa.bn_aggr(nl.load(a))  # BAD bn_aggr_not_6k


# --- operand shapes -----------------------------------------------------------------------------
def tensor_tensor_shapes(a, b):
    nisa.tensor_tensor(nl.load(a), nl.load(b), nl.add)  # BAD tensor_tensor_shapes


def scalar_tensor_tensor_shapes(a, b):
    t = nl.load(a)
    nisa.scalar_tensor_tensor(data=t, op0=nl.multiply, operand0=2.0, op1=nl.add, operand1=nl.load(b))  # BAD scalar_tensor_tensor_shapes


def activation_bias_shape(a, b):
    nisa.activation(nl.exp, nl.load(a), bias=nl.load(b))  # BAD activation_bias_shape


def store_shape_mismatch(a):
    out = _out((128, 4))
    nl.store(out, value=nl.load(a))  # BAD store_shape_mismatch
    return out


def nl_no_broadcast(a, b):
    nl.add(nl.load(a), nl.load(b))  # BAD nl_no_broadcast


# --- dtypes -------------------------------------------------------------------------------------
def bitwise_on_floats(a):
    t = nl.load(a)
    nisa.tensor_tensor(t, t, nl.bitwise_and)  # BAD bitwise_on_floats


def unknown_dtype():
    nl.ndarray((128, 4), dtype="float13")  # BAD unknown_dtype


def view_other_size(a):
    t = nl.load(a)
    t.view(nl.float16)[:, 0:3].view(nl.float32)  # BAD view_other_size


def abs_as_reduction(a):
    nisa.tensor_reduce(np.abs, nl.load(a), axis=1)  # BAD abs_as_reduction


# --- indexing -----------------------------------------------------------------------------------
def sbuf_index_out_of_bounds(a):
    t = nl.load(a)
    nl.exp(t[:, 2:6])  # BAD sbuf_index_out_of_bounds


def hbm_index_out_of_bounds(a):
    nl.load(a[0:128, 4:8])  # BAD hbm_index_out_of_bounds


def empty_slice(a):
    nl.load(a[5:5])  # BAD empty_slice


def negative_ds_start(a):
    nl.load(a[nl.ds(-1, 4)])  # BAD negative_ds_start


def slice_mixed_with_arange(a):
    nl.load(a[0:128, nl.arange(4)[None, :]])  # BAD slice_mixed_with_arange


def float_index_arithmetic():
    i = nl.arange(4)
    return i + 0.5  # BAD float_index_arithmetic


def uneven_index_split(a):
    t = nl.load(a)
    i = nl.arange(8)[None, :]
    nl.exp(t[nl.arange(128)[:, None], i // 3])  # BAD uneven_index_split


def mgrid_zero_step():
    nl.mgrid[0:128:0, 0:4]  # BAD mgrid_zero_step


# --- masks --------------------------------------------------------------------------------------
def mask_in_if(a):
    i = nl.arange(4)[None, :]
    if i < 2:  # BAD mask_in_if
        nl.load(a)


def mask_not(a):
    i = nl.arange(4)[None, :]
    nl.exp(nl.load(a), mask=not (i < 2))  # BAD mask_not


def tile_subscript_not_a_rectangle(a):
    t = nl.load(a)
    ip, i = nl.mgrid[0:128, 0:4]
    nl.exp(t[ip, i][i < ip])  # BAD tile_subscript_not_a_rectangle


# --- tensor methods -----------------------------------------------------------------------------
def reshape_float_size(a):
    t = nl.load(a)
    t.reshape((128, 4 / 2, 2))  # BAD reshape_float_size


def reshape_partition_dim(a):
    t = nl.load(a)
    t.reshape((64, 8))  # BAD reshape_partition_dim


def expand_dims_repeated(a):
    t = nl.load(a)
    t.expand_dims((1, 1))  # BAD expand_dims_repeated


def astype_of_hbm(a):
    a.astype(nl.bfloat16)  # BAD astype_of_hbm


def newer_tensor_method(a):
    t = nl.load(a)
    t.permute((1, 0))  # BAD newer_tensor_method


def floor_division_operator(a):
    t = nl.load(a)
    return t // t  # BAD floor_division_operator


def reduction_without_axis(a):
    nl.sum(nl.load(a))  # BAD reduction_without_axis


# --- not on NeuronCore-v2, not implemented ------------------------------------------------------
def v3_only_name(a):
    nisa.exponential(nl.load(a))  # BAD v3_only_name


def v3_perf_mode(a, b):
    nisa.nc_matmul(nl.load(a), nl.load(b), perf_mode="fp8_double_row")  # BAD v3_perf_mode


def not_implemented_shuffle(a):
    nisa.shuffle(nl.load(a))  # BAD not_implemented_shuffle


def mask_on_load_transpose2d(a):
    i_p, i_f = nl.arange(4)[:, None], nl.arange(128)[None, :]
    nl.load_transpose2d(a[i_p, i_f], mask=(i_p < i_f))  # BAD mask_on_load_transpose2d


# --- indirect DMA, runtime offsets --------------------------------------------------------------
def gather_index_out_of_range(table, idx):
    ix = nl.load(idx)
    nl.load(table[ix, nl.arange(4)[None, :]])  # BAD gather_index_out_of_range


def runtime_offset_out_of_dim(w, e):
    t = nl.load(e)
    nl.load(w[t[0, 0], nl.arange(128)[:, None], nl.arange(4)[None, :]])  # BAD runtime_offset_out_of_dim


def find_index8_missing_value(a, v):
    nisa.nc_find_index8(data=nl.load(a), vals=nl.load(v))  # BAD find_index8_missing_value


# --- direct allocation --------------------------------------------------------------------------
def alloc_negative_byte_addr():
    nl.ndarray((128, 4), nl.float32, buffer=ncc.sbuf.alloc(lambda idx, pdim_size, fdim_size: (0, -16)))  # BAD alloc_negative_byte_addr


def psum_alloc_bad_bank():
    nl.ndarray((128, 4), nl.float32, buffer=ncc.psum.alloc(lambda idx, pdim_size, fdim_size: (9, 0, 0)))  # BAD psum_alloc_bad_bank


# --- entry points, arguments, launch ------------------------------------------------------------
def program_id_of_a_string(a):
    nl.program_id("x")  # BAD program_id_of_a_string


def static_range_zero_step(a):
    for _ in nl.static_range(0, 2, 0):  # BAD static_range_zero_step
        pass


def list_argument_as_tensor(a):
    nl.load(a)  # BAD list_argument_as_tensor


def softmax_axis_7(a):
    out = _out((128, 4))
    nl.store(out, value=nl.softmax(nl.load(a), axis=7))  # BAD softmax_axis_7
    return out


def arange_zero_step(a):
    nl.load(a[nl.arange(128)[:, None], nl.arange(0, 4, 0)[None, :]])  # BAD arange_zero_step


def par_dim_of_a_string():
    nl.ndarray((2, nl.par_dim("128"), 4), nl.float32)  # BAD par_dim_of_a_string


def tensor_beyond_any_memory():
    out = nl.ndarray((10**7, 10**7), nl.float32, buffer=nl.shared_hbm)  # BAD tensor_beyond_any_memory
    return out


def unknown_tile_size_limit():
    return nl.tile_size.sbuf_fmax  # BAD unknown_tile_size_limit


# --- launches with bad arguments (called directly: the error names the launching line) -------
def _copy(a):
    out = _out(a.shape)
    nl.store(out, value=nl.load(a))
    return out


def launch_grid_negative(a):
    import neuroncore_sim as ncs
    return ncs.simulate(_copy, a, grid=(2, -1))  # BAD launch_grid_negative


def launch_config_unknown(a):
    import neuroncore_sim as ncs
    return ncs.simulate(_copy, a, config="trn3")  # BAD launch_config_unknown


def launch_jit_grid_of_a_string(a):
    import neuroncore_sim.nki as nki
    return nki.jit(_copy)["x"](a)  # BAD launch_jit_grid_of_a_string


def launch_benchmark_zero_iters(a):
    import neuroncore_sim.nki as nki
    return nki.benchmark(iters=0)(_copy)(a)  # BAD launch_benchmark_zero_iters


def launch_jit_of_a_number(a):
    import neuroncore_sim.nki as nki
    return nki.jit(3)  # BAD launch_jit_of_a_number


def launch_profile_into_a_file(a, taken):
    import neuroncore_sim.nki as nki
    return nki.profile(working_directory=taken)(_copy)(a)  # BAD launch_profile_into_a_file


def nl_outside_a_kernel(a):
    return nl.exp(a)  # BAD nl_outside_a_kernel


def dropout_rate_over_1(a):
    out = _out((128, 4))
    nl.store(out, value=nl.dropout(nl.load(a), rate=1.5))  # BAD dropout_rate_over_1
    return out


def dynamic_view_in_compute(a, idx):
    t = nl.load(a)
    i = nl.load(idx)
    ix, iy = nl.mgrid[0:128, 0:2]
    nl.exp(t[ix, i[0, 0] + iy])  # BAD dynamic_view_in_compute


def triangle_mask_on_reduction(a):
    ip, i = nl.mgrid[0:128, 0:4]
    nl.sum(nl.load(a), axis=1, mask=(i < ip))  # BAD triangle_mask_on_reduction


def predicated_copy_dtype(a):
    t = nl.load(a)
    dst = nl.ndarray((128, 4), nl.float32)
    keep = nl.zeros((128, 4), nl.uint8)
    nisa.tensor_copy_predicated(src=t, dst=dst, predicate=keep, dtype=nl.bfloat16)  # BAD predicated_copy_dtype


# --- warnings: accepted, but the hardware result would be wrong --------------------------------
def writes_its_input(a):
    nl.store(a, value=nl.exp(nl.load(a)))  # BAD writes_its_input
    return a


def reads_unwritten(a):
    t = nl.ndarray((128, 4), nl.float32)
    out = _out((128, 4))
    nl.store(out, value=nl.exp(t))  # BAD reads_unwritten
    return out


def log_of_negative(a):
    out = _out((128, 4))
    nl.store(out, value=nisa.activation(nl.log, nl.load(a)))  # BAD log_of_negative
    return out


def live_tiles_over_sbuf(a):
    out = _out((128, 8192))
    parts = [nl.load(a[:, nl.ds(k * 8192, 8192)]) for k in range(8)]  # BAD live_tiles_over_sbuf
    acc = parts[0]
    for p in parts[1:]:
        acc = nl.add(acc, p)
    nl.store(out, value=acc)
    return out


def affine_loop_carries(a):
    out = _out((128, 4))
    t = nl.zeros((128, 4), nl.float32)
    for _ in nl.affine_range(2):
        t[...] = nl.exp(t)  # BAD affine_loop_carries
    nl.store(out, value=t)
    return out


def output_never_written(a):  # BAD output_never_written
    out = _out((128, 4))
    return out


def returns_a_number(a):  # BAD returns_a_number (the value may come from anywhere)
    out = _out((128, 4))
    nl.store(out, value=nl.load(a))
    return 3
