"""Tests of the foundation and vocabulary modules: config, dtypes, ir.

Expected values are worked out by hand from the rules the modules document (and shared/arch.md
sections 1 and 3.5), not read back from the code.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from neuroncore_sim import config as cfg
from neuroncore_sim import dtypes as dt
from neuroncore_sim.program import ops
from neuroncore_sim.errors import ConfigError, DTypeError, SimulatorError
from neuroncore_sim.program.ir import Access, Affine, MemSpace, Opcode, OPCODE_DOC, Predicate, TensorDecl

KIB = 1024


# --- config: presets ---------------------------------------------------------------------------

def test_trn1_preset_matches_documented_hardware() -> None:
    """Headline NeuronCore-v2 numbers from arch.md section 1."""
    c = cfg.TRN1
    assert (c.tensor_clock_hz, c.vector_clock_hz, c.scalar_clock_hz, c.gpsimd_clock_hz) == (
        2.8e9, 1.12e9, 1.4e9, 1.4e9)
    assert c.num_partitions == 128
    assert c.sbuf_bytes_per_partition == 192 * KIB
    assert c.psum_bytes_per_partition == 16 * KIB and c.psum_num_banks == 8
    assert (c.gemm_stationary_fmax, c.gemm_moving_fmax, c.psum_fmax) == (128, 512, 512)
    assert c.bn_stats_fmax == 512
    assert c.dma_engines == 16
    assert c.min_ii_cycles == 64 and c.mm_init_latency_cycles == 64


def test_derived_values() -> None:
    """Usable SBUF = 192 - 16 KiB reserved; a PSUM bank = 16 KiB / 8 = 2 KiB = 512 fp32."""
    assert cfg.TRN1.sbuf_usable_bytes_per_partition == 176 * KIB
    assert cfg.TRN1.psum_bank_bytes == 2 * KIB
    assert cfg.TRN1.psum_bank_bytes // 4 == cfg.TRN1.psum_fmax


def test_cycles_to_ns_uses_each_engines_clock() -> None:
    # TensorE's documented cycles run at its sustained fraction of the clock (docs/model.md)
    assert cfg.TRN1.cycles_to_ns("tensor", 2.8) == pytest.approx(
        1.0 / cfg.TRN1.tensor_sustained_fraction)
    assert cfg.TRN1.cycles_to_ns("vector", 1120) == pytest.approx(1000.0)
    assert cfg.TRN1.cycles_to_ns("scalar", 14) == pytest.approx(10.0)
    assert cfg.TRN1.clock_hz("gpsimd") == 1.4e9
    with pytest.raises(ConfigError, match="dma"):
        cfg.TRN1.clock_hz("dma")


def test_presets_and_load_config_specs() -> None:
    """Preset names, None and config objects all resolve; inf2 is the same NeuronCore-v2."""
    assert cfg.load_config() is cfg.TRN1
    assert cfg.load_config("trn1") is cfg.TRN1
    assert cfg.load_config("inf2") is cfg.INF2
    assert cfg.load_config(cfg.INF2) is cfg.INF2
    assert set(cfg.PRESETS) == {"trn1", "inf2"}
    same = {f.name for f in dataclasses.fields(cfg.NeuronCoreConfig)} - {"name"}
    assert all(getattr(cfg.TRN1, n) == getattr(cfg.INF2, n) for n in same)
    assert cfg.INF2.name == "inf2"


def test_config_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.TRN1.dma_engines = 8  # type: ignore[misc]


def test_config_requires_keywords() -> None:
    """kw_only: a positional value cannot land in the wrong field."""
    with pytest.raises(TypeError):
        cfg.NeuronCoreConfig("x")  # type: ignore[misc]


# --- config: TOML overrides -----------------------------------------------------------------------

def _toml(tmp_path: Path, text: str, name: str = "custom.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_toml_overrides_fields_of_its_base(tmp_path: Path) -> None:
    path = _toml(tmp_path, 'base = "inf2"\n'
                           'dma_engine_bytes_per_ns = 20.0\n'
                           'hbm_bytes_per_ns = 300\n')
    c = cfg.load_config(path)
    assert c.dma_engine_bytes_per_ns == 20.0
    assert c.hbm_bytes_per_ns == 300
    assert c.tensor_clock_hz == cfg.INF2.tensor_clock_hz  # untouched fields come from the base
    assert c.name == "custom"  # defaults to the file's stem
    assert cfg.load_config(str(path)) == c  # a str path works the same


def test_toml_base_defaults_to_trn1_and_name_can_be_set(tmp_path: Path) -> None:
    c = cfg.load_config(_toml(tmp_path, 'name = "big-sbuf"\nsbuf_bytes_per_partition = 262144\n'))
    assert c.name == "big-sbuf"
    assert c.sbuf_bytes_per_partition == 256 * KIB
    assert c.psum_num_banks == cfg.TRN1.psum_num_banks


def test_toml_unknown_field_is_named(tmp_path: Path) -> None:
    path = _toml(tmp_path, "dma_engine_bytes_per_n = 20.0\n")
    with pytest.raises(ConfigError, match="unknown field.*dma_engine_bytes_per_n"):
        cfg.load_config(path)


def test_toml_invalid_value_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="dma_engines"):
        cfg.load_config(_toml(tmp_path, 'dma_engines = "many"\n'))
    with pytest.raises(ConfigError, match="psum_num_banks"):
        cfg.load_config(_toml(tmp_path, "psum_num_banks = 3\n", "banks.toml"))


def test_toml_unknown_base(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="base"):
        cfg.load_config(_toml(tmp_path, 'base = "trn2"\n'))


def test_toml_syntax_error_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"config .*custom.toml: not valid TOML"):
        cfg.load_config(_toml(tmp_path, "dma_engines = = 3\n"))
    with pytest.raises(ConfigError, match="cannot read .*missing.toml"):
        cfg.load_config(tmp_path / "missing.toml")


def test_toml_that_is_not_utf8_names_the_file_and_the_byte(tmp_path: Path) -> None:
    path = tmp_path / "latin1.toml"
    path.write_bytes(b'base = "trn1"\nname = "\xff"\n')
    with pytest.raises(ConfigError, match=r"config .*latin1.toml: expected UTF-8 text .* found "
                                          r"byte 0xff at offset 22"):
        cfg.load_config(path)


def test_a_bad_field_value_names_the_file_and_the_field(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"config .*custom.toml.*dma_engines"):
        cfg.load_config(_toml(tmp_path, "dma_engines = -1\n"))


def test_unknown_preset_name_lists_the_presets() -> None:
    with pytest.raises(ConfigError, match="trn1, inf2"):
        cfg.load_config("trn2")


def test_config_errors_are_simulator_errors() -> None:
    assert issubclass(ConfigError, SimulatorError)


# --- config: invalid values ----------------------------------------------------------------------

@pytest.mark.parametrize("field, value", [
    ("dma_engines", 0),
    ("hbm_bytes_per_ns", -1.0),
    ("min_ii_cycles", True),  # a bool is not a number of cycles
    ("tensor_clock_hz", "2.8e9"),
    ("num_partitions", None),
])
def test_non_positive_or_non_numeric_values_are_rejected(field: str, value: object) -> None:
    with pytest.raises(ConfigError, match=field):
        dataclasses.replace(cfg.TRN1, **{field: value})


def test_inconsistent_memories_are_rejected() -> None:
    with pytest.raises(ConfigError, match="sbuf_reserved"):
        dataclasses.replace(cfg.TRN1, sbuf_reserved_bytes_per_partition=192 * KIB)
    with pytest.raises(ConfigError, match="psum_num_banks"):
        dataclasses.replace(cfg.TRN1, psum_num_banks=3)


@pytest.mark.parametrize("value", [math.nan, math.inf])
def test_non_finite_values_are_rejected(value: float) -> None:
    with pytest.raises(ConfigError):
        dataclasses.replace(cfg.TRN1, hbm_bytes_per_ns=value)


def test_count_fields_must_be_integers() -> None:
    with pytest.raises(ConfigError, match="dma_engines"):
        dataclasses.replace(cfg.TRN1, dma_engines=16.5)


def test_non_string_base_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        cfg.load_config(_toml(tmp_path, 'base = ["trn1"]\n'))


# --- dtypes: names and normalisation ----------------------------------------------------------

def test_to_dtype_accepts_names_aliases_and_numpy_types() -> None:
    assert dt.to_dtype("bfloat16") == np.dtype(ml_dtypes.bfloat16)
    assert dt.to_dtype("bf16") == dt.bfloat16
    assert dt.to_dtype(np.float16) == dt.float16
    assert dt.to_dtype(ml_dtypes.float8_e5m2) == dt.float8_e5m2
    assert dt.to_dtype(bool) == dt.bool_
    assert dt.dtype_name(dt.to_dtype("tfloat32")) == "tfloat32"
    assert dt.dtype_name(dt.to_dtype("bool_")) == "bool"


@pytest.mark.parametrize("bad", [np.float64, np.int64, "float64", "complex64", "nonsense", object])
def test_to_dtype_rejects_non_nki_types(bad: object) -> None:
    with pytest.raises(DTypeError):
        dt.to_dtype(bad)


def test_tfloat32_is_float32_storage_with_its_own_name() -> None:
    assert dt.tfloat32 == dt.float32 and dt.tfloat32.itemsize == 4
    assert dt.dtype_name(dt.tfloat32) == "tfloat32"
    assert dt.dtype_name(dt.float32) == "float32"


def test_float_and_int_kinds() -> None:
    floats = ["float32", "float16", "bfloat16", "tfloat32", "float8_e4m3", "float8_e5m2"]
    for name, d in dt.BY_NAME.items():
        assert dt.is_float(d) == (name in floats), name
        assert dt.is_int(d) == (name not in floats), name


# --- dtypes: promotion (arch.md 3.5) ------------------------------------------------------------

@pytest.mark.parametrize("a, b, want", [
    # same type
    ("bfloat16", "bfloat16", "bfloat16"),
    # (float, int) -> the float, whatever the widths
    ("bfloat16", "int32", "bfloat16"),
    ("uint8", "float8_e4m3", "float8_e4m3"),
    ("float16", "bool", "float16"),
    # two floats: the wider one...
    ("float32", "bfloat16", "float32"),
    ("tfloat32", "bfloat16", "tfloat32"),
    ("float32", "tfloat32", "float32"),
    ("float8_e5m2", "float16", "float16"),
    # ...or a new, wider type when neither holds the other
    ("float16", "bfloat16", "float32"),
    ("float8_e4m3", "float8_e5m2", "bfloat16"),
    # two ints
    ("int8", "int32", "int32"),
    ("uint8", "uint16", "uint16"),
    ("int8", "uint8", "int16"),
    ("int16", "uint16", "int32"),
    ("uint8", "int32", "int32"),
    ("int32", "uint32", "float32"),  # no int64 on the hardware
    ("bool", "int8", "int8"),
    ("uint16", "bool", "uint16"),
])
def test_promotion_table(a: str, b: str, want: str) -> None:
    da, db = dt.BY_NAME[a], dt.BY_NAME[b]
    assert dt.dtype_name(dt.promote(da, db)) == want
    assert dt.dtype_name(dt.promote(db, da)) == want  # symmetric


@pytest.mark.parametrize("tile, scalar, want", [
    ("int32", 2.5, "float32"),  # a float scalar turns an int tile into float32
    ("uint8", 1.0, "float32"),
    ("bfloat16", 2.5, "bfloat16"),  # weak scalars never widen a float tile
    ("int8", 3, "int8"),
    ("float16", True, "float16"),
    ("int16", np.float32(1.5), "float32"),
])
def test_promotion_with_python_scalars(tile: str, scalar: object, want: str) -> None:
    assert dt.dtype_name(dt.promote_scalar(dt.BY_NAME[tile], scalar)) == want


# --- dtypes: tf32 rounding and casts -------------------------------------------------------------

def test_tf32_rounds_to_ten_mantissa_bits_nearest_even() -> None:
    ulp = 2.0**-10  # tf32 spacing just above 1.0
    x = np.array([1.0 + ulp / 2,        # tie -> even (1.0)
                  1.0 + 3 * ulp / 2,    # tie -> even (1 + 2 ulp)
                  1.0 + ulp / 2 + 2.0**-20,  # just above the tie -> up
                  1.0 + ulp / 4,        # below half -> down
                  -(1.0 + 3 * ulp / 2)], dtype=np.float32)
    want = np.array([1.0, 1.0 + 2 * ulp, 1.0 + ulp, 1.0, -(1.0 + 2 * ulp)], dtype=np.float32)
    np.testing.assert_array_equal(dt.round_tf32(x), want)
    assert not np.any(dt.round_tf32(x).view(np.uint32) & np.uint32(0x1FFF))


def test_tf32_keeps_special_values() -> None:
    x = np.array([np.inf, -np.inf, 0.0, -0.0], dtype=np.float32)
    np.testing.assert_array_equal(dt.round_tf32(x), x)
    assert np.signbit(dt.round_tf32(x)[3])
    assert np.isnan(dt.round_tf32(np.array([np.nan], dtype=np.float32)))[0]


def test_cast_to_tfloat32_rounds() -> None:
    out = dt.cast(np.array([1.0 + 3 * 2.0**-11], dtype=np.float32), dt.tfloat32)
    assert out.dtype == np.float32 and out[0] == np.float32(1.0 + 2.0**-9)


def test_cast_float_to_int_rounds_half_even_and_saturates() -> None:
    x = np.array([2.5, 3.5, -2.5, 1.49, 300.0, -300.0, np.inf, -np.inf, np.nan], np.float32)
    np.testing.assert_array_equal(dt.cast(x, dt.int8), [2, 4, -2, 1, 127, -128, 127, -128, 0])
    u = np.array([-1.0, 70000.0, 5e9], np.float32)
    np.testing.assert_array_equal(dt.cast(u, dt.uint16), [0, 65535, 65535])
    np.testing.assert_array_equal(dt.cast(u, dt.uint32), [0, 70000, 4294967295])


def test_cast_int_to_narrower_int_saturates() -> None:
    x = np.array([70000, -70000, 5], np.int32)
    np.testing.assert_array_equal(dt.cast(x, dt.int16), [32767, -32768, 5])
    np.testing.assert_array_equal(dt.cast(x, dt.uint8), [255, 0, 5])


def test_cast_float_to_narrow_float_rounds_nearest_even() -> None:
    # bf16 keeps 8 significant bits: 1 + 2^-8 is a tie between 1 and 1 + 2^-7 -> 1.
    x = np.array([1.0 + 2.0**-8, 1.0 + 3 * 2.0**-8], np.float32)
    got = dt.cast(x, dt.bfloat16)
    assert got.dtype == dt.bfloat16
    np.testing.assert_array_equal(got.astype(np.float32), [1.0, 1.0 + 2.0**-6])


def test_cast_to_bool_and_same_dtype() -> None:
    np.testing.assert_array_equal(dt.cast(np.array([0.5, 0.0, -1.0], np.float32), dt.bool_),
                                  [True, False, True])
    x = np.arange(4, dtype=np.int32)
    np.testing.assert_array_equal(dt.cast(x, dt.int32), x)


# --- ir: tensors and their layout --------------------------------------------------------------

def test_hbm_tensor_is_c_order() -> None:
    t = TensorDecl(0, "a", MemSpace.HBM, (4, 6, 8), dt.float32, kind="input")
    assert t.strides == (48, 8, 1)
    assert (t.rows, t.row_size, t.size) == (4, 48, 192)
    assert t.row_bytes == 48 * 4 and t.itemsize == 4


def test_sbuf_tensor_with_block_dims_is_partition_major() -> None:
    """Shape (blocks=4, par_dim=128, free=64): each partition row holds its 4 blocks' 64
    elements one after another, so element (b, p, f) sits at p*256 + b*64 + f."""
    t = TensorDecl(1, "t", MemSpace.SBUF, (4, 128, 64), dt.bfloat16, partition_axis=1)
    assert t.strides == (64, 256, 1)
    assert (t.rows, t.row_size) == (128, 256)
    assert t.row_bytes == 256 * 2
    b, p, f = 3, 5, 7
    assert sum(i * s for i, s in zip((b, p, f), t.strides)) == p * 256 + b * 64 + f


def test_partition_axis_last_and_scalar_tensors() -> None:
    t = TensorDecl(2, "t", MemSpace.SBUF, (2, 3, 32), dt.float32, partition_axis=2)
    assert t.strides == (3, 1, 6) and t.rows == 32 and t.row_size == 6
    s = TensorDecl(3, "s", MemSpace.HBM, (), dt.float32)
    assert s.size == 1 and s.strides == ()


# --- ir: access patterns --------------------------------------------------------------------------

def _tile(shape=(128, 512), dtype=dt.float32, space=MemSpace.SBUF) -> TensorDecl:
    return TensorDecl(0, "t", space, shape, dtype)


def test_rectangular_access_bounds() -> None:
    """Rows 32..63, columns 100..199 of a [128, 512] tile."""
    t = _tile()
    a = Access(t, offset=32 * 512 + 100, pattern=((512, 32), (1, 100)))
    assert (a.row_lo, a.row_hi, a.col_lo, a.col_hi) == (32, 64, 100, 200)
    assert a.shape == (32, 100) and a.size == 3200 and a.nbytes == 12800
    assert a.partitions == 32 and a.free_size == 100
    assert a.space is MemSpace.SBUF and a.dtype == dt.float32


def test_strided_access_bounds() -> None:
    """Every other column starting at 1 (1, 3, ..., 19) of rows 4..7."""
    t = _tile()
    a = Access(t, offset=4 * 512 + 1, pattern=((512, 4), (2, 10)))
    assert (a.row_lo, a.row_hi, a.col_lo, a.col_hi) == (4, 8, 1, 20)


def test_negative_stride_access_bounds() -> None:
    """Columns 9 down to 0 of row 2 (a reversed read)."""
    a = Access(_tile(), offset=2 * 512 + 9, pattern=((512, 1), (-1, 10)))
    assert (a.row_lo, a.row_hi, a.col_lo, a.col_hi) == (2, 3, 0, 10)


def test_block_dim_access_bounds() -> None:
    """Block 2 of a (4, par 128, 64) tile: all partitions, columns 128..191 of each row."""
    t = TensorDecl(0, "t", MemSpace.SBUF, (4, 128, 64), dt.float32, partition_axis=1)
    a = Access(t, offset=2 * 64, pattern=((256, 128), (1, 64)))
    assert (a.row_lo, a.row_hi, a.col_lo, a.col_hi) == (0, 128, 128, 192)


def test_access_wrapping_across_rows_is_conservative() -> None:
    """A flat 1-D walk through an HBM matrix covers whole rows."""
    t = _tile((8, 16), space=MemSpace.HBM)
    a = Access(t, offset=10, pattern=((1, 20),))  # elements 10..29: end of row 0, start of row 1
    assert (a.row_lo, a.row_hi) == (0, 2)
    assert (a.col_lo, a.col_hi) == (0, 16)


def test_empty_access() -> None:
    a = Access(_tile(), offset=0, pattern=((512, 0), (1, 4)))
    assert a.size == 0 and (a.row_lo, a.row_hi, a.col_lo, a.col_hi) == (0, 0, 0, 0)


@pytest.mark.parametrize("offset, pattern, runs", [
    (0, ((512, 128), (1, 512)), (1, 128 * 512)),  # the whole tile is one run
    (32 * 512, ((512, 8), (1, 512)), (1, 8 * 512)),  # whole rows merge
    (100, ((512, 32), (1, 100)), (32, 100)),  # part of each row
    (1, ((512, 4), (2, 10)), (40, 1)),  # strided: every element alone
    (0, ((512, 1), (1, 1), (1, 64)), (1, 64)),  # size-1 dims do not split runs
    (0, ((512, 4), (0, 3), (1, 8)), (12, 8)),  # a broadcast dim repeats the run
])
def test_contiguous_runs(offset: int, pattern: tuple, runs: tuple[int, int]) -> None:
    assert Access(_tile(), offset, pattern).contiguous_runs() == runs


def test_overlaps_needs_same_tensor_and_intersecting_boxes() -> None:
    t, u = _tile(), _tile()
    top = Access(t, 0, ((512, 64), (1, 512)))
    bottom = Access(t, 64 * 512, ((512, 64), (1, 512)))
    left = Access(t, 0, ((512, 128), (1, 256)))
    assert not top.overlaps(bottom)
    assert top.overlaps(left) and left.overlaps(bottom)
    assert not top.overlaps(Access(u, 0, ((512, 64), (1, 512))))  # same shape, other tensor


# --- ir: affine expressions and predicates -------------------------------------------------------

def test_affine_evaluate() -> None:
    expr = Affine(const=-5, coefs=(1, 10))  # i - 5 + 10 j over a (3, 2) grid
    np.testing.assert_array_equal(expr.evaluate((3, 2)), [[-5, 5], [-4, 6], [-3, 7]])
    assert expr.evaluate((3, 2)).shape == (3, 2)
    np.testing.assert_array_equal(Affine(7, ()).evaluate((2, 2)), np.full((2, 2), 7))


def test_predicate_comparisons() -> None:
    """The ragged-tile mask `row < 300` for tile i = 2 of 128 rows: 256 + p - 300 < 0."""
    mask = Predicate("<", Affine(256 - 300, (1, 0)))
    got = mask.evaluate((128, 4))
    assert got.shape == (128, 4) and got.dtype == bool
    assert got[:44].all() and not got[44:].any()
    for op, want in [("<=", [1, 1, 0]), (">", [0, 0, 1]), (">=", [0, 1, 1]),
                     ("==", [0, 1, 0]), ("!=", [1, 0, 1])]:
        got = Predicate(op, Affine(-1, (1,))).evaluate((3,))  # i - 1 (op) 0
        np.testing.assert_array_equal(got, np.array(want, dtype=bool), err_msg=op)


def test_predicate_combinations() -> None:
    """A causal mask (j <= i) and a band, over a (4, 4) grid."""
    causal = Predicate("<=", Affine(0, (-1, 1)))
    np.testing.assert_array_equal(causal.evaluate((4, 4)), np.tri(4, dtype=bool))
    near = Predicate("<", Affine(-2, (-1, 1)))  # j - i < 2
    band = Predicate("and", parts=(Predicate("not", parts=(causal,)), near))
    np.testing.assert_array_equal(band.evaluate((4, 4)), np.eye(4, k=1, dtype=bool))
    either = Predicate("or", parts=(causal, near))
    np.testing.assert_array_equal(either.evaluate((4, 4)), np.tri(4, k=1, dtype=bool))


# --- ir and ops: the contract tables -----------------------------------------------------------

def test_every_opcode_is_documented() -> None:
    assert set(OPCODE_DOC) == set(Opcode)
    assert all(Opcode(op.value) is op for op in Opcode)


def test_operator_tables_are_consistent() -> None:
    assert ops.BINARY_OPS >= ops.ARITH_OPS | ops.COMPARE_OPS | ops.LOGICAL_OPS | ops.BITVEC_OPS
    assert not ops.BITVEC_OPS & ops.ARITH_OPS
    for lo_hi in ops.ACTIVATIONS.values():
        assert lo_hi is None or lo_hi[0] < lo_hi[1]
