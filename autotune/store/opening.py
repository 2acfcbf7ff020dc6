"""The one door from a database URL to a results database: :func:`open_results`.

Like Optuna's ``get_storage`` (one function from a URL to a storage), every command and library
call that reads or writes results opens its database here, and nowhere else; the
:class:`~autotune.store.repository.Store` is built here only (``tests/store/test_opening.py`` checks
that no other module constructs one).

* :func:`resolve_url` turns what was given into one URL, once: the URL given, else
  ``$AUTOTUNE_DB``, else ``sqlite:///<platformdirs user data dir>/autotune.db``
  (:func:`autotune.store.location.default_url`). A URL that cannot be parsed (a PostgreSQL
  port that is not a number, no ``dialect://``) is refused here, in one line.
* :func:`refuse_foreign` reads the names of the database's tables without writing anything (a
  read-only connection: no table, no WAL switch, no lock file) and refuses a database that
  holds tables that are neither autotune's (``autotune_*``) nor Optuna's (``studies``,
  ``trials``, ...): another application's database is never written to. Nothing in autotune
  adds its tables to such a database; give autotune a database (or a PostgreSQL schema, through
  the URL's ``search_path`` option) of its own.
* :func:`open_results` is the door, one ``mode`` per way of opening (:data:`MODES`).
  ``open_store``, ``open_reader`` and ``open_existing`` are its three most used modes by name.

Free of SQLAlchemy at import (a process's first lookup resolves its URL here and reads a SQLite
file through the standard library: :mod:`autotune.store.reader`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from autotune.errors import InvalidInputError, NotTunedError, nothing_tuned
from autotune.store.location import sqlite_path
from autotune.store.urls import refuse_foreign, resolve_url

if TYPE_CHECKING:
    from autotune.store.reader import ResultsReader
    from autotune.store.repository import Store

__all__ = ["MODES", "Mode", "open_results", "open_store", "open_reader", "open_existing"]

Mode = Literal["write", "unmigrated", "read", "existing", "read_only", "inspect", "lookup"]

MODES: dict[str, str] = {
    "write": "created if missing, an older schema migrated (backed up first): what a search writes to",
    "unmigrated": "writable, the schema left as found (autotune db upgrade migrates it itself)",
    "read": "read only, nothing created (a missing SQLite file holds nothing); an older schema is "
            "migrated first, as a read-only opening cannot read it (best, list, dispatch, plan)",
    "existing": "writable, a SQLite file that does not exist refused, not created (export, report)",
    "read_only": "read only: nothing created, migrated, locked or written; schema_state says what was found",
    "inspect": "read only, the revision taken as found, a newer one not refused (autotune db current)",
    "lookup": "read only as read_only, a SQLite file read through the standard library (no SQLAlchemy): "
              "the runtime's lookups",
}
"""Each mode of :func:`open_results` and what it does."""


def open_results(url: str | None = None, mode: Mode = "write") -> Store | ResultsReader:
    """The results database at ``url`` (``None``: ``$AUTOTUNE_DB``, else the default SQLite
    file), opened in ``mode`` (:data:`MODES`): a :class:`~autotune.store.repository.Store`, or
    for ``lookup`` of a SQLite file a :class:`~autotune.store.reader.SqliteReader` (both
    :class:`~autotune.store.reader.ResultsReader`).

    Raises:
        InvalidInputError: ``url`` is not a string, or an unknown ``mode``.
        NotTunedError: (``existing``) the SQLite file does not exist.
        StoreError: a URL that cannot be parsed; a database of another application (tables
            not autotune's or Optuna's), which is left untouched; a database that cannot be
            opened, is of a newer schema (but ``inspect``), or whose version table holds
            several revisions.
    """
    if mode not in MODES:
        raise InvalidInputError(f"mode {mode!r} is not allowed; allowed: {', '.join(MODES)}")
    writes = mode in ("write", "unmigrated", "existing")
    resolved = resolve_url(url, create=mode in ("write", "unmigrated"))
    if mode == "existing":
        path = sqlite_path(resolved)
        if path is not None and not path.exists():
            raise NotTunedError(f"{nothing_tuned()} (no results database at {path} yet)")
    if mode == "lookup" and sqlite_path(resolved) is not None:
        from autotune.store.reader import SqliteReader

        return SqliteReader(resolved)
    from autotune.store.repository import Store  # SQLAlchemy: not for a SQLite lookup

    if writes or mode == "read":
        refuse_foreign(resolved)  # before any engine: no table, WAL switch or lock file
    if writes:
        return Store(resolved, upgrade=mode != "unmigrated")
    store = Store(resolved, read_only=True, upgrade=mode != "inspect")
    if mode == "read" and store.schema_state == "older":
        store.close()
        return Store(resolved)
    return store


def open_store(url: str | None = None) -> Store:
    """:func:`open_results` in mode ``write``: the database a search, an import or a recording
    writes to, created if missing and migrated to the newest schema."""
    return open_results(url, "write")


def open_reader(url: str | None = None) -> Store:
    """:func:`open_results` in mode ``read``: for a command that only reads (``best``, ``list``),
    so that a missing database is not created and one that answers "nothing is tuned" writes
    nothing; an older schema is migrated first (backed up)."""
    return open_results(url, "read")


def open_existing(url: str | None = None) -> Store:
    """:func:`open_results` in mode ``existing``: for a command that reads stored results and
    writes files from them (``export``, ``report``), so that one that fails writes nothing."""
    return open_results(url, "existing")
