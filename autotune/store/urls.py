"""The results database's URL, resolved once (``--db``, else ``$AUTOTUNE_DB``, else the
platformdirs default), and the check that tells autotune's database from another
application's. Below :mod:`autotune.store.repository` (the Store resolves its URL here) and
:mod:`autotune.store.opening` (the door), so that neither imports the other's floor."""

from __future__ import annotations


from autotune import settings
from autotune.errors import StoreError
from autotune.store.location import default_url, sqlite_path

__all__ = ["ENV", "OPTUNA_TABLES", "given_url", "resolve_url", "refuse_foreign", "foreign_tables"]

ENV = settings.DB.name
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
    return url or settings.DB.get() or ""


def resolve_url(url: str | None = None, *, create: bool = True) -> str:
    """The database URL: ``url``, else ``$AUTOTUNE_DB``, else the platformdirs default (whose
    folder is created unless ``create`` is false).

    Raises:
        InvalidInputError: ``url`` is not a string, is empty or holds a control character.
        StoreError: the URL cannot be parsed (naming it, password masked), or the default
            folder cannot be created.
    """
    if url is not None:  # not a string, "" (which would silently mean the default), a control character
        from autotune.kernel.arguments import check_db_arg

        check_db_arg(url)
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
