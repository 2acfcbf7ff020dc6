"""Tuning on first sight (``autotune.launcher(kernel, tune="quick")``) without a GPU: off by
default; a shape with nothing stored is searched once in a child process (its command line
checked, the child played by a fake search into the test's database), then launched with the
stored winner; each shape said once (a TuningWarning); a failed search is said and the ladder's
config launched."""

from __future__ import annotations

import contextlib
import warnings

import pytest

import autotune
from autotune.errors import InvalidInputError
from autotune.runtime import first_sight

from fake_gpu_arrays import Tensor, installed
from fakes import FakeTimer


@pytest.fixture
def fake(monkeypatch, device_info):
    from autotune.kernel.catalog import KERNELS

    yield from installed(monkeypatch, KERNELS["smem_pad"], device_info)


@pytest.fixture
def child(monkeypatch, device_info, db_url):
    """The child process's search, played in this process on the fake timer; its commands."""
    from autotune.measure import benchmark, device

    from test_cli import FakeBench

    @contextlib.contextmanager
    def open_benchmark(ordinal, problem, measure=None, also=()):
        yield FakeBench(device_info, FakeTimer())

    commands = []

    def run_search(command):
        commands.append(command)
        with monkeypatch.context() as m:
            m.setattr(benchmark, "open_benchmark", open_benchmark)
            m.setattr(device, "query_device", lambda ordinal: device_info)
            args = dict(zip(command[4::2], command[5::2]))
            dims = {k: int(v) for k, v in (p.split("=") for p in args["--dims"].split(","))}
            autotune.tune(args["--kernel"], dims, args["--dtype"], device=0, trials=int(args["--trials"]),
                          strategy="grid", db=db_url)
        return 0, '{"best": {"config": {"TILE_DIM": 32}, "ms": 0.003, "figure": 2800.0, "unit": "GB/s"}}', ""

    monkeypatch.setattr(first_sight, "run_search", run_search)
    return commands


def test_off_by_default_and_a_preset_is_checked(fake, child, db_url):
    f = autotune.launcher("smem_pad", db=db_url)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing said
        f(Tensor((64, 32)), Tensor((32, 64)))
    assert child == [] and f.prepared(Tensor((64, 32)), Tensor((32, 64))).launcher.chosen.rung == "default"
    with pytest.raises(InvalidInputError, match=r"tune='slow' is not allowed; allowed: None \(off\), 'quick'"):
        autotune.launcher("smem_pad", tune="slow")


def test_a_new_shape_is_tuned_once_in_a_child_then_launched_with_the_winner(fake, child, db_url):
    f = autotune.launcher("smem_pad", db=db_url, tune="quick")
    out, src = Tensor((64, 32), ptr=0x1000), Tensor((32, 64), ptr=0x2000)
    with pytest.warns(first_sight.TuningWarning, match=r"autotune: smem_pad 32x64 float32 on GPU 0 had no tuned "
                                                       r"config; tuned it on first sight \(quick: 24 trials at most\) "
                                                       r"in \d+\.\d s: TILE_DIM=32 \(2800 GB/s\)"):
        f(out, src)
    [command] = child
    assert command[1:4] == ["-m", "autotune", "search"] and command[command.index("--dims") + 1] == "rows=32,cols=64"
    assert ["--trials", "24", "--repeats", "20", "--top-k", "3", "--rounds", "3", "--timeout", "60"] == \
        command[command.index("--trials"):command.index("--trials") + 10]
    assert command[-4:] == ["--format", "json", "--db", db_url]
    assert f.prepared(out, src).launcher.chosen.rung == "exact"  # the stored winner is launched
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f(out, src)  # the same shape: nothing searched, nothing said
        g = autotune.launcher("smem_pad", db=db_url, tune="quick")
        g(out, src)  # stored now: another launcher launches it at once
    assert len(child) == 1


def test_a_failed_search_is_said_and_the_ladders_config_launched(fake, monkeypatch, db_url):
    monkeypatch.setattr(first_sight, "run_search", lambda command: (2, "", "error: no GPU: cuInit failed\n"))
    f = autotune.launcher("smem_pad", db=db_url, tune="quick")
    with pytest.warns(first_sight.TuningWarning, match=r"tuning smem_pad 16x16 float32 on GPU 0 on first sight failed "
                                                       r"after \d+\.\d s \(error: no GPU: cuInit failed\); launching "
                                                       r"the default config BLOCK_ROWS=8"):
        f(Tensor((16, 16)), Tensor((16, 16)))
    assert len(fake.launches) == 1


def test_processes_meeting_one_new_shape_run_one_search_the_others_wait_and_read_it(tmp_path):
    """Issue 49 item 12: N ranks meeting one new shape each started a search on the same GPU.
    Three processes at once: one searches (holding the shape's lock); the others wait for it,
    then find its winner stored and search nothing."""
    import os
    import subprocess
    import sys
    import time
    from pathlib import Path

    child = Path(__file__).resolve().parent.parent / "first_sight_child.py"
    marks = tmp_path / "marks"
    marks.mkdir()
    env = {**os.environ, "AUTOTUNE_CACHE_DIR": str(tmp_path / "cache")}  # the one lock folder of the host
    procs = [subprocess.Popen([sys.executable, str(child), str(marks)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(3)]
    try:
        deadline = time.monotonic() + 120
        while not (len(list(marks.glob("arrived-*"))) == 3 and list(marks.glob("searching-*"))):
            assert all(p.poll() is None for p in procs), [p.communicate() for p in procs]
            assert time.monotonic() < deadline, "no search started"
            time.sleep(0.01)
        assert len(list(marks.glob("searching-*"))) == 1  # the others wait at the lock
        (marks / "release").touch()
        outputs = [p.communicate(timeout=120) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert [p.returncode for p in procs] == [0, 0, 0], outputs
    firsts = sorted(out.splitlines()[0] for out, _ in outputs)
    assert firsts == ["read True", "read True", "searched True"], outputs
    assert len(list(marks.glob("searching-*"))) == 1
    said = "\n".join(out for out, _ in outputs)
    assert said.count("another process tuned it on first sight") == 2 and said.count("tuned it on first sight (quick") == 1


def test_autotune_tune_switches_first_sight_tuning_for_the_whole_process(fake, child, db_url, monkeypatch):
    """AUTOTUNE_TUNE=off: a launcher with tune="quick" searches nothing; =quick: one that asked
    nothing tunes; another value is refused at the new shape's first launch."""
    monkeypatch.setenv("AUTOTUNE_TUNE", "off")
    f = autotune.launcher("smem_pad", db=db_url, tune="quick")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing said
        f(Tensor((64, 32)), Tensor((32, 64)))
    assert child == []
    monkeypatch.setenv("AUTOTUNE_TUNE", "quick")
    g = autotune.launcher("smem_pad", db=db_url)
    with pytest.warns(first_sight.TuningWarning, match=r"smem_pad 32x16 float32 on GPU 0 had no tuned config; tuned"):
        g(Tensor((16, 32)), Tensor((32, 16)))
    assert len(child) == 1
    monkeypatch.setenv("AUTOTUNE_TUNE", "slow")
    with pytest.raises(InvalidInputError, match=r"AUTOTUNE_TUNE='slow' is not allowed; allowed: off, quick"):
        autotune.launcher("smem_pad", db=db_url)(Tensor((8, 8)), Tensor((8, 8)))
