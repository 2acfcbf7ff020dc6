"""What the SIGINT/SIGTERM tests share: CPU load made by the test itself, the CLI started as a
subprocess (with SIGINT inherited ignored, as a background job of a non-interactive shell
has it, or at its default), and waiting on the fake GPU's marker files (``tests/workers.py``).

Nothing here waits for a time to pass: a test sends its signal once a marker shows the
search at the moment it is about (inside a measurement, a retry, the re-timing, a GPU's
start-up). The machine is loaded (:func:`cpu_load`) from the signal to the exit: the
stop is what these tests are about, and the moment it begins is pinned by the marker, not
by the machine's speed; loading the start-up before it (the CLI's imports, the first
measurements) only made each test two to three times as long, with the other tests of the
run slowed beside it. Timeouts only turn a hang into a failure. ``AUTOTUNE_TEST_SIGNAL_RUNS=20`` runs
each such test 20 times (default once).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

WORKER = str(Path(__file__).parent / "workers.py")
RUNS = int(os.environ.get("AUTOTUNE_TEST_SIGNAL_RUNS", "1"))
repeat = pytest.mark.parametrize("run", range(RUNS), ids=lambda i: f"run{i}")
"""Parametrize a test over ``AUTOTUNE_TEST_SIGNAL_RUNS`` runs."""
H100 = "NVIDIA H100 80GB HBM3"


@contextlib.contextmanager
def cpu_load(processes: int | None = None):
    """Busy-loop processes (one per CPU by default) for the duration of the block: a signal
    test sends its signal and waits for the exit inside it (:func:`signal_loaded`)."""
    n = processes or os.cpu_count() or 2
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        yield
    finally:
        for proc in busy:
            proc.kill()
        for proc in busy:
            proc.wait()


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def start_cli(tmp_path: Path, *args: str, hold: str = "", gpus: int = 1, inherited: str = "default",
              new_session: bool = False, env: dict | None = None, delay: str = "0.02") -> tuple[subprocess.Popen, Path]:
    """``autotune search --size 64 ARGS`` with fake GPUs, in a subprocess; returns it and its
    marker folder. ``inherited="ignored"`` starts it with SIGINT ignored. ``new_session``: a
    signal sent to it reaches it alone, not its GPU workers. ``delay``: seconds each fake
    measurement takes."""
    marks = tmp_path / "marks"
    marks.mkdir(parents=True, exist_ok=True)
    environ = {**os.environ, "AUTOTUNE_FAKE_MARKS": str(marks), "AUTOTUNE_FAKE_HOLD": hold,
               "AUTOTUNE_FAKE_GPUS": ",".join([H100] * gpus), **(env or {})}
    proc = subprocess.Popen([sys.executable, WORKER, "cli", delay, "search", "--size", "64", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=environ,
                            start_new_session=new_session,
                            preexec_fn=_ignore_sigint if inherited == "ignored" else None)
    return proc, marks


def wait_for(proc: subprocess.Popen, marks: Path, *names: str, timeout: float = 180.0) -> None:
    """Poll until every marker file ``names`` exists; fail (with the output) if the process ends
    first or ``timeout`` passes (a hang, not a wait the test relies on)."""
    deadline = time.monotonic() + timeout
    while not all((marks / name).exists() for name in names):
        if proc.poll() is not None:
            output, _ = proc.communicate()
            raise AssertionError(f"the search ended (exit {proc.returncode}) before {names}:\n{output}")
        if time.monotonic() > deadline:
            proc.kill()
            output, _ = proc.communicate()
            raise AssertionError(f"no {names} after {timeout} s:\n{output}")
        time.sleep(0.01)


def signal_loaded(proc: subprocess.Popen, sig: int, timeout: float = 180.0) -> str:
    """Send ``sig`` to ``proc`` with the machine loaded (:func:`cpu_load`) and return its output
    once it has ended (:func:`finish`): the stop runs on a loaded machine, from the signal to
    the exit."""
    with cpu_load():
        proc.send_signal(sig)
        return finish(proc, timeout)


def release(marks: Path, step: str = "") -> None:
    """Let every held step of the fake GPU go on (``step``: that step alone, e.g. ``measure``)."""
    (marks / (f"release-{step}" if step else "release")).touch()


def finish(proc: subprocess.Popen, timeout: float = 180.0) -> str:
    """Its output once it has ended (killed, and the test failed, if it outlives ``timeout``:
    a signal that was lost)."""
    try:
        output, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        output, _ = proc.communicate()
        raise AssertionError(f"still running {timeout} s after the signal: it was lost\n{output}") from None
    return output
