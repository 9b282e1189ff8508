"""write_layer_repository lays out one noarch build variant per system backend of the ``kernels``
library (so a CUDA build of torch, which ``kernels`` calls a "cuda" system even without a GPU,
finds a variant as a CPU build does), and refuses a layers source it cannot read. Needs neither
torch nor kernels; tests/frameworks/test_frameworks_layers.py loads the repository with them."""

from __future__ import annotations

import json

import pytest

from neuroncore_sim.errors import KernelError, SimulatorError
from neuroncore_sim.frameworks.layers import NOARCH_BACKENDS, write_layer_repository

SOURCE = "X = 1\n"


def test_every_backend_gets_a_noarch_variant_with_its_metadata(tmp_path):
    root = write_layer_repository(tmp_path / "repo", SOURCE, name="my-layers")
    variants = sorted(p.name for p in (root / "build").iterdir())
    assert variants == sorted(f"torch-{b}" for b in NOARCH_BACKENDS)
    assert {"torch-cpu", "torch-cuda", "torch-rocm", "torch-neuron"} <= set(variants)
    for backend, backend_type in NOARCH_BACKENDS.items():
        variant = root / "build" / f"torch-{backend}"
        assert (variant / "layers.py").read_text() == SOURCE
        assert "import layers" in (variant / "__init__.py").read_text()
        meta = json.loads((variant / "metadata.json").read_text())
        assert meta["backend"] == {"type": backend_type}
        assert meta["name"] == "my-layers" and meta["python-depends"] == []


def test_metadata_id_is_unique_per_layers_text_and_backend(tmp_path):
    """kernels imports a variant as the module named by its id, once per process: a second
    repository of other layers must not get the first one's module."""
    def ids(root):
        return {b: json.loads((root / "build" / f"torch-{b}" / "metadata.json").read_text())["id"]
                for b in NOARCH_BACKENDS}

    first = ids(write_layer_repository(tmp_path / "a", SOURCE, name="nki-layers"))
    same = ids(write_layer_repository(tmp_path / "b", SOURCE, name="nki-layers"))
    other = ids(write_layer_repository(tmp_path / "c", "X = 2\n", name="nki-layers"))
    assert first == same  # the same layers may share a module
    assert len(set(first.values())) == len(NOARCH_BACKENDS)
    assert not set(first.values()) & set(other.values())
    assert all(i.isidentifier() for i in first.values())


def test_layers_source_may_be_a_file(tmp_path):
    src = tmp_path / "my_layers.py"
    src.write_text(SOURCE)
    for given in (src, str(src)):
        root = write_layer_repository(tmp_path / "repo", given)
        assert (root / "build" / "torch-cuda" / "layers.py").read_text() == SOURCE


def test_missing_layers_file_is_a_clear_error(tmp_path):
    with pytest.raises(KernelError, match=r"layers_source; expected a \.py file .*"
                                          r"found '.*absent\.py', which is not a file") as err:
        write_layer_repository(tmp_path / "repo", str(tmp_path / "absent.py"))
    assert isinstance(err.value, SimulatorError)
    assert not (tmp_path / "repo").exists()  # nothing half-written


def test_layers_source_of_another_type_is_a_clear_error(tmp_path):
    with pytest.raises(KernelError, match=r"layers_source; expected .* found int"):
        write_layer_repository(tmp_path / "repo", 3)  # type: ignore[arg-type]
