"""MkDocs hook: pages generated from the code, so that they cannot drift from it.

A page holding one of these markers gets it replaced at build time:

- ``<!-- generated: cli -->``: the ``--help`` of every command of the Typer app
  (``autotune.cli.app``), in the order the app lists them;
- ``<!-- generated: schema -->``: every table of the results database, from the SQLAlchemy
  models (``autotune.store.models``; the migrations create the same schema, which
  ``tests/store/test_schema_migrations.py`` checks).
"""

from __future__ import annotations

import inspect
import os
import re

CLI_MARKER = "<!-- generated: cli -->"
SCHEMA_MARKER = "<!-- generated: schema -->"


def _commands(group, path=()):
    """(path, click command) of every leaf command, depth first, in the app's order."""
    import click

    for name in group.list_commands(click.Context(group)):
        command = group.get_command(click.Context(group), name)
        if command is None or command.hidden:
            continue
        if isinstance(command, click.Group):
            yield from _commands(command, (*path, name))
        else:
            yield (*path, name), command


def cli_reference() -> str:
    """Markdown of every command's ``--help`` (100 columns, no colour)."""
    import typer
    from typer.testing import CliRunner

    from autotune.cli import app

    runner = CliRunner()
    parts = []
    for path, _ in _commands(typer.main.get_command(app)):
        result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "100", "NO_COLOR": "1", "TERM": "dumb"},
                               prog_name="autotune")
        if result.exit_code != 0:
            raise RuntimeError(f"autotune {' '.join(path)} --help exited {result.exit_code}: {result.output}")
        parts.append(f"### `autotune {' '.join(path)}`\n\n```text\n{result.output.rstrip()}\n```\n")
    return "\n".join(parts)


def _markdown(rst: str) -> str:
    """The few reST forms our docstrings use (``x``, :class:`x`), as Markdown code."""
    return re.sub(r"``([^`]+)``", r"`\1`", re.sub(r":\w+:`~?([^`]+)`", r"`\1`", rst))


def schema_reference() -> str:
    """Markdown of every ``autotune_*`` table: its model's docstring, columns and unique keys."""
    from sqlalchemy import UniqueConstraint

    from autotune.store import models

    by_table = {m.__tablename__: m for m in models.Base.__subclasses__()}
    parts = []
    for table in models.Base.metadata.sorted_tables:
        model = by_table.get(table.name)
        doc = _markdown(inspect.cleandoc(model.__doc__ or "")) if model else ""
        rows = ["| column | type | null | key |", "|---|---|---|---|"]
        for column in table.columns:
            key = "primary" if column.primary_key else ", ".join(
                f"-> `{fk.column.table.name}.{fk.column.name}`" for fk in column.foreign_keys)
            rows.append(f"| `{column.name}` | `{column.type}` | {'yes' if column.nullable else 'no'} | {key} |")
        uniques = [", ".join(c.name for c in con.columns) for con in table.constraints
                   if isinstance(con, UniqueConstraint)]
        unique = "".join(f"\nUnique: ({u}).\n" for u in uniques)
        parts.append(f"### `{table.name}`\n\n{doc}\n\n" + "\n".join(rows) + "\n" + unique)
    return "\n".join(parts)


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: ARG001 (MkDocs' signature)
    os.environ.setdefault("AUTOTUNE_DB", "sqlite://")   # nothing here opens a database; be sure
    if CLI_MARKER in markdown:
        markdown = markdown.replace(CLI_MARKER, cli_reference())
    if SCHEMA_MARKER in markdown:
        markdown = markdown.replace(SCHEMA_MARKER, schema_reference())
    return markdown
