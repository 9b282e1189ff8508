"""NKI kernels inside framework programs: JAX (``jax.jit``, ``jax.custom_vjp``), PyTorch
(``torch.autograd.Function``), the ``nki.FrameworkKernel`` custom-call config, and per-model
profile sessions. See docs/frameworks.md.

No framework is imported by this package: jax and torch are imported inside the functions that
need them, when the caller's program already uses them.
"""

from .config import FrameworkKernel, run_backend_config
from .jax_ops import nki_call
from .layers import nki_layer, write_layer_repository
from .profile import ProfileSession, layer, profile_session

__all__ = ["nki_call", "FrameworkKernel", "run_backend_config", "profile_session", "layer",
           "ProfileSession", "nki_layer", "write_layer_repository"]
