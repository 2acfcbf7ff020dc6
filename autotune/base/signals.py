"""SIGINT and SIGTERM: stop a search at once where that is safe, and never lose the signal.

Python turns SIGINT into ``KeyboardInterrupt`` only when the process started with SIGINT at
its default action: a process started with SIGINT ignored (a background job of a
non-interactive shell, ``nohup``-like launchers, some CI runners) inherits the ignore, and a
Ctrl-C or ``kill -INT`` then does nothing at all. SIGTERM's default ends the process at once,
leaving its search row ``running`` and its Optuna trial RUNNING. So autotune installs its own
handler for both signals while a command runs (:func:`handling`), whatever it inherited.

Where the signal is acted on:

* **immediately** (the default inside :func:`handling`): ``KeyboardInterrupt`` is raised at
  once, like Python's own SIGINT handler;
* **deferred** (inside :func:`deferred`, used by searches): the signal is recorded, and
  ``KeyboardInterrupt`` is raised only inside an :func:`interruptible` block (a measurement,
  a re-timing, a retry's backoff: nothing half-written when cut there) or at the next
  :func:`check`, so that no database transaction nor Optuna bookkeeping (telling a trial's
  state, its heartbeat thread) is cut short. A signal not acted on when the deferred block
  ends raises there.

The first signal is acted on once; later ones are ignored while the search stops (its
clean-up must not be cut short either). :func:`exit_code` gives 130 for SIGINT, 143 for
SIGTERM. Handlers exist only in the main thread; elsewhere these helpers do nothing.

Outside a command, a library user's program keeps its own SIGTERM action: :func:`on_sigterm`
runs a last piece of work first (a recording's last batch), then that action.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["SIGNALS", "handling", "deferred", "interruptible", "shielded", "check", "requested", "sleep",
           "signal_number", "exit_code", "blocked", "unblock", "stop_workers", "die_with_parent", "on_sigterm"]

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class _State:
    depth = 0            # nesting of handling()
    deferring = False    # inside deferred()
    interruptible = 0    # nesting of interruptible()
    shielded = 0         # nesting of shielded(): never raise
    signum: int | None = None  # the first signal received since the outermost handling() began
    acted = False        # KeyboardInterrupt was raised for it


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _handler(signum: int, _frame) -> None:
    if _State.acted:
        return  # stopping already: the clean-up runs to its end
    if _State.signum is None:
        _State.signum = signum
    if not _State.shielded and (_State.interruptible or not _State.deferring):
        _State.acted = True
        raise KeyboardInterrupt


@contextmanager
def handling() -> Iterator[None]:
    """SIGINT and SIGTERM raise ``KeyboardInterrupt`` inside the block (see the module doc),
    even if the process inherited them ignored; the previous handlers are restored after.
    Nested blocks and other threads: no change."""
    if not _main_thread() or _State.depth:
        _State.depth += _main_thread()
        try:
            yield
        finally:
            _State.depth -= _main_thread()
        return
    previous = {s: signal.getsignal(s) for s in SIGNALS}
    _State.depth, _State.signum, _State.acted = 1, None, False
    for s in SIGNALS:
        signal.signal(s, _handler)
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler if handler is not None else signal.SIG_DFL)
        _State.depth = 0


@contextmanager
def deferred() -> Iterator[None]:
    """Within: a signal is acted on only inside :func:`interruptible` blocks and at
    :func:`check`; if none acted on it, leaving the block raises ``KeyboardInterrupt``
    (unless an exception is already leaving it)."""
    if not _main_thread():
        yield
        return
    with handling():
        before = _State.deferring
        _State.deferring = True
        try:
            yield
        finally:
            _State.deferring = before
        check()


@contextmanager
def interruptible() -> Iterator[None]:
    """A block that a signal may cut at any point (raising ``KeyboardInterrupt``): it holds
    no transaction. A signal that came before it raises on entry."""
    if not _main_thread():
        yield
        return
    _State.interruptible += 1  # first: a signal from here on raises in the handler, one before at the check
    try:
        check()
        yield
    finally:
        _State.interruptible -= 1


@contextmanager
def shielded() -> Iterator[None]:
    """A block no signal cuts (the final write of a search's status); a signal that comes
    during it is acted on afterwards, at the next check."""
    if not _main_thread():
        yield
        return
    _State.shielded += 1
    try:
        yield
    finally:
        _State.shielded -= 1


def check() -> None:
    """Raise ``KeyboardInterrupt`` if a signal came and nothing acted on it yet."""
    if _State.signum is not None and not _State.acted and not _State.shielded and _main_thread():
        _State.acted = True
        raise KeyboardInterrupt


def requested() -> bool:
    """Whether a signal came (since the outermost :func:`handling` began)."""
    return _State.signum is not None


def sleep(seconds: float) -> None:
    """``time.sleep`` that a signal cuts short (``KeyboardInterrupt``)."""
    with interruptible():
        time.sleep(seconds)


def signal_number() -> int | None:
    """The first signal received, or ``None``."""
    return _State.signum


def exit_code() -> int:
    """The shell's convention: 128 + the signal's number (SIGINT 130, SIGTERM 143); 130 when
    the interrupt came otherwise."""
    return 128 + (_State.signum or signal.SIGINT)


@contextmanager
def blocked() -> Iterator[None]:
    """SIGINT and SIGTERM blocked (kept pending, not lost) in this thread for the block: a
    process started inside inherits them blocked, so a signal in its start-up waits until it
    has installed its handlers and unblocks them (:func:`unblock`)."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def unblock() -> None:
    """Unblock SIGINT and SIGTERM in this thread (a pending one is delivered now)."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGNALS)


def stop_workers(procs, signum: int, join_s: float) -> None:
    """Send ``signum`` to every live process of ``procs`` (an iterable of
    ``multiprocessing.Process``), wait up to ``join_s`` seconds for each, then kill what is
    left (SIGKILL): the way a search over several GPUs and a workload's pool stop their
    workers."""
    import os

    procs = list(procs)
    for proc in procs:
        if proc.is_alive():
            os.kill(proc.pid, signum)
    for proc in procs:
        proc.join(join_s)
        if proc.is_alive():
            proc.kill()


def die_with_parent(parent: int | None = None) -> None:
    """Ask Linux to SIGKILL this process when its parent ends (``PR_SET_PDEATHSIG``; elsewhere
    nothing): a measuring child, a GPU worker, never outlives the process that started it,
    even one killed without a word. ``parent``: the pid the caller was started by; where this
    process has been re-parented already (its parent died before the request took effect), it
    ends now."""
    import ctypes
    import contextlib
    import os
    import sys

    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if parent is not None and os.getppid() != parent:
        os._exit(1)


def on_sigterm(action: Callable[[], None]) -> Callable[[], None]:
    """Run ``action`` when SIGTERM comes, then the signal's previous action: its handler, or
    the default one (the process ends by SIGTERM, as it would have); an ignored SIGTERM stays
    ignored. ``action`` must not raise. Installed in the main thread only (elsewhere, and
    outside the main interpreter, nothing is).

    Returns:
        The function that takes it back: the previous handler is put back if this one is
        still the installed one (in the main thread; elsewhere it does nothing).
    """
    if not _main_thread():
        return lambda: None

    def handler(signum: int, frame) -> None:
        action()
        if callable(previous):
            previous(signum, frame)
        elif previous != signal.SIG_IGN:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main interpreter
        return lambda: None

    def undo() -> None:
        if _main_thread() and signal.getsignal(signal.SIGTERM) is handler:
            signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)
    return undo
