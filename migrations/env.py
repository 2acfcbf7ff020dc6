"""Alembic environment of autotune's own tables.

Optuna's RDB storage shares the database and keeps its own ``alembic_version`` table, so
ours is ``autotune_alembic_version``. The migrations are hand-written: there is no
``target_metadata`` and nothing here imports ``autotune.models``.

:class:`autotune.store.Store` passes an open connection in ``config.attributes["connection"]``;
otherwise (the ``alembic`` command line with the developers' ``alembic.ini``) an engine is
built from ``sqlalchemy.url``.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import engine_from_config, pool
from sqlalchemy.engine import Connection

VERSION_TABLE = "autotune_alembic_version"

config = context.config
target_metadata = None


def _configure(**kwargs) -> None:
    context.configure(
        target_metadata=target_metadata,
        version_table=VERSION_TABLE,
        **kwargs,
    )


def run_migrations_offline() -> None:
    """Emit the SQL of the migrations instead of running it (``alembic upgrade --sql``)."""
    url = config.get_main_option("sqlalchemy.url")
    _configure(url=url, literal_binds=True, render_as_batch=url.startswith("sqlite"))
    with context.begin_transaction():
        context.run_migrations()


def _run(connection: Connection) -> None:
    _configure(connection=connection, render_as_batch=connection.dialect.name == "sqlite")
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    """Run the migrations on the given connection, or on a new engine's."""
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    engine = engine_from_config(
        config.get_section(config.config_ini_section, {}),
        prefix="sqlalchemy.",
        poolclass=pool.NullPool,
    )
    with engine.connect() as connection:
        _run(connection)


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
