"""Recording a program's launches: ``with autotune.record("NAME"):`` or ``AUTOTUNE_RECORD=NAME``.

While a recording is active, every launch made through [`launcher`][autotune.launcher]
(`KernelLauncher`'s prepared launches), [`compiled`][autotune.compiled] (`Launcher.__call__`)
and [`transpose`][autotune.transpose] is counted per problem (the device model, the kernel
with its source and spec hashes, the dims, the dtype), and some calls are timed on
the GPU with two CUDA events recorded on the launch's stream around them: the 2nd, 4th, 8th,
... call (every power of two) and one call in :data:`SAMPLE_EVERY` (the 2nd, then every N-th
after it). The first call of a launch may load its module lazily, so it is never timed; the
early calls of a program often run on a GPU whose clocks are still low, so the later powers
of two give a problem called a few dozen times samples from later in the run too. A batch's
GPU time of a problem is the median of its samples times their number, so one stalled
sample (the H100 app run of 2026-11-27 read a 11 µs transpose's only sample as 4.5 ms)
does not set the problem's time. The events are read back by a background thread (the flusher),
never on the launch path; it writes what was counted to the results database every
:data:`FLUSH_S` seconds as one batch, one transaction (``autotune.store.workloads``), so a
recording cut short (Ctrl-C, SIGTERM, SIGKILL, a crash) leaves whole batches only. The last
batch is written when the recording stops: at the end of the ``with`` block, at exit
(``atexit``: also after a ``KeyboardInterrupt``), and on SIGTERM (the handler writes it, then
the signal's previous action runs).

Cost on the launch path:

* **off** (no recording): none. Nothing is checked per launch: a recording that starts
  replaces the ``go`` of every live `PackedLaunch` by a counting one (and wraps the ones
  prepared while it is active), and the ``__call__`` of `Launcher` and `PreparedTranspose`
  by counting ones; stopping puts the originals back.
* **on**: one Python call and an integer increment per launch; a sampled launch also records
  two events (``cuEventRecord``, about 2 µs each, one launch in :data:`SAMPLE_EVERY`).
  ``benchmarks/launch_overhead.py`` measures both.

At most ``MAX_IN_FLIGHT`` samples are in flight at once: the flusher reads the completed
ones back every ``READ_S`` seconds and reuses their events, and a sampled call that finds
the limit reached is counted, not timed. Stopping destroys the recording's events. (Events
left alive by the thousands slowed every later launch of the process, recording or not: the
H100 run of 2026-11-26 read +3.9 µs a launch after a recording that timed every call.)

A sample's time is the GPU time between the two events: the kernel itself, plus the events'
own cost (about a microsecond). A sample whose host side took longer than :data:`MAX_HOST_US`
is dropped (the GPU may have idled between its events while another thread held the GIL). Launches captured in a CUDA graph are counted but not timed
(events in a capture time nothing). One recording is active per process at a time.

A child forked while a recording is active (``os.fork``, ``multiprocessing``'s fork) records its
own launches under a run id of its own, its batches numbered from 1: what the parent counted
before the fork is the parent's to write (the child kept the parent's run id and batch number
and wrote the parent's pending counts as its own batch, which then made the database drop the
parent's batch of that number as stored: issue 51). A child that ends with ``os._exit``
(``multiprocessing``) keeps the batches its flusher wrote, not its last one.
"""

from __future__ import annotations

import atexit
import collections
import ctypes
import os
import secrets
import signal
import statistics
import threading
import time
import warnings
import weakref
from collections.abc import Callable
from typing import Any

from autotune import settings
from autotune.errors import AutotuneError, InvalidInputError, StoreError
from autotune.runtime import driver
from autotune.runtime.streams import stream_handle

__all__ = ["Recording", "record", "active", "track", "register_method", "from_environment", "SAMPLE_EVERY",
           "FLUSH_S", "READ_S", "MAX_IN_FLIGHT", "MAX_HOST_US", "ENV"]

SAMPLE_EVERY = 64
"""One call in this many of each prepared launch is timed on the GPU (the 2nd, 66th, ...; and
every power of two: 2, 4, 8, ...; the 1st is never timed: it may load the module, which the
3-step app's plan of 2026-11-27 read as a kernel 10x its time): a power of two."""
FLUSH_S = 2.0
"""Seconds between two batches written by the flusher."""
READ_S = 0.05
"""Seconds between two reads of the completed samples by the flusher (their events reused)."""
MAX_HOST_US = 100.0
"""A sample whose host side (its two ``cuEventRecord`` calls and the launch between them) took
longer than this (µs) is dropped, the call only counted: the GPU may have idled between the
events meanwhile. Another Python thread holding the GIL (the flusher writing a batch, the
program's own threads) can stop the launching thread for the interpreter's switch interval
(5 ms): the 2-GPU H100 app run of 2026-11-27 read a 11 µs transpose's samples as 2-4.5 ms."""
MAX_IN_FLIGHT = 256
"""Samples (event pairs) in flight at most; a sampled call beyond them is counted, not timed."""
ENV = "AUTOTUNE_RECORD"
"""The environment variable that records a program you do not edit: its value is the name."""

_CUDA_SUCCESS, _CUDA_NOT_READY = 0, 600
_host_ns = time.perf_counter_ns

_lock = threading.RLock()
_active: Recording | None = None
_live: weakref.WeakSet = weakref.WeakSet()  # every PackedLaunch made (their go is swapped)
_methods: list[tuple[type, str, Callable]] = []  # (class, method name, wrapper factory)
_env_checked = False
_exit_hooked = False


def active() -> Recording | None:
    """The recording active in this process, or ``None``."""
    return _active


def record(name: str, *, db: str | None = None, sample_every: int = SAMPLE_EVERY,
           flush_s: float = FLUSH_S) -> Recording:
    """Record every launch of this process into workload ``name`` while the block runs:
    ``with autotune.record("training"): ...`` (module doc). A recording already stored under
    that name is added to: the workload is every recording of that name.

    Args:
        name: the workload's name: 1 to 100 printable characters.
        db: the results database URL (default ``AUTOTUNE_DB`` or the platformdirs default).
        sample_every: time one call in this many per prepared launch (a power of two, >= 1).
        flush_s: seconds between two batches written to the database (> 0).

    Returns:
        A [`Recording`][autotune.runtime.recording.Recording], started when the ``with`` block
            begins (or by its ``start()``).

    Raises:
        InvalidInputError: a name that is empty, too long or not printable; a bad
            ``sample_every``, ``flush_s`` or ``db`` (nothing is written).
        StoreError: the database cannot be opened for writing (refused here, before the
            program's work runs, not when the block ends).
    """
    return Recording(name, db=db, sample_every=sample_every, flush_s=flush_s)


class _Slot:
    """What one prepared launch counted: ``calls[0]`` launches (bumped on the launch path),
    ``sampled`` of them timed taking ``sampled_ms`` (filled by the flusher), and the samples
    not yet written in a batch."""

    __slots__ = ("problem", "device", "calls", "sampled", "sampled_ms", "samples", "lock")

    def __init__(self, problem, device) -> None:
        self.problem, self.device = problem, device
        self.calls = [0]
        self.sampled, self.sampled_ms = 0, 0.0
        self.samples: list[float] = []  # the samples (ms) not yet written in a batch
        self.lock = threading.Lock()


class Recording:
    """An active or stopped recording of launches into one workload (made by
    [`record`][autotune.runtime.recording.record]; module doc). A context manager; also
    ``start()`` and ``stop()``.

    Attributes:
        name: the workload's name.
        run: this process's recording id (hex): each batch is ``(run, batch number)``.
        batches: batches written so far.
        error: the last error writing a batch (``None``: none); its counts are kept and
            written with the next batch.
    """

    def __init__(self, name: str, *, db: str | None = None, sample_every: int = SAMPLE_EVERY,
                 flush_s: float = FLUSH_S) -> None:
        from autotune.kernel.arguments import check_db_arg
        from autotune.store.opening import open_store
        from autotune.store.workload_records import check_name

        self.name = check_name(name)
        if not isinstance(sample_every, int) or isinstance(sample_every, bool) or sample_every < 1 \
                or sample_every & (sample_every - 1):
            raise InvalidInputError(f"sample_every {sample_every!r} is not allowed; give a power of two >= 1")
        if not isinstance(flush_s, (int, float)) or isinstance(flush_s, bool) or not flush_s > 0:
            raise InvalidInputError(f"flush_s {flush_s!r} is not allowed; give a positive number of seconds")
        check_db_arg(db)
        self.db, self.sample_every, self.flush_s = db, sample_every, float(flush_s)
        self.run = secrets.token_hex(8)
        self.batches = 0
        self.error: Exception | None = None
        self._slots: list[_Slot] = []
        self._by_problem: dict[tuple, _Slot] = {}  # slots of Launchers and transposes (shared, locked)
        self._flushed: dict[int, tuple[int, int, float, int]] = {}  # id(slot) -> counts written
        self._unsent: list | None = None  # a batch made but not yet written: sent again as it is
        self._pending: collections.deque = collections.deque()  # (slot, start, end, context) samples
        self._events: dict[int, list[tuple[int, int]]] = {}  # context -> free event pairs
        self._created = 0  # event pairs made (at most MAX_IN_FLIGHT + 1 alive)
        self._flush_lock = threading.RLock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        # opened now: a database that cannot be written is refused before the program's work
        # runs, not when the block ends with its counts (issue 51)
        self._store = open_store(db)
        self._previous_term = None
        self._warned = False

    # -- starting and stopping ------------------------------------------------------------

    def __enter__(self) -> Recording:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> Recording:
        """Start recording: every launch from now on is counted (module doc).

        Raises:
            InvalidInputError: another recording is active in this process.
        """
        global _active
        with _lock:
            if _active is not None:
                if self._store is not None:  # opened by record(); opened again if this one starts later
                    self._store.close()
                    self._store = None
                raise InvalidInputError(f"recording {self.name!r} cannot start: recording {_active.name!r} is "
                                        "active in this process; stop it first")
            _active = self
            for p in list(_live):
                p.go = self._wrap_go(p)
            for cls, attribute, factory in _methods:
                setattr(cls, attribute, factory(cls.__dict__[attribute], self))
        _hook_exit()
        self._hook_sigterm()
        self._thread = threading.Thread(target=self._flusher, name=f"autotune-record-{self.name}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop recording: the launches go back to their uncounted path, and what was counted
        since the last batch is written (the pending samples read back first).

        Raises:
            StoreError: the last batch cannot be written (its counts are lost only then).
        """
        global _active
        with _lock:
            if _active is not self:
                return
            for p in list(_live):
                p.go = p.raw_go
            for cls, attribute, _ in _methods:
                original = cls.__dict__[attribute]
                setattr(cls, attribute, getattr(original, "__wrapped__", original))
            _active = None
        self._unhook_sigterm()
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        try:
            self.flush(wait=True)
            if self.error is not None:
                raise self.error
        finally:
            self._destroy_events()
            if self._store is not None:
                self._store.close()
                self._store = None

    # -- the launch path ------------------------------------------------------------------

    def _slot(self, problem, device) -> _Slot:
        slot = _Slot(problem, device)
        with self._flush_lock:
            self._slots.append(slot)
        return slot

    def _shared_slot(self, problem, device) -> _Slot:
        """The one slot of ``problem`` on ``device`` for launches shared between threads
        (`Launcher`, transposes): counted under its lock."""
        key = (problem, device)
        slot = self._by_problem.get(key)
        if slot is None:
            with self._flush_lock:
                slot = self._by_problem.get(key)
                if slot is None:
                    slot = self._by_problem[key] = self._slot(problem, device)
        return slot

    def _wrap_go(self, p) -> Callable:
        """A counting ``go(pointers, stream)`` for the `PackedLaunch` ``p`` (one per thread, so
        its count needs no lock): its own slot, the sampled call timed."""
        go = p.raw_go
        if getattr(p.launcher, "device", None) is None:  # made without the device's identity: not counted
            return go
        slot = self._slot(p.launcher.problem, p.launcher.device)
        calls, mask, sample = slot.calls, self.sample_every - 1, self._sample
        second = 2 & mask  # calls 2, 2 + N, 2 + 2N, ... (N >= 2) are timed, and every power of two
        if mask == 0:
            def every(pointers, stream: int) -> None:
                calls[0] += 1
                if calls[0] == 1:
                    return go(pointers, stream)
                sample(go, (pointers, stream), stream, slot)
            return every

        def recorded(pointers, stream: int) -> None:
            n = calls[0] + 1
            calls[0] = n
            if n & mask != second and (n & (n - 1) or n == 1):
                return go(pointers, stream)
            sample(go, (pointers, stream), stream, slot)
        return recorded

    def _count(self, launch: Callable, args: tuple, stream: Callable[[], int], slot: _Slot) -> Any:
        """Count one call of ``launch(*args)`` in ``slot`` (under its lock) and run it, timed
        if it is the one sampled (``stream()`` gives its stream then)."""
        with slot.lock:
            n = slot.calls[0] = slot.calls[0] + 1
        if n < 2 or ((n - 2) % self.sample_every and n & (n - 1)):
            return launch(*args)
        return self._sample(launch, args, stream(), slot)

    def _sample(self, launch: Callable, args: tuple, stream: int, slot: _Slot) -> Any:
        """Run ``launch(*args)`` between two events on ``stream``; the flusher reads them back.
        Where no event can be recorded (no context, a graph capture, ``MAX_IN_FLIGHT``
        samples in flight), the call is only run."""
        if len(self._pending) >= MAX_IN_FLIGHT:
            return launch(*args)
        pair = self._take_events(stream)
        if pair is None:
            return launch(*args)
        context, start, end = pair
        lib = driver.libcuda()
        began = _host_ns()
        if lib.cuEventRecord(start, stream) != _CUDA_SUCCESS:
            self._give_events(context, start, end)
            return launch(*args)
        try:
            result = launch(*args)
        except BaseException:
            self._give_events(context, start, end)
            raise
        if lib.cuEventRecord(end, stream) != _CUDA_SUCCESS or _host_ns() - began > MAX_HOST_US * 1e3:
            self._give_events(context, start, end)  # not recorded, or the host stalled inside: not a sample
        else:
            self._pending.append((slot, start, end, context))
        return result

    def _take_events(self, stream: int) -> tuple[int, int, int] | None:
        try:
            lib = driver.libcuda()
            status = ctypes.c_int(0)
            if lib.cuStreamIsCapturing(stream, ctypes.byref(status)) != _CUDA_SUCCESS or status.value != 0:
                return None
            context = driver.current_context()
        except AutotuneError:
            return None
        with self._flush_lock:
            free = self._events.setdefault(context, [])
            if free:
                return (context, *free.pop())
        handles = []
        for _ in range(2):
            event = ctypes.c_void_p()
            if lib.cuEventCreate(ctypes.byref(event), 0) != _CUDA_SUCCESS:
                for made in handles:
                    lib.cuEventDestroy_v2(made)
                return None
            handles.append(event.value)
        with self._flush_lock:
            self._created += 1
        return context, handles[0], handles[1]

    def _give_events(self, context: int, start: int, end: int) -> None:
        with self._flush_lock:
            self._events.setdefault(context, []).append((start, end))

    def _destroy_events(self) -> None:
        """Destroy the free event pairs (every pair, once the pending samples are read back),
        each in its context; a context already gone (at exit) is skipped."""
        with self._flush_lock:
            pools, self._events = self._events, {}
        if not any(pools.values()):
            return
        try:
            lib = driver.libcuda()
        except AutotuneError:
            return
        for context, pairs in pools.items():
            if not pairs or lib.cuCtxPushCurrent_v2(context) != _CUDA_SUCCESS:
                continue
            try:
                for pair in pairs:
                    for event in pair:
                        lib.cuEventDestroy_v2(event)
            finally:
                lib.cuCtxPopCurrent_v2(ctypes.byref(ctypes.c_void_p()))

    # -- the flusher ----------------------------------------------------------------------

    def _flusher(self) -> None:
        """Read the completed samples every ``READ_S`` seconds and write a batch every
        ``flush_s`` seconds, until the recording stops."""
        due = time.monotonic() + self.flush_s
        while not self._stop.wait(min(READ_S, self.flush_s)):
            try:
                if time.monotonic() >= due:
                    due = time.monotonic() + self.flush_s
                    self.flush()
                elif self._pending:
                    with self._flush_lock:
                        self._read_samples(False)
            except Exception as exc:  # noqa: BLE001  (never ends the thread: said once, retried)
                self._note(exc)

    def _note(self, exc: Exception) -> None:
        self.error = exc
        if not self._warned:
            self._warned = True
            warnings.warn(f"recording {self.name!r}: a batch could not be written ({exc}); its counts are kept "
                          "and written with the next one", RuntimeWarning, stacklevel=2)

    def _read_samples(self, wait: bool) -> None:
        """Read the pending samples whose end event has completed (``wait``: every one,
        synchronising on each), adding their time to their slots."""
        lib = driver.libcuda() if self._pending else None
        keep = []
        while self._pending:
            slot, start, end, context = self._pending.popleft()
            pushed = lib.cuCtxPushCurrent_v2(context) == _CUDA_SUCCESS
            try:
                status = lib.cuEventSynchronize(end) if wait else lib.cuEventQuery(end)
                if status == _CUDA_NOT_READY:
                    keep.append((slot, start, end, context))
                    continue
                ms = ctypes.c_float(0.0)
                if status == _CUDA_SUCCESS and lib.cuEventElapsedTime(ctypes.byref(ms), start, end) == _CUDA_SUCCESS:
                    slot.sampled += 1
                    slot.sampled_ms += ms.value
                    slot.samples.append(ms.value)
            finally:
                if pushed:
                    lib.cuCtxPopCurrent_v2(ctypes.byref(ctypes.c_void_p()))
            self._give_events(context, start, end)
        self._pending.extend(keep)

    def _batch(self) -> tuple[list, dict]:
        """What was counted since the last batch, per problem (``CallCount``), and each
        slot's counts now (taken as written once the batch is)."""
        from autotune.kernel.problem import ProblemKey
        from autotune.store.workload_records import CallCount, device_model

        grouped: dict[tuple, list] = {}
        marks = {}
        for slot in list(self._slots):
            calls, sampled, ms, taken = slot.calls[0], slot.sampled, slot.sampled_ms, len(slot.samples)
            done = self._flushed.get(id(slot), (0, 0, 0.0, 0))
            marks[id(slot)] = (calls, sampled, ms, taken)
            if calls == done[0] and sampled == done[1]:
                continue
            key = (device_model(slot.device), ProblemKey.of(slot.problem))
            total = grouped.setdefault(key, [0, []])
            total[0] += calls - done[0]
            total[1] += slot.samples[:taken]
        return [CallCount(*key, calls=c, sampled=len(s), sampled_ms=statistics.median(s) * len(s) if s else 0.0)
                for key, (c, s) in grouped.items()], marks

    def _written(self, marks: dict) -> None:
        """Take a written batch's counts as done: its samples leave their slots."""
        self._flushed.update(marks)
        for slot in list(self._slots):
            mark = marks.get(id(slot))
            if mark is not None:
                del slot.samples[:mark[3]]

    def flush(self, wait: bool = False) -> int:
        """Write what was counted since the last batch as one batch (one transaction); the
        flusher calls this every ``flush_s`` seconds, and ``stop()`` once more with
        ``wait`` (every pending sample read back first). A batch that fails to be written is
        sent again, unchanged, by the next flush. Returns the rows written.

        Raises:
            StoreError: the database cannot be written.
        """
        from autotune.store.workloads import write_batch

        with self._flush_lock:
            self._read_samples(wait)
            written = 0
            for _ in range(2):  # a batch refused before, sent again as it was; then the new counts
                if self._unsent is None:
                    counts, marks = self._batch()
                    if not counts:
                        break
                    self._unsent = (self.batches + 1, counts, marks)
                number, counts, marks = self._unsent
                if self._store is None:
                    from autotune.store.opening import open_store

                    self._store = open_store(self.db)
                written += write_batch(self._store, self.name, self.run, number, counts)
                self._unsent, self.batches, self.error = None, number, None
                self._written(marks)
            return written

    # -- fork -----------------------------------------------------------------------------

    def _forked(self) -> None:
        """In a child forked while this recording is active (module doc): a new run id and
        batch count; what was counted before the fork taken as written (it is the parent's),
        the samples in flight and the event pairs (of the parent's CUDA context) dropped; locks
        made anew (another thread of the parent may have held one at the fork); the parent's
        database connections dropped unclosed; the flusher, which did not survive the fork,
        started again."""
        self._flush_lock = threading.RLock()
        self.run, self.batches, self.error, self._warned, self._unsent = secrets.token_hex(8), 0, None, False, None
        self._pending, self._events, self._created = collections.deque(), {}, 0
        for slot in self._slots:
            slot.lock = threading.Lock()
            slot.samples.clear()
        self._flushed = {id(slot): (slot.calls[0], slot.sampled, slot.sampled_ms, 0) for slot in self._slots}
        if self._store is not None:
            self._store.after_fork()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._flusher, name=f"autotune-record-{self.name}", daemon=True)
        self._thread.start()

    # -- exit and SIGTERM -----------------------------------------------------------------

    def _hook_sigterm(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        try:
            self._previous_term = signal.signal(signal.SIGTERM, self._on_sigterm)
        except ValueError:  # not the main interpreter
            self._previous_term = None

    def _unhook_sigterm(self) -> None:
        if self._previous_term is not None and threading.current_thread() is threading.main_thread():
            if signal.getsignal(signal.SIGTERM) == self._on_sigterm:
                signal.signal(signal.SIGTERM, self._previous_term)
            self._previous_term = None

    def _on_sigterm(self, signum: int, frame) -> None:
        previous = self._previous_term
        try:
            self.stop()
        except Exception as exc:  # noqa: BLE001  (the signal's own action must still happen)
            self._note(exc)
        if callable(previous):
            previous(signum, frame)
        elif previous != signal.SIG_IGN:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)


def _hook_exit() -> None:
    global _exit_hooked
    if not _exit_hooked:
        _exit_hooked = True
        atexit.register(_at_exit)


def _at_exit() -> None:
    recording = _active
    if recording is not None:
        try:
            recording.stop()
        except Exception as exc:  # noqa: BLE001  (at exit: said, not raised)
            warnings.warn(f"recording {recording.name!r}: the last batch could not be written: {exc}",
                          RuntimeWarning, stacklevel=1)


def _after_fork_in_child() -> None:
    """``os.register_at_fork``'s hook in a child: the module's lock made anew (a thread of the
    parent may have held it), and the active recording's run made the child's own."""
    global _lock
    _lock = threading.RLock()
    if _active is not None:
        _active._forked()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def track(p) -> None:
    """Note a new `PackedLaunch` ``p`` (its ``raw_go`` set): counted from now on while a
    recording is active, and whenever one starts later (the cold path calls this once)."""
    with _lock:
        _live.add(p)
        if _active is not None:
            p.go = _active._wrap_go(p)


def register_method(cls: type, attribute: str, factory: Callable[[Callable, Recording], Callable]) -> None:
    """Have ``cls.attribute`` (a launch method) replaced by ``factory(original, recording)``
    while a recording is active (the wrapper gets ``__wrapped__`` set to the original)."""
    def made(original, recording):
        wrapper = factory(original, recording)
        wrapper.__wrapped__ = original
        return wrapper

    with _lock:
        _methods.append((cls, attribute, made))
        if _active is not None:
            setattr(cls, attribute, made(cls.__dict__[attribute], _active))


def launcher_call(original: Callable, recording: Recording) -> Callable:
    """The counting ``Launcher.__call__`` (module ``autotune.runtime.compiled``)."""
    def __call__(self, *arrays, stream=None):
        if self.device is None or not arrays:
            return original(self, *arrays, stream=stream)
        slot = recording._shared_slot(self.problem, self.device)
        return recording._count(lambda: original(self, *arrays, stream=stream), (),
                               lambda: stream_handle(stream, arrays[0]), slot)
    return __call__


def transpose_call(original: Callable, recording: Recording) -> Callable:
    """The counting ``PreparedTranspose.__call__`` (module ``autotune.runtime.transpose.prepared``)."""
    def __call__(self, out, src, ld, batch, batch_stride, stream):
        launcher = self.launcher
        if launcher.device is None:
            return original(self, out, src, ld, batch, batch_stride, stream)
        slot = recording._shared_slot(launcher.problem, launcher.device)
        return recording._count(original, (self, out, src, ld, batch, batch_stride, stream), lambda: stream, slot)
    return __call__


def from_environment() -> None:
    """Start the process's recording named by ``AUTOTUNE_RECORD``, once (the first cold
    launch calls this); it stops at exit. Unset or empty: nothing.

    Raises:
        InvalidInputError: a name that is not allowed (``AUTOTUNE_RECORD=...`` named).
        StoreError: the database (``AUTOTUNE_DB``, else the default) cannot be opened for
            writing (``AUTOTUNE_RECORD=...`` named): said at the first launch, not at exit.
    """
    global _env_checked
    if _env_checked:
        return
    with _lock:
        if _env_checked:
            return
        _env_checked = True
        name = settings.RECORD.get()
        if not name or _active is not None:
            return
        try:
            recording = Recording(name)
        except InvalidInputError as exc:
            raise InvalidInputError(f"{ENV}={name!r}: {exc}") from None
        except StoreError as exc:
            raise StoreError(f"{ENV}={name!r}: {exc}") from exc.__cause__
        recording.start()


def _forget_environment() -> None:
    """Read ``AUTOTUNE_RECORD`` again at the next cold launch (tests)."""
    global _env_checked
    _env_checked = False
