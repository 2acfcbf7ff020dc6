"""A new user's first commands, from a wheel (not the checkout), in an empty home folder, with no
``AUTOTUNE_DB`` (issue 49's "done when"): the reading commands in an empty home (item 1), the
README's search run twice (item 2), the examples and the version a pip user gets (item 6), and
completion of names and values (item 9).

The wheel is built once per session with hatchling and installed with ``pip install --no-deps
--target``; its dependencies come from this interpreter's environment. Every command runs as a
child process with ``PYTHONPATH`` naming the install only, ``HOME`` an empty folder and the
working folder another, and the test checks that ``autotune`` was imported from the install.
The GPU of the search is the tests' fake (``tests/fakes.py``), installed by a small driver
script before the command line runs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TESTS = Path(__file__).resolve().parent

FAKE_GPU = """\
import contextlib, sys
from autotune.measure import benchmark, device
from autotune.measure.device import DeviceInfo
from fakes import FakeTimer, fake_retime

info = DeviceInfo(name="NVIDIA H100 80GB HBM3", compute_capability="9.0", sm_count=132,
                  total_memory=85_000_000_000, driver_version="13.0", cuda_version="13.0")


class FakeBench:  # as tests/test_cli.py's
    def __init__(self, device, timer):
        self.device, self.measure, self.memcpy_gbps = device, timer, timer.memcpy_gbps
        self.copy_gbps, self.l2_mode, self.retime = 2900.0, "single", fake_retime()


@contextlib.contextmanager
def open_benchmark(ordinal, problem, measure=None, also=()):
    yield FakeBench(info, FakeTimer())


benchmark.open_benchmark = open_benchmark
device.query_device = lambda ordinal: info

if __name__ == "__main__":  # the measuring child imports this file again (spawn), to find open_benchmark
    from autotune.cli import main

    sys.argv[0] = "autotune"
    main()
"""
"""The driver of a search on the fake GPU: a file, so that the measuring child (started by
``spawn``) imports the fake benchmark by name; ``PYTHONPATH`` names the install, then tests/."""


@pytest.fixture(scope="session")
def installed(run_once) -> Path:
    """The wheel built from this checkout, installed (``--no-deps``) into a folder of its own,
    once a test run (``run_once``: not once per xdist worker); the commands only read it."""
    builder = pytest.importorskip("hatchling.builders.wheel")

    def build_and_install(folder: Path) -> None:
        [wheel] = list(builder.WheelBuilder(str(ROOT)).build(directory=str(folder / "dist"), versions=["standard"]))
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
                        "--disable-pip-version-check", "--target", str(folder / "site"), wheel],
                       check=True, timeout=300)

    return run_once("wheel", build_and_install) / "site"


@pytest.fixture
def user(installed, tmp_path):
    """``user(*args, fake_gpu=False, env=None)``: run ``autotune ARGS`` as a new user would."""
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    base = {k: v for k, v in os.environ.items() if not k.startswith(("AUTOTUNE_", "XDG_", "PYTHON", "_AUTOTUNE"))}
    base.update(HOME=str(home), PYTHONPATH=str(installed), PYTHONNOUSERSITE="1", COLUMNS="200")

    driver = tmp_path / "fake_gpu_autotune.py"
    driver.write_text(FAKE_GPU)

    def run(*args: str, fake_gpu: bool = False, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        given = {**base, **(env or {})}
        if fake_gpu:
            argv = [sys.executable, str(driver), *args]
            given["PYTHONPATH"] = os.pathsep.join((str(installed), str(TESTS)))  # the install first
        else:
            argv = [str(installed / "bin" / "autotune"), *args]
        return subprocess.run(argv, cwd=work, env=given, capture_output=True, text=True, timeout=300)

    run.home, run.work = home, work
    return run


def test_autotune_comes_from_the_wheel(user, installed):
    done = subprocess.run([sys.executable, "-c", "import autotune; print(autotune.__file__, autotune.__version__)"],
                          cwd=user.work, env={"PYTHONPATH": str(installed), "HOME": str(user.home),
                                              "PATH": os.environ.get("PATH", "")},
                          capture_output=True, text=True, check=True)
    path, version = done.stdout.split()
    assert Path(path).is_relative_to(installed) and version == "0.4.0"
    assert user("--version").stdout.strip().endswith("0.4.0")


EMPTY_HOME = [  # (args, exit code, what the one line starts with)
    (("list",), 2, "error: nothing is tuned yet; run: autotune search --kernel smem_pad --size 2048"),
    (("best",), 2, "error: nothing is tuned yet; run: autotune search --kernel smem_pad --size 2048"),
    (("best", "--kernel", "smem_pad", "--size", "8192"), 2,
     "error: nothing is tuned for smem_pad 8192x8192 float32; run: autotune search --kernel smem_pad --rows 8192"),
    (("workloads",), 2, "error: no workload is recorded yet; record one:"),
    (("dispatch", "smem_pad"), 2, "error: nothing is tuned for smem_pad; run: autotune tune-shapes smem_pad"),
    (("trials", "--size", "64"), 2, "error: nothing is tuned for smem_pad 64x64 float32; run: autotune search"),
    (("export", "--out", "tuned.json"), 2, "error: nothing is tuned yet; run: autotune search"),
    (("db", "current"), 0, "no database at sqlite:///"),
]


def test_reading_commands_in_an_empty_home(user):
    """Item 1: each says the one line the docs promise, and nothing is created: no data folder
    in the home, no file in the working folder."""
    for args, code, said in EMPTY_HOME:
        done = user(*args)
        text = (done.stdout + done.stderr).strip()
        assert done.returncode == code and text.startswith(said) and len(text.splitlines()) == 1, (args, text)
    assert list(user.home.iterdir()) == [] and list(user.work.iterdir()) == []


def test_the_readme_search_run_twice(user):
    """Item 2: the second run says the problem is tuned and shows the best; ``best`` reads it."""
    if shutil.which("nvcc") is None:
        pytest.skip("no nvcc on PATH: the search's key names the toolchain")
    search = ("search", "--kernel", "smem_pad", "--device", "0", "--size", "256", "--trials", "3")
    first = user(*search, fake_gpu=True)
    assert first.returncode == 0, first.stdout + first.stderr
    again = user(*search, fake_gpu=True)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "smem_pad 256x256 float32 on NVIDIA H100 80GB HBM3 is tuned already" in again.stdout
    best = user("best", "--kernel", "smem_pad", "--size", "256", "--format", "json")
    assert best.returncode == 0, best.stderr
    [record] = json.loads(best.stdout)["records"]
    assert record["kernel"] == "smem_pad" and record["shape"] == "256x256"
    assert (user.home / ".local" / "share" / "autotune" / "autotune.db").is_file()  # the default, made by the search


def test_a_pip_user_gets_the_examples_and_checks_one(user):
    """Item 6: the README's examples ship in the wheel; ``autotune examples`` copies them and the
    README's check of one runs on them (3 configs built, where nvcc is on PATH)."""
    done = user("examples")
    assert done.returncode == 0 and "copied the examples to examples: app, histogram, reduction, softmax" in done.stdout
    assert (user.work / "examples" / "reduction" / "reduce.toml").is_file()
    assert (user.work / "examples" / "app" / "app.py").is_file()
    if shutil.which("nvcc") is None:
        pytest.skip("no nvcc on PATH: the check builds")
    check = user("check", "examples/reduction/reduce.toml", "--sample", "3", "--dtype", "float32", "--arch", "sm_90")
    assert check.returncode == 0, check.stdout + check.stderr
    assert "ok: every sampled config of reduce_sum builds and can be launched" in check.stdout


def test_completion_of_names_and_values(user):
    """Item 9, through the installed ``autotune`` script as a shell calls it."""
    def complete(*words: str) -> list[str]:
        line = " ".join(("autotune", *words))
        done = user(env={"_AUTOTUNE_COMPLETE": "complete_bash", "COMP_WORDS": line, "COMP_CWORD": str(len(words))})
        return done.stdout.split()

    assert complete("dispatch", "smem_p") == ["smem_pad"]
    assert complete("search", "--objective", "ed") == ["edp"]
    assert complete("plan", "") == []  # no database: no names, and none created
    assert list(user.home.iterdir()) == []
