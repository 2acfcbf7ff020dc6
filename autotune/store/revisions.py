"""The schema revisions this code knows, and what a database's stored revision means.

Kept apart from :mod:`autotune.store.schema` (Alembic, SQLAlchemy) so that a read-only opening
(:mod:`autotune.store.reader`: the stdlib ``sqlite3`` reader of a process's first lookup) can
judge a database's revision without importing either.
"""

from __future__ import annotations

from collections.abc import Sequence

from autotune.errors import StoreError

__all__ = ["VERSION_TABLE", "REVISIONS", "HEAD_REVISION", "revision_state", "newer_error"]

VERSION_TABLE = "autotune_alembic_version"
"""Our Alembic version table (Optuna's RDB storage keeps its own ``alembic_version``)."""

REVISIONS: tuple[str, ...] = ("0001", "0002", "0003", "0004", "0005", "0006", "0007", "0008", "0009", "0010")
"""Every revision of ``migrations/versions``, oldest first: what a read-only opening compares
a database's revision with, without parsing the migrations (a new migration adds its id
here; ``tests/store/test_schema_migrations.py`` fails until it does)."""

HEAD_REVISION: str = REVISIONS[-1]
"""The newest revision this code knows (what :func:`autotune.store.schema.head_revision` finds in
the migrations)."""


def revision_state(found: Sequence[str], where: str) -> str:
    """What the rows ``found`` in :data:`VERSION_TABLE` (none where the table is absent) of the
    database ``where`` (a URL safe to print) mean: ``"current"`` (at :data:`HEAD_REVISION`),
    ``"older"`` (``autotune db upgrade`` migrates it) or ``"empty"`` (never migrated).

    Raises:
        StoreError: several revisions (a history of one line never writes that), or one this
            code does not know (a newer autotune's).
    """
    if len(found) > 1:
        raise StoreError(f"results database {where} holds several schema revisions in {VERSION_TABLE} "
                         f"({', '.join(map(repr, found))}); autotune's migrations have one head")
    if not found:
        return "empty"
    if found[0] == HEAD_REVISION:
        return "current"
    if found[0] not in REVISIONS:
        raise newer_error(where, found[0], HEAD_REVISION)
    return "older"


def newer_error(where: str, current: str, head: str) -> StoreError:
    """The refusal of database ``where`` at ``current``, a revision this code (up to ``head``)
    does not know."""
    return StoreError(f"results database {where} has schema revision {current!r}, newer than this "
                      f"autotune knows (up to {head!r}); upgrade autotune, it will not downgrade")
