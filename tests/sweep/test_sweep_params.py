"""Sweep parameters are checked before any point runs (neuroncore_sim.sweep.point.KernelTarget.check):
a name no part of the kernel file takes, or a config value the hardware refuses, stops the sweep
at once with the valid names (the command line exits 2); good names run."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

from neuroncore_sim import cli
from neuroncore_sim.config import field_names
from neuroncore_sim.sweep.kernel_file import UsageError
from neuroncore_sim.sweep.point import SweepError, SweepParameterError
from neuroncore_sim.sweep.run import POINTS_FILE, sweep

# A kernel that leaves a marker file each time it runs, so a test can see that no point ran.
COUNTED = '''
import numpy as np
import neuroncore_sim.nki as nki
import neuroncore_sim.nki.language as nl

MARKER = None


@nki.jit
def kernel(x, tile=128):
    if MARKER:
        with open(MARKER, "a") as f:
            f.write("ran\\n")
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(x.shape[1] // tile):
        nl.store(out[:, i * tile:(i + 1) * tile],
                 value=nl.exp(nl.load(x[:, i * tile:(i + 1) * tile])))
    return out


def reference(x, tile=128):
    return np.exp(x)


def example_inputs(rows=128, width=512):
    return {"x": np.linspace(-1, 1, rows * width, dtype=np.float32).reshape(rows, width)}
'''


@pytest.fixture
def counted(tmp_path: Path) -> tuple[Path, Path]:
    """(kernel file, marker file): the marker gets a line per point that ran."""
    marker = tmp_path / "ran.txt"
    path = tmp_path / "counted.py"
    path.write_text(textwrap.dedent(COUNTED).replace("MARKER = None", f"MARKER = {str(marker)!r}"))
    return path, marker


def _ran(marker: Path) -> int:
    return len(marker.read_text().splitlines()) if marker.exists() else 0


def test_a_misspelt_name_stops_the_sweep_before_any_point(counted, tmp_path: Path) -> None:
    path, marker = counted
    with pytest.raises(SweepParameterError) as info:
        sweep(str(path), {"tile": [128, 256], "widht": [512]}, workers=1, out=tmp_path / "o")
    msg = str(info.value)
    # where (the kernel's def line), what was expected (every valid name) and what was found
    assert msg.startswith("counted.py:9: sweep parameter 'widht' (did you mean 'width'?); "
                          "expected a parameter of example_inputs (rows, width), "
                          "'config.<field>' or a keyword of the kernel (x, tile), found 'widht'")
    assert _ran(marker) == 0 and not (tmp_path / "o" / POINTS_FILE).exists()
    assert isinstance(info.value, SweepError) and isinstance(info.value, UsageError)
    # the good spelling runs every point
    table = sweep(str(path), {"tile": [128, 256], "width": [512]}, workers=1)
    assert table["error"].isna().all() and _ran(marker) == 2


def test_a_bad_name_in_a_list_of_points_is_found_in_any_point(counted) -> None:
    path, marker = counted
    points = [{"tile": 128}, {"tile": 256}, {"tile": 128, "rowz": 64}]
    with pytest.raises(SweepParameterError, match="sweep parameter 'rowz' \\(did you mean "
                                                  "'rows'\\?\\)"):
        sweep(str(path), points, workers=1)
    assert _ran(marker) == 0


def test_an_unknown_config_field_names_the_closest_fields_only(counted) -> None:
    path, marker = counted
    with pytest.raises(SweepParameterError) as info:
        sweep(str(path), {"config.dma_engine_bytes_per_n": [10.0, 20.0]}, workers=1)
    msg = str(info.value)
    assert msg.startswith("counted.py:9: sweep parameter 'config.dma_engine_bytes_per_n'; "
                          "expected config.<field> naming a field of the hardware config "
                          "(closest: dma_engine_bytes_per_ns,")
    assert msg.endswith(f"all {len(field_names())} are listed by help(neuroncore_sim.config."
                        "NeuronCoreConfig)), found 'dma_engine_bytes_per_n'")
    # shortened: not the ~50 field names of the hardware config
    assert sum(name in msg for name in field_names()) <= 4
    assert _ran(marker) == 0
    good = sweep(str(path), {"config.dma_hbm_write_bytes_per_ns": [10.0, 20.0]}, workers=1)
    assert good["error"].isna().all()
    slow, fast = good.sort_values("config.dma_hbm_write_bytes_per_ns")["latency_ns"]
    assert slow > fast


def test_a_config_value_the_hardware_refuses_stops_the_sweep(counted) -> None:
    path, marker = counted
    with pytest.raises(SweepParameterError,
                       match="counted.py:9: sweep point with config.dma_engines=0: .*config "
                             "field 'dma_engines' must be a positive integer, found 0"):
        sweep(str(path), {"config.dma_engines": [16, 0]}, workers=1)
    assert _ran(marker) == 0


def test_command_line_exits_2_at_once_listing_valid_names(counted, tmp_path: Path,
                                                         capsys) -> None:
    path, marker = counted
    out = tmp_path / "o"
    argv = ["sweep", str(path), "--param", "tile=128,256", "--param", "config.psum_bankz=4",
            "--workers", "1", "--out", str(out)]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("neuroncore-sim: error: counted.py:9: sweep parameter "
                          "'config.psum_bankz'; expected config.<field> naming a field of the "
                          "hardware config (closest: psum_num_banks")
    assert _ran(marker) == 0 and not out.exists()
    argv[5] = "rows=128"
    # two points, then the best one once more for its full report under --out (best/)
    assert cli.main(argv) == 0 and _ran(marker) == 3


def test_checked_points_still_compare_with_the_reference(counted) -> None:
    """The up-front check does not change what a point computes (kernel keywords and input
    parameters reach their places)."""
    path, _ = counted
    table = sweep(str(path), {"tile": [128, 512], "rows": [64]}, workers=1, check=True)
    assert table["match"].tolist() == [True, True]
    assert np.all(table["max_abs_err"] < 1e-4)
