"""The corpus as data: what each bad input must give.

A kernel case: the kernel (in :mod:`.bad_kernels`), its inputs, the SimulatorError (or
SimulatorWarning) subclass it must raise (warn), and a regex its message must match; the
``file.py:LINE`` it must name is the line marked ``# BAD <id>``.
"""

# ruff: noqa: E501  (one case per line reads best as a table)
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from neuroncore_sim import errors as E

from . import bad_kernels as K


def z(*shape: int, dtype: Any = np.float32) -> np.ndarray:
    """Zeros of ``shape`` (values do not matter to a rule, except where a case says so)."""
    return np.zeros(shape, dtype)


def _a_file() -> str:
    """A file where a folder is expected (in a fresh temporary folder; the test checks it is
    left as it was)."""
    import tempfile
    fd, path = tempfile.mkstemp(prefix="corpus-taken-")
    with open(fd, "w") as f:
        f.write("keep me\n")
    return path


@dataclass(frozen=True)
class KernelCase:
    """A kernel breaking one rule (``error`` is a SimulatorError or SimulatorWarning subclass)."""

    id: str
    args: Callable[[], tuple]
    error: type
    message: str
    rule: str = ""
    kwargs: dict = field(default_factory=dict)
    #: called directly (it launches a kernel itself) rather than through ncs.simulate
    direct: bool = False

    @property
    def kernel(self) -> Callable[..., Any]:
        return getattr(K, self.id)


def _k(id: str, args: Callable[[], tuple], error: type, message: str, rule: str = "",
       **kwargs: Any) -> KernelCase:
    return KernelCase(id, args, error, message, rule, kwargs)


KERNEL_CASES: list[KernelCase] = [
    # Rules checked: partition dim
    _k("ndarray_129_partitions", lambda: (), E.ShapeError, r"partition dim \(dim 0\) must be 1..128"),
    _k("par_dim_129", lambda: (), E.ShapeError, r"partition dim \(dim 1\) must be 1..128"),
    _k("load_129_rows", lambda: (z(129, 8),), E.ShapeError, r"expected at most 128, found 129"),
    _k("zero_partitions", lambda: (), E.ShapeError, r"expected a shape of positive integers, found \(0, 4\)"),
    # an operand's first axis is its partition dim, partitions contiguous; 1:1 mapping
    _k("strided_partitions", lambda: (z(128, 4),), E.AccessError, r"first axis of a tile operand must be its partition dim, with contiguous partitions"),
    _k("repeated_partition", lambda: (z(128, 4),), E.AccessError, r"repeats one partition over 128 partitions; .*nl.broadcast_to"),
    _k("start_partition", lambda: (z(128, 16),), E.AccessError, r"start-partition rule: an access over 64 partitions must start at partition 0 or 64; found start partition 16"),
    # nc_matmul
    _k("matmul_stationary_129", lambda: (z(128, 129), z(128, 64)), E.ShapeError, r"stationary: free size at most 128, found 129"),
    _k("matmul_moving_513", lambda: (z(128, 128), z(128, 513)), E.ShapeError, r"moving: free size at most 512, found 513"),
    _k("matmul_contraction", lambda: (z(64, 128), z(32, 16)), E.ShapeError, r"contraction \(partition\) sizes must match"),
    _k("matmul_hbm_operand", lambda: (z(128, 128), z(128, 64)), E.MemorySpaceError, r"expected a tile in sbuf, found hbm"),
    _k("matmul_int_operands", lambda: (z(128, 128, dtype=np.int32), z(128, 64, dtype=np.int32)), E.DTypeError, r"expected a TensorE input dtype .*found int32"),
    _k("matmul_stationary_3d", lambda: (z(128, 4, 4), z(128, 64)), E.ShapeError, r"stationary: expected a 2-D tile \[K, F\], found \[128, 4, 4\]"),
    _k("gather_float_index", lambda: (z(16, 4), z(128, 1)), E.DTypeError, r"indirect index tile: expected an integer dtype, found float32"),
    _k("matmul_operator", lambda: (z(128, 128),), E.UnsupportedError, r"no NKI instruction for tiles .*nl.matmul"),
    # PSUM, capacity
    _k("psum_tile_over_a_bank", lambda: (), E.CapacityError, r"must fit one bank; expected at most 2048 bytes"),
    _k("one_instruction_over_sbuf", lambda: (z(128, 50000),), E.CapacityError, r"SBUF capacity: .*expected at most 180224 bytes per partition, found 200000"),
    # memory spaces
    _k("gpsimd_reads_psum", lambda: (), E.MemorySpaceError, r"GpSimd cannot access PSUM"),
    _k("compute_reads_hbm", lambda: (z(128, 4),), E.MemorySpaceError, r"expected a tile in sbuf or psum, found a tensor in hbm \(load it"),
    _k("dma_into_psum", lambda: (z(128, 4),), E.MemorySpaceError, r"DMA engines reach hbm and sbuf; found psum"),
    _k("dma_copy_oob_mode_of_a_string", lambda: (z(128, 4),), E.KernelError, r"oob_mode: expected nisa.oob_mode.error or"),
    _k("tensor_engine_transposes_psum", lambda: (), E.MemorySpaceError, r"expected data in sbuf, found psum"),
    _k("two_psum_operands", lambda: (), E.MemorySpaceError, r"at most one operand may be in psum, found two"),
    _k("gpsimd_result_into_psum", lambda: (), E.MemorySpaceError, r"GpSimd cannot access PSUM; expected an SBUF destination, found psum"),
    # transposes and statistics
    _k("vector_transpose_over_128", lambda: (z(32, 160),), E.ShapeError, r"VectorE: expected at most 32x32 per instruction and 128x128 in all .*found 32x160"),
    _k("tensor_transpose_over_128", lambda: (z(128, 256),), E.ShapeError, r"TensorE: expected at most 128x128, found 128x256"),
    _k("transpose_on_gpsimd", lambda: (z(32, 32),), E.UnsupportedError, r"engine must be tensor or vector, found gpsimd"),
    _k("tensor_tensor_on_tensor_engine", lambda: (z(128, 4),), E.UnsupportedError, r"tensor_tensor: expected engine vector, scalar or gpsimd, found tensor \(TensorE runs only nc_matmul and nc_transpose\)"),
    _k("memset_on_tensor_engine", lambda: (), E.UnsupportedError, r"memset: expected engine vector, scalar or gpsimd"),
    _k("bn_stats_over_512", lambda: (z(128, 513),), E.ShapeError, r"N <= 512, found \[128, 513\]"),
    _k("bn_aggr_not_6k", lambda: (z(128, 13),), E.ShapeError, r"\[P, 6\*k\]"),
    # operand shapes
    _k("tensor_tensor_shapes", lambda: (z(128, 4), z(128, 8)), E.ShapeError, r"found \[128, 4\] and \[128, 8\]"),
    _k("scalar_tensor_tensor_shapes", lambda: (z(128, 4), z(128, 8)), E.ShapeError, r"scalar_tensor_tensor data and operand1: expected operands with the same partition size whose free axes are equal or 1 .*found \[128, 4\] and \[128, 8\]"),
    _k("activation_bias_shape", lambda: (z(128, 4), z(128, 2)), E.ShapeError, r"expected shape \[128, 1\], found \[128, 2\]"),
    _k("store_shape_mismatch", lambda: (z(128, 8),), E.ShapeError, r"expected src shape \[128, 4\] \(the dst shape\), found \[128, 8\]"),
    _k("nl_no_broadcast", lambda: (z(128, 4), z(128, 3)), E.ShapeError, r"\[128, 4\].*\[128, 3\]"),
    # dtypes and operators
    _k("bitwise_on_floats", lambda: (z(128, 4),), E.DTypeError, r"needs integer operands; expected an int dtype, found float32"),
    _k("unknown_dtype", lambda: (), E.DTypeError, r"expected an NKI dtype .*found \'float13\'"),
    _k("view_other_size", lambda: (z(128, 4),), E.ShapeError, r"view of float16 \[128, 3\] .* as float32 \(4 bytes\): the last dim holds 3 x 2 = 6 bytes, expected a multiple of 4"),
    _k("abs_as_reduction", lambda: (z(128, 4),), E.KernelError, r"tensor_reduce op: expected one of .*found \'abs\'"),
    # indexing
    _k("sbuf_index_out_of_bounds", lambda: (z(128, 4),), E.AccessError, r"out of bounds: index of dim 1 of t0 \[128, 4\]: expected 0..3, found 2..5"),
    _k("hbm_index_out_of_bounds", lambda: (z(128, 4),), E.AccessError, r"out of bounds: index of dim 1 of a \[128, 4\]: expected 0..3, found 4..7"),
    _k("empty_slice", lambda: (z(128, 4),), E.AccessError, r"expected at least one element, found 5:5"),
    _k("negative_ds_start", lambda: (z(128, 4),), E.AccessError, r"expected an integer start >= 0 and size >= 1, found start -1"),
    _k("slice_mixed_with_arange", lambda: (z(128, 4),), E.UnsupportedError, r"mixing slices with index expressions is not supported"),
    _k("float_index_arithmetic", lambda: (), E.UnsupportedError, r"expected an int"),
    _k("uneven_index_split", lambda: (z(128, 8),), E.UnsupportedError, r"expected an expression whose axes split into multiples of 3"),
    _k("mgrid_zero_step", lambda: (), E.SimulatorError, r"expected integer bounds and a nonzero step"),
    # masks
    _k("mask_in_if", lambda: (z(128, 4),), E.UnsupportedError, r"no Python truth value \(if / not on a mask\)"),
    _k("mask_not", lambda: (z(128, 4),), E.UnsupportedError, r"no Python truth value \(if / not on a mask\)"),
    _k("tile_subscript_not_a_rectangle", lambda: (z(128, 4),), E.UnsupportedError, r"must keep the whole tile \[128, 4\] or a rectangle .*non-rectangular predicate"),
    # tensor methods and operators
    _k("reshape_float_size", lambda: (z(128, 4),), E.ShapeError, r"expected integer sizes, found 2.0 \(float\)"),
    _k("reshape_partition_dim", lambda: (z(128, 4),), E.ShapeError, r"expected the partition dim \(128\) kept as the first dim"),
    _k("expand_dims_repeated", lambda: (z(128, 4),), E.ShapeError, r"expected distinct ints in -4..3, found \(1, 1\)"),
    _k("astype_of_hbm", lambda: (z(128, 4),), E.UnsupportedError, r"expected an on-chip tile \(load it first"),
    _k("newer_tensor_method", lambda: (z(128, 4),), E.UnsupportedError, r"no attribute 'permute'; expected one of shape"),
    _k("floor_division_operator", lambda: (z(128, 4),), E.UnsupportedError, r"no NKI instruction for tiles .*nl.floor\(nl.divide\(a, b\)\)"),
    _k("reduction_without_axis", lambda: (z(128, 4),), E.KernelError, r"expected axis="),
    # NeuronCore-v3 only, not implemented
    _k("v3_only_name", lambda: (z(128, 4),), E.UnsupportedError, r"nisa.exponential is not available on NeuronCore-v2"),
    _k("v3_perf_mode", lambda: (z(128, 128), z(128, 64)), E.UnsupportedError, r"perf_mode=fp8_double_row is not available on NeuronCore-v2"),
    _k("not_implemented_shuffle", lambda: (z(128, 4),), E.UnsupportedError, r"nisa.shuffle is not supported by neuroncore_sim"),
    _k("mask_on_load_transpose2d", lambda: (z(4, 128),), E.UnsupportedError, r"load_transpose2d: a mask that is not a rectangle over the input \[4, 128\]"),
    # indirect DMA, runtime offsets, value-dependent errors
    _k("gather_index_out_of_range", lambda: (z(16, 4), np.full((128, 1), 99, np.int32)), E.AccessError, r"indirect DMA row index .*expected 0..15 .*found 99"),
    _k("runtime_offset_out_of_dim", lambda: (z(2, 128, 4), np.full((1, 1), 5, np.int32)), E.AccessError, r"runtime offset .*in 0..1, found 5"),
    _k("find_index8_missing_value", lambda: (z(128, 16), np.ones((128, 8), np.float32)), E.KernelError, r"expected a value present in that partition of data .*found no match"),
    # direct allocation
    _k("alloc_negative_byte_addr", lambda: (), E.CapacityError, r"byte_addr -16; expected 0 <= byte_addr"),
    _k("psum_alloc_bad_bank", lambda: (), E.SimulatorError, r"expected a PSUM bank 0..7, found bank 9"),
    # arguments of nl calls and of the launch
    _k("program_id_of_a_string", lambda: (z(128, 4),), E.KernelError, r"nl.program_id: expected an integer axis, found \'x\'"),
    _k("static_range_zero_step", lambda: (z(128, 4),), E.KernelError, r"step != 0\]\), found \[0, 2, 0\]"),
    _k("list_argument_as_tensor", lambda: ([[1.0] * 4] * 128,), E.KernelError, r"expected an HBM tensor, found list"),
    _k("softmax_axis_7", lambda: (z(128, 4),), E.UnsupportedError, r"reduced along axis 1 \(the free axis\), found \(128, 4\) axis 7"),
    _k("arange_zero_step", lambda: (z(128, 4),), E.AccessError, r"nl.arange: expected a nonzero step, found 0"),
    _k("par_dim_of_a_string", lambda: (), E.ShapeError, r"nl.par_dim: expected an integer partition size, found str '128'"),
    _k("tensor_beyond_any_memory", lambda: (), E.CapacityError, r"\[10000000, 10000000\] float32; expected a size that fits in memory"),
    _k("unknown_tile_size_limit", lambda: (), E.UnsupportedAttributeError, r"nl.tile_size.sbuf_fmax: expected one of pmax"),
    # launches with bad arguments: the error names the launching line
    KernelCase("launch_grid_negative", lambda: (z(128, 4),), E.KernelError, r"grid: expected positive integers, found -1", direct=True),
    KernelCase("launch_config_unknown", lambda: (z(128, 4),), E.ConfigError, r"expected a preset name \(trn1, inf2\) or a .toml file, found 'trn3'", direct=True),
    KernelCase("launch_jit_grid_of_a_string", lambda: (z(128, 4),), E.KernelError, r"grid: expected positive integers, found 'x'", direct=True),
    KernelCase("launch_benchmark_zero_iters", lambda: (z(128, 4),), E.KernelError, r"nki.benchmark: iters expected an integer >= 1, found 0", direct=True),
    KernelCase("launch_jit_of_a_number", lambda: (z(128, 4),), E.KernelError, r"nki.jit; expected a kernel function, found int 3", direct=True),
    KernelCase("launch_profile_into_a_file", lambda: (z(128, 4), _a_file()), E.SimulatorError, r"nki.profile working_directory .*: expected a directory .*found an existing file", direct=True),
    KernelCase("nl_outside_a_kernel", lambda: (z(128, 4),), E.SimulatorError, r"nl.exp can only run inside a kernel launched through nki.jit", direct=True),
    _k("dropout_rate_over_1", lambda: (z(128, 4),), E.KernelError, r"probability in \[0, 1\], found 1.5"),
    _k("dynamic_view_in_compute", lambda: (z(128, 8), np.zeros((1, 1), np.int32)), E.KernelError, r"nl.exp: expected a tile, found a view at a runtime offset \(only nisa.tensor_copy_dynamic_src / tensor_copy_dynamic_dst take one\)"),
    _k("triangle_mask_on_reduction", lambda: (z(128, 4),), E.UnsupportedError, r"a mask that is not a rectangle over the input \[128, 4\] is not supported"),
    _k("predicated_copy_dtype", lambda: (z(128, 4),), E.DTypeError, r"the result is written into dst; expected float32, found bfloat16"),
    # warnings: accepted by the compiler, wrong or undefined on the hardware
    _k("writes_its_input", lambda: (z(128, 4),), E.InputWriteWarning, r"kernel writes its input tensor \'a\'"),
    _k("reads_unwritten", lambda: (z(128, 4),), E.UninitializedReadWarning, r"dma_copy src: reads 512 element\(s\) of t1 .*that hold garbage computed from memory nothing wrote \(first read at bad_kernels.py:\d+: activation data, 512 element\(s\) of t0"),
    _k("log_of_negative", lambda: (np.full((128, 4), -1.0, np.float32),), E.ActivationRangeWarning, r"activation \'log\': input outside the documented valid range"),
    _k("live_tiles_over_sbuf", lambda: (z(128, 8 * 8192),), E.SpillWarning, r"SBUF over-subscribed: tiles live at once need up to 294912 bytes per partition, 180224 available"),
    _k("affine_loop_carries", lambda: (z(128, 4),), E.LoopDependencyWarning, r"iteration 1 of the nl.affine_range loop .*written by iteration 0"),
    _k("output_never_written", lambda: (z(128, 4),), E.UnwrittenOutputWarning, r"is never written; expected every element written"),
    _k("returns_a_number", lambda: (z(128, 4),), E.ReturnValueWarning, r"not an HBM tensor"),
]


# --- command lines ------------------------------------------------------------------------------
#: Files a command-line case may name (written into a fresh temporary folder): kernel files and
#: scripts of our own. ``# BAD`` marks the line an error must name.
FILES: dict[str, str] = {
    "good.py": '''\
import numpy as np
import neuroncore_sim.nki.language as nl


def kernel(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.exp(nl.load(a)))
    return out


def reference(a):
    return np.exp(a)


def example_inputs(cols=4):
    return {"a": np.zeros((128, cols), np.float32)}
''',
    "no_reference.py": '''\
import numpy as np
import neuroncore_sim.nki.language as nl


def kernel(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.load(a))
    return out


def example_inputs(cols=4):
    return {"a": np.zeros((128, cols), np.float32)}
''',
    "breaks_rule.py": '''\
import numpy as np
import neuroncore_sim.nki.language as nl


def kernel(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.add(nl.load(a), nl.load(a[:, 0:3])))  # BAD
    return out


def example_inputs(cols=4):
    return {"a": np.zeros((128, cols), np.float32)}
''',
    "syntax_error.py": '''\
import neuroncore_sim.nki.language as nl


def kernel(a):
    return nl.load(a[0:128, :)  # BAD
''',
    "import_error.py": '''\
import numpy as np
import no_such_module_of_ours  # BAD


def kernel(a):
    return a


def example_inputs():
    return {"a": np.zeros((128, 4), np.float32)}
''',
    "no_inputs.py": '''\
import neuroncore_sim.nki.language as nl


def kernel(a):
    return nl.load(a)
''',
    "inputs_raise.py": '''\
import numpy as np


def kernel(a):
    return a


def example_inputs():
    return {"a": np.zeros((128, 4), np.float32).reshape(3, 5)}  # BAD
''',
    "inputs_not_dict.py": '''\
def kernel(a):
    return a


def example_inputs():
    return 42
''',
    "script_rule.py": '''\
import numpy as np
from neuronxcc import nki
import neuronxcc.nki.language as nl


@nki.jit
def double(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.add(nl.load(a), nl.load(a)))
    return out


@nki.jit
def broken(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.exp(a))  # BAD
    return out


x = np.ones((128, 4), np.float32)
double(x)
broken(x)
''',
    "script_syntax.py": '''\
x = (1,  # BAD
''',
    "script_exit3.py": '''\
import sys
sys.exit(3)
''',
    "script_bug.py": '''\
x = {}
x["missing"]  # BAD
''',
    "cfg_bad_value.toml": 'dma_engines = 0\n',
    "cfg_unknown.toml": 'dma_engine = 4\n',
    "cfg_bad_toml.toml": 'dma_engines = = 4\n',
    "cfg_bad_base.toml": 'base = "trn9"\n',
    "cfg_not_utf8.toml": b'name = "\xff"\n',
    "cfg.txt": 'dma_engines = 4\n',
}


@dataclass(frozen=True)
class CliCase:
    """``neuroncore-sim ARGV`` (``{d}`` is the folder holding :data:`FILES`, ``{out}`` a place
    for --out that does not exist yet): its exit status and a regex of its stderr. ``loc``: the
    file of :data:`FILES` whose ``# BAD`` line stderr must name. ``setup``: makes ``{out}`` what
    the case needs (a file, a folder holding a directory points.jsonl, ...)."""

    id: str
    argv: tuple[str, ...]
    status: int
    stderr: str
    loc: str | None = None
    setup: str | None = None
    stdout: str = ""


def _c(id: str, argv: str, status: int, stderr: str, loc: str | None = None,
       setup: str | None = None, stdout: str = "") -> CliCase:
    return CliCase(id, tuple(argv.split()), status, stderr, loc, setup, stdout)


USAGE = r"^neuroncore-sim: error: .*"

CLI_CASES: list[CliCase] = [
    # the command itself
    _c("no_command", "", 2, r"the following arguments are required: COMMAND"),
    _c("unknown_command", "simulate {d}/good.py", 2, r"invalid choice: 'simulate'"),
    _c("unknown_option", "profile {d}/good.py --fast", 2, r"unrecognized arguments: --fast"),
    # profile: the target
    _c("profile_no_target", "profile", 2, r"the following arguments are required: FILE.py"),
    _c("profile_missing_file", "profile {d}/nothing.py", 2, USAGE + r"kernel file not found"),
    _c("profile_not_py", "profile {d}/cfg.txt", 2, USAGE + r"cfg.txt: expected a kernel file .*found a .txt file"),
    _c("profile_unknown_kernel", "profile {d}/good.py::kernal", 2, USAGE + r"has no kernel 'kernal'"),
    _c("profile_syntax_error", "profile {d}/syntax_error.py", 1, r"syntax_error.py:\d+", "syntax_error.py"),
    _c("profile_import_error", "profile {d}/import_error.py", 1, r"No module named 'no_such_module_of_ours'", "import_error.py"),
    _c("profile_no_example_inputs", "profile {d}/no_inputs.py", 2, USAGE + r"no_inputs.py: expected a kernel file .*found kernel but no example_inputs\(\)"),
    _c("profile_example_inputs_raise", "profile {d}/inputs_raise.py", 1, r"^error: inputs_raise.py:9: example_inputs\(\) of inputs_raise.py raised ValueError: cannot reshape", "inputs_raise.py"),
    _c("profile_example_inputs_not_dict", "profile {d}/inputs_not_dict.py", 1, r"example_inputs.*found int"),
    _c("profile_kernel_breaks_rule", "profile {d}/breaks_rule.py", 1, r"^error: .*nl.add: expected shapes that broadcast", "breaks_rule.py"),
    _c("profile_a_directory", "profile {d}", 2, USAGE + r"expected a kernel file .*found a directory"),
    _c("profile_no_file_before_kernel", "profile ::kernel", 2, USAGE + r"expected FILE.py\[::KERNEL\] \(a kernel file, then its kernel\), found '::kernel'"),
    _c("sweep_no_file_before_kernel", "sweep ::kernel --param cols=4", 2, USAGE + r"expected FILE.py\[::KERNEL\] .*found '::kernel'"),
    _c("profile_a_script", "profile {d}/script_rule.py", 2, USAGE + r"script_rule.py: expected a kernel file .*found no example_inputs"),
    _c("profile_param_two_values", "profile {d}/good.py --param cols=4,8", 2, USAGE + r"--param cols: expected one value \(NAME=VALUE\), found 2; to time several, use `neuroncore-sim sweep`"),
    _c("profile_param_unknown", "profile {d}/good.py --param colz=4", 2, USAGE + r"good.py:\d+: sweep parameter 'colz' \(did you mean 'cols'\?\); expected a parameter of example_inputs \(cols\)"),
    _c("profile_param_no_equals", "profile {d}/good.py --param cols", 2, USAGE + r"--param: expected NAME=V1,V2,..., found 'cols'"),
    _c("profile_param_bad_config", "profile {d}/good.py --param config.dma_engines=0", 2, r"config field 'dma_engines' must be a positive integer, found 0"),
    _c("profile_window_without_out", "profile {d}/good.py --window 0:1", 2, USAGE + r"--window: expected with --out"),
    _c("profile_window_reversed", "profile {d}/good.py --window 5:2 --out {out}", 2, r"--window: expected START:END in µs with 0 <= START < END"),
    _c("profile_window_after_the_end", "profile {d}/good.py --window 1000:2000 --out {out}", 2, USAGE + r"--window: timeline window; expected START < END within the launch \(0 to [\d.]+ µs\), found 1000:2000 µs"),
    _c("run_window_word", "run --window soon {d}/script_rule.py", 2, r"--window: expected START:END in µs"),
    # options shared by profile and run
    _c("config_unknown_preset", "profile {d}/good.py --config trn9", 2, USAGE + r"expected a preset name \(trn1, inf2\) or a .toml file, found 'trn9'"),
    _c("config_empty", "profile {d}/good.py --config=", 2, USAGE + r"found ''"),
    _c("config_missing_file", "profile {d}/good.py --config {d}/nothing.toml", 2, USAGE + r"cannot read"),
    _c("config_not_toml", "profile {d}/good.py --config {d}/cfg.txt", 2, USAGE + r"or a .toml file, found"),
    _c("config_bad_toml", "profile {d}/good.py --config {d}/cfg_bad_toml.toml", 2, USAGE + r"cfg_bad_toml.toml: not valid TOML"),
    _c("config_bad_base", "profile {d}/good.py --config {d}/cfg_bad_base.toml", 2, USAGE + r"base must be one of \['trn1', 'inf2'\], found 'trn9'"),
    _c("config_unknown_field", "profile {d}/good.py --config {d}/cfg_unknown.toml", 2, USAGE + r"cfg_unknown.toml: unknown field\(s\) \['dma_engine'\]"),
    _c("config_bad_value", "profile {d}/good.py --config {d}/cfg_bad_value.toml", 2, USAGE + r"cfg_bad_value.toml: config field 'dma_engines' must be a positive integer, found 0"),
    _c("config_not_utf8", "profile {d}/good.py --config {d}/cfg_not_utf8.toml", 2, USAGE + r"expected UTF-8 text"),
    _c("debug_shows_traceback", "profile {d}/breaks_rule.py --debug", 1, r"Traceback[\s\S]*error: .*expected shapes that broadcast", "breaks_rule.py"),
    _c("timing_only_still_checks_rules", "profile {d}/breaks_rule.py --timing-only", 1, r"expected shapes that broadcast", "breaks_rule.py"),
    _c("no_progress_still_checks_rules", "profile {d}/breaks_rule.py --no-progress", 1, r"expected shapes that broadcast", "breaks_rule.py"),
    _c("trace_max_events_negative", "profile {d}/good.py --trace-max-events -1", 2, r"--trace-max-events: expected an integer >= 0, found '-1'"),
    _c("trace_max_events_word", "profile {d}/good.py --trace-max-events many", 2, r"expected an integer >= 0, found 'many'"),
    _c("out_is_a_file", "profile {d}/good.py --out {out}", 2, USAGE + r"expected a directory .*found an existing file", setup="file"),
    _c("out_under_a_file", "profile {d}/good.py --out {out}/sub", 2, USAGE + r"cannot write there", setup="file"),
    _c("out_with_failing_kernel", "profile {d}/breaks_rule.py --out {out}", 1, r"expected shapes that broadcast", "breaks_rule.py"),
    # run
    _c("run_no_script", "run", 2, r"the following arguments are required: SCRIPT.py"),
    _c("run_missing_script", "run {d}/nothing.py", 2, USAGE + r"script not found"),
    _c("run_a_directory", "run {d}", 2, USAGE + r"expected a Python script \(SCRIPT.py\), found a directory"),
    _c("run_script_breaks_rule", "run --out {out} {d}/script_rule.py", 1, r"^error: .*nl.exp: expected a tile in sbuf or psum, found a tensor in hbm", "script_rule.py"),
    _c("run_script_syntax_error", "run {d}/script_syntax.py", 1, r"script_syntax.py\", line 1[\s\S]*SyntaxError"),
    _c("run_script_exits_3", "run {d}/script_exit3.py", 3, r"script_exit3.py exited with status 3"),
    _c("run_script_bug", "run {d}/script_bug.py", 1, r"script_bug.py raised KeyError .*its traceback:\n.*\n.*script_bug.py\", line 2"),
    _c("run_trace_max_events_negative", "run --trace-max-events -1 {d}/script_rule.py", 2, r"--trace-max-events: expected an integer >= 0, found '-1'"),
    _c("run_bad_config", "run --config trn9 {d}/script_rule.py", 2, USAGE + r"found 'trn9'"),
    _c("compiler_option_no_value", "profile {d}/good.py --compiler-option dge", 2, USAGE + r"--compiler-option: expected NAME=VALUE \(one of toolchain, dge, .*\), found 'dge'"),
    _c("compiler_option_unknown", "profile {d}/good.py --compiler-option dgee=true", 2, USAGE + r"--compiler-option: unknown compile option\(s\) \['dgee'\] \(did you mean 'dge'\?\); expected one of toolchain, dge"),
    _c("compiler_option_bad_value", "run --compiler-option auto_cast=fp8 {d}/script_rule.py", 2, USAGE + r"'auto_cast' must be one of none, matmult, all, found 'fp8'"),
    _c("compiler_option_sweep", "sweep {d}/good.py --compiler-option dge=maybe --param N=1", 2, USAGE + r"compile option 'dge' must be true or false, found 'maybe'"),
    _c("run_max_launches_zero", "run --max-launches 0 {d}/script_rule.py", 2, r"--max-launches: expected an integer >= 1, found '0'"),
    _c("run_quiet_script_breaks_rule", "run --quiet {d}/script_rule.py", 1, r"^error: .*nl.exp: expected a tile in sbuf or psum", "script_rule.py"),
    _c("run_out_is_a_file", "run --out {out} {d}/script_rule.py", 2, USAGE + r"found an existing file", setup="file"),
    # sweep
    _c("sweep_no_param", "sweep {d}/good.py", 2, USAGE + r"expected at least one --param"),
    _c("sweep_param_no_equals", "sweep {d}/good.py --param cols", 2, USAGE + r"--param: expected NAME=V1,V2,..., found 'cols'"),
    _c("sweep_param_empty_value", "sweep {d}/good.py --param cols=4,,8", 2, USAGE + r"found an empty value in '4,,8'"),
    _c("sweep_param_twice", "sweep {d}/good.py --param cols=4 --param cols=8", 2, USAGE + r"--param cols: given twice"),
    _c("sweep_param_unknown", "sweep {d}/good.py --param colz=4 --workers 1", 2, r"sweep parameter 'colz' \(did you mean 'cols'\?\)"),
    _c("sweep_param_value_of_a_wrong_type", "sweep {d}/good.py --param cols=abc --workers 1", 1, r"^$",
       stdout=r"1 of 1 point\(s\) failed; point 0: KernelFileError: good.py:16: example_inputs\(cols='abc'\) of good.py raised TypeError"),
    _c("sweep_config_field_unknown", "sweep {d}/good.py --param config.dma_engine=4 --workers 1", 2, r"config.<field> naming"),
    _c("sweep_config_field_bad", "sweep {d}/good.py --param config.dma_engines=0 --workers 1", 2, r"config field 'dma_engines' must be a positive integer, found 0"),
    _c("sweep_check_without_reference", "sweep {d}/no_reference.py --param cols=4 --check --workers 1", 2, r"check needs a reference\(\)"),
    _c("sweep_check_and_max", "sweep {d}/good.py --param cols=4 --check --check-max-elements 10", 2, USAGE + r"give --check or --check-max-elements, not both"),
    _c("sweep_check_max_negative", "sweep {d}/good.py --param cols=4 --check-max-elements -1", 2, r"--check-max-elements: expected an integer >= 0, found '-1'"),
    _c("sweep_workers_zero", "sweep {d}/good.py --param cols=4 --workers 0", 2, r"--workers: expected an integer >= 1, found '0'"),
    _c("sweep_executor_unknown", "sweep {d}/good.py --param cols=4 --executor ray", 2, r"--executor: invalid choice: 'ray'"),
    _c("sweep_dask_without_scheduler", "sweep {d}/good.py --param cols=4 --executor dask", 2, USAGE + r"--executor dask: expected --scheduler ADDRESS"),
    _c("sweep_connect_timeout_zero", "sweep {d}/good.py --param cols=4 --connect-timeout 0", 2, r"--connect-timeout: expected a number of seconds > 0, found '0'"),
    _c("sweep_scheduler_without_dask", "sweep {d}/good.py --param cols=4 --scheduler tcp://127.0.0.1:1 --workers 1", 2, USAGE + r"expected with --executor dask, found --executor local"),
    _c("sweep_top_zero", "sweep {d}/good.py --param cols=4 --top 0", 2, r"--top: expected an integer >= 1, found '0'"),
    _c("sweep_out_is_a_file", "sweep {d}/good.py --param cols=4 --out {out} --workers 1", 2, USAGE + r"expected a directory \(it is created if missing\), found an existing file", setup="file"),
    _c("sweep_points_is_a_dir", "sweep {d}/good.py --param cols=4 --out {out} --workers 1", 2, USAGE + r"expected points.jsonl to be a file the sweep writes \(or none yet\), found a directory", setup="points_dir"),
    _c("sweep_bad_config", "sweep {d}/good.py --param cols=4 --config {d}/cfg_bad_value.toml --workers 1", 2, r"must be a positive integer, found 0"),
    _c("sweep_no_progress_missing_file", "sweep {d}/nothing.py --param cols=4 --no-progress", 2, USAGE + r"kernel file not found"),
    _c("sweep_debug_missing_file", "sweep {d}/nothing.py --param cols=4 --debug", 2, USAGE + r"kernel file not found"),
    _c("run_debug_script_breaks_rule", "run --debug --timing-only --no-progress {d}/script_rule.py", 1, r"Traceback[\s\S]*^error: .*nl.exp: expected a tile in sbuf or psum", "script_rule.py"),
    # compare (issue 27)
    _c("compare_one_target", "compare {d}/good.py", 2, USAGE + r"compare: expected two targets \(A B\), or one target and a setting for a side"),
    _c("compare_missing_file", "compare {d}/nothing.py {d}/good.py", 2, USAGE + r"kernel file not found"),
    _c("compare_bad_config", "compare {d}/good.py {d}/good.py --config trn9", 2, USAGE + r"found 'trn9'"),
    _c("compare_bad_config_a", "compare {d}/good.py --config-a {d}/cfg_bad_value.toml --config-b inf2", 2, USAGE + r"must be a positive integer, found 0"),
    _c("compare_bad_config_b", "compare {d}/good.py --config-b trn9", 2, USAGE + r"expected a preset name \(trn1, inf2\) or a .toml file, found 'trn9'"),
    _c("compare_compiler_option", "compare {d}/good.py --config-b inf2 --compiler-option dge", 2, USAGE + r"--compiler-option: expected NAME=VALUE"),
    _c("compare_compiler_option_a", "compare {d}/good.py --compiler-option-a dgee=true", 2, USAGE + r"unknown compile option\(s\) \['dgee'\]"),
    _c("compare_compiler_option_b", "compare {d}/good.py --compiler-option-b dge=maybe", 2, USAGE + r"compile option 'dge' must be true or false, found 'maybe'"),
    _c("compare_out_is_a_file", "compare {d}/good.py --config-b inf2 --out {out}", 2, USAGE + r"expected a directory .*found an existing file", setup="file"),
    _c("compare_param_unknown", "compare {d}/good.py --config-b inf2 --param colz=4", 2, USAGE + r"sweep parameter 'colz' \(did you mean 'cols'\?\)"),
    _c("compare_top_zero", "compare {d}/good.py --config-b inf2 --top 0", 2, r"--top: expected an integer >= 1, found '0'"),
    _c("compare_kernel_breaks_rule", "compare {d}/good.py {d}/breaks_rule.py --no-progress", 1, r"^error: .*expected shapes that broadcast", "breaks_rule.py"),
    _c("compare_debug", "compare {d}/breaks_rule.py --config-b inf2 --debug", 1, r"Traceback[\s\S]*error: .*expected shapes that broadcast", "breaks_rule.py"),
    _c("sweep_every_point_fails", "sweep {d}/breaks_rule.py --param cols=4,8 --workers 1 --out {out}", 1, r"^$", "breaks_rule.py",
       stdout=r"2 of 2 point\(s\) failed; point \d: .*breaks_rule.py:7: nl.add: expected shapes that broadcast"),
]

#: Cases whose stderr rightly holds a Python traceback: --debug asks for one, and a script's
#: own bug is shown as `python SCRIPT.py` would show it.
TRACEBACK_EXPECTED = {"debug_shows_traceback", "run_script_bug", "run_script_syntax_error",
                      "run_debug_script_breaks_rule", "compare_debug"}


# --- config fields ------------------------------------------------------------------------------
@dataclass(frozen=True)
class ConfigCase:
    """A bad value of one NeuronCoreConfig field: ``toml`` as written in a TOML file, ``param``
    as given to ``sweep --param config.<field>=...`` (None: no such value can be typed there)."""

    field: str
    toml: str
    param: str | None
    message: str


def _config_cases() -> list[ConfigCase]:
    import dataclasses

    from neuroncore_sim.config import ZERO_ALLOWED_FIELDS, NeuronCoreConfig

    cases = []
    for f in dataclasses.fields(NeuronCoreConfig):
        if f.name == "name":
            cases.append(ConfigCase("name", 'name = ""', "5",
                                    r"'name' must be a non-empty string, found (''|5)"))
        elif f.name == "compiler":  # a table of compile options, not a value
            cases.append(ConfigCase("compiler", 'compiler = "fast"', "-1",
                                    r"'compiler' must be a table of compile options \(toolchain, "
                                    r"dge, .*\), found ('fast'|-1)"))
        elif f.type == "int" and f.name in ZERO_ALLOWED_FIELDS:  # >= 0: below zero, a fraction
            cases.append(ConfigCase(f.name, f"{f.name} = -1", "2.5",
                                    rf"'{f.name}' must be a non-negative integer, found (-1|2.5)"))
        elif f.type == "int":  # a whole number > 0: zero in the file, a fraction on the line
            cases.append(ConfigCase(f.name, f"{f.name} = 0", "2.5",
                                    rf"'{f.name}' must be a positive integer, found (0|2.5)"))
        else:  # a finite number > 0: text in the file, a negative number on the line
            cases.append(ConfigCase(f.name, f'{f.name} = "fast"', "-1",
                                    rf"'{f.name}' must be a positive finite number, found ('fast'|-1)"))
    return cases


CONFIG_CASES: list[ConfigCase] = _config_cases() + [
    # fields that are fine alone but not together
    ConfigCase("sbuf_reserved_bytes_per_partition", "sbuf_reserved_bytes_per_partition = 196608",
               "196608", r"must be below the SBUF size; expected less than sbuf_bytes_per_partition = 196608, found 196608"),
    ConfigCase("psum_num_banks", "psum_num_banks = 3", "3",
               r"must split evenly into psum_num_banks; expected a multiple of psum_num_banks = 3, found 16384"),
    ConfigCase("dma_engine_bytes_per_ns", "dma_engine_bytes_per_ns = nan", "nan",
               r"'dma_engine_bytes_per_ns' must be a positive finite number, found nan"),
    ConfigCase("num_partitions", "num_partitions = true", None,
               r"'num_partitions' must be a positive integer, found True"),
]


#: Each row of docs/frontend.md's "Rules checked" table that is an error or a warning (by a
#: phrase of its text) -> the cases that break it.
RULES: dict[str, list[str]] = {
    "partition dim of a tile 1..128": ["ndarray_129_partitions", "par_dim_129", "load_129_rows",
                                       "zero_partitions", "par_dim_of_a_string"],
    "first axis must be its partition dim": ["strided_partitions"],
    "stationary free size <= 128": ["matmul_stationary_129", "matmul_moving_513",
                                    "matmul_contraction"],
    "operands 2-D float tiles in SBUF": ["matmul_stationary_3d", "matmul_int_operands",
                                         "matmul_hbm_operand"],
    "PSUM tile fits one 2 KiB bank": ["psum_tile_over_a_bank"],
    "live tiles": ["live_tiles_over_sbuf", "one_instruction_over_sbuf"],
    "GpSimd cannot access PSUM; DMA reaches only": ["gpsimd_reads_psum", "dma_into_psum",
                                                    "compute_reads_hbm",
                                                    "tensor_engine_transposes_psum",
                                                    "two_psum_operands"],
    "GpSimd results (iota": ["gpsimd_result_into_psum"],
    "`nc_transpose`: VectorE at most": ["vector_transpose_over_128", "tensor_transpose_over_128",
                                        "transpose_on_gpsimd"],
    "`bn_stats` width": ["bn_stats_over_512", "bn_aggr_not_6k"],
    "`engine=` naming TensorE": ["tensor_tensor_on_tensor_engine", "memset_on_tensor_engine"],
    "start-partition rule": ["start_partition"],
    "operand shapes": ["tensor_tensor_shapes", "scalar_tensor_tensor_shapes",
                       "activation_bias_shape", "store_shape_mismatch", "nl_no_broadcast"],
    "repeats one partition": ["repeated_partition"],
    "bit-vector operators": ["bitwise_on_floats"],
    "index out of a tensor's bounds": ["sbuf_index_out_of_bounds", "hbm_index_out_of_bounds"],
    "index tiles": ["gather_float_index", "gather_index_out_of_range"],
    "writes one of its inputs": ["writes_its_input"],
    "reads memory nothing wrote": ["reads_unwritten"],
    "outside its documented range": ["log_of_negative"],
    "`nl.affine_range` iteration reads": ["affine_loop_carries"],
}
