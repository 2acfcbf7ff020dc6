"""``autotune db``: the results database's schema."""

from __future__ import annotations

import typer

from .root import app
from ._common import open_db, Db, handle_errors, out

db_app = typer.Typer(no_args_is_help=True, rich_markup_mode="rich",
                     help="Manage the results database schema (autotune info prints where it is).\n\n"
                          "\b\nExamples:\n  autotune db upgrade\n  autotune db current",
                     short_help="Manage the results database schema.")
app.add_typer(db_app, name="db")


@db_app.command("upgrade", short_help="Migrate the schema to the newest revision.")
@handle_errors
def upgrade(db: Db = None) -> None:
    """Migrate the database schema to the newest revision (creates a new database; a SQLite file
    of an older revision is first copied to <file>.bak-<revision>-<time>, and the copy named), and label
    every study for optuna-dashboard that has no labels yet (searched before autotune 0.4.0).

    \b
    Examples:
      autotune db upgrade
      autotune db upgrade --db postgresql+psycopg://me@dbhost/autotune
    """
    store = open_db(db, "unmigrated")
    backup = store.upgrade()
    if backup is not None:
        out.print(f"backed up the database to {backup} before migrating it", markup=False, soft_wrap=True)
    out.print(f"database {store.safe_url} is at schema revision {store.current_revision()}", markup=False)
    _say_labelled(store)


def _say_labelled(store) -> None:
    """Label the studies that lack it (:func:`autotune.store.study_labels.label_stored_studies`)
    and say how many, if any."""
    from autotune.store.study_labels import label_stored_studies

    n = label_stored_studies(store)
    if n:
        out.print(f"labelled {n} stud{'ies' if n != 1 else 'y'} for optuna-dashboard (label, key attrs, metric "
                  "name)", markup=False)


@db_app.command("current", short_help="Print the schema revision.")
@handle_errors
def current(db: Db = None) -> None:
    """Print the schema revision of the database (read only: a missing file is not created).

    \b
    Example:
      autotune db current --db sqlite:///results.db
    """
    store = open_db(db, "inspect")  # any revision is printed, a newer one too
    if store.schema_state == "missing":
        out.print(f"no database at {store.safe_url} (autotune db upgrade creates it)", markup=False)
        return
    out.print(store.current_revision() or "empty (run: autotune db upgrade)")
