"""One worker process per GPU: the process mechanics that a search over several GPUs
(:mod:`autotune.search.workers`) and a workload's tuning on several GPUs
(:mod:`autotune.workload.pool`) share; what each worker does is theirs.

- **Start.** Each worker is a ``spawn``ed process (nothing CUDA is inherited), not daemonic
  (it measures in a child process of its own: :mod:`autotune.measure.isolation`). It is
  started with SIGINT and SIGTERM blocked and unblocks them once its handlers are in place
  (:func:`autotune.base.signals.deferred`), so a signal that comes during its start-up is kept
  pending, never lost nor a traceback. It dies with its parent (Linux ``PR_SET_PDEATHSIG``:
  :func:`autotune.base.signals.die_with_parent`), so no orphan goes on measuring after a
  parent killed without a word; elsewhere it can ask :meth:`Worker.orphaned`.
- **The host's cores are shared** (:func:`compile_share`): each worker's compile pool gets
  ``cores // k`` nvcc runs of the host's (``AUTOTUNE_COMPILE_WORKERS`` or the CPU count; 0
  stays 0), at least 1: k full-size pools on one host ran k times as many nvcc as cores and
  the measuring processes waited for the CPU.
- **Events.** A worker sends what it has to say to the parent through one queue
  (:meth:`Worker.send`); the parent takes them one at a time (:meth:`GpuPool.next_event`).
- **Death.** A worker that ends without a word while the parent still waits for something
  from it (``owes``) is reported once, as :class:`Died` with its exit code, after everything
  it sent.
- **Signals.** SIGINT or SIGTERM in the parent (or a ``KeyboardInterrupt`` raised in the
  block) is passed on to every live worker; the parent waits up to :data:`JOIN_S` for each,
  kills what is left, takes in their last events and re-raises. Any other exception kills
  every worker at once: none outlives the parent's block.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import signal
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from autotune import settings
from autotune.base import signals as stop

__all__ = ["JOIN_S", "Died", "GpuPool", "Worker", "compile_share"]

JOIN_S = 60
"""Seconds the parent waits for each interrupted worker before killing it."""

POLL_S = 0.2
"""Seconds :meth:`GpuPool.next_event` waits for an event before it looks for dead workers."""

DRAIN_S = 0.5
"""Seconds the parent waits for a stopped worker's last event, once they have all ended."""


@dataclass(frozen=True)
class Died:
    """The event of a worker that ended without a word: its exit code (negative: the signal
    that killed it)."""

    exitcode: int


def compile_share(gpus: int) -> int:
    """Each of ``gpus`` workers' share of the host's compile workers
    (:func:`autotune.measure.pipeline.workers`): at least 1; 0 (compiling ahead off) stays 0.

    Raises:
        InvalidInputError: ``AUTOTUNE_COMPILE_WORKERS`` is not an integer >= 0.
    """
    from autotune.measure.pipeline import workers

    host = workers()
    return max(1, host // gpus) if host else 0


class Worker:
    """What a worker's body is given: its GPU's ``ordinal``, a way to send events to the
    parent, and whether the parent is gone."""

    def __init__(self, ordinal: int, events, parent: int) -> None:
        self.ordinal = ordinal
        self._events = events
        self._parent = parent

    def send(self, event) -> None:
        """Send ``event`` (anything that pickles) to the parent, as ``(ordinal, event)``."""
        self._events.put((self.ordinal, event))

    def orphaned(self) -> bool:
        """Whether the parent that started this worker is gone (where nothing killed this
        worker with it)."""
        return os.getppid() != self._parent


def _ignore(_signum: int, _frame) -> None:
    """SIGINT's handler in a worker outside its work."""


def _bootstrap(work: Callable, ordinal: int, events, compilers: int, parent: int, args: tuple) -> None:
    """Body of every worker process: die with ``parent``, take ``compilers`` as this process's
    compile workers, then run ``work(Worker, *args)`` with the signals handled (deferred:
    :mod:`autotune.base.signals`) and unblocked. A signal that no code of ``work`` acted on
    ends the worker quietly (nothing was in flight). Once ``work`` is over SIGINT is ignored
    (the handlers in place before are restored, and that of SIGINT was set to one that does
    nothing first), so that a late Ctrl-C prints no traceback of the process's exit; SIGTERM
    then ends it."""
    stop.die_with_parent(parent)
    settings.COMPILE_WORKERS.set(str(compilers))
    signal.signal(signal.SIGINT, _ignore)  # not SIG_IGN: that would discard a SIGINT pending since the start
    try:
        with stop.deferred():
            stop.unblock()
            work(Worker(ordinal, events, parent), *args)
    except KeyboardInterrupt:
        return


class GpuPool:
    """One worker process per GPU of ``ordinals`` (see the module doc).

    Made first, so that what the workers share can be made in its ``context`` (a
    ``multiprocessing.Value``, a queue per worker); then :meth:`running` starts them and
    :meth:`next_event` takes their events."""

    def __init__(self, ordinals: Sequence[int], join_s: float = JOIN_S) -> None:
        self.ordinals = list(ordinals)
        self.context = multiprocessing.get_context("spawn")
        self.compilers = compile_share(len(self.ordinals))
        self.join_s = join_s
        self._events = self.context.Queue()
        self._procs: dict[int, multiprocessing.process.BaseProcess] = {}
        self._dead: set[int] = set()  # reported as Died
        self._died: list[tuple[int, Died]] = []  # found, not returned yet

    @contextmanager
    def running(self, work: Callable, args: Callable[[int, int], tuple],
                last: Callable[[int, object], None]) -> Iterator[GpuPool]:
        """Start a worker per GPU, running ``work(worker, *args(i, ordinal))`` for the ``i``-th
        ordinal (``work`` and the arguments must pickle: a module's function), and run the
        block with signals deferred (:func:`autotune.base.signals.deferred`).

        On ``KeyboardInterrupt`` in the block, the signal (SIGINT if none came) goes to every
        live worker, each is waited for up to :attr:`join_s` and killed past it, their last
        events go to ``last(ordinal, event)`` and the interrupt is re-raised; on any other
        exception every worker is killed. After the block, each worker is waited for (up to
        :attr:`join_s`).
        """
        with stop.deferred():  # a KeyboardInterrupt must never cut a start() or a read of the queue half-way
            try:
                for i, o in enumerate(self.ordinals):
                    self._procs[o] = self.context.Process(
                        target=_bootstrap, args=(work, o, self._events, self.compilers, os.getpid(), args(i, o)),
                        daemon=False)
                    with stop.blocked():  # the worker inherits them blocked until its handlers are in place
                        self._procs[o].start()
                yield self
            except KeyboardInterrupt:
                stop.stop_workers(self._procs.values(), stop.signal_number() or signal.SIGINT, self.join_s)
                for ordinal, event in self._drain():
                    last(ordinal, event)
                raise
            except BaseException:  # e.g. a callback failed: no worker may outlive the parent's block
                self.kill()
                raise
        for proc in self._procs.values():
            proc.join(self.join_s)

    def next_event(self, owes: Callable[[int], bool], timeout: float = POLL_S) -> tuple[int, object] | None:
        """The next ``(ordinal, event)`` of a worker, waiting up to ``timeout`` seconds; else a
        worker that has ended while ``owes(ordinal)`` says the parent still waits for
        something from it, as ``(ordinal, Died(exitcode))``, each worker once; else ``None``.
        What a worker sent before it ended comes before its death.

        Raises:
            KeyboardInterrupt: a signal came (:func:`autotune.base.signals.check`).
        """
        stop.check()
        if not self._died:
            try:
                return self._events.get(timeout=timeout)
            except queue.Empty:
                pass
            ended = [o for o, proc in self._procs.items()
                     if o not in self._dead and proc.exitcode is not None and owes(o)]
            if not ended:
                return None
            try:  # an ended process has flushed what it sent: none of it is lost to its death
                return self._events.get_nowait()
            except queue.Empty:
                self._dead.update(ended)
                self._died = [(o, Died(self._procs[o].exitcode)) for o in ended]
        return self._died.pop(0)

    def exitcodes(self) -> dict[int, int | None]:
        """Each worker's exit code (``None``: running or not started)."""
        return {o: self._procs[o].exitcode if o in self._procs else None for o in self.ordinals}

    def kill(self) -> None:
        """SIGKILL every live worker, and wait for it to end."""
        for proc in self._procs.values():
            if proc.is_alive():
                proc.kill()
                proc.join(self.join_s)

    def _drain(self) -> list[tuple[int, object]]:
        """The events left in the queue once the workers have ended."""
        left = []
        while True:
            try:
                left.append(self._events.get(timeout=DRAIN_S))
            except queue.Empty:
                return left
