"""Issue 19 item 12: a kernel written for the newer NKI API (``import nki``, destination-first
instructions) is told so, instead of a bare ModuleNotFoundError or TypeError."""

from __future__ import annotations

import numpy as np
import pytest

import neuroncore_sim as ncs
import neuroncore_sim.nki as nki
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl
from neuroncore_sim.errors import KernelError

NEWER = r"this looks like the newer NKI API .* neuronxcc.nki API of NeuronCore-v2"


def test_import_nki_gives_this_simulator_when_no_real_nki_is_installed():
    # ``nki`` is also the SDK's newer standalone package name; kernels of the NeuronCore-v2
    # API import it too (``from nki.language.constants import sizeinbytes``), so it is an alias
    ncs.install_neuronxcc_alias()
    import nki as standalone
    assert standalone is nki


def test_destination_first_instruction_gets_the_hint():
    @nki.jit
    def newer(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.load(a)
        d = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(d, t, t, op=nl.add)  # BAD
        nl.store(out, value=d)
        return out

    with pytest.raises(KernelError, match=rf"test_newer_nki_api.py:\d+: nisa.tensor_tensor: "
                                          rf".*{NEWER}"):
        newer(np.zeros((128, 4), np.float32))


def test_dst_keyword_gets_the_hint_but_dma_copy_keeps_its_own_dst():
    @nki.jit
    def newer(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        d = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=d, src=a)  # v2 API: fine
        nisa.tensor_copy(dst=out, src=d)  # BAD
        return out

    with pytest.raises(KernelError, match=rf"nisa.tensor_copy: .*'dst'.*{NEWER}"):
        newer(np.zeros((128, 4), np.float32))


def test_a_plain_wrong_keyword_gets_no_newer_api_hint():
    @nki.jit
    def typo(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nisa.tensor_copy(nl.load(a), dtyp=nl.float32))
        return out

    with pytest.raises(KernelError) as e:
        typo(np.zeros((128, 4), np.float32))
    assert "'dtyp'" in str(e.value) and "newer NKI API" not in str(e.value)
