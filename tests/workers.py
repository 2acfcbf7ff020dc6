"""Searches run in subprocesses by the concurrency, crash and signal tests (fake timer, no GPU).

    python tests/workers.py DB_URL KERNEL ROWS DTYPE SAMPLER N_TRIALS SEED RESUME DELAY_S OUT_JSON
    python tests/workers.py cli DELAY_S autotune-arguments...

Observable state for tests that must act at a given moment (never after a wall-clock sleep):
``$AUTOTUNE_FAKE_MARKS`` names a folder where the fake GPU leaves a file at each step
(``open-<gpu>``, ``measure-<gpu>-<n>`` as its n-th measurement starts, ``retime``,
``retrying`` as the store backs off from a locked database, ``retry-interrupted`` when a
signal stops that backoff, ``signalled-<gpu>`` once a held step saw a signal come), and
``$AUTOTUNE_FAKE_HOLD`` holds steps until the test
creates ``release`` there (or ``release-<step>``, which lets that step alone go on): ``open``
(opening the GPU), ``measure:N`` (the N-th measurement of each GPU and every later one), ``retime``. ``$AUTOTUNE_FAKE_FAULTS`` plants faults of the
measuring process (:mod:`autotune.measure.isolation`): ``CONFIG_KEY|KIND`` items separated by
``;`` (the key ``retime`` for the re-timing), KIND ``sticky`` (fails as PyCUDA's illegal address does), ``exit`` (the process ends
with exit code 3) or ``hang`` (never returns); each first leaves ``fault-<kind>`` holding the
measuring process's pid, and
every measurement appends ``<config key> <pid>`` to ``pids`` in the marker folder. ``$AUTOTUNE_TEST_LOCK_WAIT_S`` shortens how
long the store (and Optuna's engine) wait for a locked SQLite database.
``$AUTOTUNE_FAKE_BENCH=any`` measures any kernel's problem on the landscape of
``fakes.FakeAnyBench`` (a workload's problems) and marks ``problem-<gpu>-<kernel>-<dims>``
(measurements are marked and held as above, and also per problem, those of its own search: ``measure-<gpu>-<dims>-<n>``,
held by ``measure-<dims>:N``; ``retime-<gpu>-<dims>`` as its re-timing starts, held by
``retime-<dims>``; ``pids-<gpu>-<dims>`` holds the measuring process's pid and its parent's).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent))

# Only what the fake GPU needs is imported here: every process spawned by a search run from this
# script (a GPU's worker, a measuring process) imports this module again as its __mp_main__, and
# the search's and the store's modules (Optuna, SQLAlchemy) are imported where they are used.
from autotune.measure.device import DeviceInfo  # noqa: E402
from fakes import FakeAnyBench, FakeTimer, fake_retime  # noqa: E402

DEVICE = DeviceInfo("NVIDIA H100 80GB HBM3", "9.0", 132, 85_000_000_000, "13.0", "13.0")


def run_cli(db, *args, gpus=(DEVICE.name, DEVICE.name), delay="0", timeout=300, env=None):
    """``autotune search --size 64 --db DB ARGS`` run by this script's ``cli`` mode in a
    subprocess, on fake GPUs of the models ``gpus`` (tests/search/test_workers.py,
    tests/measure/test_isolation.py): its ``subprocess.CompletedProcess``, output as text."""
    env = {**os.environ, "AUTOTUNE_FAKE_GPUS": ",".join(gpus), **(env or {})}
    return subprocess.run([sys.executable, str(Path(__file__)), "cli", delay, "search", "--size", "64", "--db", db,
                           *args], capture_output=True, text=True, env=env, timeout=timeout, check=False)


def _short_heartbeat() -> None:
    """``AUTOTUNE_TEST_GRACE_S=G``: heartbeat every second and a dead trial failed after G s
    (instead of the store's defaults), so crash tests need not wait long."""
    grace = os.environ.get("AUTOTUNE_TEST_GRACE_S")
    if grace:
        from autotune.store import study_storage

        study_storage.HEARTBEAT_S, study_storage.GRACE_S = 1, int(grace)


def main(db, kernel, rows, dtype, sampler, n_trials, seed, resume, delay, out) -> None:
    from autotune.kernel.catalog import get_kernel
    from autotune.search.options import SearchOptions
    from autotune.search.tuner import search
    from autotune.store.key import tuning_key
    from autotune.store.opening import open_results

    _short_heartbeat()
    timer = FakeTimer()
    count = [0]

    def slow(config):  # markers and holds as the fake GPU's (module doc), as GPU 0
        count[0] += 1
        mark(f"measure-0-{count[0]}")
        if held("measure", count[0]):
            hold(0, "measure")
        time.sleep(float(delay))
        return timer(config)

    key = tuning_key(kernel, DEVICE, (int(rows), int(rows)), dtype)
    reported = []

    def on_trial(outcome, result):  # every trial, repeats and constraint breakers too (not stored)
        reported.append({"search_id": result.search_id, "number": outcome.number,
                         "config": outcome.config.key, "status": outcome.status})
        write_whole(out, reported)

    options = SearchOptions(trials=int(n_trials), seed=int(seed), strategy=sampler, resume=resume == "1")
    search(key, get_kernel(kernel).space(), slow, open_results(db), options, on_trial=on_trial)
    write_whole(out, reported)


def write_whole(path, data) -> None:
    """Write ``data`` as JSON to ``path`` so that a reader (or a SIGKILL) never meets a
    truncated file: a temporary file beside it, then an atomic rename."""
    part = Path(f"{path}.part")
    part.write_text(json.dumps(data))
    os.replace(part, path)




def mark(name: str) -> None:
    """Leave the marker file ``name`` in ``$AUTOTUNE_FAKE_MARKS`` (if set)."""
    folder = os.environ.get("AUTOTUNE_FAKE_MARKS")
    if folder:
        Path(folder, name).touch()


def held(step: str, n: int = 0) -> bool:
    """Whether ``$AUTOTUNE_FAKE_HOLD`` holds ``step`` (``measure`` from its N-th on)."""
    for item in filter(None, os.environ.get("AUTOTUNE_FAKE_HOLD", "").split(",")):
        name, _, at = item.partition(":")
        if name == step and n >= int(at or 0):
            return True
    return False


def hold(ordinal: int, step: str = "") -> None:
    """Wait until the test creates ``release`` (or ``release-<step>``); say once a signal came meanwhile."""
    from autotune.base import signals as stop

    marks, said = Path(os.environ["AUTOTUNE_FAKE_MARKS"]), False
    while not ((marks / "release").exists() or (step and (marks / f"release-{step}").exists())):
        if stop.requested() and not said:
            said = True
            mark(f"signalled-{ordinal}")
        time.sleep(0.01)


class FakeBench:
    """What the CLI needs of :class:`autotune.measure.benchmark.Benchmark`, timed by the fake timer
    (each measurement sleeps ``$AUTOTUNE_FAKE_DELAY`` seconds, or GPU i the i-th of a comma
    separated list; markers and holds: module doc)."""

    memcpy_gbps, copy_gbps, l2_mode = 3000.0, 2900.0, "single"

    def __init__(self, device):
        self.device = device
        self.timer = FakeTimer()
        self._retime = fake_retime()
        self.count = 0

    def measure(self, config):
        self.count += 1
        mark(f"measure-{self.device.ordinal}-{self.count}")
        planted_fault(config.key)
        if held("measure", self.count):
            hold(self.device.ordinal, "measure")
        delays = os.environ.get("AUTOTUNE_FAKE_DELAY", "0").split(",")  # one for all GPUs, or one each
        time.sleep(float(delays[min(self.device.ordinal, len(delays) - 1)]))
        return self.timer(config)

    def retime(self, configs, rounds):
        mark("retime")
        planted_fault("retime")
        if held("retime"):
            hold(self.device.ordinal, "retime")
        return self._retime(configs, rounds)


class AnyBench(FakeAnyBench):
    """``fakes.FakeAnyBench`` with the markers, holds and delay of :class:`FakeBench`
    (measurements counted per process, and per problem: module doc)."""

    count = 0

    def __init__(self, device, problem, failures=None, **shapes):
        super().__init__(device, problem, failures, **shapes)
        self.tag, self.measured = "x".join(str(v) for _, v in problem.dims), 0
        folder = os.environ.get("AUTOTUNE_FAKE_MARKS")
        if folder:  # whole when it appears
            name = f"pids-{device.ordinal}-{self.tag}"
            Path(folder, f".{name}").write_text(f"{os.getpid()} {os.getppid()}")
            os.replace(Path(folder, f".{name}"), Path(folder, name))

    def measure(self, config):
        AnyBench.count += 1
        self.measured += 1
        mark(f"measure-{self.device.ordinal}-{AnyBench.count}")
        own = not getattr(self, "companion", False)  # not a shape measured alongside another's search
        if own:
            mark(f"measure-{self.device.ordinal}-{self.tag}-{self.measured}")
        if held("measure", AnyBench.count) or (own and held(f"measure-{self.tag}", self.measured)):
            hold(self.device.ordinal, "measure")
        delays = os.environ.get("AUTOTUNE_FAKE_DELAY", "0").split(",")  # as FakeBench's
        time.sleep(float(delays[min(self.device.ordinal, len(delays) - 1)]))
        return super().measure(config)

    def retime(self, configs, rounds):
        if getattr(self, "companion", False):
            return super().retime(configs, rounds)
        mark(f"retime-{self.device.ordinal}-{self.tag}")
        if held(f"retime-{self.tag}"):
            hold(self.device.ordinal, "retime")
        return super().retime(configs, rounds)


STICKY_TEXT = "cuCtxSynchronize failed: an illegal memory access was encountered"
"""What PyCUDA says of an illegal address (verify's ``run_once`` makes it a ``launch_error``)."""


def planted_fault(key: str) -> None:
    """Act out the fault ``$AUTOTUNE_FAKE_FAULTS`` plants for config ``key`` (module doc)."""
    folder = os.environ.get("AUTOTUNE_FAKE_MARKS")
    if folder:
        with open(Path(folder, "pids"), "a") as f:
            f.write(f"{key} {os.getpid()}\n")
    faults = dict(item.rsplit("|", 1) for item in filter(None, os.environ.get("AUTOTUNE_FAKE_FAULTS", "").split(";")))
    kind = faults.get(key)
    if kind is None:
        return
    if folder:  # its pid, in a file that appears whole
        Path(folder, f".fault-{kind}").write_text(str(os.getpid()))
        os.replace(Path(folder, f".fault-{kind}"), Path(folder, f"fault-{kind}"))
    if kind == "sticky":
        from autotune.errors import TrialFailed

        raise TrialFailed("launch_error", STICKY_TEXT)
    if kind == "exit":
        os._exit(3)
    if kind == "hang":
        import threading

        threading.Event().wait()  # forever: only a kill ends it


def fake_device(ordinal: int) -> DeviceInfo:
    """Fake GPU ``ordinal``: the model named by ``$AUTOTUNE_FAKE_GPUS`` (comma separated;
    default one H100), a UUID and PCI bus id of its own."""
    import dataclasses

    names = os.environ.get("AUTOTUNE_FAKE_GPUS", DEVICE.name).split(",")
    if not 0 <= ordinal < len(names):
        from autotune.errors import InvalidInputError

        raise InvalidInputError(f"--device {ordinal} is out of range; allowed: 0..{len(names) - 1}")
    return dataclasses.replace(DEVICE, name=names[ordinal], uuid=f"GPU-fake-{ordinal}", ordinal=ordinal,
                               pci_bus_id=f"0000:{ordinal + 1:02x}:00.0")


def fake_count() -> int:
    return len(os.environ.get("AUTOTUNE_FAKE_GPUS", DEVICE.name).split(","))


@contextlib.contextmanager
def fake_open_benchmark(ordinal, problem, measure=None, also=()):
    """Stands in for :func:`autotune.measure.benchmark.open_benchmark` (module level: the workers of
    a search over several GPUs get it pickled)."""
    from autotune.measure.measure_options import MeasureOptions

    if not isinstance(measure, MeasureOptions):  # the opener protocol: the typed options, whole
        raise TypeError(f"open_benchmark got {measure!r}, not a MeasureOptions")
    _test_settings()
    device = fake_device(ordinal)
    mark(f"open-{ordinal}")
    if held("open"):
        hold(ordinal, "open")
    if os.environ.get("AUTOTUNE_FAKE_BENCH") == "any":  # any kernel's landscape (a workload's problems)
        mark(f"problem-{ordinal}-{problem.kernel.name}-{'x'.join(str(v) for _, v in problem.dims)}")
        yield AnyBench(device, problem, also=also)
        return
    yield FakeBench(device)


def _test_settings() -> None:
    """Shorter store waits where the test asks, and a marker as the store backs off from a
    locked database (this process and the GPU workers, which call this as they open)."""
    from autotune.base import signals as stop

    wait = os.environ.get("AUTOTUNE_TEST_LOCK_WAIT_S")
    if wait:  # retried transactions, and the others (Optuna's): give up on a lock after this
        from autotune.store import locking

        locking.LOCK_WAIT_S = locking.SESSION_BUSY_TIMEOUT_S = float(wait)
    if not getattr(stop.sleep, "marks", False):
        real = stop.sleep

        def sleep(seconds):
            mark("retrying")
            try:
                real(seconds)
            except KeyboardInterrupt:
                mark("retry-interrupted")
                raise

        sleep.marks = True
        stop.sleep = sleep


def cli(delay: str, *args: str) -> None:
    """Run the real CLI with fake GPUs and the fake timer in place of the GPU benchmark
    (SIGINT and several-GPU tests)."""
    from autotune.measure import benchmark, device
    from autotune.cli import app

    os.environ["AUTOTUNE_FAKE_DELAY"] = delay  # the GPU workers inherit it
    _short_heartbeat()
    _test_settings()
    benchmark.open_benchmark = fake_open_benchmark
    device.device_count, device.query_device = fake_count, fake_device
    app(list(args), prog_name="autotune")


if __name__ == "__main__":
    if sys.argv[1] == "cli":
        cli(*sys.argv[2:])
    else:
        main(*sys.argv[1:])
