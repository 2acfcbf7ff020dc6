"""The one door from a database URL to a results database: :func:`open_store`.

Like Optuna's ``get_storage`` (one function from a URL to a storage), every command and library
call that reads or writes results opens its database here, and nowhere else:

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
* :func:`open_store` is the door: ``read_only=True`` never creates, migrates or locks a file (a
  SQLite file that does not exist stays missing: :attr:`Store.schema_state` ``"missing"``);
  otherwise a new database is created and an older schema migrated
  (:mod:`autotune.store.schema`).

Free of SQLAlchemy at import (a process's first lookup resolves its URL here and reads a SQLite
file through the standard library: :mod:`autotune.store.reader`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from autotune.errors import NotTunedError
from autotune.store.location import sqlite_path
from autotune.store.urls import refuse_foreign, resolve_url

if TYPE_CHECKING:
    from autotune.store.repository import Store

__all__ = ["open_store", "open_reader", "open_existing"]

def open_reader(url: str | None = None) -> Store:
    """The results database for a command that only reads best configs (``best``, ``list``):
    opened read only, so that a missing database is not created (it holds nothing tuned) and
    a command that answers "nothing is tuned" writes nothing; another application's database
    is refused as by a writable opening; an older schema is migrated first (backed up), as a
    writable opening does, since a read-only one cannot read it.

    Raises:
        InvalidInputError, StoreError: as :func:`open_store`.
    """
    resolved = resolve_url(url, create=False)
    refuse_foreign(resolved)
    store = open_store(resolved, read_only=True)
    if store.schema_state == "older":
        store.close()
        store = open_store(resolved)
    return store


def open_existing(url: str | None = None) -> Store:
    """The results database for a command that reads stored results and writes files from them
    (``export``, ``report``): a SQLite file that does not exist holds nothing and is refused,
    not created, so that such a command that fails writes nothing; any other URL is opened as
    by :func:`open_store`.

    Raises:
        NotTunedError: the SQLite file does not exist.
        InvalidInputError, StoreError: as :func:`open_store`.
    """
    resolved = resolve_url(url, create=False)
    path = sqlite_path(resolved)
    if path is not None and not path.exists():
        raise NotTunedError(f"no results database at {path}: nothing is tuned there yet (run autotune search "
                            "first, or give --db)")
    return open_store(resolved)


def open_store(url: str | None = None, *, read_only: bool = False, upgrade: bool = True) -> Store:
    """The results database at ``url`` (``None``: ``$AUTOTUNE_DB``, else the default SQLite file).

    Args:
        read_only: open for reading only: nothing is created, migrated, locked or written
            (:attr:`Store.schema_state` says what was found; ``"missing"``: no such file).
        upgrade: (writable opening) migrate the schema to the newest revision at once,
            creating a new database; ``False`` leaves that to :meth:`Store.upgrade`. (Read
            only) ``False`` takes the schema as found: a newer revision is not refused.

    Raises:
        InvalidInputError: ``url`` is not a string.
        StoreError: a URL that cannot be parsed; a database of another application (tables
            not autotune's or Optuna's), which is left untouched; a database that cannot be
            opened, is of a newer schema, or whose version table holds several revisions.
    """
    from autotune.store.repository import Store

    return Store(resolve_url(url, create=not read_only), upgrade=upgrade, read_only=read_only)
