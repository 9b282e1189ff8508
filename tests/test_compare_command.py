"""``neuroncore-sim compare``: two kernels, or one under two settings (issue 27, item 5)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import neuroncore_sim as ncs
from neuroncore_sim import cli
from neuroncore_sim.sweep.kernel_file import example_inputs, find_kernel, load_kernel_file

KERNELS = Path(__file__).resolve().parent.parent / "kernels"
MATMUL = str(KERNELS / "matmul_bf16.py")
BLOCKED = str(KERNELS / "matmul_blocked.py")


def _latency(target: str, **kw) -> float:
    file, _, name = target.partition("::")
    module = load_kernel_file(Path(file))
    pos, kwargs = example_inputs(module, file)
    res = ncs.simulate(find_kernel(module, name or None)[1], *pos, functional=False, **kwargs,
                       **kw)
    return res.latency_ns


def test_two_kernels_with_out(tmp_path, capsys):
    out = tmp_path / "cmp"
    assert cli.main(["compare", MATMUL, BLOCKED, "--out", str(out), "--no-progress"]) == 0
    text = capsys.readouterr().out
    a, b = _latency(MATMUL), _latency(BLOCKED)
    assert f"latency    : A {a:,.0f} ns, B {b:,.0f} ns: {100 * (b - a) / a:+.1f}%" in text
    assert "engine busy time" in text and "bounds and rates" in text
    assert "source lines whose engine time changed most" in text
    assert f"wrote {out}/comparison.txt, comparison.json and comparison.png" in text
    assert {p.name for p in out.iterdir()} == {"comparison.txt", "comparison.json",
                                              "comparison.png"}
    saved = json.loads((out / "comparison.json").read_text())
    assert saved["latency_ns"]["a"] == pytest.approx(a)
    assert saved["a"] == f"{MATMUL} on trn1"
    assert (out / "comparison.txt").read_text() in text
    assert (out / "comparison.png").read_bytes()[:4] == b"\x89PNG"


def test_one_kernel_under_two_configs(capsys):
    assert cli.main(["compare", MATMUL, "--config-b", "inf2", "--top", "2"]) == 0
    text = capsys.readouterr().out
    assert f"A          : {MATMUL} on trn1" in text
    assert f"B          : {MATMUL} on inf2" in text
    assert "top 2 of" in text


def test_one_kernel_under_two_compile_options(capsys):
    assert cli.main(["compare", MATMUL, "--compiler-option-b", "fold_psum_zeros=false"]) == 0
    text = capsys.readouterr().out
    assert f"B          : {MATMUL} on trn1 with fold_psum_zeros=false" in text
    b = _latency(MATMUL, config=ncs.config.with_compile_options(None, ["fold_psum_zeros=false"]))
    assert f"B {b:,.0f} ns" in text


def test_one_target_without_a_setting_is_a_usage_error(capsys):
    assert cli.main(["compare", MATMUL]) == 2
    err = capsys.readouterr().err
    assert "expected two targets (A B), or one target and a setting for a side" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("argv, message", [
    (["compare", "nothere.py", MATMUL], "kernel file not found (expected FILE.py): nothere.py"),
    (["compare", MATMUL, MATMUL + "::nope"], "has no kernel 'nope'"),
    (["compare", MATMUL, "--config-b", "trn9"], "trn9"),
    (["compare", MATMUL, "--compiler-option-b", "bogus=1"], "bogus"),
    (["compare", MATMUL, "--config-c", "inf2"], "unrecognized arguments: --config-c"),
])
def test_bad_input_is_a_usage_error(argv, message, capsys):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_out_that_is_a_file_fails_before_timing(tmp_path, capsys):
    taken = tmp_path / "taken"
    taken.write_text("")
    assert cli.main(["compare", MATMUL, BLOCKED, "--out", str(taken)]) == 2
    assert "expected a directory" in capsys.readouterr().err


def test_params_apply_to_both_sides(capsys):
    assert cli.main(["compare", BLOCKED, "--param", "M=256", "--param", "n_block=2",
                     "--config-b", "inf2"]) == 0
    text = capsys.readouterr().out
    assert f"B          : {BLOCKED} on inf2 (M=256, n_block=2)" in text
    module = load_kernel_file(Path(BLOCKED))
    pos, kw = example_inputs(module, BLOCKED, M=256)
    a = ncs.simulate(module.kernel, *pos, functional=False, n_block=2, **kw).latency_ns
    assert f"latency    : A {a:,.0f} ns" in text
    assert a != _latency(BLOCKED)


def test_a_param_with_two_values_is_a_usage_error(capsys):
    assert cli.main(["compare", BLOCKED, "--config-b", "inf2", "--param", "M=128,256"]) == 2
    assert "--param M: expected one value (NAME=VALUE), found 2" in capsys.readouterr().err
