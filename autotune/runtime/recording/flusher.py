"""The recording's background thread: it reads the completed samples back every
:data:`READ_S` seconds and writes a batch every ``flush_s`` seconds, so nothing is read or
written on the launch path. A recording's last batch is also written on SIGTERM (through
`base/signals.py`: the signal's previous action runs after it)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from autotune.base import signals

__all__ = ["Flusher", "READ_S"]

READ_S = 0.05
"""Seconds between two reads of the completed samples by the flusher (their events reused)."""


class Flusher:
    """The thread of one recording: ``flush()`` every ``flush_s`` seconds, ``read()`` every
    :data:`READ_S` seconds while ``pending()`` says samples are in flight, ``failed(exc)`` for
    an error of either (never ending the thread); ``on_term()`` on SIGTERM."""

    def __init__(self, name: str, flush_s: float, *, flush: Callable[[], object], read: Callable[[], None],
                 pending: Callable[[], bool], failed: Callable[[Exception], None],
                 on_term: Callable[[], None]) -> None:
        self.name, self.flush_s = name, flush_s
        self._flush, self._read, self._pending, self._failed, self._on_term = flush, read, pending, failed, on_term
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._unhook: Callable[[], None] | None = None

    def start(self) -> None:
        """Start the thread, and write the last batch on SIGTERM."""
        self._unhook = signals.on_sigterm(self._on_term)
        self.run_thread()

    def run_thread(self) -> None:
        """Start the thread (again in a forked child: it did not survive the fork)."""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"autotune-record-{self.name}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """SIGTERM's action taken back; the thread stopped and waited for (unless it is the
        caller)."""
        if self._unhook is not None:
            self._unhook()
            self._unhook = None
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()

    def _loop(self) -> None:
        due = time.monotonic() + self.flush_s
        while not self._stop.wait(min(READ_S, self.flush_s)):
            try:
                if time.monotonic() >= due:
                    due = time.monotonic() + self.flush_s
                    self._flush()
                elif self._pending():
                    self._read()
            except Exception as exc:  # noqa: BLE001  (never ends the thread: said once, retried)
                self._failed(exc)
