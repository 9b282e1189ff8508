"""Layer mapping with the Hugging Face ``kernels`` package: a model layer declared with
``use_kernel_forward_from_hub`` is replaced by ``kernelize(model, device="cpu", mode=...)`` with
an NKI-kernel layer from a local layer repository (neuroncore_sim.frameworks.layers), forward
and backward checked against the original layer; a layer without a backward kernel falls back
to the original forward in training mode. The repository loads whichever torch build is
installed (CPU, or CUDA without a GPU: what `pip install ".[torch,kernels]"` gives on Linux).
Skipped without torch or kernels (the `kernels` extra); scripts/check_frameworks_extras.py
runs these in a fresh venv made by that extra."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

_EXTRA = 'needs the kernels extra: pip install ".[torch,kernels]"'
torch = pytest.importorskip("torch", reason=f"torch is not installed; {_EXTRA}")
kernels = pytest.importorskip("kernels", reason=f"kernels is not installed; {_EXTRA}")
if not hasattr(kernels, "kernelize"):  # the repository's own kernels/ folder, not the library
    pytest.skip(f"`import kernels` finds this repository's kernels/ folder; {_EXTRA}",
                allow_module_level=True)

import neuroncore_sim as ncs  # noqa: E402
from neuroncore_sim.errors import KernelError  # noqa: E402
from neuroncore_sim.frameworks.layers import nki_layer, write_layer_repository  # noqa: E402

LAYERS = textwrap.dedent('''
    import neuroncore_sim.nki.language as nl
    from neuroncore_sim import nki
    from neuroncore_sim.frameworks.layers import nki_layer


    @nki.jit
    def silu_and_mul(x):
        d = x.shape[1] // 2
        out = nl.ndarray((x.shape[0], d), dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.load(x)
        nl.store(out, value=nl.multiply(nl.silu(t[:, 0:d]), t[:, d:2 * d]))
        return out


    @nki.jit
    def silu_and_mul_bwd(x, g):
        d = x.shape[1] // 2
        dx = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        t, gr = nl.load(x), nl.load(g)
        nl.store(dx[:, 0:d], value=nl.multiply(nl.multiply(gr, t[:, d:2 * d]),
                                               nl.silu_dx(t[:, 0:d])))
        nl.store(dx[:, d:2 * d], value=nl.multiply(gr, nl.silu(t[:, 0:d])))
        return dx


    SiluAndMul = nki_layer(silu_and_mul, silu_and_mul_bwd, name="SiluAndMul")
    SiluAndMulInference = nki_layer(silu_and_mul, name="SiluAndMulInference")
''')


def _model(layer_name):
    @kernels.use_kernel_forward_from_hub(layer_name)
    class SiluAndMul(torch.nn.Module):
        def forward(self, x):
            d = x.shape[-1] // 2
            return torch.nn.functional.silu(x[..., :d]) * x[..., d:]

    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(32, 64), SiluAndMul(), torch.nn.Linear(32, 8))


def _kernelize(model, tmp_path, repo_layer, mode):
    repo = write_layer_repository(tmp_path / "repo", LAYERS)
    mapping = {"SiluAndMul": {"cpu": kernels.LocalLayerRepository(repo_path=repo,
                                                                    layer_name=repo_layer)}}
    with kernels.use_kernel_mapping(mapping):
        return kernels.kernelize(model, device="cpu", mode=mode)


def _reference(model, x):
    ref = _model("Unmapped")
    ref.load_state_dict(model.state_dict())
    xr = x.detach().clone().requires_grad_()
    out = ref(xr)
    out.sum().backward()
    return out.detach(), xr.grad


def test_kernelize_training_maps_layer_to_nki_forward_and_backward(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    model = _kernelize(_model("SiluAndMul"), tmp_path, "SiluAndMul", kernels.Mode.TRAINING)
    x = torch.randn(2, 64, 32).requires_grad_()  # [batch, seq, hidden]: 128 rows
    with ncs.profile_session(model=model) as s:
        out = model(x)
        out.sum().backward()
    want, want_grad = _reference(model, x)
    torch.testing.assert_close(out.detach(), want, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(x.grad, want_grad, rtol=1e-4, atol=1e-5)
    assert [r.kernel for r in s.launches] == ["silu_and_mul", "silu_and_mul_bwd"]
    assert s.launches[0].layer == "Sequential/1"


def test_repository_loads_for_this_torch_build_and_for_cpu(tmp_path, monkeypatch):
    """kernels picks the variant by the torch build's backend (a CUDA build is "cuda" without
    a GPU), and also loads the CPU one on request: both are ours."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    repo = write_layer_repository(tmp_path / "repo", LAYERS)
    system = kernels.get_local_kernel(repo)  # the backend torch was built for
    cpu = kernels.get_local_kernel(repo, backend="cpu")
    build = "cuda" if torch.version.cuda else "rocm" if torch.version.hip else "cpu"
    assert Path(system.__file__).parent.name == f"torch-{build}"
    assert Path(cpu.__file__).parent.name == "torch-cpu"
    for module in (system, cpu):
        assert module.layers.SiluAndMul.has_backward
        assert not module.layers.SiluAndMulInference.has_backward


def test_two_repositories_in_one_process_keep_their_own_layers(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    first = kernels.get_local_kernel(write_layer_repository(tmp_path / "a", LAYERS))
    second = kernels.get_local_kernel(write_layer_repository(tmp_path / "b", "ONLY = 1\n"))
    assert hasattr(first.layers, "SiluAndMul") and not hasattr(second.layers, "SiluAndMul")
    assert second.layers.ONLY == 1


def test_layer_without_backward_falls_back_in_training_mode(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    x = torch.randn(128, 32)
    inference = _kernelize(_model("SiluAndMul"), tmp_path, "SiluAndMulInference",
                           kernels.Mode.INFERENCE)
    with ncs.profile_session() as s:
        out = inference(x)
    assert [r.kernel for r in s.launches] == ["silu_and_mul"]
    torch.testing.assert_close(out.detach(), _reference(inference, x)[0], rtol=1e-5, atol=1e-5)
    training = _kernelize(_model("SiluAndMul"), tmp_path, "SiluAndMulInference",
                          kernels.Mode.TRAINING)
    with ncs.profile_session() as s:
        training(x)
    assert s.launches == []  # kernels kept the original forward: no backward kernel


def test_nki_layer_refuses_non_kernels():
    with pytest.raises(KernelError, match=r"nki_layer forward_kernel.*expected an NKI kernel"):
        nki_layer(3)
