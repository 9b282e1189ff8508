"""PyTorch CPU tensors as kernel arguments and results (only where torch is installed).

Kernels written for ``nki.jit`` are often called with torch tensors. The simulator computes in
numpy, so a torch argument becomes a numpy array that *shares its memory* (bfloat16 through an
int16 view and ``ml_dtypes.bfloat16``), which also makes output-argument kernels update the
caller's tensor in place. Results of a call with torch arguments go back as torch tensors.

torch is never imported here: a torch tensor can only reach us if the caller has imported torch,
so ``sys.modules["torch"]`` is used. That keeps torch an optional, undeclared dependency.
"""

from __future__ import annotations

import sys
from typing import Any

import ml_dtypes
import numpy as np

from ..errors import KernelError


def is_torch(x: Any) -> bool:
    """True for a ``torch.Tensor``."""
    return type(x).__module__.split(".")[0] == "torch" and hasattr(x, "detach")


def to_numpy(t: Any) -> np.ndarray:
    """A CPU torch tensor as a numpy array sharing its memory."""
    torch = sys.modules["torch"]
    t = t.detach()
    if t.device.type != "cpu":
        raise KernelError(f"torch argument: expected a CPU tensor, found device {t.device}")
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    try:
        return t.numpy()
    except TypeError as e:
        raise KernelError(f"torch argument: dtype {t.dtype} has no numpy equivalent ({e})") \
            from None


def to_torch(a: np.ndarray) -> Any:
    """A numpy array as a torch tensor sharing its memory (bfloat16 through int16)."""
    torch = sys.modules["torch"]
    a = np.ascontiguousarray(a)
    if a.dtype == ml_dtypes.bfloat16:
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(a)


class TorchArgs:
    """The torch arguments of one call, converted to numpy; converts results back.

    Attributes:
        args, kwargs: the call's arguments with every torch tensor replaced by its numpy view.
        used: whether any argument was a torch tensor.
    """

    def __init__(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self._views: dict[int, Any] = {}  # id(numpy view) -> the caller's torch tensor
        self.args = tuple(self._convert(a) for a in args)
        self.kwargs = {k: self._convert(v) for k, v in kwargs.items()}
        self.used = bool(self._views)

    def _convert(self, x: Any) -> Any:
        if not is_torch(x):
            return x
        view = to_numpy(x)
        self._views[id(view)] = x
        return view

    def results(self, outputs: Any) -> Any:
        """``outputs`` (an array, a tuple of them, or None) as torch tensors when torch
        arguments were given; an updated argument comes back as the caller's own tensor."""
        if not self.used or outputs is None:
            return outputs
        if isinstance(outputs, tuple):
            return tuple(self.results(o) for o in outputs)
        if isinstance(outputs, np.ndarray):
            mine = self._views.get(id(outputs))
            return mine if mine is not None else to_torch(outputs)
        return outputs
