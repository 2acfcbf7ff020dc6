"""Measuring in a child process, so that a config that breaks its CUDA context or never returns
fails its own trial and the search goes on.

A CUDA error such as an illegal address, a ``trap`` or a misaligned access is *sticky*: it
leaves the context unusable, and every later launch in it fails too. A kernel that loops
forever blocks the process that launched it. So a search measures in a child process
(``spawn``: nothing CUDA is inherited) that opens the benchmark, owns the context and answers
``measure`` and ``retime`` requests over a pipe (the approach of triton-dejavu and Kernel
Tuner). The parent (:class:`IsolatedBenchmark`) waits for each answer at most the trial's
time limit:

- a sticky error (:mod:`autotune.measure.sticky`, or any error of the CUDA backend):
  the trial fails with status ``crash`` and a reason naming the error
  (``illegal_address: an illegal memory access was encountered``); the child is killed;
- the child dies (a segfault, ``os._exit``): ``crash``, ``process_died: ...``;
- no answer within ``trial_timeout`` seconds: the child is killed, the trial is ``timeout``.

The child keeps its benchmark from config to config, so what a benchmark prepares once (the
bounds, the inputs and the reference kept on the GPU for verification) is prepared once per
child. The next request after a failure starts a fresh child (it opens the benchmark again,
bounds, inputs and reference included). The
child ignores SIGINT and SIGTERM (the parent acts on them: a signal cuts its wait, it kills
the child and re-raises) and is killed by the kernel if the parent dies (Linux
``PR_SET_PDEATHSIG``), so it never outlives the search.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import pickle
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass

from autotune.errors import AutotuneError, TrialFailed
from autotune.base import signals as stop
from autotune.measure.measure_options import MeasureOptions
from autotune.measure.sticky import driver_errors, sticky_reason

__all__ = ["START_TIMEOUT_S", "IsolatedBenchmark", "Measuring", "open_isolated"]

START_TIMEOUT_S = 600.0
"""Seconds a child may take to open the GPU and measure the bounds."""
STOP_WAIT_S = 5.0
"""Seconds a child asked to end is given before it is killed."""

@dataclass(frozen=True)
class _Header:
    """What the parent needs of the child's benchmark (for the search's header and row)."""

    device: object
    memcpy_gbps: float | None
    copy_gbps: float | None
    l2_mode: str | None
    energy_note: str | None = None


def _send_error(conn, exc: BaseException) -> None:
    try:
        conn.send(("error", exc))
    except (pickle.PicklingError, TypeError, AttributeError):
        conn.send(("error", AutotuneError(f"{type(exc).__name__}: {exc}")))


def _serve(bench, request) -> tuple:
    """One answer: ``("ok", result)``, ``("failed", status, reason)`` or ``("error", exc)``."""
    kind, payload = request
    try:
        if kind == "measure":
            result = bench.measure(payload)
        elif kind == "retime":
            result = bench.retime(*payload)
        else:  # measure_at, retime_at: another shape of the problem's kernel (Benchmark.at)
            result = getattr(bench, kind)(*payload)
    except TrialFailed as failure:
        sticky = sticky_reason(failure.reason or "")
        return ("failed", "crash", sticky) if sticky else ("failed", failure.status, failure.reason)
    except driver_errors() as exc:  # noqa: B030  (a driver error outside a launch: the context is suspect)
        text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return "failed", "crash", sticky_reason(text) or f"cuda_error: {text}"
    return "ok", result


def _child(conn, opener, ordinal: int, ref, measure: MeasureOptions, also: tuple) -> None:
    """Body of the measuring process: resolve the problem (``ref``, a
    :class:`~autotune.kernel.problem.ProblemRef`), open the benchmark (``opener(ordinal,
    problem, measure, also=also)``), send its header, answer requests until the pipe closes or
    ``None`` comes."""
    stop.die_with_parent()
    for s in stop.SIGNALS:
        signal.signal(s, signal.SIG_IGN)
    stop.unblock()  # they came blocked (see IsolatedBenchmark._start); ignored from now on
    try:
        with opener(ordinal, ref.resolve(), measure, also=also) as bench:
            conn.send(("ready", _Header(bench.device, bench.memcpy_gbps, bench.copy_gbps, bench.l2_mode,
                                          getattr(bench, "energy_note", None))))
            while True:
                try:
                    request = conn.recv()
                except EOFError:
                    return
                if request is None:
                    return
                reply = _serve(bench, request)
                try:
                    conn.send(reply)
                except (BrokenPipeError, EOFError):
                    return  # the parent gave the measurement up (a signal, a lost database)
                except (pickle.PicklingError, TypeError, AttributeError) as exc:
                    _send_error(conn, exc)
    except Exception as exc:  # noqa: BLE001  (opening failed: GPUUnavailableError, InvalidInputError...)
        _send_error(conn, exc)


def _ended(code: int | None) -> str:
    if code is None:
        return "no exit code"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


class Measuring:
    """A config sent to the measuring process (:meth:`IsolatedBenchmark.send`), its answer not
    read yet."""

    def __init__(self, bench: IsolatedBenchmark, limit: float, deadline: float) -> None:
        self._bench, self._limit, self._deadline = bench, limit, deadline
        self._read = False

    def result(self):
        """The config's ``Measurement``, waiting for it until its time limit.

        Raises:
            TrialFailed: as :meth:`IsolatedBenchmark.measure`.
            KeyboardInterrupt: a signal cut the wait (the child was killed).
        """
        if self._read:
            raise RuntimeError("the answer of this measurement was read already")
        self._read = True
        return self._bench._answer(self._limit, self._deadline)

    def cancel(self) -> None:
        """Give the measurement up unread (a signal or a lost database stopped the search): the
        child is killed, so nothing it measures is left to read; the next request starts another."""
        if not self._read:
            self._read = True
            self._bench._kill()


class IsolatedBenchmark:
    """A benchmark living in a child process: ``measure``, ``retime``, ``measure_at``, ``retime_at``, ``device``,
    ``memcpy_gbps``, ``copy_gbps``, ``l2_mode`` and ``energy_note`` like :class:`~autotune.measure.benchmark.Benchmark`.

    Args:
        opener: ``opener(ordinal, problem, measure, also=also)``, a context manager giving a
            benchmark (module level: it is pickled to the child, with ``measure`` and ``also``).
        ref: the problem's :class:`~autotune.kernel.problem.ProblemRef` (the child resolves it).
        measure: the :class:`~autotune.measure.measure_options.MeasureOptions` the benchmark
            opens with; its ``trial_timeout`` is the seconds a ``measure`` may take (a
            ``retime`` of n configs over r rounds: ``n * r`` times that).
        also: the other shapes (problem refs) the benchmark opens with.
        meanwhile: run while the child starts (:func:`open_isolated`).
    """

    def __init__(self, opener, ordinal: int, ref, measure: MeasureOptions, also: tuple = (),
                 meanwhile=None) -> None:
        self._args = (opener, ordinal, ref, measure, tuple(also))
        self.trial_timeout = measure.trial_timeout
        self._proc = self._conn = None
        self._owed = False  # a request was sent whose answer is not read yet
        self.restarts = 0
        header = self._start(meanwhile)
        self.device, self.memcpy_gbps, self.copy_gbps, self.l2_mode, self.energy_note = (
            header.device, header.memcpy_gbps, header.copy_gbps, header.l2_mode, header.energy_note)

    @property
    def pid(self) -> int | None:
        """The measuring process's id (``None`` between a failure and the next request)."""
        return self._proc.pid if self._proc is not None else None

    def _start(self, meanwhile=None) -> _Header:
        """Start a child and wait for its header; ``meanwhile()``, if given, runs here while
        the child starts (its error kills the child and is raised).

        Raises:
            AutotuneError: it ended or gave no header within :data:`START_TIMEOUT_S`; or the
                error opening the benchmark raised in it (GPUUnavailableError...).
        """
        context = multiprocessing.get_context("spawn")
        self._conn, theirs = context.Pipe()
        self._proc = context.Process(target=_child, args=(theirs, *self._args), daemon=True,
                                     name="autotune-measure")
        with stop.blocked():  # it starts with SIGINT/SIGTERM blocked, then ignores them
            self._proc.start()
        theirs.close()
        if meanwhile is not None:
            try:
                meanwhile()
            except BaseException:
                self._kill()
                raise
        reply = self._receive(START_TIMEOUT_S)
        if reply is None or reply[0] != "ready":
            code = self._kill()
            if reply is not None and reply[0] == "error":
                raise reply[1]
            why = f"gave no answer in {START_TIMEOUT_S:g} s" if reply is None else f"ended ({_ended(code)})"
            raise AutotuneError(f"the measuring process for GPU {self._args[1]} {why} while opening the GPU")
        return reply[1]

    def _receive(self, limit: float):
        """The child's next message; ``None`` if none came in ``limit`` s; ``("died",)`` if it
        ended. A signal cuts the wait (``KeyboardInterrupt``): the child is killed first."""
        try:
            with stop.interruptible():
                if not self._conn.poll(limit):
                    return None
                return self._conn.recv()
        except (EOFError, OSError):
            return ("died",)
        except BaseException:
            self._kill()
            raise

    def _kill(self) -> int | None:
        """Kill the child (if any) and wait for it; its exit code."""
        proc, self._proc = self._proc, None
        self._owed = False
        if proc is not None and proc.is_alive():
            proc.kill()  # before the pipe closes: a child answering then would print a broken pipe
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if proc is None:
            return None
        proc.join()
        return proc.exitcode

    def _post(self, request) -> None:
        """Send ``request`` to the child (starting one first where the last was killed)."""
        if self._owed:
            raise RuntimeError("the measuring process owes the answer to a request sent earlier")
        if self._proc is None:
            self.restarts += 1
            self._start()
        try:
            self._conn.send(request)
        except (BrokenPipeError, OSError):
            pass  # it died: the receive says so
        self._owed = True

    def _answer(self, limit: float, deadline: float):
        """The answer to the request posted last, waiting until ``deadline`` (``time.monotonic``);
        ``limit`` is the request's whole time limit, for the message."""
        try:
            reply = self._receive(max(0.0, deadline - time.monotonic()))
        finally:
            self._owed = False
        if reply is None:
            self._kill()
            raise TrialFailed("timeout", f"no result in {limit:g} s (trial timeout); the measuring process "
                                         "was killed")
        if reply[0] == "died":
            raise TrialFailed("crash", f"process_died: the measuring process ended ({_ended(self._kill())})")
        if reply[0] == "error":
            self._kill()
            raise reply[1]
        if reply[0] == "failed":
            if reply[1] == "crash":
                self._kill()  # its context is unusable: the next request starts a fresh one
            raise TrialFailed(reply[1], reply[2])
        return reply[1]

    def _ask(self, request, limit: float):
        self._post(request)
        return self._answer(limit, time.monotonic() + limit)

    def send(self, config) -> Measuring:
        """Start measuring ``config`` in the child and return at once: the search does its
        bookkeeping (storing the last trial, claiming the next config) while the GPU measures.
        Read the answer with :meth:`Measuring.result` before any other request (another
        raises ``RuntimeError``); its time limit, ``trial_timeout``, counts from this call."""
        self._post(("measure", config))
        return Measuring(self, self.trial_timeout, time.monotonic() + self.trial_timeout)

    def measure(self, config):
        """Compile, verify and time ``config`` in the child.

        Raises:
            TrialFailed: the benchmark's failures; ``crash`` (sticky CUDA error, the child
                died); ``timeout`` (no result in ``trial_timeout`` s).
        """
        return self._ask(("measure", config), self.trial_timeout)

    def retime(self, configs, rounds: int = 5):
        """Re-time ``configs`` interleaved in the child (see ``Benchmark.retime``).

        Raises:
            TrialFailed: as :meth:`measure`, the limit ``len(configs) * rounds * trial_timeout``.
        """
        return self._ask(("retime", (list(configs), rounds)), self.trial_timeout * max(1, len(configs)) * rounds)

    def measure_at(self, i: int, config):
        """:meth:`measure` ``config`` at the benchmark's other shape ``i`` (its ``also``), in the
        child (``Benchmark.measure_at``).

        Raises:
            TrialFailed: as :meth:`measure`.
        """
        return self._ask(("measure_at", (i, config)), self.trial_timeout)

    def retime_at(self, i: int, configs, rounds: int = 5):
        """:meth:`retime` ``configs`` at the other shape ``i``, in the child.

        Raises:
            TrialFailed: as :meth:`retime`.
        """
        return self._ask(("retime_at", (i, list(configs), rounds)),
                         self.trial_timeout * max(1, len(configs)) * rounds)

    def close(self) -> None:
        """Ask the child to end; kill it if it has not within :data:`STOP_WAIT_S`."""
        if self._proc is not None and self._conn is not None:
            with contextlib.suppress(OSError):
                self._conn.send(None)
            self._proc.join(STOP_WAIT_S)
        self._kill()


@contextlib.contextmanager
def open_isolated(opener, ordinal: int, problem, measure: MeasureOptions | None = None, *, also=(),
                  precheck: bool = True, before=None, meanwhile=None) -> Iterator[object]:
    """A benchmark of ``problem`` (a :class:`~autotune.kernel.problem.Problem`) measuring in a
    child process (:class:`IsolatedBenchmark`), ended on exit. The problem is sent to the child
    as its :attr:`~autotune.kernel.problem.Problem.ref` (the kernel's catalog name or file
    path); one whose kernel has neither (built in Python), an ``opener`` that cannot be pickled
    (a test's local fake), or a caller that may not start processes (a daemonic process) is
    measured in this process, as ``opener(ordinal, problem, measure, also=also)``, without a
    time limit.

    ``measure``: the :class:`~autotune.measure.measure_options.MeasureOptions` the benchmark
    opens with (default: its defaults), sent whole to the child; its ``trial_timeout`` (s) is
    how long the child may take over one config. ``also``: the other shapes of the problem's
    kernel and dtype (problems or their refs), measured by the same benchmark.

    ``precheck``: before starting the child, query device ``ordinal`` here (no CUDA context)
    and check that the problem fits its memory, so that these errors come at once (a caller
    that queried its GPUs already passes ``False``).

    ``before(device)``: called with the device's :class:`~autotune.measure.device.DeviceInfo`
    (queried here) just before the child starts, to start background work the child will use
    (compiling into the cubin cache: :mod:`autotune.measure.pipeline`); measured in this
    process: after opening the benchmark and ``meanwhile``, with the benchmark's device.

    ``meanwhile()``: work of the caller's (opening the results database) done while the child
    starts (a spawned interpreter, its imports, the CUDA context, the bounds), after the
    precheck found the GPU; measured in this process: after opening the benchmark.

    Raises:
        GPUUnavailableError: no CUDA backend, driver or device (here or in the child).
        InvalidInputError: ``ordinal`` out of range, the problem too large for the GPU, or
            another shape that is not one (from opening the benchmark in the child).
        AutotuneError: the child ended or hung while opening the GPU.
    """
    from autotune.measure import device as devices
    from autotune.measure.buffers import check_fits

    measure = measure or MeasureOptions()
    also = tuple(also)
    ref = problem.ref
    try:
        pickle.dumps((opener, measure, also))
    except (pickle.PicklingError, AttributeError, TypeError):
        ref = None
    if ref is None or multiprocessing.current_process().daemon:
        with opener(ordinal, problem, measure, also=also) as bench:
            if meanwhile is not None:
                meanwhile()
            if before is not None:
                before(bench.device)
            yield bench
        return
    if precheck or before is not None:
        info = devices.query_device(ordinal)
        if precheck:
            check_fits(info, problem)
        if before is not None:
            before(info)
    bench = IsolatedBenchmark(opener, ordinal, ref, measure, also, meanwhile)
    try:
        yield bench
    finally:
        with stop.shielded():
            bench.close()
