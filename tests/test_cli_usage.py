"""The command line's own usage: ``--version``, and an unknown option answered with the usage
of the command it was given to (issue 27, item 7)."""

from __future__ import annotations

from pathlib import Path

import pytest

import neuroncore_sim
from neuroncore_sim import cli
from neuroncore_sim.config import MODEL_VERSION

KERNEL = str(Path(__file__).resolve().parent.parent / "kernels" / "relu.py")


def test_version(capsys):
    assert cli.main(["--version"]) == 0
    assert capsys.readouterr().out == (f"neuroncore-sim {neuroncore_sim.__version__} (timing "
                                       f"model {MODEL_VERSION}; NeuronCore-v2: trn1, inf2)\n")


@pytest.mark.parametrize("argv", [
    ["profile", KERNEL, "--bogus"],
    ["sweep", KERNEL, "--param", "x=1", "--bogus"],
    ["compare", KERNEL, "--config-b", "inf2", "--bogus"],
    ["run", "--bogus", "script.py"],  # before the script name: an option of run
])
def test_unknown_option_prints_the_commands_usage(argv, capsys):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    command = argv[0]
    assert err.startswith(f"usage: neuroncore-sim {command} [-h]")
    assert err.rstrip().endswith(f"neuroncore-sim {command}: error: unrecognized arguments: "
                                 "--bogus")


def test_an_option_after_the_script_name_is_the_scripts(tmp_path, capsys):
    script = tmp_path / "s.py"
    script.write_text("import sys\nprint('got', sys.argv[1:])\n")
    assert cli.main(["run", str(script), "--bogus"]) == 0
    assert "got ['--bogus']" in capsys.readouterr().out
