"""`neuroncore-sim profile FILE` / sweeps on files that are not kernel files
(neuroncore_sim.sweep.kernel_file): each says what it expected and what it found, with the
file's name (and line, for a broken file), and a script is refused without being run."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from neuroncore_sim import cli
from neuroncore_sim.errors import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from neuroncore_sim.sweep.kernel_file import (KernelFileError, UsageError, example_inputs,
                                              find_kernel, load_kernel_file)
from neuroncore_sim.sweep.run import sweep

GOOD = '''
import numpy as np
import neuroncore_sim.nki.language as nl


def kernel(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.exp(nl.load(x)))
    return out


def example_inputs(rows=128):
    return {"x": np.zeros((rows, 64), np.float32)}
'''


def _file(tmp_path: Path, text: str, name: str = "k.py") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def _profile(path: Path | str, capsys) -> tuple[int, str]:
    status = cli.main(["profile", str(path), "--timing-only", "--no-progress"])
    return status, capsys.readouterr().err


def test_a_kernel_file_profiles(tmp_path: Path, capsys) -> None:
    status, err = _profile(_file(tmp_path, GOOD), capsys)
    assert status == EXIT_OK and err == ""


def test_a_script_is_refused_without_running_it(tmp_path: Path, capsys) -> None:
    marker = tmp_path / "ran"
    script = _file(tmp_path, f'''
        import numpy as np
        open({str(marker)!r}, "w").close()

        def train(steps):
            return steps
        train(3)
        ''', "train.py")
    status, err = _profile(script, capsys)
    assert status == EXIT_USAGE and not marker.exists()
    assert err == (f"neuroncore-sim: error: {script}: expected a kernel file (an example_inputs() "
                   "returning the kernel's inputs, and a `kernel` function or a KERNELS table, "
                   "as in kernels/*.py), found no example_inputs(), kernel or KERNELS (its "
                   "functions: train); to time the kernel launches of a script, use "
                   f"`neuroncore-sim run {script}`\n")
    with pytest.raises(UsageError, match="found no example_inputs"):
        sweep(str(script), {"a": [1]}, workers=1)
    assert not marker.exists()


def test_a_kernel_without_example_inputs_is_told_to_add_it(tmp_path: Path, capsys) -> None:
    path = _file(tmp_path, GOOD.split("def example_inputs")[0])
    status, err = _profile(path, capsys)
    assert status == EXIT_USAGE
    assert "found kernel but no example_inputs(); add an example_inputs(**shape) returning the " \
        "kernel's inputs (a dict of numpy arrays by parameter name)" in err


@pytest.mark.parametrize("binding", [
    "from helpers import example_inputs",
    "try:\n    from helpers import example_inputs\nexcept ImportError:\n    example_inputs = None",
    "from helpers import *",
])
def test_example_inputs_bound_any_way_is_found(tmp_path: Path, capsys, binding: str) -> None:
    _file(tmp_path, GOOD.split("def kernel")[0] + GOOD.split("return out")[1], "helpers.py")
    path = _file(tmp_path, GOOD.split("def example_inputs")[0] + binding + "\n")
    status, err = _profile(path, capsys)
    assert status == EXIT_OK, err


@pytest.mark.parametrize("make, found", [
    (lambda d: d / "README.md", "found a .md file"),
    (lambda d: d / "folder.py", "found a directory"),
])
def test_a_file_that_is_not_python_says_what_it_is(tmp_path: Path, capsys, make, found) -> None:
    path = make(tmp_path)
    path.mkdir() if path.suffix == ".py" else path.write_text("# notes\n")
    status, err = _profile(path, capsys)
    assert status == EXIT_USAGE
    assert err == (f"neuroncore-sim: error: {path}: expected a kernel file (an example_inputs() "
                   "returning the kernel's inputs, and a `kernel` function or a KERNELS table, "
                   f"as in kernels/*.py), {found}\n")
    status, err = _profile(tmp_path / "missing.py", capsys)
    assert status == EXIT_USAGE and "kernel file not found (expected FILE.py)" in err


def test_a_syntax_error_names_its_line(tmp_path: Path, capsys) -> None:
    path = _file(tmp_path, GOOD.replace("def kernel(x):", "def kernel(x:"))
    status, err = _profile(path, capsys)
    assert status == EXIT_FAILED
    assert err.startswith("error: k.py:6: cannot read the kernel file: ")


def test_an_error_while_importing_names_the_file_line(tmp_path: Path, capsys) -> None:
    path = _file(tmp_path, GOOD + "\nSIZES = {}\nDEFAULT = SIZES['rows']\n")
    status, err = _profile(path, capsys)
    assert status == EXIT_FAILED
    assert err == ("error: k.py:16: importing the kernel file k.py raised KeyError: 'rows'\n")
    with pytest.raises(KernelFileError) as info:
        load_kernel_file(path)
    assert isinstance(info.value.__cause__, KeyError)  # the file's traceback, for --debug


def test_a_file_that_exits_when_imported_is_a_script(tmp_path: Path, capsys) -> None:
    path = _file(tmp_path, GOOD + "\nimport sys\nsys.exit(3)\n")
    status, err = _profile(path, capsys)
    assert status == EXIT_USAGE
    assert f"{path}: expected a kernel file" in err
    assert "found a script: importing it called sys.exit(3); time the kernel launches of a " \
        f"script with `neuroncore-sim run {path}`" in err


@pytest.mark.parametrize("tail, message", [
    ("kernel = 3", "k.py: kernel; expected an NKI kernel (a function or an nki.jit kernel), "
                   "found int 3"),
    ("del kernel\nKERNELS = [1]", "k.py: KERNELS; expected a dict of name -> kernel, found list"),
    ("del kernel\nKERNELS = {'a': 'text'}", "k.py: KERNELS['a']; expected an NKI kernel"),
])
def test_a_kernel_that_is_not_a_function(tmp_path: Path, capsys, tail: str,
                                         message: str) -> None:
    path = _file(tmp_path, GOOD + "\n" + tail + "\n")
    status, err = _profile(path, capsys)
    assert status == EXIT_FAILED and message in err
    with pytest.raises(KernelFileError):
        find_kernel(load_kernel_file(path), None)


@pytest.mark.parametrize("inputs, message", [
    ("def example_inputs(rows=128):\n    return 5",
     "k.py: example_inputs(); expected a dict of the kernel's inputs by parameter name (or a "
     "list/tuple of positional ones), found int 5"),
    ("def example_inputs(rows):\n    return {}",
     "k.py: example_inputs; expected defaults for all its parameters (they make the inputs of "
     "`profile` and the fixed values of a sweep), found no default for rows"),
])
def test_example_inputs_that_breaks_the_convention(tmp_path: Path, capsys, inputs: str,
                                                   message: str) -> None:
    path = _file(tmp_path, GOOD.split("def example_inputs")[0] + inputs + "\n")
    status, err = _profile(path, capsys)
    assert status == EXIT_FAILED and message in err
    with pytest.raises(KernelFileError):
        example_inputs(load_kernel_file(path), "k.py")
