"""Writers that meet each other: how long a transaction waits for a locked database, which
refusals are retried, and SQLite's locking set-up.

SQLite lets one writer in at a time; PostgreSQL refuses one side of a deadlock, a serialisation
failure or a unique key inserted first by another process. A transaction of the
:class:`~autotune.store.repository.Store` is retried (:func:`retrying`) while such a refusal lasts;
the backoff between attempts is where a signal stops a search. SQLAlchemy is imported only
where an engine is configured, so the stdlib reader (:mod:`autotune.store.reader`) can share the
waits without it.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import random
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from autotune.errors import StoreError
from autotune.base import signals as stop

if TYPE_CHECKING:
    from sqlalchemy import Engine

__all__ = ["advisory_lock", "LOCK_WAIT_S", "BUSY_TIMEOUT_S", "SESSION_BUSY_TIMEOUT_S", "RETRIES", "conflict", "retrying",
           "retry_when_locked", "reading", "database_error_in", "is_database_error", "configure_sqlite"]

LOCK_WAIT_S = 60.0
"""Seconds a retried transaction of ours goes on being retried while SQLite stays locked by
another writer (then: :class:`StoreError` saying so)."""
BUSY_TIMEOUT_S = 1.0
"""SQLite: seconds one attempt of a retried transaction waits for the lock inside SQLite, where
no signal is acted on, before the retry loop (which acts on one) tries again."""
SESSION_BUSY_TIMEOUT_S = 30.0
"""SQLite: seconds a transaction not retried (:meth:`Store.session` used directly, Optuna's
own) waits for the lock."""
RETRIES = 5
"""Attempts of a transaction refused by a concurrent writer on PostgreSQL: a deadlock, a
serialisation failure, or a unique key another process inserted first."""
_LOCK_WORDS = ("locked", "busy")
_CONFLICT_WORDS = ("deadlock", "could not serialize", "unique constraint", "duplicate key")

_attempt = threading.local()  # .short: inside a retried attempt (short SQLite busy wait)


def conflict(exc: StoreError) -> str | None:
    """``"locked"`` (SQLite locked or busy), ``"conflict"`` (PostgreSQL deadlock, serialisation
    failure, a unique key inserted first by another process) or ``None`` (not retried)."""
    from sqlalchemy.exc import IntegrityError, OperationalError

    cause = exc.__cause__
    if not isinstance(cause, (OperationalError, IntegrityError)):
        return None
    text = str(cause).lower()
    if any(word in text for word in _LOCK_WORDS):
        return "locked"
    return "conflict" if any(word in text for word in _CONFLICT_WORDS) else None


def retrying(attempt):
    """``attempt()`` (one transaction), re-run while a concurrent writer refuses it: SQLite
    locked or busy, for up to :data:`LOCK_WAIT_S` seconds (each attempt waiting
    :data:`BUSY_TIMEOUT_S` inside SQLite); on PostgreSQL a deadlock, serialisation failure or
    unique key inserted first (the next attempt finds the row), up to :data:`RETRIES`
    attempts. Safe because a refused transaction was rolled back whole. The backoff between
    attempts is where SIGINT/SIGTERM stop a search (:func:`autotune.base.signals.sleep`).

    Raises:
        StoreError: not a conflict, or still refused at the end (saying how long it tried).
    """
    started = time.monotonic()
    for n in itertools.count(1):
        before, _attempt.short = getattr(_attempt, "short", False), True
        try:
            return attempt()
        except StoreError as exc:
            kind, waited = conflict(exc), time.monotonic() - started
            if kind is None:
                raise
            if (kind == "locked" and waited >= LOCK_WAIT_S) or (kind == "conflict" and n >= RETRIES):
                raise StoreError(f"{exc} (still refused after {n} attempts in {waited:.0f} s)") from exc.__cause__
        finally:
            _attempt.short = before
        stop.sleep(min(0.05 * 2**n, 0.5) * (1 + random.random()))


@contextlib.contextmanager
def reading() -> Iterator[None]:
    """Transactions begun in the block (this thread) only read: SQLite begins them deferred
    (``BEGIN``), so in WAL mode they neither take nor wait for the write lock, and several
    searches reading one study (a worker per GPU, each before every config) do not queue
    behind each other's writes. A transaction that writes in the block may fail "database is
    locked" at once: use it for reads only."""
    before, _attempt.read = getattr(_attempt, "read", False), True
    try:
        yield
    finally:
        _attempt.read = before


def retry_when_locked(method):
    """Run a one-transaction method under :func:`retrying`."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        return retrying(lambda: method(self, *args, **kwargs))

    return wrapper


def database_error_in(exc: BaseException) -> BaseException | None:
    """``exc`` if it is a database error, else the first one it was raised while handling
    (Optuna, failing to record a failed trial on a lost database, raises an UnboundLocalError
    of its own from there), else ``None``."""
    seen = 0
    while exc is not None and seen < 8:
        if is_database_error(exc):
            return exc
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return None


def is_database_error(exc: BaseException) -> bool:
    """An error of the database or its driver (as SQLAlchemy or Optuna's storage raise it)."""
    if isinstance(exc, sqlite3.Error):
        return True
    if "sqlalchemy" in sys.modules and isinstance(exc, sys.modules["sqlalchemy"].exc.SQLAlchemyError):
        return True
    module = type(exc).__module__ or ""
    return type(exc).__name__ == "StorageInternalError" or module.startswith(("psycopg", "psycopg2"))




def configure_sqlite(engine: Engine, *, own_tables: bool = True, read_only: bool = False) -> None:
    """Wait for locks (:data:`BUSY_TIMEOUT_S` inside a retried attempt, else
    :data:`SESSION_BUSY_TIMEOUT_S`), and real transactions: SQLAlchemy emits ``BEGIN
    IMMEDIATE`` itself, so a read-then-write holds the write lock from its start. SQLite
    answers a deferred transaction that turns into a writer while another process writes
    with "database is locked" at once, without waiting; under several processes that failed
    Optuna's writes too, so its engine gets the same. ``own_tables``: also foreign keys on
    and WAL (autotune's engine; Optuna's tables are left as Optuna defines them). Both
    engines, where the file is in WAL mode: ``synchronous=NORMAL``, so a commit waits for no
    fsync (a trial is a handful of commits: its claim, row and end): in WAL mode a committed
    transaction still survives a killed process (SIGKILL loses at most the trial in flight);
    only a power loss or OS crash may roll back the last commits, never corrupt the file.
    ``read_only``: plain ``BEGIN`` (a reader takes no write lock) and no pragma that writes."""

    from sqlalchemy import event

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # pysqlite must not emit BEGIN itself
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout={int(1000 * SESSION_BUSY_TIMEOUT_S)}")
            if own_tables:
                cursor.execute("PRAGMA foreign_keys=ON")
                cursor.execute("PRAGMA journal_mode=WAL")
            if not read_only and str(cursor.execute("PRAGMA journal_mode").fetchone()[0]).lower() == "wal":
                cursor.execute("PRAGMA synchronous=NORMAL")  # see above: WAL only
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        # a retried attempt (ours, or an Optuna write a search retries: the claim of a config)
        # waits briefly inside SQLite, then in the retry loop, where a signal is acted on
        wait = BUSY_TIMEOUT_S if getattr(_attempt, "short", False) else SESSION_BUSY_TIMEOUT_S
        connection.exec_driver_sql(f"PRAGMA busy_timeout={int(1000 * wait)}")
        reading = read_only or getattr(_attempt, "read", False)  # a read only: no write lock (WAL)
        connection.exec_driver_sql("BEGIN" if reading else "BEGIN IMMEDIATE")


@contextlib.contextmanager
def advisory_lock(engine: Any, key: int, errors: Callable[[], AbstractContextManager[None]]) -> Iterator[None]:
    """Hold PostgreSQL's session advisory lock ``key`` on a connection of its own for the block
    (:meth:`autotune.store.repository.Store.claim_lock`), taken within ``errors()``; on another
    database, nothing is held."""
    from sqlalchemy import text

    if engine.dialect.name != "postgresql":
        yield
        return
    with errors():
        connection = engine.connect().execution_options(isolation_level="AUTOCOMMIT")
        try:
            connection.execute(text("SELECT pg_advisory_lock(:k)"), {"k": key})
        except BaseException:
            connection.invalidate()  # never back to the pool holding (or awaiting) the lock
            connection.close()
            raise
    try:
        yield
    finally:
        try:
            connection.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": key})
        except BaseException:  # noqa: BLE001  (a lost database: its closing frees the lock)
            connection.invalidate()
        finally:
            connection.close()
