"""Where the results database is: the default URL, and the file a SQLite URL names.

Free of SQLAlchemy, so that a process's first lookup can find and read a SQLite database
(:mod:`autotune.store.reader`) without importing it.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote

from autotune.errors import StoreError

__all__ = ["default_folder", "default_url", "sqlite_path", "refuse_folder"]


def default_folder() -> Path:
    """The folder of the default database: platformdirs' user data directory of ``autotune``
    (not created here). Until a command writes to it, it may not exist: a read of the default
    database then finds nothing stored, as it would in a missing file."""
    import platformdirs

    return Path(platformdirs.user_data_dir("autotune", appauthor=False))


def default_url(create: bool = True) -> str:
    """``sqlite:///<user data dir>/autotune.db`` (platformdirs' user data directory of
    ``autotune``); the directory is created unless ``create`` is false (a read-only opening
    writes nothing).

    Raises:
        StoreError: the directory cannot be created.
    """
    directory = default_folder()
    try:
        if create:
            directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"cannot create the data directory {directory}: {exc}") from exc
    return f"sqlite:///{directory / 'autotune.db'}"


def sqlite_path(url: str) -> Path | None:
    """The file a plain SQLite URL (``sqlite:///relative`` or ``sqlite:////absolute``, no query,
    no driver) names, ``~`` expanded and percent-escapes decoded as SQLAlchemy reads them;
    ``None`` for any other URL (in-memory, ``file:`` URIs, query options, other databases)."""
    if not url.startswith("sqlite:///") or "?" in url:
        return None
    database = unquote(url.removeprefix("sqlite:///"))
    if database in ("", ":memory:") or database.startswith("file:"):
        return None
    return Path(database).expanduser()


def refuse_folder(database: str | Path) -> None:
    """Refuse a SQLite database path that is a folder (what ``--db`` named by mistake).

    Raises:
        StoreError: ``database`` is a folder, naming it.
    """
    if Path(database).expanduser().is_dir():
        raise StoreError(f"results database {database} is a folder, not a database file; "
                         "give the path of a file with --db")


def masked_url(url: str) -> str:
    """``url`` with its password shown as ``***`` (SQLAlchemy's rendering); a string SQLAlchemy
    cannot parse as a URL is returned as it is."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return url
