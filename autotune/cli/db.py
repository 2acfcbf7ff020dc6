"""``autotune db``: the results database's schema."""

from __future__ import annotations

import typer

from . import app
from ._common import open_store, Db, handle_errors, out

db_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None, help="Manage the results database schema.")
app.add_typer(db_app, name="db")


@db_app.command("upgrade")
@handle_errors
def upgrade(db: Db = None) -> None:
    """Migrate the database schema to the newest revision (creates a new database)."""
    store = open_store(db, upgrade=False)
    store.upgrade()
    out.print(f"database {store} is at schema revision {store.current_revision()}")


@db_app.command("current")
@handle_errors
def current(db: Db = None) -> None:
    """Print the schema revision of the database (read only: a missing file is not created)."""
    store = open_store(db, read_only=True, upgrade=False)  # any revision is printed, a newer one too
    if store.schema_state == "missing":
        out.print(f"no database at {store.safe_url} (autotune db upgrade creates it)", markup=False)
        return
    out.print(store.current_revision() or "empty (run: autotune db upgrade)")
