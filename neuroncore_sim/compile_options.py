"""neuronx-cc's compile options and the compile stage's switches (:class:`CompileOptions`), the
``[compiler]`` table of a config (:mod:`neuroncore_sim.config`), and the toolchains they can stand
for."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from .errors import ConfigError

#: neuronx-cc releases whose behaviour the compile options can stand for -> the options that differ
#: from CompileOptions' defaults. Setting ``toolchain`` sets these unless they are given too.
#: 2.20: SDK 2.20 / neuronx-cc 2.15 (2024), DGE on for kernel inputs and outputs by default
#: (AWS's tutorial logs: "DGE ON Levels: {'scalar_dynamic_offset', 'io'}"; calibration.md s. 3).
#: 2.26: SDK 2.26, the newest toolchain that compiles ``neuronxcc.nki`` kernels for Trn1 (the
#: defaults). 2.27: --auto-cast defaults to none (neuronx-cc release notes, SDK 2.27).
TOOLCHAINS: dict[str, dict[str, object]] = {
    "2.20": {"dge": True},
    "2.26": {},
    "2.27": {"auto_cast": "none"},
}

#: neuronx-cc's ``--auto-cast`` values (which operations' fp32 inputs it casts to bf16).
AUTO_CAST_MODES = ("none", "matmult", "all")


@dataclass(frozen=True, kw_only=True, slots=True)
class CompileOptions:
    """What neuronx-cc is asked to do, and which of its behaviours the compile stage models.

    The first fields are neuronx-cc's own options (``--disable-dge``, ``--auto-cast``); the
    rest switch one pass of :mod:`neuroncore_sim.compiler` each (all on by default: off shows
    a kernel as written, the pass's test shows what it changes). ``toolchain`` names the
    neuronx-cc release whose behaviour the options stand for: setting it (``toolchain=2.20``)
    sets that release's defaults (:data:`TOOLCHAINS`) for the options not given with it.
    docs/model.md ("Compile stage") lists each pass with its source.
    """

    toolchain: str = "2.26"
    #: Descriptors of the DMAs of kernel inputs and outputs generated at run time (DGE; on
    #: NeuronCore-v2 software DGE on GpSimd) instead of precomputed on the host.
    dge: bool = False
    #: ``--auto-cast``: "none", "matmult" (fp32 matmul inputs run as bf16) or "all".
    auto_cast: str = "matmult"
    fold_psum_zeros: bool = True
    fold_zero_adds: bool = True
    fold_copies: bool = True
    hoist_invariants: bool = True
    balance_engines: bool = True
    vectorize: bool = True
    merge_repeated_loads: bool = True
    keep_resident_loads: bool = True
    reorder: bool = True
    order_dma_triggers: bool = True

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            want = str if f.type == "str" else bool
            if type(value) is not want:
                raise ConfigError(f"compile option {f.name!r} must be "
                                  f"{'a string' if want is str else 'true or false'}, found "
                                  f"{value!r}")
        if self.toolchain not in TOOLCHAINS:
            raise ConfigError(f"compile option 'toolchain' must be one of "
                              f"{', '.join(TOOLCHAINS)}, found {self.toolchain!r}")
        if self.auto_cast not in AUTO_CAST_MODES:
            raise ConfigError(f"compile option 'auto_cast' must be one of "
                              f"{', '.join(AUTO_CAST_MODES)}, found {self.auto_cast!r}")

    @staticmethod
    def names() -> tuple[str, ...]:
        """The option names, in declaration order."""
        return tuple(f.name for f in dataclasses.fields(CompileOptions))
