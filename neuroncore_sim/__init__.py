"""neuroncore_sim: a cycle-approximate simulator of the AWS NeuronCore-v2 for NKI kernels.

    import neuroncore_sim as ncs
    res = ncs.simulate(kernel, a, b, grid=(2, 2), config="trn1")
    res.outputs, res.latency_ns, res.events, res.summary()
"""

from . import errors
from .alias import install_neuronxcc_alias
from .config import INF2, PRESETS, TRN1, NeuronCoreConfig, load_config
from .errors import SimulatorError
from .result import SimResult
from .report.progress import tqdm_bar as _tqdm_bar
from .simulate import record_launches, set_progress_factory, simulate, trace
from .frameworks import layer, nki_call, profile_session

# simulate(progress=True) draws tqdm bars; the simulator itself only calls hooks (layering).
set_progress_factory(_tqdm_bar)

__all__ = ["simulate", "trace", "record_launches", "SimResult", "NeuronCoreConfig",
           "load_config", "TRN1", "INF2", "PRESETS", "install_neuronxcc_alias", "errors",
           "SimulatorError", "profile_session", "layer", "nki_call"]
__version__ = "0.1.0"
