"""The database schema of autotune's own tables: Alembic migrations, revision checks, backups.

Opening a database (:func:`prepare`) follows these rules:

* empty database (none of our tables, no version row): the newest revision's tables are created
  from the models in one transaction and the version row written (:func:`create_head`), as
  Alembic's cookbook advises for a new database ("building an up-to-date database from
  scratch"): replaying every migration on SQLite rebuilds tables one batch at a time;
* at the newest revision: nothing to do;
* at an older revision: a SQLite file is first copied to ``<file>.bak-<revision>-<UTC time>``,
  then migrated (other databases are migrated in place; back them up with their own tools);
* at a revision this code does not know (written by a newer autotune): refused, never
  downgraded.

A read-only opening (:func:`read_only_engine`, :func:`state`; what ``lookup`` uses) migrates
nothing, takes no lock file and makes no backup: it only reports the revision it finds. It
does so without Alembic (importing it and parsing the migrations cost a process's first
lookup about a tenth of a second): one query of the version table (:func:`stored_revision`),
compared with :data:`REVISIONS`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
import weakref
from datetime import datetime, timezone
from pathlib import Path

from sqlalchemy import Engine
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError

from autotune.errors import StoreError
from autotune.resources import data_dir
from autotune.store.location import default_folder, refuse_folder
from autotune.store.reader import read_only_options
from autotune.store.revisions import HEAD_REVISION, REVISIONS, VERSION_TABLE, newer_error, revision_state

__all__ = ["VERSION_TABLE", "REVISIONS", "HEAD_REVISION", "head_revision", "current_revision", "stored_revision",
           "upgrade", "prepare", "create_head", "check_sqlite_path", "init_lock", "read_only_engine", "state"]

def _config(url: str):
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(data_dir("migrations")))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def _scripts():
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(_config("sqlite://"))


def head_revision() -> str:
    """The newest revision this code knows."""
    return _scripts().get_current_head()


def current_revision(engine: Engine) -> str | None:
    """The revision of the database behind ``engine``; ``None`` if never migrated
    (:func:`stored_revision`: a version table of several rows is refused in one line, not
    left to Alembic's ``CommandError``).

    Raises:
        StoreError: the database cannot be read, or its version table holds several revisions.
    """
    return stored_revision(engine)


def stored_revision(engine: Engine) -> str | None:
    """What :func:`current_revision` answers, read without Alembic: the row of
    :data:`VERSION_TABLE`, through SQLAlchemy Core; ``None`` where that table does not exist
    (never migrated) or is empty.

    Raises:
        StoreError: the database cannot be read, or the table holds several revisions (a
            history of one line never writes that).
    """
    found = _version_rows(engine)
    if len(found) > 1:
        revision_state(found, _safe(engine))  # raises: several revisions
    return found[0] if found else None


def _version_rows(engine: Engine) -> list[str]:
    """The rows of :data:`VERSION_TABLE` (none where it does not exist), through SQLAlchemy Core."""
    from sqlalchemy import column, inspect, select, table

    version = table(VERSION_TABLE, column("version_num"))
    try:
        with engine.connect() as connection:
            if not inspect(connection).has_table(VERSION_TABLE):
                return []
            return list(connection.execute(select(version.c.version_num)).scalars())
    except SQLAlchemyError as exc:
        raise StoreError(f"results database {_safe(engine)}: {one_line(exc)}") from exc


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Migrate to ``revision``, refusing a database newer than this code.

    Raises:
        StoreError: newer schema, or the migration failed.
    """
    from alembic import command
    from alembic.util import CommandError

    _refuse_newer(engine)
    config = _config(engine.url.render_as_string(hide_password=False))
    try:
        with engine.connect() as connection, _sqlite_foreign_keys_off(connection), connection.begin():
            config.attributes["connection"] = connection
            command.upgrade(config, revision)
    except (SQLAlchemyError, CommandError) as exc:
        raise StoreError(f"cannot migrate the results database {_safe(engine)}: {one_line(exc)}") from exc


@contextlib.contextmanager
def _sqlite_foreign_keys_off(connection) -> Iterator[None]:
    """SQLite alters a table by rebuilding it (copy, drop, rename), which foreign keys from
    rows of other tables would forbid: they are off during migrations, as Alembic advises
    (the pragma works only outside a transaction, so it goes to the DBAPI connection)."""
    if connection.dialect.name != "sqlite":
        yield
        return
    raw = connection.connection.driver_connection
    raw.execute("PRAGMA foreign_keys=OFF")
    try:
        yield
    finally:
        raw.execute("PRAGMA foreign_keys=ON")


def prepare(engine: Engine, revision: str = "head") -> str | None:
    """Bring the database to ``revision`` (the newest by default) under the rules of this
    module: a SQLite file at an older revision is backed up first (:func:`_backup`).

    Returns:
        The path of the backup made before migrating an older SQLite file, else ``None``.

    Raises:
        StoreError: newer schema, unreadable database, failed backup or migration.
    """
    current = current_revision(engine)
    target = HEAD_REVISION if revision == "head" else revision
    if current == target:
        return None
    _refuse_newer(engine, current)
    if current is None and target == HEAD_REVISION and create_head(engine):
        return None
    backup = _backup(engine, current) if current is not None else None
    upgrade(engine, revision)
    return backup


def create_head(engine: Engine) -> bool:
    """In a database holding none of our tables and no version row: create the tables of the
    newest revision from the models (:data:`autotune.store.models.Base`) and write
    :data:`HEAD_REVISION` in :data:`VERSION_TABLE`, in one transaction, without importing
    Alembic. ``tests/store/test_schema_migrations.py`` checks that this schema is the one the
    migrations build, table by table.

    Returns:
        ``True`` if created; ``False`` where any of our tables or the version table exists
        (then the migrations decide).

    Raises:
        StoreError: the database cannot be written.
    """
    from sqlalchemy import Column, MetaData, PrimaryKeyConstraint, String, Table, inspect

    from autotune.store.models import Base

    # Alembic's own version table: one VARCHAR(32) key named <table>_pkc (alembic.runtime.migration)
    version = Table(VERSION_TABLE, MetaData(), Column("version_num", String(32), nullable=False),
                    PrimaryKeyConstraint("version_num", name=f"{VERSION_TABLE}_pkc"))
    try:
        with engine.begin() as connection:
            present = set(inspect(connection).get_table_names())
            if present & (set(Base.metadata.tables) | {VERSION_TABLE}):
                return False
            Base.metadata.create_all(connection)
            version.create(connection)
            connection.execute(version.insert().values(version_num=HEAD_REVISION))
    except SQLAlchemyError as exc:
        raise StoreError(f"cannot create the results database {_safe(engine)}: {one_line(exc)}") from exc
    return True


def _refuse_newer(engine: Engine, current: str | None = ...) -> None:
    if current is ...:
        current = current_revision(engine)
    if current is not None and not _revision_known(current):
        raise newer_error(_safe(engine), current, HEAD_REVISION)


def _revision_known(revision: str) -> bool:
    return revision in REVISIONS  # the migrations' ids: test_revisions_constant_names_every_migration_oldest_first


def _backup(engine: Engine, revision: str) -> str | None:
    """Copy the SQLite database to ``<file>.bak-<revision>-<time>`` through SQLite's online
    backup API (:meth:`sqlite3.Connection.backup`): a consistent snapshot of every committed row,
    those still in ``<file>-wal`` included (a copy of the main file alone would miss them). It is
    written to a temporary name and renamed when whole, so that no half-written backup is ever
    left (a signal, a full disk)."""
    import sqlite3

    path = engine.url.database
    if engine.dialect.name != "sqlite" or not path or path == ":memory:" or path.startswith("file:") \
            or not os.path.exists(path):
        return None
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
    target = f"{path}.bak-{revision}-{stamp}"
    partial = f"{target}.partial"
    try:
        source = sqlite3.connect(path, timeout=60)
        try:
            copy = sqlite3.connect(partial)
            try:
                source.backup(copy)
                copy.execute("PRAGMA journal_mode=DELETE")  # one self-contained file, no -wal beside it
            finally:
                copy.close()
        finally:
            source.close()
        os.replace(partial, target)
    except (OSError, sqlite3.Error) as exc:
        _remove_partial(partial)
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise StoreError(f"cannot back up {path} before migrating it: {reason}") from exc
    except BaseException:
        _remove_partial(partial)
        raise
    return target


def _remove_partial(partial: str) -> None:
    """The partial backup and any companion file SQLite made for it."""
    for suffix in ("", "-journal", "-wal", "-shm"):
        _remove(partial + suffix)


def _remove(path: str) -> None:
    with contextlib.suppress(OSError):
        os.remove(path)


def read_only_engine(url: str) -> tuple[Engine, str | None]:
    """An engine that cannot write to the database at ``url``, and ``"missing"`` for a SQLite
    file that does not exist (then the engine is an empty in-memory database; nothing is
    created), else ``None`` (see :func:`state`).

    SQLite files open with the options of :func:`autotune.store.reader.read_only_options`
    (``mode=ro``; ``immutable=1`` beside another user's file or on a read-only mount).
    PostgreSQL sessions default to read-only transactions. Raises what ``create_engine`` raises for a bad URL.
    """
    from urllib.parse import quote

    from sqlalchemy import create_engine

    parsed = make_url(url)
    if parsed.drivername.startswith("sqlite") and parsed.database not in (None, "", ":memory:") \
            and not parsed.database.startswith("file:"):
        path = Path(parsed.database).expanduser().absolute()
        if not path.exists():
            return create_engine("sqlite://"), "missing"
        query = {**read_only_options(path), "uri": "true"}
        engine = create_engine(parsed.set(database=f"file:{quote(str(path))}", query=query))
        _given[engine] = parsed.render_as_string(hide_password=True)  # messages name the file as given
        return engine, None
    if parsed.drivername.startswith("postgresql"):
        given = parsed.query.get("options", "")  # the URL's own (a search_path): kept, not replaced
        given = " ".join(given) if isinstance(given, tuple) else given
        options = f"{given} -c default_transaction_read_only=on".strip()
        return create_engine(parsed.difference_update_query(["options"]), connect_args={"options": options}), None
    return create_engine(parsed), None


def state(engine: Engine) -> str:
    """``"current"`` (at the newest revision), ``"older"`` (``autotune db upgrade`` migrates it)
    or ``"empty"`` (never migrated: nothing tuned), read without writing and without Alembic
    (:func:`autotune.store.revisions.revision_state`).

    Raises:
        StoreError: the database cannot be read, or is of a newer schema.
    """
    return revision_state(_version_rows(engine), _safe(engine))


@contextlib.contextmanager
def init_lock(engine: Engine) -> Iterator[None]:
    """Hold a lock that serialises schema creation across processes for this database.

    Creating tables is not atomic: two processes opening a new database at once would both
    try to create them. SQLite files use an OS lock on ``<file>.lock`` beside the database;
    PostgreSQL an advisory lock; other databases nothing.
    """
    if engine.dialect.name == "sqlite" and engine.url.database not in (None, "", ":memory:"):
        import fcntl

        with open(f"{engine.url.database}.lock", "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
    elif engine.dialect.name == "postgresql":
        from sqlalchemy import text

        with engine.connect() as connection:
            connection.execute(text("select pg_advisory_lock(:k)"), {"k": _PG_LOCK_KEY})
            try:
                yield
            finally:
                connection.execute(text("select pg_advisory_unlock(:k)"), {"k": _PG_LOCK_KEY})
                connection.commit()
    else:
        yield


_PG_LOCK_KEY = 0x6175746F74756E65  # "autotune"


def check_sqlite_path(url: str, *, read_only: bool = False) -> None:
    """For a SQLite file URL: the path must not be a folder, its folder must exist (a typo in
    ``--db``), and (unless ``read_only``) be writable, before anything is created.

    Raises:
        StoreError: a folder where the file should be; missing or read-only folder, naming it.
    """
    try:
        parsed = make_url(url)
    except SQLAlchemyError:
        return
    if not parsed.drivername.startswith("sqlite") or parsed.database in (None, "", ":memory:") \
            or parsed.database.startswith("file:"):
        return
    refuse_folder(parsed.database)
    folder = Path(parsed.database).expanduser().absolute().parent
    if not folder.is_dir():
        if read_only and folder == default_folder().absolute():
            return  # the default folder not made yet (an empty home): nothing is stored, nothing created
        raise StoreError(f"the folder of database {parsed.database} does not exist: {folder}; "
                         "create it or give another --db")
    if read_only:
        return
    if not os.access(folder, os.W_OK):
        raise StoreError(f"the folder of database {parsed.database} is read-only: {folder}; "
                         "give a writable location with --db")


def one_line(exc: BaseException) -> str:
    """The first line of the DBAPI error (or of ``exc``), without SQLAlchemy's footer; a missing
    PostgreSQL driver names the extra that brings it."""
    if isinstance(exc, ImportError) and (exc.name or "").split(".")[0] in ("psycopg", "psycopg2"):
        return f"{exc}; the PostgreSQL driver comes with the postgres extra: pip install 'cuda-autotune[postgres]'"
    orig = getattr(exc, "orig", None)
    text = str(orig if orig is not None else exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


_given: weakref.WeakKeyDictionary[Engine, str] = weakref.WeakKeyDictionary()


def _safe(engine: Engine) -> str:
    """The database's URL for a message, password masked: as the user gave it (not the
    ``file:...?mode=ro`` URI a read-only engine opens)."""
    return _given.get(engine) or engine.url.render_as_string(hide_password=True)
