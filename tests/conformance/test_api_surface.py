"""Every item of the NKI 2.26 API inventory exists in our nki modules, or is refused clearly."""

from __future__ import annotations

import numpy as np
import pytest

import neuroncore_sim as ncs
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl
from neuroncore_sim.errors import SimulatorError

from .api_inventory import INVENTORY, MODULES, NOT_SIMULATED, V2, V3_ONLY
from .helpers import resolve

#: Items our modules lack today, and what is missing (strict xfails: fixing one fails the test,
#: so this list and docs/compatibility.md shrink together).
KNOWN_GAPS = {
    "nki.language.tile_size.psum_min_align": "the attribute is missing (the reference gives no "
                                             "value; the simulator has not chosen one)",
    "nki.language.tile_size.sbuf_min_align": "the attribute is missing (the reference gives no "
                                             "value; the simulator has not chosen one)",
}


def _case(item):
    marks = [pytest.mark.api(item.qualname)]
    if item.qualname in KNOWN_GAPS:
        marks.append(pytest.mark.xfail(strict=True, reason=KNOWN_GAPS[item.qualname]))
    return pytest.param(item, marks=marks, id=item.qualname)


_V2 = [_case(i) for i in INVENTORY if i.availability == V2 and i.qualname not in NOT_SIMULATED]
_V3 = [i for i in INVENTORY if i.availability == V3_ONLY]


@pytest.mark.parametrize("item", _V2)
def test_item_exists(item):
    obj = resolve(item.module, item.name)
    if item.kind in ("function", "decorator", "iterator", "allocator"):
        assert callable(obj), f"{item.qualname} is not callable"
    if item.kind == "dtype":
        assert np.dtype(obj).itemsize in (1, 2, 4)


def test_inventory_has_every_reference_section():
    # Counts of the 2.26.1 index pages: nki 5 decorators + tensor with 10 members; nki.language
    # 120 listed names (dtypes as on the common-fields page) + 9 attributes of tile_size/fp32;
    # nki.isa 32 instructions + 4 enums + get_nc_version; nki.compiler 9; nki.typing 2.
    per_module = {m: sum(i.module == m for i in INVENTORY) for m in MODULES}
    assert per_module == {"nki": 16, "nki.language": 129, "nki.isa": 37, "nki.compiler": 9,
                          "nki.typing": 2}


@pytest.mark.parametrize("item", _V3, ids=lambda i: i.qualname)
def test_v3_only_item_is_a_clear_error(item, request):
    request.node.add_marker(pytest.mark.api(item.qualname))
    fn = resolve(item.module, item.name)

    def kernel(a):
        t = nl.load(a)
        fn(on_true_tile=t, comp_op0=nl.greater_equal, comp_op1=nl.less, bound0=t, bound1=t)
        return a

    with pytest.raises(SimulatorError, match=r"NeuronCore-v3.*|.*NeuronCore-v2") as e:
        ncs.trace(kernel, np.zeros((4, 8), np.float32))
    assert "test_api_surface.py:" in str(e.value), "the error names the kernel's line"


@pytest.mark.api("nki.language.all_reduce")
def test_all_reduce_is_a_clear_error():
    assert "nki.language.all_reduce" in NOT_SIMULATED

    def kernel(a):
        t = nl.load(a)
        nl.all_reduce(t, op=np.add, program_axes=[0])
        return a

    with pytest.raises(SimulatorError, match="all_reduce") as e:
        ncs.trace(kernel, np.zeros((4, 8), np.float32))
    assert "test_api_surface.py:" in str(e.value)


@pytest.mark.api("nki.isa.dma_copy")
def test_dma_copy_hwdge_is_a_clear_error():
    def kernel(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=a, dge_mode=nisa.dge_mode.hwdge)
        return out

    with pytest.raises(SimulatorError, match="NeuronCore-v2"):
        ncs.trace(kernel, np.zeros((4, 8), np.float32))


@pytest.mark.api("nki.isa.dma_copy")
def test_dma_copy_swdge_works():
    def kernel(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=a, dge_mode=nisa.dge_mode.swdge)
        return out

    a = np.arange(32, dtype=np.float32).reshape(4, 8)
    np.testing.assert_array_equal(ncs.trace(kernel, a).outputs[0], a)


@pytest.mark.parametrize("name", ["exponential", "nc_matmul_mx", "quantize_mx", "rng"])
def test_later_sdk_instruction_is_a_simulator_error_not_attribute_error(name):
    # Names of later SDKs' NeuronCore-v3+ instructions: a SimulatorError, never AttributeError.
    with pytest.raises(SimulatorError, match="NeuronCore-v2"):
        getattr(nisa, name)


def test_unknown_nisa_name_is_a_simulator_error():
    with pytest.raises(SimulatorError, match="not supported"):
        getattr(nisa, "no_such_instruction")
