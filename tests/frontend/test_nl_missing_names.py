"""A name ``nl`` does not implement is an UnsupportedError that is also an AttributeError
(errors.UnsupportedAttributeError): ``hasattr`` and ``getattr(nl, name, default)`` work, and a
kernel using it gets the simulator's error at its line."""

from __future__ import annotations

import numpy as np
import pytest

import neuroncore_sim as ncs
import neuroncore_sim.nki.language as nl
from neuroncore_sim.errors import UnsupportedAttributeError, UnsupportedError


def test_hasattr_and_getattr_default_see_a_missing_name() -> None:
    assert not hasattr(nl, "not_an_nki_name")
    assert getattr(nl, "not_an_nki_name", 3) == 3
    assert hasattr(nl, "exp") and hasattr(nl, "affine_range")  # (NKI names are there)


def uses_a_missing_name(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.not_an_nki_name(nl.load(x)))  # BAD
    return out


def uses_nki_names(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.exp(nl.load(x)))
    return out


def test_a_kernel_using_it_gets_the_error_at_its_line() -> None:
    x = np.zeros((128, 8), np.float32)
    with pytest.raises(UnsupportedError) as info:
        ncs.simulate(uses_a_missing_name, x, timing=False)
    assert isinstance(info.value, UnsupportedAttributeError)
    assert isinstance(info.value, AttributeError)
    line = next(i for i, t in enumerate(open(__file__).read().splitlines(), 1) if "# BAD" in t)
    assert str(info.value).startswith(f"test_nl_missing_names.py:{line}: nl.not_an_nki_name is "
                                      "not supported by neuroncore_sim")
    res = ncs.simulate(uses_nki_names, x, timing=False)
    np.testing.assert_allclose(res.outputs[0], np.exp(x))


def test_nisa_missing_and_v3_names_are_also_attribute_errors() -> None:
    import neuroncore_sim.nki.isa as nisa
    from neuroncore_sim.errors import UnsupportedError
    assert not hasattr(nisa, "no_such_instruction")
    assert getattr(nisa, "topk", None) is None  # NeuronCore-v3 only
    with pytest.raises(UnsupportedError, match="nisa.topk is not available on NeuronCore-v2"):
        nisa.topk
    assert "np" not in dir(nisa) and "nc_matmul" in dir(nisa)
