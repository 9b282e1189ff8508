"""Hardware configuration of the simulated NeuronCore-v2.

One frozen dataclass holds every number the timing model and the front end use. Field names carry
their units (``_hz``, ``_bytes``, ``_ns``, ``_cycles``, ``_bytes_per_ns``). Each preset value has a
``# source:`` comment naming the AWS document it comes from (keys into ``shared/arch.md``'s source
legend), or says ``# assumption:`` and is listed in ``docs/model.md``.

TOML files override fields by the same names, and the compile options (:class:`CompileOptions`,
neuronx-cc's flags and the compile stage's switches) in a ``[compiler]`` table::

    base = "trn1"                 # optional: the preset to start from
    dma_engine_bytes_per_ns = 20.0

    [compiler]
    dge = true                    # neuronx-cc's run-time descriptor generation (--disable-dge: false)
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import json
import math
import tomllib
from dataclasses import dataclass
from pathlib import Path

# (CompileOptions, the config's [compiler] table, has its own module; importers name it here)
from .compile_options import AUTO_CAST_MODES, TOOLCHAINS, CompileOptions  # noqa: F401
from .errors import ConfigError

KIB = 1024

#: Version of the timing model: changed by every commit that moves estimates (a recalibration, a
#: new mechanism), so stored cycle baselines can tell a model change from a kernel regression.
MODEL_VERSION = "2026.11.29.11"

#: Physical ranges of the fields whose size the simulator allocates or iterates over (a count
#: of 10**8 DMA engines or 10**12 partitions would hang it or exhaust memory): (low, high, why).
_RANGES: dict[str, tuple[float, float, str]] = {
    "num_partitions": (1, 1024, " (a NeuronCore-v2 has 128)"),
    "sbuf_bytes_per_partition": (1, 4 * 1024 * KIB, " (a NeuronCore-v2 has 192 KiB)"),
    "psum_bytes_per_partition": (1, 1024 * KIB, " (a NeuronCore-v2 has 16 KiB)"),
    "psum_num_banks": (1, 64, " (a NeuronCore-v2 has 8)"),
    "dma_engines": (1, 256, " (a NeuronCore-v2 has 16)"),
    "loop_tile_buffers": (1, 1024, ""),
    "vectorize_max_free_elements": (1, 65536, ""),
    "gemm_stationary_fmax": (1, 65536, ""),
    "gemm_moving_fmax": (1, 65536, ""),
    "psum_fmax": (1, 65536, ""),
    "bn_stats_fmax": (1, 65536, ""),
    "vector_transpose_max": (1, 1024, ""),
    "bn_aggr_group_elements": (1, 65536, ""),
    **{f"{e}_clock_hz": (1e6, 1e11, " (1 MHz to 100 GHz)")
       for e in ("tensor", "vector", "scalar", "gpsimd", "sync")},
    "max_instructions_per_launch": (1, 10**9, ""),
    "spill_reload_lead_instructions": (0, 10**6, ""),
    "tensor_sustained_fraction": (0.01, 1.0, " (a fraction of the documented TensorE rate)"),
}
#: Integer fields for which 0 is meaningful (0: the behaviour is off): those whose range starts
#: at 0.
ZERO_ALLOWED_FIELDS = frozenset(name for name, (low, _, _) in _RANGES.items() if low == 0)
#: Bounds of the other fields: numbers past them are typing errors, not hardware.
_MAX_INT, _MAX_FLOAT = 10**12, 1e15


def _num(value: float) -> str:
    return f"{value:,}" if isinstance(value, int) else f"{value:g}"


@dataclass(frozen=True, kw_only=True, slots=True)
class NeuronCoreConfig:
    """Parameters of one NeuronCore-v2 and of its share of the chip.

    Time inside the simulator is kept in nanoseconds (float); each engine converts its own cycle
    counts with its own clock.
    """

    name: str

    # --- engines -----------------------------------------------------------------------------
    tensor_clock_hz: float
    vector_clock_hz: float
    scalar_clock_hz: float
    gpsimd_clock_hz: float
    sync_clock_hz: float

    # --- on-chip memories ----------------------------------------------------------------------
    num_partitions: int
    sbuf_bytes_per_partition: int
    sbuf_reserved_bytes_per_partition: int
    psum_bytes_per_partition: int
    psum_num_banks: int

    # --- tile limits (nl.tile_size) --------------------------------------------------------------
    gemm_stationary_fmax: int
    gemm_moving_fmax: int
    psum_fmax: int
    bn_stats_fmax: int
    vector_transpose_max: int

    # --- documented per-instruction constants (engine cycles) ----------------------------------
    min_ii_cycles: int
    min_ii_dynamic_cycles: int
    gpsimd_start_cycles: int
    mm_init_latency_cycles: int
    load_stationary_speedup: float
    fp32_matmul_slowdown: int
    act_read_accumulator_cycles: int
    tensor_access_overhead_cycles: int
    vector_dependent_overhead_cycles: int
    stride_penalty_factor: float
    stride_penalty_min_bytes: int

    # --- pipeline latencies (assumptions, see docs/model.md) ----------------------------------
    tensor_pipeline_latency_ns: float
    tensor_sustained_fraction: float
    load_stationary_latency_ns: float
    engine_pipeline_latency_cycles: int
    scalar_pipeline_latency_cycles: int
    semaphore_latency_ns: float

    # --- DMA and HBM -----------------------------------------------------------------------------
    dma_engines: int
    dma_engine_bytes_per_ns: float
    dma_hbm_read_bytes_per_ns: float
    dma_hbm_write_bytes_per_ns: float
    dma_fixed_latency_ns: float
    dma_buffer_overhead_ns: float
    dma_transpose_slowdown: float
    dma_rmw_passes: float
    hbm_bytes_per_ns: float
    dge_element_bytes: int
    dge_ns_per_element: float

    # --- compiler behaviour (assumptions, see docs/model.md) ---------------------------------
    loop_tile_buffers: int
    reorder_window_instructions: int
    spill_reload_lead_instructions: int
    vectorize_max_free_elements: int

    # --- cost-formula constants and timing-model assumptions (cost.py, dma.py, timing.py) ------
    two_input_cycles_per_element: int
    bf16_fast_path_divisor: int
    reciprocal_cycles_per_element: int
    bn_aggr_cycles_per_group: int
    bn_aggr_group_elements: int
    onezero_fp32_speedup: float
    gpsimd_rsqrt_slowdown: float
    partition_reduce_cycles_per_element: float

    # --- what the compiler is asked to do (neuronx-cc's options, the compile stage's passes) --
    compiler: CompileOptions = CompileOptions()

    # --- limits of the simulator (not of the hardware) ------------------------------------------
    #: instructions one launch may record: past it the kernel stops with a KernelError naming
    #: the loop (a loop of 10**9 iterations would run for hours and fill memory, ~1.5 KiB each)
    max_instructions_per_launch: int = 2_000_000

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ConfigError(f"config field 'name' must be a non-empty string, found {self.name!r}")
        if not isinstance(self.compiler, CompileOptions):
            raise ConfigError("config field 'compiler' must be a CompileOptions (a [compiler] "
                              f"table in TOML), found {self.compiler!r}")
        for f in dataclasses.fields(self):
            if f.name in ("name", "compiler"):
                continue
            value = getattr(self, f.name)
            if f.type == "int":  # counts, sizes and cycle numbers are whole numbers
                zero = f.name in ZERO_ALLOWED_FIELDS
                if not isinstance(value, int) or isinstance(value, bool) or value < 1 - zero:
                    raise ConfigError(
                        f"config field {f.name!r} must be a "
                        f"{'non-negative' if zero else 'positive'} integer, found {value!r}")
            elif (not isinstance(value, (int, float)) or isinstance(value, bool)
                  or not math.isfinite(value) or value <= 0):
                raise ConfigError(
                    f"config field {f.name!r} must be a positive finite number, found {value!r}")
            low, high, why = _RANGES.get(f.name) or (
                (1, _MAX_INT, "") if f.type == "int" else (0, _MAX_FLOAT, ""))
            if not low <= value <= high:
                raise ConfigError(f"config field {f.name!r} must be in the range {_num(low)} to "
                                  f"{_num(high)}{why}, found {_num(value)}")
        if self.sbuf_reserved_bytes_per_partition >= self.sbuf_bytes_per_partition:
            raise ConfigError(
                "sbuf_reserved_bytes_per_partition must be below the SBUF size; expected less "
                f"than sbuf_bytes_per_partition = {self.sbuf_bytes_per_partition}, found "
                f"{self.sbuf_reserved_bytes_per_partition}")
        if self.psum_bytes_per_partition % self.psum_num_banks:
            raise ConfigError(
                "psum_bytes_per_partition must split evenly into psum_num_banks; expected a "
                f"multiple of psum_num_banks = {self.psum_num_banks}, found "
                f"{self.psum_bytes_per_partition}")

    # Derived values, computed rather than stored so an override can never make them disagree.
    @property
    def sbuf_usable_bytes_per_partition(self) -> int:
        """SBUF bytes per partition a kernel may allocate (the compiler keeps the rest)."""
        return self.sbuf_bytes_per_partition - self.sbuf_reserved_bytes_per_partition

    @property
    def psum_bank_bytes(self) -> int:
        """Bytes per partition of one PSUM bank (one matmul accumulation group)."""
        return self.psum_bytes_per_partition // self.psum_num_banks

    def clock_hz(self, engine: str) -> float:
        """Clock of an engine by its nki.isa name ("tensor", "vector", "scalar", "gpsimd", "sync")."""
        try:
            return getattr(self, f"{engine}_clock_hz")
        except AttributeError:
            raise ConfigError(f"no clock for engine {engine!r}") from None

    def cycles_to_ns(self, engine: str, cycles: float) -> float:
        """Convert a cycle count of ``engine`` to nanoseconds (TensorE's documented cycles run
        at ``tensor_sustained_fraction`` of its clock: docs/model.md, "TensorE sustained rate")."""
        ns = cycles * 1e9 / self.clock_hz(engine)
        return ns / self.tensor_sustained_fraction if engine == "tensor" else ns

    def fingerprint(self) -> str:
        """A short hash of every hardware field (the name left out): two configs with the same
        fingerprint give the same estimates under one MODEL_VERSION."""
        fields = {f: getattr(self, f) for f in self.__dataclass_fields__
                  if f not in ("name", "max_instructions_per_launch")}  # not hardware
        fields["compiler"] = dataclasses.asdict(self.compiler)
        text = json.dumps(fields, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:12]


TRN1 = NeuronCoreConfig(
    name="trn1",
    tensor_clock_hz=2.8e9,  # source: [ARCH] engine table, TensorE 2.8 GHz
    vector_clock_hz=1.12e9,  # source: [ARCH] engine table, VectorE 1.12 GHz
    scalar_clock_hz=1.4e9,  # source: [ARCH] engine table, ScalarE 1.4 GHz
    gpsimd_clock_hz=1.4e9,  # source: [ARCH] engine table, GpSimdE 1.4 GHz
    sync_clock_hz=1.4e9,  # assumption: the Sync engine runs at the SBUF interface clock [ARCH]
    num_partitions=128,  # source: [ARCH] SBUF 128 partitions
    sbuf_bytes_per_partition=192 * KIB,  # source: [ARCH] SBUF 24 MiB = 128 x 192 KiB
    sbuf_reserved_bytes_per_partition=16 * KIB,  # source: [ALLOC] byte_addr < 192 KiB - 16 KiB
    psum_bytes_per_partition=16 * KIB,  # source: [ARCH] PSUM 2 MiB = 128 x 16 KiB
    psum_num_banks=8,  # source: [ARCH] 8 banks x 2 KiB per partition
    gemm_stationary_fmax=128,  # source: [PM] nl.tile_size.gemm_stationary_fmax
    gemm_moving_fmax=512,  # source: [PM] nl.tile_size.gemm_moving_fmax
    psum_fmax=512,  # source: [PM] nl.tile_size.psum_fmax
    bn_stats_fmax=512,  # source: [ISA-bn_stats] bn_stats_fmax
    vector_transpose_max=32,  # source: [ISA-nc_transpose] VectorE transpose up to 32x32
    min_ii_cycles=64,  # source: [ISASRC] MIN_II ~64 engine cycles
    min_ii_dynamic_cycles=600,  # source: [ISA-tensor_copy_dynamic_src] MIN_II_DYNAMIC ~600
    gpsimd_start_cycles=150,  # source: [ISA-affine_select], [ISA-iota] GPSIMD_START ~150
    mm_init_latency_cycles=64,  # source: [ARCH] cost model, MM_INIT_LATENCY = 64 TensorE cycles
    load_stationary_speedup=4.0,  # source: [ARCH] LoadStationary up to 4x faster than MM
    fp32_matmul_slowdown=4,  # source: [ISA-nc_matmul] fp32 cost 4x
    act_read_accumulator_cycles=64,  # source: [ARCH] ActReadAccumulator ~64 ScalarE cycles
    tensor_access_overhead_cycles=60,  # source: [ARCH] ~60 cycles to initiate a tensor access
    vector_dependent_overhead_cycles=100,  # source: [ARCH] ~100 cycles static overhead
    stride_penalty_factor=2.0,  # source: [ARCH] stride > 16 B halves the interface bandwidth
    stride_penalty_min_bytes=16,  # source: [ARCH] most-minor free stride above 16 bytes
    # assumption (fitted, reports/validation.md): profile durations of single TensorE
    # instructions (MATMUL 128x96: 219 ns, 1-column MATMUL: 188 ns, TRANSPOSE: 195 ns, [PERF]
    # fig18/21/26) minus their 128-cycle occupancy (53.6 ns at the sustained rate), averaged
    tensor_pipeline_latency_ns=147.0,
    # measured: [MMTUT] the fully optimized matmul, TensorE its only busy engine, runs at HFU
    # 85.24 % of the documented peak; Autocomp's gemm v5 (bf16, SDK 2.26) 86.1 %, NKIBench's
    # transpose_matmul (fp32) 83-87 %: TensorE streams at this fraction of max(N, 64) cycles
    tensor_sustained_fraction=0.8524,
    # assumption (fitted, one figure): [PERF] fig20 profiles a LoadStationary of 1 element per
    # partition lasting 67 ns against its 0.1 ns of occupancy: the time until the weights sit
    # in the PE array. No instruction waits on it (MultiplyMoving streams behind the weights;
    # the documented matmul cost has no such term): it is part of an LS's duration only.
    load_stationary_latency_ns=67.0,
    engine_pipeline_latency_cycles=60,  # assumption: = tensor access overhead [ARCH]
    # source: [ARCH] static instruction overhead ~100 + tensor access overhead ~60 cycles;
    # [PERF fig16]: a dependent [128, 1] ACTIVATE lasts 159 ns = 64 (MIN_II) + 159 cycles
    scalar_pipeline_latency_cycles=160,
    # assumption (fitted): [PERF fig16] 189 ns interval - 159 ns duration of dependent ScalarE
    # instructions, each waiting on its engine's semaphore (S[4] (Scalar) >= n)
    semaphore_latency_ns=30.0,
    dma_engines=16,  # source: [ARCH] 16 DMA engines per NeuronCore-v2
    # source: [PERF fig30] one 32 KiB transfer on one engine in 1810 ns = 18.1 B/ns (Trn1
    # profile); [DMABW] lists 17 B/ns effective, [ARCH] 27 GiB/s peak. See docs/model.md.
    dma_engine_bytes_per_ns=18.1,
    dma_fixed_latency_ns=1300.0,  # source: [DMABW] ~1300 ns descriptor/semaphore-to-start
    # source: [DMABW] "TRN1: 17 B/ns per engine" effective, 16 engines = 272 GB/s; Autocomp's
    # tiled matmul (SDK 2.26) and NKIBench's fp32 matmul (--disable-dge) read at ~256 GB/s. The
    # trn1 ladder's ~111 GB/s (SDK 2.20, DGE on) is the descriptor generator's rate, not this
    dma_hbm_read_bytes_per_ns=17.0,
    # source: [DMABW] "TRN1: 17 B/ns per engine", 16 engines = 272 GB/s, the rate of HBM traffic
    # either way (the 18.1 of dma_engine_bytes_per_ns is one profiled transfer); NKIBench's bmm
    # writes 1,086 MB in 4.61 ms (<= 236 GB/s), which 290 GB/s of writes made 13 % too fast
    dma_hbm_write_bytes_per_ns=17.0,
    # source: [PERF fig29] a 4-byte transfer lasts 7 ns on its engine (trn1 profile); the former
    # 138.5 was fitted to the [DMAOV] bytes/partition curve (later doc, generation not stated)
    dma_buffer_overhead_ns=7.0,
    dma_transpose_slowdown=8.0,  # assumption: [PERF] "much lower DMA bandwidth", no number
    dma_rmw_passes=2.0,  # assumption: a read-modify-write DMA reads its destination, then writes
    hbm_bytes_per_ns=410.0,  # source: [ARCH] 820 GB/s per chip, shared by 2 NeuronCores
    # assumption: software DGE (GpSimd, [DGE]) writes one descriptor element per 256 bytes of a
    # DMA buffer (rows of 256 B and 1 KiB cost their bytes on the SDK 2.20 ladder, [MMTUT])
    dge_element_bytes=256,
    # assumption (fitted on the three DMA-bound rows of the SDK 2.20 matmul ladder, [MMTUT],
    # errors +1.2 / -0.8 / -1.9 %): the generator's time per element; 256 B / 2.5 ns = 102 GB/s,
    # the ladder's load rate (calibration.md: byte-proportional at 100-104 GB/s)
    dge_ns_per_element=2.5,
    loop_tile_buffers=4,  # assumption: buffers the allocator rotates per allocation site
    # assumption: how many of an engine's unscheduled instructions the compiler's scheduler
    # looks ahead when it interleaves affine_range iterations (compiler/reorder.py)
    reorder_window_instructions=32,
    # assumption (derived, docs/model.md "Spilling"): how many instructions ahead of its reader
    # the compiler issues an SBUF spill reload, so that the tiles those instructions touch are
    # not evicted for it: a reload's DMA round trip, 1300 ns fixed latency + a 256 KiB tile at
    # 16 x 17 B/ns (964 ns), over a [128, 512] fp32 VectorE instruction (512 cycles at 1.12 GHz,
    # 457 ns): 2264 / 457 -> 5
    spill_reload_lead_instructions=5,
    # assumption: the widest merged operand (elements per partition) the compiler's loop
    # vectorisation makes (compiler/vectorize.py): nl.tile_size.psum_fmax. Bounded by Autocomp's
    # conv1d profiles: a 64 x [128, 3] loop is vectorised (192), a 2048 x [128, 3] one is not
    vectorize_max_free_elements=512,
    two_input_cycles_per_element=2,  # source: [ARCH] cost model, two input tiles ~2N cycles
    bf16_fast_path_divisor=2,  # source: [ISA-tensor_reduce], [ISA-memset] bf16 fast paths N/2
    reciprocal_cycles_per_element=8,  # source: [ISA-reciprocal] max(MIN_II, 8*N)
    bn_aggr_cycles_per_group=13,  # source: [ISA-bn_aggr] max(MIN_II, 13*(N/3))
    bn_aggr_group_elements=3,  # source: [ISA-bn_aggr] max(MIN_II, 13*(N/3))
    onezero_fp32_speedup=2.0,  # source: [ISA-nc_matmul] onezero hint up to 2x for fp32 operands
    gpsimd_rsqrt_slowdown=4.0,  # source: [SHARED] rsqrt on GpSimd 4x lower throughput
    partition_reduce_cycles_per_element=2.0,  # assumption: GpSimd reads N, then combines N
    # assumption: a limit of the simulator, not of the hardware: 40x the largest launch of
    # reports/scaling.md, ~2 minutes and ~3 GiB of tracing and timing at its speeds
    max_instructions_per_launch=2_000_000,
)

# Inferentia2 uses the same NeuronCore-v2 and the same HBM figures as Trainium1.
INF2 = dataclasses.replace(TRN1, name="inf2")  # source: [INF2] same NeuronCore-v2, 820 GB/s HBM

PRESETS: dict[str, NeuronCoreConfig] = {"trn1": TRN1, "inf2": INF2}


def load_config(spec: str | Path | NeuronCoreConfig | None = None) -> NeuronCoreConfig:
    """Return a config from a preset name, a TOML file path, or a config object.

    Args:
        spec: "trn1", "inf2", a path to a ``.toml`` file (keys = field names, optional
            ``base = "<preset>"``), a :class:`NeuronCoreConfig`, or None for trn1.

    Raises:
        ConfigError: unknown preset, unreadable file, unknown field or invalid value.
    """
    if spec is None:
        return TRN1
    if isinstance(spec, NeuronCoreConfig):
        return spec
    text = str(spec)
    if text in PRESETS:
        return PRESETS[text]
    path = Path(text)
    if path.suffix != ".toml":
        raise ConfigError(
            f"config: expected a preset name ({', '.join(PRESETS)}) or a .toml file, found {text!r}"
        )
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise ConfigError(f"config: cannot read {path}: {e.strerror or e}") from e
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise ConfigError(f"config {path}: expected UTF-8 text (TOML files are UTF-8), found "
                          f"byte 0x{raw[e.start]:02x} at offset {e.start}") from e
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"config {path}: not valid TOML: {e}") from e
    base_name = data.pop("base", "trn1")
    if not isinstance(base_name, str) or base_name not in PRESETS:
        raise ConfigError(f"config {path}: base must be one of {list(PRESETS)}, found {base_name!r}")
    data.setdefault("name", path.stem)
    return override(PRESETS[base_name], data, f"config {path}")


def override(base: NeuronCoreConfig, fields: dict[str, object], where: str) -> NeuronCoreConfig:
    """``base`` with some fields replaced (checked like any config).

    Compile options are given as ``{"compiler": {"dge": True}}`` (a TOML ``[compiler]`` table)
    or as dotted names, ``{"compiler.dge": True}``; the options not named keep ``base``'s.

    Raises:
        ConfigError: a name that is not a field, or a value the field does not accept (the
            message starts with ``where``).
    """
    fields = dict(fields)
    options = {k.split(".", 1)[1]: fields.pop(k) for k in list(fields)
               if k.startswith("compiler.")}
    table = fields.pop("compiler", None)
    if table is not None:
        if not isinstance(table, dict):
            raise ConfigError(f"{where}: 'compiler' must be a table of compile options "
                              f"({', '.join(CompileOptions.names())}), found {table!r}")
        options = {**table, **options}
    if isinstance(options.get("toolchain"), str):  # the release's own defaults, then the rest
        options = {**TOOLCHAINS.get(options["toolchain"], {}), **options}
    unknown = sorted(set(fields) - set(field_names()))
    if unknown:
        raise ConfigError(f"{where}: unknown field(s) {unknown}; expected "
                          f"{fields_hint(unknown[0])}")
    bad = sorted(set(options) - set(CompileOptions.names()))
    if bad:
        close = difflib.get_close_matches(bad[0], CompileOptions.names(), n=1, cutoff=0.6)
        guess = f" (did you mean {close[0]!r}?)" if close else ""
        raise ConfigError(f"{where}: unknown compile option(s) {bad}{guess}; expected one of "
                          f"{', '.join(CompileOptions.names())}")
    try:
        if options:
            fields["compiler"] = dataclasses.replace(base.compiler, **options)
        return dataclasses.replace(base, **fields)
    except ConfigError as e:
        raise ConfigError(f"{where}: {e}") from None


def with_compile_options(base: NeuronCoreConfig | None, settings: list[str]
                         ) -> NeuronCoreConfig:
    """``base`` (trn1 if None) with compile options set from ``NAME=VALUE`` strings (the
    command line's ``--compiler-option``): ``true``/``false`` for switches, text otherwise.

    Raises:
        ConfigError: a setting without ``=``, an unknown option or a value it does not take.
    """
    options: dict[str, object] = {}
    for text in settings:
        name, eq, value = text.partition("=")
        if not eq or not name.strip():
            raise ConfigError(f"--compiler-option: expected NAME=VALUE (one of "
                              f"{', '.join(CompileOptions.names())}), found {text!r}")
        word = value.strip()
        options[name.strip()] = {"true": True, "false": False}.get(word.lower(), word)
    cfg = base if base is not None else load_config(None)
    return override(cfg, {"compiler": options}, "--compiler-option")


def field_names() -> tuple[str, ...]:
    """Names of the fields of :class:`NeuronCoreConfig`, in declaration order."""
    return tuple(f.name for f in dataclasses.fields(NeuronCoreConfig))


def fields_hint(name: str) -> str:
    """What a field name should have been, short: the few closest field names to ``name`` and
    where all of them are listed (there are about fifty; a message listing them all is a wall)."""
    names = field_names()
    close = difflib.get_close_matches(name, names, n=4, cutoff=0.6)
    if not close:  # the fields sharing its first word ("dma_", "psum_"), as a second guess
        head = name.split("_", 1)[0] + "_"
        close = [n for n in names if n.startswith(head)][:4]
    near = f"closest: {', '.join(close)}; " if close else ""
    return (f"a field of the hardware config ({near}all {len(names)} are listed by "
            "help(neuroncore_sim.config.NeuronCoreConfig))")
