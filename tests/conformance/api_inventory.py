"""The NKI 2.26 API inventory: every public item of the API reference, as data.

Built from the 2.26.1 API reference index pages (``nki``, ``nki.language``, ``nki.isa``,
``nki.compiler``; ``nki.typing`` as the NKI errors page uses it) and the class pages they link
(``nki.tensor`` methods, ``nki.language.tile_size`` attributes). Each item records its module, its
name, its kind and whether NeuronCore-v2 (Trn1/Inf2) has it:

- ``V2``: available on NeuronCore-v2;
- ``V3_ONLY``: the reference says NeuronCore-v3 or later (the simulator must refuse it with a
  SimulatorError naming the item);
- ``v3_modes``: an item available on NeuronCore-v2 with some documented modes that are
  NeuronCore-v3 only (each mode named, with how to select it).

``scripts/compatibility.py`` joins this inventory with the results of ``tests/conformance`` to
write ``docs/compatibility.md``; tests mark the items they cover with ``api(...)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

V2, V3_ONLY = "v2", "v3-only"

#: Module prefixes as users import them (``import neuronxcc.nki.language as nl``).
MODULES = ("nki", "nki.language", "nki.isa", "nki.compiler", "nki.typing")


@dataclass(frozen=True)
class Item:
    """One public item of the 2.26 API reference."""

    module: str
    name: str  # dotted inside the module for members: "tensor.reshape", "tile_size.pmax"
    kind: str  # function, decorator, class, enum, dtype, constant, buffer, iterator, method...
    availability: str = V2
    #: NeuronCore-v3-only modes of a v2 item: (mode, why), shown in the compatibility doc.
    v3_modes: tuple[tuple[str, str], ...] = field(default=())
    #: Why the item is not on NeuronCore-v2 (V3_ONLY items) or what the reference says about it.
    note: str = ""

    @property
    def qualname(self) -> str:
        """``nki.language.add``."""
        return f"{self.module}.{self.name}"


def _items(module: str, kind: str, names: str) -> list[Item]:
    return [Item(module, n, kind) for n in names.split()]


NL, NISA, NKI, NCC, NT = MODULES[1], MODULES[2], MODULES[0], MODULES[3], MODULES[4]

#: Section of each nki.language item on its index page (kept as data for the doc's grouping).
NL_SECTIONS = {
    "memory": "load store load_transpose2d atomic_rmw copy broadcast_to",
    "creation": ("ndarray empty_like zeros zeros_like ones full rand random_seed shared_constant "
                 "shared_identity_matrix"),
    "math": ("add subtract multiply divide power maximum minimum max min mean var sum prod all "
             "abs negative sign trunc floor ceil mod fmod exp log cos sin tan tanh arctan sqrt "
             "rsqrt sigmoid relu gelu gelu_dx gelu_apprx_tanh gelu_apprx_sigmoid silu silu_dx erf "
             "erf_dx softplus mish square softmax rms_norm dropout matmul transpose reciprocal"),
    "bitwise": "bitwise_and bitwise_or bitwise_xor invert left_shift right_shift",
    "logical": ("equal not_equal greater greater_equal less less_equal logical_and logical_or "
                "logical_xor logical_not"),
    "manipulation": "ds arange mgrid expand_dims",
    "indexing": "where gather_flattened",
    "collective": "all_reduce",
    "iterators": "static_range affine_range sequential_range",
    "memory hierarchy": "par_dim psum sbuf hbm private_hbm shared_hbm",
    "others": "program_id num_programs program_ndim spmd_dim nc device_print loop_reduce",
    # tfloat32, bfloat16 and the float8 types have pages; the numpy-equal types are listed on
    # the page of common fields (supported data types).
    "dtypes": ("tfloat32 bfloat16 float8_e4m3 float8_e5m2 float32 float16 int32 uint32 int16 "
               "uint16 int8 uint8 bool_"),
    "constants": "tile_size fp32",
}

_NL_KIND = {"iterators": "iterator", "memory hierarchy": "buffer", "dtypes": "dtype",
            "constants": "class"}

#: nki.language items that are objects, not functions (indexed or passed, never called).
_OBJECT_KIND = {"mgrid": "grid object", "nc": "constant", "spmd_dim": "constant"}

#: nki.language.tile_size attributes (class page).
TILE_SIZE_ATTRS = ("bn_stats_fmax gemm_moving_fmax gemm_stationary_fmax pmax psum_fmax "
                   "psum_min_align sbuf_min_align total_available_sbuf_size")

#: nki.tensor methods and properties (class page).
TENSOR_MEMBERS = {"assert_shape": "method", "astype": "method", "broadcast_to": "method",
                  "expand_dims": "method", "reshape": "method", "view": "method",
                  "dtype": "property", "itemsize": "property", "ndim": "property",
                  "shape": "property"}

NISA_FUNCTIONS = ("nc_matmul nc_transpose activation activation_reduce tensor_reduce "
                  "tensor_partition_reduce tensor_tensor tensor_tensor_scan scalar_tensor_tensor "
                  "tensor_scalar tensor_scalar_reduce tensor_copy tensor_copy_dynamic_src "
                  "tensor_copy_dynamic_dst tensor_copy_predicated reciprocal iota dropout "
                  "affine_select range_select select_reduce sequence_bounds memset bn_stats "
                  "bn_aggr local_gather dma_copy dma_transpose max8 nc_find_index8 "
                  "nc_match_replace8 nc_stream_shuffle")

_HWDGE = ("dge_mode=nisa.dge_mode.hwdge", "hardware DGE is NeuronCore-v3 or later (reference: "
          "dge_mode parameter)")
#: Items of NeuronCore-v2 with NeuronCore-v3-only modes, and whole NeuronCore-v3-only items.
_V3_MODES = {
    "dma_copy": (_HWDGE,),
    "dma_transpose": (_HWDGE,),
    "nc_matmul": (("perf_mode=... (e.g. double_row_gen3)", "the Tensor Engine performance "
                   "modes are gen3 (NeuronCore-v3) features"),),
}
_V3_ITEMS = {
    "range_select": "the reference says: available only on NeuronCore-v3 and beyond",
}


def build() -> tuple[Item, ...]:
    """The inventory, in reference order."""
    out: list[Item] = []
    out += _items(NKI, "decorator", "jit benchmark profile baremetal simulate_kernel")
    out.append(Item(NKI, "tensor", "class"))
    out += [Item(NKI, f"tensor.{n}", k) for n, k in TENSOR_MEMBERS.items()]
    for section, names in NL_SECTIONS.items():
        out += [Item(NL, n, _OBJECT_KIND.get(n, _NL_KIND.get(section, "function")))
                for n in names.split()]
    out += [Item(NL, f"tile_size.{n}", "constant") for n in TILE_SIZE_ATTRS.split()]
    out.append(Item(NL, "fp32.min", "constant"))
    for n in NISA_FUNCTIONS.split():
        if n in _V3_ITEMS:
            out.append(Item(NISA, n, "function", V3_ONLY, note=_V3_ITEMS[n]))
        else:
            out.append(Item(NISA, n, "function", v3_modes=_V3_MODES.get(n, ())))
    out += _items(NISA, "enum", "engine reduce_cmd dge_mode nc_version")
    out.append(Item(NISA, "get_nc_version", "function"))
    out += _items(NCC, "allocator", "sbuf.alloc sbuf.mod_alloc sbuf.auto_alloc psum.alloc "
                  "psum.mod_alloc psum.auto_alloc")
    out += _items(NCC, "decorator", "skip_middle_end_transformations enable_stack_allocator "
                  "force_auto_alloc")
    out += _items(NT, "type", "tensor mutable_tensor")
    return tuple(out)


#: Items of NeuronCore-v2 that the simulator does not model, and why (calling one is a clear
#: SimulatorError, checked by test_api_surface).
NOT_SIMULATED = {
    "nki.language.all_reduce": "collective communication between NeuronCores: the simulator "
                               "models one NeuronCore",
}

INVENTORY: tuple[Item, ...] = build()
BY_NAME = {i.qualname: i for i in INVENTORY}
assert len(BY_NAME) == len(INVENTORY), "duplicate inventory entries"
