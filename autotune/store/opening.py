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

import os
from typing import TYPE_CHECKING

from autotune.errors import InvalidInputError, NotTunedError, StoreError
from autotune.store.location import default_url, sqlite_path

if TYPE_CHECKING:
    from autotune.store.repository import Store

__all__ = ["ENV", "open_store", "open_reader", "resolve_url", "given_url", "refuse_foreign", "foreign_tables", "OPTUNA_TABLES"]

ENV = "AUTOTUNE_DB"
"""Environment variable naming the results database's URL (the CLI's ``--db`` reads it too)."""

OPTUNA_TABLES = frozenset({
    "studies", "study_directions", "study_system_attributes", "study_user_attributes", "trial_heartbeats",
    "trial_intermediate_values", "trial_params", "trial_system_attributes", "trial_user_attributes",
    "trial_values", "trials", "version_info", "alembic_version"})
"""Optuna's RDB storage tables (``optuna.storages._rdb.models``, and its Alembic version table):
the study storage shares autotune's database (:meth:`Store.optuna_storage`)."""


def given_url(url: str | None = None) -> str:
    """The URL as given: ``url``, else ``$AUTOTUNE_DB``, else ``""`` (the default, not resolved:
    nothing is imported or created). Cheap: what a warm lookup keys its cache by."""
    return url or os.environ.get(ENV) or ""


def resolve_url(url: str | None = None, *, create: bool = True) -> str:
    """The database URL: ``url``, else ``$AUTOTUNE_DB``, else the platformdirs default (whose
    folder is created unless ``create`` is false).

    Raises:
        InvalidInputError: ``url`` is not a string.
        StoreError: the URL cannot be parsed (naming it, password masked), or the default
            folder cannot be created.
    """
    if url is not None and not isinstance(url, str):
        raise InvalidInputError(f"db {url!r} is not allowed; give a SQLAlchemy URL string "
                                "(sqlite:///PATH, postgresql+psycopg://USER@HOST/DB) or None")
    resolved = given_url(url) or default_url(create=create)
    if sqlite_path(resolved) is None:
        _parse(resolved)
    return resolved


def _parse(url: str):
    """``url`` parsed by SQLAlchemy, its port read (SQLAlchemy reads it lazily, with ``int``).

    Raises:
        StoreError: naming the URL (password masked where it can be) and what is wrong.
    """
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        parsed = make_url(url)
        port = parsed.port
    except ArgumentError:
        raise StoreError(f"invalid database URL {_masked(url)!r}; give dialect://..., e.g. sqlite:///PATH or "
                         "postgresql+psycopg://USER@HOST:PORT/DB") from None
    except ValueError:
        raise StoreError(f"invalid database URL {_masked(url)!r}: the port is not a number; give "
                         "HOST:PORT with PORT 1..65535") from None
    if port is not None and not 1 <= port <= 65535:
        raise StoreError(f"invalid database URL {_masked(url)!r}: port {port} is not allowed; give 1..65535")
    return parsed


def _masked(url: str) -> str:
    """``url`` with the password between ``user:`` and ``@`` replaced by ``***`` (textually:
    the URL may not parse)."""
    head, sep, rest = url.partition("://")
    if not sep or "@" not in rest:
        return url
    credentials, at, host = rest.rpartition("@")
    user, colon, _ = credentials.partition(":")
    return f"{head}{sep}{user}{':***' if colon else ''}{at}{host}"


def foreign_tables(url: str) -> list[str]:
    """The tables of the database at ``url`` that are neither autotune's nor Optuna's, sorted,
    read through a read-only connection (:func:`autotune.store.schema.read_only_engine`): no
    file is created, nothing is written. ``[]`` for a SQLite file that does not exist.

    Raises:
        StoreError: the database cannot be read (a folder, not a database, server down).
    """
    from sqlalchemy import inspect
    from sqlalchemy.exc import SQLAlchemyError

    from autotune.store import schema

    schema.check_sqlite_path(url, read_only=True)  # a folder is said as such, not as a disk I/O error
    try:
        engine, state = schema.read_only_engine(url)
    except (SQLAlchemyError, ImportError) as exc:
        raise StoreError(f"invalid database URL {_masked(url)!r}: {schema.one_line(exc)}") from exc
    try:
        if state == "missing":
            return []
        with engine.connect() as connection:
            names = inspect(connection).get_table_names()
    except SQLAlchemyError as exc:
        raise StoreError(f"cannot open the results database {_masked(url)}: {schema.one_line(exc)}") from exc
    finally:
        engine.dispose()
    return sorted(n for n in names if not _ours(n))


def _ours(table: str) -> bool:
    return table.startswith(("autotune_", "_alembic_tmp_autotune_")) or table in OPTUNA_TABLES


def refuse_foreign(url: str) -> None:
    """Refuse the database at ``url`` if it holds tables that are not autotune's or Optuna's.

    Raises:
        StoreError: naming the database, the first such tables and what to do.
    """
    found = foreign_tables(url)
    if found:
        shown = ", ".join(found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else "")
        raise StoreError(f"{_masked(url)} is not an autotune database: it holds other tables ({shown}); "
                         "autotune writes only to a database of its own: give another --db (or AUTOTUNE_DB)")


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
