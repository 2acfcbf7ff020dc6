"""A recording: ``record(name)`` and the `Recording` it makes, started and stopped, writing
what was counted in batches, one transaction each (``autotune.store.workloads``), so a
recording cut short (Ctrl-C, SIGTERM, SIGKILL, a crash) leaves whole batches only."""

from __future__ import annotations

import secrets
import threading
import warnings

from autotune.errors import InvalidInputError
from autotune.runtime.recording import hooks
from autotune.runtime.recording.counts import Counts
from autotune.runtime.recording.events import EventPool
from autotune.runtime.recording.flusher import Flusher
from autotune.runtime.recording.state import STATE, hook_exit

__all__ = ["Recording", "record", "SAMPLE_EVERY", "FLUSH_S"]

SAMPLE_EVERY = 64
"""One call in this many of each prepared launch is timed on the GPU (the 2nd, 66th, ...; and
every power of two: 2, 4, 8, ...; the 1st is never timed: it may load the module, which a
plan once read as a kernel 10x its time): a power of two."""
FLUSH_S = 2.0
"""Seconds between two batches written by the flusher."""


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
        A `Recording`, started when the ``with`` block
            begins (or by its ``start()``).

    Raises:
        InvalidInputError: a name that is empty, too long or not printable; a bad
            ``sample_every``, ``flush_s`` or ``db`` (nothing is written).
        StoreError: the database cannot be opened for writing (refused here, before the
            program's work runs, not when the block ends).
    """
    return Recording(name, db=db, sample_every=sample_every, flush_s=flush_s)


class Recording:
    """An active or stopped recording of launches into one workload (made by
    `record`; module doc). A context manager; also
    ``start()`` and ``stop()``.

    Attributes:
        name: the workload's name.
        run: this process's recording id (hex): each batch is ``(run, batch number)``.
        batches: batches written so far.
        error: the last error writing a batch (``None``: none); its counts are kept and
            written with the next batch.
        counts: what was counted, per prepared launch (``autotune.runtime.recording.counts``).
        events: the CUDA events of its samples (``autotune.runtime.recording.events``).
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
        self.counts = Counts()
        self.events = EventPool()
        self._unsent: list | None = None  # a batch made but not yet written: sent again as it is
        self._flush_lock = threading.RLock()
        self._flusher = Flusher(self.name, self.flush_s, flush=lambda: self.flush(), read=self._read_back,
                                pending=lambda: bool(self.events.pending), failed=self._note, on_term=self._on_term)
        # opened now: a database that cannot be written is refused before the program's work
        # runs, not when the block ends with its counts
        self._store = open_store(db)
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
        with STATE.lock:
            if STATE.active is not None:
                if self._store is not None:  # opened by record(); opened again if this one starts later
                    self._store.close()
                    self._store = None
                raise InvalidInputError(f"recording {self.name!r} cannot start: recording {STATE.active.name!r} is "
                                        "active in this process; stop it first")
            STATE.active = self
            hooks.swap_in(self)
        hook_exit()
        self._flusher.start()
        return self

    def stop(self) -> None:
        """Stop recording: the launches go back to their uncounted path, and what was counted
        since the last batch is written (the pending samples read back first).

        Raises:
            StoreError: the last batch cannot be written (its counts are lost only then).
        """
        with STATE.lock:
            if STATE.active is not self:
                return
            hooks.swap_out()
            STATE.active = None
        self._flusher.stop()
        try:
            self.flush(wait=True)
            if self.error is not None:
                raise self.error
        finally:
            self.events.destroy()
            if self._store is not None:
                self._store.close()
                self._store = None

    # -- writing batches ------------------------------------------------------------------

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
            self.events.read(wait)
            written = 0
            for _ in range(2):  # a batch refused before, sent again as it was; then the new counts
                if self._unsent is None:
                    counts, marks = self.counts.batch()
                    if not counts:
                        break
                    self._unsent = (self.batches + 1, counts, marks)
                number, counts, marks = self._unsent
                if self._store is None:
                    from autotune.store.opening import open_store

                    self._store = open_store(self.db)
                written += write_batch(self._store, self.name, self.run, number, counts)
                self._unsent, self.batches, self.error = None, number, None
                self.counts.written(marks)
            return written

    def _read_back(self) -> None:
        with self._flush_lock:
            self.events.read(False)

    def _note(self, exc: Exception) -> None:
        self.error = exc
        if not self._warned:
            self._warned = True
            warnings.warn(f"recording {self.name!r}: a batch could not be written ({exc}); its counts are kept "
                          "and written with the next one", RuntimeWarning, stacklevel=2)

    def _on_term(self) -> None:
        """SIGTERM: the last batch written (a failure noted: the signal's own action must still
        happen)."""
        try:
            self.stop()
        except Exception as exc:  # noqa: BLE001
            self._note(exc)

    # -- fork -----------------------------------------------------------------------------

    def _forked(self) -> None:
        """In a child forked while this recording is active (module doc): a new run id and
        batch count; what was counted before the fork taken as written (it is the parent's),
        the samples in flight and the event pairs (of the parent's CUDA context) dropped; locks
        made anew (another thread of the parent may have held one); the parent's database
        connections dropped unclosed; the flusher, which did not survive the fork, started
        again."""
        self._flush_lock = threading.RLock()
        self.run, self.batches, self.error, self._warned, self._unsent = secrets.token_hex(8), 0, None, False, None
        self.events.forked()
        self.counts.forked()
        if self._store is not None:
            self._store.after_fork()
        self._flusher.run_thread()
