"""The results databases the runtime reads: one reader per database URL, opened read-only once
per process, and whether it holds usable results at all (``lookup``'s first question).

Opened read-only: no migration, lock file, backup or write, so a database on a read-only mount
or of another user serves lookups. A SQLite file (or none yet) is read through the standard
library (:class:`~autotune.store.reader.SqliteReader`: a first call imports no SQLAlchemy), any
other database through :class:`~autotune.store.repository.Store`.
"""

from __future__ import annotations

import threading
import warnings
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # SQLAlchemy is imported only for a database that is not a SQLite file
    from autotune.store.reader import ResultsReader as Reader

__all__ = ["reader", "unusable", "close_all"]

_lock = threading.Lock()  # guards _readers (slow to fill; never blocks a warm lookup)
_readers: dict[str, Reader] = {}
_warned: set[str] = set()  # databases whose older schema was warned about


def reader(db: str) -> Reader:
    """The one reader of database URL ``db`` (``""``: the default
    ``sqlite:///<user data dir>/autotune.db`` of :func:`autotune.store.location.default_url`),
    opened read-only (module doc) at the first call."""
    from autotune.store.opening import open_results

    with _lock:
        if db not in _readers:
            _readers[db] = open_results(db or None, "lookup")
        return _readers[db]


def close_all() -> None:
    """Close every reader opened (a database created or upgraded since is then read afresh)."""
    with _lock:
        for store in _readers.values():
            store.close()
        _readers.clear()


def unusable(store: Reader) -> str | None:
    """Why ``store`` holds no usable result (no database, never migrated, an older schema
    that only ``autotune db upgrade`` can bring up to date), or ``None``. An older schema is
    also said once per process as a ``RuntimeWarning``, pointed at the caller of ``lookup``."""
    where = store.safe_url
    if store.schema_state == "missing":
        return f"no results database at {where}"
    if store.schema_state == "empty":
        return f"{where} holds no autotune tables"
    if store.schema_state == "older":
        note = (f"results database {where} is of an older schema, read by no lookup until it is migrated: "
                f"run `autotune db upgrade --db {where}`")
        if where not in _warned:
            _warned.add(where)
            warnings.warn(note, RuntimeWarning, stacklevel=4)
        return note
    return None
