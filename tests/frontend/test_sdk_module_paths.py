"""The Neuron SDK's deeper module paths real kernels import, under the neuronxcc alias:
constants and iterator modules give the public objects; collectives (nccl) and private SDK
modules import, and using one of their names is an UnsupportedError at the kernel line."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import neuroncore_sim as ncs
from kernel_checks import expect_error
from neuroncore_sim.errors import UnsupportedError


@pytest.fixture(autouse=True)
def alias():
    ncs.install_neuronxcc_alias()


def test_constants_and_isa_paths_give_the_public_objects():
    lc = importlib.import_module("neuronxcc.nki.language.constants")
    ic = importlib.import_module("neuronxcc.nki.isa.constants")
    ni = importlib.import_module("neuronxcc.nki.isa.neuron_isa")
    it = importlib.import_module("neuronxcc.nki.language.iterators")
    import neuronxcc.nki.isa as nisa
    import neuronxcc.nki.language as nl
    assert ic.oob_mode is nisa.oob_mode and ni.dma_copy is nisa.dma_copy
    assert it.affine_range is nl.affine_range
    assert [lc.sizeinbytes(t) for t in (np.float32, nl.bfloat16, nl.float8_e4m3, np.int16)] \
        == [4, 2, 1, 2]

    def kernel(a):
        # a free size bounded by bytes, as kernels size their tiles with sizeinbytes
        n = 256 // lc.sizeinbytes(a.dtype)
        out = nl.ndarray((128, n), dtype=a.dtype, buffer=nl.shared_hbm)
        with it.sync_program(()):
            nl.store(out, value=nl.multiply(nl.load(a[:, 0:n]), 2.0))
        return out

    a = np.arange(128 * 100, dtype=np.float32).reshape(128, 100)
    np.testing.assert_array_equal(ncs.simulate(kernel, a, timing=False).outputs[0],
                                  2 * a[:, :64])


def test_collectives_and_private_names_import_but_fail_clearly_when_used():
    nccl = importlib.import_module("neuronxcc.nki.nccl")
    private = importlib.import_module("neuronxcc.nki._private_kernels.some_kernel")

    def uses_nccl(a):
        nccl.all_reduce(op=np.add, srcs=[a], dsts=[a])  # BAD

    def uses_private(a):
        private.helper(a)  # BAD

    expect_error(UnsupportedError, r"nki.nccl.all_reduce: collective communication between "
                 r"NeuronCores is not simulated", uses_nccl, np.zeros((4, 4), np.float32))
    expect_error(UnsupportedError, r"_private_kernels.some_kernel.helper: a private Neuron SDK "
                 r"API", uses_private, np.zeros((4, 4), np.float32))
    with pytest.raises(UnsupportedError, match="expected no program axes"):
        importlib.import_module("neuronxcc.nki.language.iterators").sync_program((1,)).__enter__()


def test_an_unknown_typing_name_is_a_clear_error_not_attribute_error():
    import neuroncore_sim.nki.typing as nt
    assert nt.mutable_tensor is nt.tensor  # the 2.2x reference's names are there
    with pytest.raises(UnsupportedError, match=r"nt.mutable is not supported by neuroncore_sim"):
        nt.tensor[nt.mutable]


KERNEL_FILE = '''
import neuronxcc.nki.language as nl
from neuronxcc import nki


@nki.jit
def triple(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.multiply(nl.load(a), 3.0))
    return out
'''


def test_bundled_examples_resolve_to_a_checkout_on_the_import_path(tmp_path, monkeypatch):
    """``neuronxcc.nki.docs.examples.<folder>.<module>`` (the SDK's example scripts import
    their kernels so) is the file of an examples checkout next to the running script."""
    folder = tmp_path / "examples" / "tripling"
    folder.mkdir(parents=True)
    (folder / "triple_kernel.py").write_text(KERNEL_FILE)
    monkeypatch.syspath_prepend(str(folder))  # as running examples/tripling/script.py does
    name = "neuronxcc.nki.docs.examples.tripling.triple_kernel"
    monkeypatch.delitem(__import__("sys").modules, name, raising=False)
    mod = importlib.import_module(name)
    a = np.arange(128 * 4, dtype=np.float32).reshape(128, 4)
    np.testing.assert_array_equal(mod.triple(a), 3 * a)
    assert mod.__file__ == str(folder / "triple_kernel.py")


def test_a_bundled_example_not_found_says_where_it_was_looked_for():
    with pytest.raises(ModuleNotFoundError, match=r"No module named 'neuronxcc.nki.docs.examples"
                       r".no_such_folder.kern': the Neuron SDK's bundled example kernels are "
                       r"AWS's code, not part of neuroncore_sim; expected no_such_folder/kern.py"):
        importlib.import_module("neuronxcc.nki.docs.examples.no_such_folder.kern")
    with pytest.raises(ModuleNotFoundError):  # other names under docs are not there at all
        importlib.import_module("neuronxcc.nki.docs.tutorials")
