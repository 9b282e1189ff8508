"""``nki.language`` shows NKI's names only (issue 17 item 5): not the implementation's imports
and helpers, while every name NKI documents and we support is there."""

from __future__ import annotations

import pytest

import neuroncore_sim.nki.language as nl
from neuroncore_sim.frontend import language as impl
from neuroncore_sim.frontend.language import assignment, nlmath, tiles

#: The implementation: the facade frontend/language/__init__.py and the modules of its package.
IMPLEMENTATION = (impl, assignment, nlmath, tiles)


@pytest.mark.parametrize("name", ["np", "math", "Any", "Engine", "NkiTensor", "assign",
                                  "issue_into", "builtins"])
def test_implementation_names_are_hidden(name: str) -> None:
    assert any(name in vars(m) for m in IMPLEMENTATION)  # they exist in the implementation...
    assert not hasattr(nl, name)  # ...but nl does not show them
    assert name not in dir(nl)
    with pytest.raises(AttributeError, match=f"has no attribute '{name}'"):
        getattr(nl, name)


def test_nki_names_are_the_implementations_objects() -> None:
    for name in ("load", "store", "ndarray", "zeros", "affine_range", "tile_size", "psum",
                 "bfloat16", "exp", "matmul", "static_cast", "fp32"):
        assert getattr(nl, name) is getattr(impl, name)


def test_the_alias_gives_this_module() -> None:
    import sys

    import neuroncore_sim as ncs

    ncs.install_neuronxcc_alias()
    assert sys.modules["neuronxcc.nki.language"] is nl
