"""Values of the random-number instructions: ``random_seed``, ``rand`` and ``dropout``.

NeuronCore-v2's hardware generator is not documented, so the numbers differ from the hardware's;
what the simulator guarantees is determinism and the documented distribution. The generator
state is a [1, 1] uint32 tile (the ``seed`` source every random instruction reads, written by
``random_seed``), and each random instruction carries a ``counter`` (how many random
instructions ran since the seed was set, counted by the front end in program order). Its
numbers are those of the Philox counter-based generator keyed by ``(seed, counter)``, drawn in
the C order of the output tile. So the same kernel, inputs and seed give the same values, and
re-setting a seed repeats the sequence, as the NKI docs promise.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from ...errors import KernelError, expected
from ...program.ir import Engine, Opcode
from .core import Arrays, Outs, Semantic, f32

__all__ = ["uniform", "random_seed", "rand", "dropout"]

_SEED_MASK = 0xFFFFFFFF


def uniform(seed: int, counter: int, shape: tuple[int, ...]) -> np.ndarray:
    """float32 numbers in [0, 1) of generator ``(seed, counter)``, C order over ``shape``."""
    key = np.array([int(seed) & _SEED_MASK, int(counter)], dtype=np.uint64)
    return np.random.Generator(np.random.Philox(key=key)).random(shape, dtype=np.float32)


def _seed(srcs: Arrays) -> int:
    return int(np.asarray(srcs["seed"]).reshape(-1)[0])


def random_seed(srcs: Arrays, attrs: Mapping, outs: Outs, engine: Engine) -> dict:
    """The generator state = the seed (tile value or attr), as a 32-bit unsigned integer."""
    if "seed" in srcs:
        value = np.asarray(srcs["seed"]).reshape(-1)
        if value.size != 1:
            raise KernelError(expected("random_seed seed", "one value ([1, 1] tile)",
                                       f"{value.size} values"))
        seed = int(f32(value)[0]) if value.dtype.kind == "f" else int(value[0])
    else:
        seed = int(attrs["seed"])  # type: ignore[call-overload]
    return {"out": np.full(outs["out"].shape, seed & _SEED_MASK, dtype=np.int64)}


def rand(srcs: Arrays, attrs: Mapping, outs: Outs, engine: Engine) -> dict:
    """Uniform [0, 1) numbers."""
    return {"out": uniform(_seed(srcs), attrs["counter"], outs["out"].shape)}  # type: ignore


def dropout(srcs: Arrays, attrs: Mapping, outs: Outs, engine: Engine) -> dict:
    """Zero each element with probability ``prob`` (a scalar or one value per partition); the
    kept elements are unchanged (nisa.dropout does not rescale)."""
    data = srcs["data"]
    u = uniform(_seed(srcs), attrs["counter"], data.shape)  # type: ignore[arg-type]
    if "prob" in srcs:
        prob = f32(srcs["prob"]).reshape((data.shape[0],) + (1,) * (data.ndim - 1))
    else:
        prob = np.float32(attrs["prob"])  # type: ignore[arg-type]
    keep = u >= prob
    dt = outs["out"].dtype
    if data.dtype == dt:
        return {"out": np.where(keep, data, np.zeros((), dt))}
    return {"out": np.where(keep, f32(data), np.float32(0.0))}


#: Opcode -> meaning, merged into the package's ``SEMANTICS``.
RANDOM_SEMANTICS: dict[Opcode, Semantic] = {Opcode.RANDOM_SEED: random_seed, Opcode.RAND: rand, Opcode.DROPOUT: dropout}
