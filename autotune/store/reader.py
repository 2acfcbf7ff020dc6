"""Read-only lookups in a SQLite results database through the standard library's ``sqlite3``.

A process's first :func:`autotune.lookup` (and so its first ``autotune.transpose``) reads one to
three best rows. Opening the database through SQLAlchemy cost that call a quarter of a second
(importing SQLAlchemy and the ORM models; the measurement: benchmarks/README.md, "The first
lookup without SQLAlchemy").
:class:`SqliteReader` answers the same reads as :class:`~autotune.store.repository.Store`
opened ``read_only`` (:meth:`best`, :meth:`find_best`, :attr:`schema_state`, and the trials a
dispatch is learned from: :meth:`shape_trials`, :meth:`trials_state`), from the same SQL
(:mod:`autotune.store.best_sql`, :mod:`autotune.store.trial_sql`), with nothing heavier than ``sqlite3``. Other databases
(PostgreSQL) are read by the Store.

It opens the file as the read-only Store does (:func:`autotune.store.schema.read_only_engine`):
``mode=ro``, and ``immutable=1`` where the file and its folder are not the caller's own to
write and no WAL files exist; it never creates, migrates or writes anything.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote

from autotune.errors import StoreError
from autotune.store import best_sql, locking, trial_sql
from autotune.store.key import Dims, TuningKey
from autotune.store.location import refuse_folder, sqlite_path
from autotune.store.records import BestRecord, best_from_row
from autotune.store.revisions import VERSION_TABLE, revision_state

__all__ = ["ResultsReader", "SqliteReader", "read_only_options"]


class ResultsReader(Protocol):
    """What a lookup reads of a results database: the one contract of :class:`SqliteReader`
    (a SQLite file through the standard library) and
    :class:`~autotune.store.repository.Store` (any database through SQLAlchemy), both opened
    by the one door (:func:`autotune.store.opening.open_results`).

    Attributes:
        safe_url: the database's URL with any password masked.
        schema_state: ``"missing"``, ``"empty"``, ``"older"`` or ``"current"`` (read-only
            openings; ``None`` where not judged).
    """

    safe_url: str
    schema_state: str | None

    def best(self, key: TuningKey) -> BestRecord | None:
        """The best stored config of exactly ``key``, or ``None``."""

    def find_best(self, *, kernel: str | None = None, dims: Mapping[str, int] | Dims | str | None = None,
                  dtype: str | None = None, device_name: str | None = None, source_hash: str | None = None,
                  spec_hash: str | None = None) -> list[BestRecord]:
        """Best configs matching every filter given, sorted."""

    def shape_trials(self, key: TuningKey) -> list[trial_sql.ShapeTrial]:
        """Every trial of ``key``'s identity at any dims (the dispatch's evidence)."""

    def trials_state(self, kernel: str) -> tuple[int | None, int]:
        """``(largest trial id, number of trials)`` of kernel ``kernel``."""

    def close(self) -> None:
        """Release the connections."""


class SqliteReader:
    """The SQLite results database at ``url`` (a plain file URL:
    :func:`autotune.store.location.sqlite_path`), read only.

    :attr:`schema_state` is ``"missing"`` (no file), ``"empty"`` (no autotune schema),
    ``"older"`` (``autotune db upgrade`` migrates it) or ``"current"``; only a current database
    is queried. One connection per thread (``sqlite3`` connections stay in their thread).

    Raises:
        InvalidInputError: ``url`` is not a plain SQLite file URL.
        StoreError: the path is a folder; the file is not a SQLite database or cannot be read;
            it is of a newer schema than this autotune (one line naming the database).
    """

    def __init__(self, url: str) -> None:
        path = sqlite_path(url)
        if path is None:
            from autotune.errors import InvalidInputError

            raise InvalidInputError(f"{url!r} is not a SQLite file URL; allowed: sqlite:///PATH")
        refuse_folder(path)
        self.url, self.path = url, path.absolute()
        self.safe_url = url  # a file URL holds no password
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self.schema_state = "missing" if not self.path.exists() else self._state()

    def __repr__(self) -> str:
        return f"SqliteReader({self.safe_url!r})"

    def _connection(self) -> sqlite3.Connection:
        connection = getattr(self._local, "connection", None)
        if connection is None:
            options = "&".join(f"{k}={v}" for k, v in read_only_options(self.path).items())
            connection = sqlite3.connect(f"file:{quote(str(self.path))}?{options}", uri=True,
                                         timeout=locking.SESSION_BUSY_TIMEOUT_S, check_same_thread=False)
            self._local.connection = connection
            with self._lock:
                self._connections.append(connection)
        return connection

    def _rows(self, sql: str, params: Mapping[str, Any] | tuple = ()) -> list[sqlite3.Row]:
        try:
            connection = self._connection()
            connection.row_factory = sqlite3.Row
            return connection.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise StoreError(f"results database {self.safe_url}: {first}") from exc

    def _state(self) -> str:
        tables = self._rows("SELECT name FROM sqlite_master WHERE type = 'table' AND name = ?", (VERSION_TABLE,))
        found = [row[0] for row in self._rows(f"SELECT version_num FROM {VERSION_TABLE}")] if tables else []
        return revision_state(found, self.safe_url)

    def _queried(self, sql: str, params: Mapping[str, Any] | tuple = ()) -> list[sqlite3.Row]:
        """The rows of a query of the results, none where the schema is not current (a missing
        file, an empty or older database: nothing is tuned there that this autotune reads)."""
        return self._rows(sql, params) if self.schema_state == "current" else []

    def _bests(self, sql: str, params: Mapping[str, Any]) -> list[BestRecord]:
        return [best_from_row(dict(row)) for row in self._queried(sql, params)]

    def best(self, key: TuningKey) -> BestRecord | None:
        """The best stored config of exactly ``key``, or ``None`` (as :meth:`Store.best`)."""
        found = self._bests(*best_sql.select_best(best_sql.key_columns(key)))
        return found[0] if found else None

    def find_best(self, *, kernel: str | None = None, dims: Mapping[str, int] | Dims | str | None = None,
                  dtype: str | None = None, device_name: str | None = None, source_hash: str | None = None,
                  spec_hash: str | None = None) -> list[BestRecord]:
        """Best configs matching every filter given, sorted as :meth:`Store.find_best` sorts them."""
        filters = best_sql.filter_columns(kernel=kernel, dims=dims, dtype=dtype, source_hash=source_hash,
                                          spec_hash=spec_hash)
        return best_sql.sorted_bests(self._bests(*best_sql.select_best(filters, device_name)))

    def shape_trials(self, key: TuningKey) -> list[trial_sql.ShapeTrial]:
        """Every trial of ``key``'s identity at any dims, in the order stored (as
        :meth:`Store.shape_trials <autotune.store.repository.Store.shape_trials>`)."""
        return [trial_sql.shape_trial_from_row(dict(row)) for row in self._queried(*trial_sql.select_shape_trials(key))]

    def trials_state(self, kernel: str) -> tuple[int | None, int]:
        """``(largest trial id, number of trials)`` of kernel name ``kernel`` (``(None, 0)``: none)."""
        rows = self._queried(*trial_sql.select_state(kernel))
        return (rows[0]["last_id"], rows[0]["trial_count"]) if rows else (None, 0)

    def close(self) -> None:
        """Close every connection this reader opened (in any thread)."""
        with self._lock:
            for connection in self._connections:
                connection.close()
            self._connections.clear()
        self._local = threading.local()


def read_only_options(path: Path) -> dict[str, str]:
    """SQLite URI options that open the file ``path`` for reading only: ``mode=ro``, plus
    ``immutable=1`` where its WAL files are absent and the file and its folder are not the
    caller's own to write (a reader would create them: impossible on a read-only mount, and a
    ``-shm`` the owner cannot write stops the owner's writers; a search writing there meanwhile
    is then not seen)."""
    wal = all(Path(f"{path}{suffix}").exists() for suffix in ("-wal", "-shm"))
    return {"mode": "ro"} if wal or _own(path) else {"mode": "ro", "immutable": "1"}


def _own(path: Path) -> bool:
    """Whether ``path`` belongs to this user, who may write it and its folder."""
    try:
        mine = path.stat().st_uid == os.geteuid()
    except OSError:
        return False
    return mine and os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)
