"""``frontend/alloc.py``: buffers and creation functions. ``nl.full`` fills each logical tile
with a memset; its ``fill_value`` is a scalar (a tile is a clear error at the kernel's line,
not a silent broadcast copy)."""

from __future__ import annotations

import numpy as np
import pytest

import neuroncore_sim as ncs
import neuroncore_sim.nki.language as nl
from neuroncore_sim.errors import KernelError


def full_blocks(x):
    out = nl.ndarray((3, 16, 8), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.full((3, nl.par_dim(16), 8), 2.5, dtype=nl.float32)
    for b in nl.affine_range(3):
        nl.store(out[b], value=nl.add(t[b], nl.load(x)))
    return out


def full_from_a_tile(x):
    out = nl.ndarray((16, 8), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.full((16, 8), nl.load(x), dtype=nl.float32)  # BAD
    nl.store(out, value=t)
    return out


def test_full_fills_every_block_with_the_scalar() -> None:
    x = np.arange(128, dtype=np.float32).reshape(16, 8)
    (got,) = ncs.trace(full_blocks, x).outputs
    np.testing.assert_array_equal(got, np.broadcast_to(x + 2.5, (3, 16, 8)))


def test_full_with_a_tile_fill_value_is_an_error_at_its_line() -> None:
    x = np.zeros((16, 8), np.float32)
    with pytest.raises(KernelError) as info:
        ncs.trace(full_from_a_tile, x)
    line = next(i for i, t in enumerate(open(__file__).read().splitlines(), 1) if "# BAD" in t)
    assert str(info.value).startswith(f"test_alloc.py:{line}: nl.full fill_value: expected a "
                                      "scalar, found a tile")


def test_the_allocation_module_is_below_nl() -> None:
    """nl's buffers and creation functions are alloc's objects (one definition)."""
    from neuroncore_sim.frontend import alloc

    for name in ("sbuf", "psum", "shared_hbm", "par_dim", "ndarray", "full", "zeros",
                 "tile_size", "shared_constant"):
        assert getattr(nl, name) is getattr(alloc, name)
