"""Randomness: ``nl.random_seed``, ``nl.rand``, ``nl.dropout`` and ``nisa.dropout``.

The generator state is a [1, 1] uint32 SBUF tile of the launch (``rng_state``, created on first
use, seed 0): ``random_seed`` writes it, every random instruction reads it (role ``seed``), so
the timing model orders them like any other data dependency. Each random instruction also gets
a ``counter`` attr, its number among the random instructions issued since the last
``random_seed``; the values layer (``values/semantics/rng.py``) turns ``(seed, counter)`` into numbers.
Same kernel, inputs and seed: same numbers. They differ from the hardware's, whose generator is
not documented.

Engines and costs: ``nisa.dropout`` is a VectorE instruction, ``max(MIN_II, N)`` (documented).
``nl.rand`` and ``nl.random_seed`` have no ``nki.isa`` instruction on NeuronCore-v2; we record them
on VectorE with the same one-input cost (``max(MIN_II, N)``, N = elements per partition of the
result; a seed is one element, so ``MIN_II``), an assumption listed in docs/frontend.md.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes as _dt
from ..errors import KernelError, ShapeError
from ..program.ir import Engine, MemSpace, Opcode
from . import tracer as _tracer
from .operands import issue, issue_into, scalar_value, shape_arg
from .tensors.tensor import NkiTensor

_KEY = "rng"


def _state(tr: _tracer.Tracer) -> list[Any]:
    """[state tile view, counter] of the launch, created (seed 0) on first use."""
    st = tr.lang_state.get(_KEY)
    if st is None:
        decl = tr.new_tensor(MemSpace.SBUF, (1, 1), np.dtype(np.uint32), name="rng_state",
                             values=np.zeros((1, 1), np.uint32))
        st = tr.lang_state[_KEY] = [NkiTensor.whole(decl), 0]
    return st  # type: ignore[return-value]


def _draw(tr: _tracer.Tracer) -> tuple[NkiTensor, int]:
    """The state tile and the counter of the next random instruction."""
    st = _state(tr)
    st[1] += 1
    return st[0], st[1] - 1


def random_seed(seed: Any, *, mask: Any = None, **_: Any) -> None:
    """Set the generator's seed: a 32-bit integer, or a [1, 1] tile holding one."""
    what = "random_seed"
    tr = _tracer.current(what)
    state = _state(tr)
    srcs: dict[str, NkiTensor] = {}
    attrs: dict[str, object] = {}
    if isinstance(seed, NkiTensor):
        if int(np.prod(seed.shape)) != 1 or seed.space is MemSpace.HBM:
            raise tr.fail(ShapeError, f"{what} seed: expected a [1, 1] tile in sbuf or psum (or an "
                          f"integer), found {list(seed.shape)} in {seed.space.value}")
        srcs["seed"] = seed if seed.ndim >= 2 else seed[:, None]
    else:
        value = scalar_value(seed, f"{what} seed")
        if not isinstance(value, int):
            raise tr.fail(KernelError, f"{what} seed: expected a 32-bit integer, found {value!r}")
        attrs["seed"] = value
    issue_into(what, Opcode.RANDOM_SEED, Engine.VECTOR, state[0], srcs, attrs, mask=mask)
    state[1] = 0


def rand(shape: Any, dtype: Any = np.float32, **_: Any) -> NkiTensor:
    """A tile of uniform random numbers in [0, 1)."""
    what = "rand"
    tr = _tracer.current(what)
    dims = tuple(int(s) for s in shape_arg(shape, f"{what} shape"))
    if len(dims) < 2 or not 1 <= dims[0] <= tr.config.num_partitions:
        raise tr.fail(ShapeError, f"{what}: expected a tile shape [P <= "
                      f"{tr.config.num_partitions}, F...], found {list(dims)}")
    state, counter = _draw(tr)
    return issue(what, Opcode.RAND, Engine.VECTOR, dims, _dt.to_dtype(dtype, f"{what} dtype"),
                 {"seed": state}, {"counter": counter})


def dropout(data: Any, prob: Any, *, mask: Any = None, dtype: Any = None,
            **_: Any) -> NkiTensor:
    """``nisa.dropout``: zero each element of ``data`` with probability ``prob`` (a scalar, or a
    [P, 1] tile of per-partition probabilities) on VectorE; kept elements are not rescaled."""
    what = "dropout"
    tr = _tracer.current(what)
    if not isinstance(data, NkiTensor):
        raise tr.fail(KernelError, f"{what} data: expected a tile, found {type(data).__name__}")
    srcs: dict[str, NkiTensor] = {"data": data}
    attrs: dict[str, object] = {}
    if isinstance(prob, NkiTensor):
        one = int(np.prod(prob.shape)) == 1
        if not one and (prob.shape[0] != data.shape[0] or int(np.prod(prob.shape[1:])) != 1):
            raise tr.fail(ShapeError, f"{what} prob: expected a scalar or a tile of shape "
                          f"[{data.shape[0]}, 1], found {list(prob.shape)}")
        srcs["prob"] = prob if one else prob.with_shape((prob.shape[0],) + (1,) * (
            prob.ndim - 1))
        attrs["prob"] = None
    else:
        p = scalar_value(prob, f"{what} prob")
        if not 0.0 <= float(p) <= 1.0:
            raise tr.fail(KernelError, f"{what} prob: expected a probability in [0, 1], found {p}")
        attrs["prob"] = float(p)
    out_dtype = _dt.to_dtype(dtype, f"{what} dtype") if dtype is not None else data.dtype
    state, counter = _draw(tr)
    srcs["seed"] = state
    attrs["counter"] = counter
    return issue(what, Opcode.DROPOUT, Engine.VECTOR, data.shape, out_dtype, srcs, attrs,
                 mask=mask)


def nl_dropout(x: Any, rate: Any, *, dtype: Any = None, mask: Any = None,
               **_: Any) -> NkiTensor:
    """``nl.dropout(x, rate)``: randomly zero elements of ``x`` (one ``nisa.dropout``)."""
    return dropout(x, rate, dtype=dtype, mask=mask)
