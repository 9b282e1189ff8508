"""``neuroncore-sim run`` on a benchmark loop: identical launches timed and reported once with
their count, one --out folder per distinct launch plus index.md, --quiet and --max-launches
(issue 27, item 3). Values are still computed per launch."""

from __future__ import annotations

import dataclasses
import textwrap
from pathlib import Path

import numpy as np
import pytest

import neuroncore_sim as ncs
from neuroncore_sim import cli
from neuroncore_sim.cli.launch_index import spans
from neuroncore_sim.frameworks.profile import profile_session
from neuroncore_sim.launches import LaunchRecorder, launch_key
from neuroncore_sim.config import load_config

KERNEL = '''
import numpy as np
from neuronxcc import nki
import neuronxcc.nki.language as nl

@nki.jit
def add(a, scale=1.0):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a)
    nl.store(out, value=nl.add(t, scale))
    return out
'''
#: 12 identical launches whose values depend on the previous one, one of another shape, one
#: with another constant: 14 launches, 3 distinct.
LOOP = KERNEL + '''
x = np.zeros((128, 512), np.float32)
for i in range(12):
    x = add(x)
assert float(x[5, 7]) == 12.0, x[5, 7]   # every launch computed its own values
y = add(np.zeros((128, 256), np.float32))
z = add(x, scale=2.0)
assert float(z[0, 0]) == 14.0
print("values ok")
'''


def _script(tmp_path: Path, text: str, name: str = "bench.py") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_identical_launches_are_reported_once_with_their_count(tmp_path, capsys):
    out = tmp_path / "out"
    script = _script(tmp_path, LOOP)
    assert cli.main(["run", "--no-progress", "--out", str(out), str(script)]) == 0
    text = capsys.readouterr().out
    assert "values ok" in text
    assert "== launch 1: add (nki.jit): 12 identical launches (1-12)" in text
    assert "== launch 2: add (nki.jit)\n" in text and "== launch 3: add (nki.jit)\n" in text
    assert text.count("\nlatency    :") == 3  # one summary per distinct launch
    assert "== all launches: 14 launches, 3 distinct" in text
    table = text.split("== all launches", 1)[1]
    assert "  12  1-12 " in table and "  1  13 " in table and "  1  14 " in table
    assert sorted(p.name for p in out.iterdir()) == ["index.md", "launch1_add", "launch2_add",
                                                     "launch3_add"]
    index = (out / "index.md").read_text()
    assert "14 launches, 3 distinct" in index
    assert "| 1 | add | nki.jit | 12 | 1-12 |" in index
    assert "[launch3_add/](launch3_add/)" in index and "&lt;module&gt;" in index


def test_quiet_prints_only_the_final_table(tmp_path, capsys):
    script = _script(tmp_path, LOOP)
    assert cli.main(["run", "--quiet", "--no-progress", str(script)]) == 0
    text = capsys.readouterr().out
    assert "== launch " not in text and "latency    :" not in text
    assert text.startswith("values ok\n== all launches: 14 launches, 3 distinct")


def test_max_launches_profiles_the_first_distinct_ones_only(tmp_path, capsys):
    script = _script(tmp_path, LOOP)
    assert cli.main(["run", "--max-launches", "1", "--no-progress", str(script)]) == 0
    captured = capsys.readouterr()
    assert "values ok" in captured.out  # the unprofiled launches still computed their values
    assert "== launch 1: add (nki.jit): 12 identical launches (1-12)" in captured.out
    assert "== launch 2" not in captured.out
    assert "== all launches: 12 launches, 1 distinct" in captured.out  # the profiled ones
    assert captured.err == ("neuroncore-sim: note: 2 more launches ran without being "
                            "profiled: --max-launches 1 profiles the first 1 distinct launches "
                            "only\n")


def _double_session(functional: bool):
    from neuroncore_sim import nki
    import neuroncore_sim.nki.language as nl

    @nki.jit
    def double(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.multiply(nl.load(a), 2.0))
        return out

    xs = [np.full((128, 64), i, np.float32) for i in range(3)]
    with profile_session(functional=functional, reuse_timing=True) as s:
        ys = [double(x) for x in xs]
    return s.results, xs, ys


def test_functional_launches_share_timing_but_not_values():
    results, xs, ys = _double_session(functional=True)
    assert len(results) == 3
    assert results[1].timing is results[0].timing and results[2].timing is results[0].timing
    assert results[1].program is not results[0].program  # traced again, with its own values
    for x, y, res in zip(xs, ys, results):
        np.testing.assert_array_equal(y, 2 * x)
        np.testing.assert_array_equal(res.outputs[0], 2 * x)
    assert len({r.launch_key for r in results}) == 1


def test_timing_only_launches_reuse_the_whole_result():
    results, _, _ = _double_session(functional=False)
    assert results[1].program is results[0].program and results[1].timing is results[0].timing


def test_without_reuse_every_launch_is_timed():
    from neuroncore_sim import nki
    import neuroncore_sim.nki.language as nl

    @nki.jit
    def copy(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.load(a))
        return out

    with profile_session() as s:
        copy(np.ones((128, 8), np.float32))
        copy(np.ones((128, 8), np.float32))
    first, second = s.results
    assert second.timing is not first.timing and first.launch_key is None


def test_a_different_program_under_the_same_key_is_timed_again():
    import neuroncore_sim.nki.language as nl

    def kernel(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.load(a))
        return out

    def other(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.exp(nl.load(a)))
        return out

    x = np.ones((128, 8), np.float32)
    first, again, different = (ncs.simulate(k, x, functional=False)
                               for k in (kernel, kernel, other))
    rec = LaunchRecorder(reuse_timing=True)
    key = ("same key",)
    rec.collect(dataclasses.replace(first, launch_key=key))
    assert rec.timing_for(key, again.program) == (first.timing, key)
    timing, own_key = rec.timing_for(key, different.program)
    assert timing is None and own_key != key and own_key[:1] == key


class _NoHash:
    __hash__ = None  # type: ignore[assignment]

    def __eq__(self, other):
        raise AssertionError("compared by value")


def test_launch_key_of_arrays_constants_and_objects():
    cfg = load_config("trn1")

    def key(*args, **kwargs):
        return launch_key(test_launch_key_of_arrays_constants_and_objects, args, kwargs, (),
                          cfg, True, "nki.jit")

    a, b = np.zeros((4, 8), np.float32), np.ones((4, 8), np.float32)
    assert key(a) == key(b)  # values do not matter, shapes and dtypes do
    assert key(a) != key(a.astype(np.float16)) and key(a) != key(a[:2])
    assert key(a, scale=2.0) != key(a, scale=3.0) and key(a, [1, 2]) == key(b, [1, 2])
    obj = _NoHash()
    assert key(a, obj) == key(a, obj) and key(a, obj) != key(a, _NoHash())
    assert hash(key(a, {"k": obj})) == hash(key(a, {"k": obj}))
    assert launch_key(key, (a,), {}, (), cfg, True, "nki.jit") != \
        launch_key(key, (a,), {}, (), load_config("inf2"), True, "nki.jit")


@pytest.mark.parametrize("numbers, text", [([1], "1"), ([1, 2, 3], "1-3"),
                                           ([1, 2, 3, 5, 7, 8], "1-3, 5, 7-8")])
def test_spans(numbers, text):
    assert spans(numbers) == text


def test_a_benchmark_past_max_launches_still_gets_its_latency(tmp_path, capsys):
    script = _script(tmp_path, KERNEL + '''
x = np.zeros((128, 512), np.float32)
add(x)
b = nki.benchmark(warmup=1, iters=2)(add)
b(np.zeros((128, 256), np.float32))  # distinct, past --max-launches 1: not profiled
print("p50", b.benchmark_result.nc_latency.get_latency_percentile(50) > 0)
''')
    assert cli.main(["run", "--max-launches", "1", "--no-progress", str(script)]) == 0
    captured = capsys.readouterr()
    assert "p50 True" in captured.out and "== launch 2" not in captured.out
    assert "1 more launch ran without being profiled" in captured.err
