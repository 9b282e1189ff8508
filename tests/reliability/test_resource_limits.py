"""Resource bombs (issue 25, class 8): config fields outside their physical range, loops of
10**9 iterations, launches past max_instructions_per_launch, inputs whose values do not fit in
memory. Each is a SimulatorError at once, naming the field (with its range), the loop's line or
the argument, never a hang, a numpy MemoryError or minutes of silent work."""

from __future__ import annotations

import dataclasses
import re
import time
from pathlib import Path

import numpy as np
import pytest

import neuroncore_sim as ncs
import neuroncore_sim.nki as nki
import neuroncore_sim.nki.language as nl
from neuroncore_sim import cli, environment
from neuroncore_sim.config import TRN1, load_config
from neuroncore_sim.errors import ConfigError, InstructionLimitError, MemoryLimitError
from neuroncore_sim.values.fast.pipeline import PipelinedExecutor

from .faults import kernel_file

HERE = Path(__file__).name
X = np.ones((128, 4), np.float32)


@pytest.mark.parametrize("field,value,range_text", [
    ("dma_engines", 100_000_000, "1 to 256"),
    ("num_partitions", 10**12, "1 to 1,024"),
    ("psum_num_banks", 10**6, "1 to 64"),
    ("sbuf_bytes_per_partition", 2**40, "1 to 4,194,304"),
    ("tensor_clock_hz", 1.0, "1e+06 to 1e+11"),
    ("loop_tile_buffers", 10**9, "1 to 1,024"),
    ("min_ii_cycles", 10**15, "1 to 1,000,000,000,000"),
    ("hbm_bytes_per_ns", 1e300, "0 to 1e+15"),
    ("max_instructions_per_launch", 10**12, "1 to 1,000,000,000"),
])
def test_a_field_outside_its_range_names_the_range(tmp_path, field, value, range_text) -> None:
    toml = tmp_path / "bomb.toml"
    toml.write_text(f"{field} = {value!r}\n".replace("e+", "e"))
    start = time.monotonic()
    with pytest.raises(ConfigError, match=rf"config field '{field}' must be in the range "
                                          rf"{re.escape(range_text)}"):
        load_config(str(toml))
    assert time.monotonic() - start < 1


def test_the_command_line_says_it_in_one_line(tmp_path, capsys) -> None:
    toml = tmp_path / "bomb.toml"
    toml.write_text("dma_engines = 100000000\n")
    assert cli.main(["profile", str(kernel_file(tmp_path)), "--config", str(toml)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "'dma_engines' must be in the range 1 to 256" in err[0]


def test_presets_are_in_range() -> None:
    for name in ("trn1", "inf2"):
        assert load_config(name).max_instructions_per_launch == 2_000_000


@nki.jit
def huge_loop(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(10**9):  # LOOP
        nl.store(out, value=nl.load(x))
    return out


@nki.jit
def huge_nest(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.sequential_range(100_000):
        for j in nl.affine_range(100_000):  # INNER
            nl.store(out, value=nl.load(x))
    return out


@nki.jit
def huge_static(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(4):
        for j in nl.static_range(10**8):  # STATIC
            nl.store(out, value=nl.load(x))
    return out


@nki.jit
def python_loop(x, n=100):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(2):
        for j in range(n):  # a Python loop: unrolled, counted by its instructions
            nl.store(out, value=nl.load(x))
    return out


def _line(fn, marker: str) -> int:
    import inspect

    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, text in enumerate(lines) if marker in text)


@pytest.mark.parametrize("kernel,marker,functional,start", [
    (huge_loop, "# LOOP", True, "loop of 1,000,000,000 iterations"),
    (huge_loop, "# LOOP", False, "loop of 1,000,000,000 iterations"),
    (huge_static, "# STATIC", False,
     "loop of 100,000,000 iterations inside loops (or SPMD instances) of 4 iterations"),
])
def test_a_loop_too_long_is_refused_at_once_at_its_line(kernel, marker, functional,
                                                         start) -> None:
    began = time.monotonic()
    with pytest.raises(InstructionLimitError) as info:
        ncs.simulate(kernel, X, functional=functional)
    assert time.monotonic() - began < 2
    assert str(info.value).startswith(f"{HERE}:{_line(kernel, marker)}: {start}")
    assert "max_instructions_per_launch" in str(info.value)


def test_a_nest_is_counted_as_a_whole() -> None:
    with pytest.raises(InstructionLimitError, match=r"loop of 100,000 iterations inside loops "
                                                    r"\(or SPMD instances\) of 100,000 "
                                                    r"iterations.*10,000,000,000"):
        ncs.simulate(huge_nest, X, functional=False)


@nki.jit
def per_instance(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(100_000):  # GRID LOOP
        nl.store(out, value=nl.load(x))
    return out


def test_the_instances_of_a_grid_count_too() -> None:
    with pytest.raises(InstructionLimitError) as info:
        ncs.simulate(per_instance, X, grid=(64,), functional=False)
    assert str(info.value).startswith(f"{HERE}:{_line(per_instance, '# GRID LOOP')}: loop of "
                                      "100,000 iterations inside loops (or SPMD instances) of "
                                      "64 iterations")


def test_the_instruction_cap_stops_a_launch_naming_the_loop() -> None:
    small = dataclasses.replace(TRN1, max_instructions_per_launch=50)
    with pytest.raises(InstructionLimitError) as info:
        ncs.simulate(python_loop, X, config=small, functional=False)
    text = str(info.value)
    loop_line = _line(python_loop, "nl.affine_range(2)")
    assert text.startswith(f"{HERE}:{loop_line}: the launch records more than 50 instructions")
    assert f"in the loop at {HERE}:{loop_line} (iteration 0)" in text
    res = ncs.simulate(python_loop, X, n=10, config=small, functional=False)  # under the cap
    assert len(res.program.instructions) <= 50


def test_an_input_too_large_for_memory_names_the_argument() -> None:
    x = np.broadcast_to(np.float32(1), (1 << 20, 1 << 14))  # 64 GiB, no memory of its own
    with pytest.raises(MemoryLimitError, match=r"argument 'x' \(shape \[1048576, 16384\], "
                                               r"64.0 GiB\).*timing-only"):
        ncs.simulate(huge_input, x)
    res = ncs.simulate(huge_input, x, functional=False)  # timing needs no values
    assert res.latency_ns > 0


@nki.jit
def huge_input(x):
    out = nl.ndarray((128, 4), dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.load(x[0:128, 0:4]))
    return out


def test_a_memory_error_while_values_are_computed_is_a_simulator_error(monkeypatch) -> None:
    def no_memory(*args, **kwargs):
        raise MemoryError("Unable to allocate 3.07 EiB")

    monkeypatch.setattr(environment, "available_memory_bytes", lambda: 1024)
    with pytest.raises(MemoryLimitError, match=r"argument 'x'.*\(0.0 GiB available\)"):
        ncs.simulate(huge_input, X)
    monkeypatch.undo()
    monkeypatch.setattr(PipelinedExecutor, "declare", no_memory)  # copying the input fails
    with pytest.raises(MemoryLimitError, match=r"argument 'x' \(shape \[128, 4\]\)"):
        ncs.simulate(huge_input, X)
    monkeypatch.undo()
    monkeypatch.setattr(PipelinedExecutor, "execute", no_memory)  # computing values fails
    with pytest.raises(MemoryLimitError, match=r"kernel huge_input: the values of a functional "
                                               r"run do not fit.*timing-only"):
        ncs.simulate(huge_input, X)
