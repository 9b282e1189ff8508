"""``nki.typing`` (nt): tensor type annotations, also usable as value-less kernel inputs.

``nt.tensor[[128, 512], nl.float32]`` describes an HBM tensor. Passed as a kernel argument it
stands for an input whose values are not needed: timing-only runs (``functional=False``,
``nki.benchmark``) accept it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..dtypes import to_dtype
from ..errors import KernelError


@dataclass(frozen=True)
class TensorType:
    """A tensor's shape and dtype without values."""

    shape: tuple[int, ...]
    dtype: np.dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)


class tensor:  # noqa: N801  (name as in nki.typing)
    """``nt.tensor[shape, dtype]``: a :class:`TensorType`."""

    def __class_getitem__(cls, item: Any) -> TensorType:
        if not isinstance(item, tuple) or len(item) != 2:
            raise KernelError(f"nt.tensor: expected nt.tensor[[shape], dtype], found {item!r}")
        shape, dtype = item
        shape = tuple(int(s) for s in (shape if isinstance(shape, (tuple, list)) else (shape,)))
        return TensorType(shape, to_dtype(dtype, "nt.tensor dtype"))


mutable_tensor = tensor


def __getattr__(name: str) -> Any:
    # a name NKI's nki.typing may have that we do not (nt.mutable, a trn2-era marker for
    # parameters a kernel updates in place): a clear error, never Python's AttributeError
    if name.startswith("__"):
        raise AttributeError(name)
    from ..errors import UnsupportedError, caller_loc
    raise UnsupportedError(f"nt.{name} is not supported by neuroncore_sim (expected one of "
                           f"tensor, mutable_tensor of the 2.2x nki.typing reference)", caller_loc())
