"""Running small kernels for the conformance tests."""

from __future__ import annotations

import importlib
from typing import Any, Callable

import numpy as np

import neuroncore_sim as ncs
import neuroncore_sim.nki.language as nl
from exec_helpers import chain_lengths

#: Our module for each NKI module of the inventory.
OUR_MODULE = {"nki": "neuroncore_sim.nki", "nki.language": "neuroncore_sim.nki.language",
              "nki.isa": "neuroncore_sim.nki.isa", "nki.compiler": "neuroncore_sim.nki.compiler",
              "nki.typing": "neuroncore_sim.nki.typing"}


def resolve(module: str, name: str) -> Any:
    """Our object for ``module.name`` (dotted names walk attributes)."""
    obj: Any = importlib.import_module(OUR_MODULE[module])
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def run(kernel: Callable[..., Any], *arrays: np.ndarray) -> Any:
    """Trace and run ``kernel`` on numpy inputs; its outputs (one array, or a list).

    Every conformance kernel also runs through the reference executor (the spec alone, one
    instruction at a time: ``functional="reference"``), and the two must agree bit for bit
    (issue 13 item 3): the conformance kernels have no merged ``nc_matmul`` chain (at most 128
    products per element), the one case where the fast path may sum in another order
    (tests/values/test_reference_executor.py checks those within their bound).
    """
    fast = ncs.trace(kernel, *[np.copy(a) for a in arrays])
    ref = ncs.trace(kernel, *arrays, functional="reference")
    assert chain_lengths(ref.program) <= 128, "a merged nc_matmul chain: not bit for bit"
    assert len(fast.outputs) == len(ref.outputs)
    for got, want in zip(fast.outputs, ref.outputs):
        got, want = np.asarray(got), np.asarray(want)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want, err_msg="fast vs reference executor")
    outs = fast.outputs
    return outs[0] if len(outs) == 1 else outs


def apply(fn: Callable[..., Any], *arrays: np.ndarray, out_dtype: Any = None) -> np.ndarray:
    """Load each array into SBUF, apply ``fn`` to the tiles, store and return the result."""
    def kernel(*hbm: Any) -> Any:
        tiles = [nl.load(h) for h in hbm]
        r = fn(*tiles)
        out = nl.ndarray(r.shape, dtype=out_dtype or r.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=r)
        return out
    return run(kernel, *arrays)


def tile_result(fn: Callable[..., Any], *arrays: np.ndarray) -> tuple[tuple[int, ...], Any]:
    """The shape and dtype of ``fn``'s tile result (traced, not stored)."""
    seen: dict[str, Any] = {}

    def kernel(*hbm: Any) -> Any:
        tiles = [nl.load(h) for h in hbm]
        r = fn(*tiles)
        seen["shape"], seen["dtype"] = tuple(r.shape), np.dtype(r.dtype)
        out = nl.ndarray(r.shape, dtype=r.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=r)
        return out
    run(kernel, *arrays)
    return seen["shape"], seen["dtype"]
