"""How commands print records: a table that fits the terminal, JSON or CSV (``--format``).

A table never shrinks or ellipsises a cell. Short columns (names, times, figures) share a row;
long values (configs, paths, descriptions) get a labelled line of their own under it, wrapped
only at their separators (``,`` of a config, spaces of a text), so that a config reads whole at
80 columns. Columns marked ``wide`` are shown with ``--wide`` only; where the short ones of
``--wide`` do not fit in one row, they get a second row of their own under each record's,
indented. When the short columns do not fit the width even so, every record becomes a block of
``name  value`` lines.

A record's fields are its columns (:class:`~autotune.report.columns.Column`; the results
tables' are :mod:`autotune.report.result_tables`). JSON and CSV always carry every column, with
raw values (numbers as numbers, ``null``/empty for what a record lacks), keyed by
:attr:`Column.key`.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from enum import Enum
from typing import Annotated, Any

import typer
from rich.text import Text

from autotune.report.columns import Column, rate

__all__ = ["Column", "Format", "FormatOption", "WideOption", "STALE_STYLE", "emit", "labelled", "print_pairs", "rate",
           "table_lines", "to_json"]


class Format(str, Enum):
    """``--format``: a table for people, JSON or CSV for scripts."""

    table = "table"
    json = "json"
    csv = "csv"


FormatOption = Annotated[Format, typer.Option("--format", "-f", metavar="table|json|csv", case_sensitive=False,
                                              rich_help_panel="Database and output",
                                              help="Output format: a table for people, or JSON or CSV (every "
                                                   "column, raw values) for scripts.")]
WideOption = Annotated[bool, typer.Option("--wide", rich_help_panel="Database and output", help="Show every column in the table (JSON and CSV always "
                                                         "have them all).")]


def wrap(value: str, width: int, breaks: str = ", ") -> list[str]:
    """``value`` cut into lines of at most ``width`` characters, only after one of ``breaks``
    (a token longer than the width is cut where it must). With ``|`` among the breaks, a list
    of ``a | b | c`` starts each member on a line of its own where they do not all fit."""
    width = max(width, 8)
    if "|" in breaks and len(value) > width:
        members = value.split(" | ")
        rest = breaks.replace("|", "")
        return [line for i, m in enumerate(members)
                for line in wrap(m + (" |" if i < len(members) - 1 else ""), width, rest or " ")]
    tokens = re.findall(rf"[^{re.escape(breaks)}]*[{re.escape(breaks)}]*", value)
    lines, line = [], ""
    for token in (t for t in tokens if t):
        if len(line) + len(token.rstrip()) > width and line:
            lines.append(line.rstrip())
            line = ""
        while len(token.rstrip()) > width:
            lines.append(token[:width])
            token = token[width:]
        line += token
    if line.strip() or not lines:
        lines.append(line.rstrip())
    return lines


def table_lines(records: Sequence[Any], columns: Sequence[Column], width: int, *, wide: bool = False,
                title: str = "") -> list[str]:
    """The lines of a table of ``records`` at most ``width`` characters long."""
    return [line for line, _ in _table(records, columns, width, wide, title)]


def _table(records: Sequence[Any], columns: Sequence[Column], width: int, wide: bool,
           title: str) -> list[tuple[str, int | None]]:
    """:func:`table_lines`, each line with the index of the record it shows (``None``: title, header)."""
    shown = [c for c in columns if c.table and (wide or not c.wide)]
    short = [c for c in shown if not c.long]
    long = [c for c in shown if c.long]
    lines: list[tuple[str, int | None]] = [(line, None) for line in wrap(title, width)] if title else []
    if not records:
        return lines
    cells = [[c.cell(r) for c in short] for r in records]
    widths = [max(len(c.name), *(len(row[i]) for row in cells)) for i, c in enumerate(short)]
    # where the short columns of --wide do not fit in one row, the --wide ones get a second row
    # of their own under each record's (indented 2), before a block per record
    first = [i for i, c in enumerate(short) if not (wide and c.wide)]
    second = [i for i, c in enumerate(short) if wide and c.wide]
    if _span(widths, range(len(short))) > width:
        if not (first and second and _span(widths, first) <= width and 2 + _span(widths, second) <= width):
            return lines + _blocks(records, shown, width)
    else:
        first, second = list(range(len(short))), []
    label = max((len(c.name) for c in long), default=0)

    def row(values: Sequence[str], which: list[int], indent: str = "") -> str:
        return indent + _row([values[i] for i in which], [short[i] for i in which], [widths[i] for i in which])

    names = [c.name for c in short]
    lines.append((row(names, first), None))
    if second:
        lines.append((row(names, second, "  "), None))
    lines.append(("  ".join("-" * widths[i] for i in first), None))
    for i, (record, cell_row) in enumerate(zip(records, cells)):
        lines.append((row(cell_row, first), i))
        if second and any(cell_row[j] for j in second):
            lines.append((row(cell_row, second, "  "), i))
        for c in long:
            value = c.cell(record)
            if value:
                lines += [(line, i) for line in labelled(c.name, value, label, width, c.breaks, indent=2)]
    return lines


def _span(widths: Sequence[int], which) -> int:
    """The width of a row of the columns ``which`` (indexes into ``widths``), 2 spaces apart."""
    which = list(which)
    return sum(widths[i] for i in which) + 2 * (len(which) - 1)


def _row(cells: Sequence[str], columns: Sequence[Column], widths: Sequence[int]) -> str:
    return "  ".join(cell.rjust(w) if c.right else cell.ljust(w)
                     for cell, c, w in zip(cells, columns, widths)).rstrip()


def labelled(name: str, value: str, label: int, width: int, breaks: str = " ", indent: int = 0,
             gap: int = 2) -> list[str]:
    """``name`` padded to ``label``, ``gap`` spaces, then ``value`` wrapped at ``breaks`` to fit
    ``width``, its further lines aligned under its first."""
    lead = " " * indent + name.ljust(label) + " " * gap
    parts = wrap(value, width - len(lead), breaks)
    return [lead + parts[0]] + [" " * len(lead) + part for part in parts[1:]]


def _blocks(records: Sequence[Any], columns: Sequence[Column], width: int) -> list[tuple[str, int | None]]:
    """One block of ``name  value`` lines per record, a blank line between blocks (each line with
    its record's index)."""
    label = max(len(c.name) for c in columns)
    lines: list[tuple[str, int | None]] = []
    for i, record in enumerate(records):
        if i:
            lines.append(("", None))
        for c in columns:
            value = c.cell(record)
            if value:
                lines += [(line, i) for line in labelled(c.name, value, label, width,
                                                         c.breaks if c.long else " ", indent=0)]
    return lines


CONFIG_KEYS = ("config", "dispatch_config", "tie_group")
"""The fields that hold a config (or a list of them): an object ``{macro: value}`` in JSON
(``"A=1,B=2"`` in CSV and tables)."""


def iso_utc(at: datetime) -> str:
    """The one form of a time in JSON: ISO 8601 in UTC, ``2026-11-28T08:15:29.000123Z`` (a time
    without a zone, as the database stores it, is UTC); the export file's form too."""
    at = at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)
    return at.isoformat(timespec="microseconds").replace("+00:00", "Z")


def config_object(value: Any) -> Any:
    """A config as JSON carries it: ``{macro: value}`` from a :class:`~autotune.kernel.config.Config`
    or its key ``"A=1,B=2"``; anything else (``None``, a note) as it is."""
    if hasattr(value, "as_dict"):
        return value.as_dict()
    if isinstance(value, (list, tuple)):
        return [config_object(v) for v in value]
    if isinstance(value, str) and value and all("=" in part for part in value.split(",")):
        pairs = [part.split("=", 1) for part in value.split(",")]
        return {name.strip(): int(v) if v.strip().lstrip("-").isdigit() else v.strip() for name, v in pairs}
    return value


def json_value(value: Any) -> Any:
    """``json.dumps``'s ``default``: a time as :func:`iso_utc`, a config as :func:`config_object`,
    anything else as text."""
    if isinstance(value, datetime):
        return iso_utc(value)
    if hasattr(value, "as_dict"):
        return value.as_dict()
    return str(value)


def to_json(records: Sequence[Any], columns: Sequence[Column]) -> list[dict[str, Any]]:
    """Every column of every record, raw values, keyed by :attr:`Column.key`; a config as an
    object (:func:`config_object`)."""
    return [{c.key: config_object(c.get(r)) if c.key in CONFIG_KEYS else c.get(r) for c in columns if c.data}
            for r in records]


def dumps(document: Any) -> str:
    """The JSON text of every command's ``--format json`` (:func:`json_value` for times and configs)."""
    return json.dumps(document, indent=2, default=json_value)


def to_csv(records: Sequence[Any], columns: Sequence[Column]) -> str:
    """A header line of keys, then a line per record (``None`` as an empty field)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    columns = [c for c in columns if c.data]
    writer.writerow(c.key for c in columns)
    for r in records:
        writer.writerow("" if (v := c.get(r)) is None else _csv_value(v) for c in columns)
    return buffer.getvalue()


def _csv_value(value: Any) -> Any:
    return " ".join(map(str, value)) if isinstance(value, (list, tuple)) else value


STALE_STYLE = "yellow"
"""How a stale record's lines are marked in a table, where the console shows colour."""


def emit(console, records: Sequence[Any], columns: Sequence[Column], fmt: Format = Format.table, *,
         wide: bool = False, title: str = "", document: dict[str, Any] | None = None,
         style: Callable[[Any], str | None] | None = None) -> None:
    """Print ``records`` on ``console`` in ``fmt``. JSON is one shape for every command: an object
    with the records under ``"records"``, beside ``document``'s fields where one is given (a
    command's context: its key, ...); times ISO 8601 UTC, configs objects (:func:`to_json`).
    ``style(record)``: a Rich style for the record's lines of a table (e.g. :data:`STALE_STYLE`),
    shown only where the console has colour (a terminal, ``NO_COLOR`` unset); the text is the same."""
    if fmt is Format.json:
        body = {**(document or {}), "records": to_json(records, columns)}
        console.print(dumps(body), markup=False, highlight=False, soft_wrap=True)
    elif fmt is Format.csv:
        console.print(to_csv(records, columns), markup=False, highlight=False, soft_wrap=True, end="")
    else:
        lines = _table(records, columns, console.width, wide, title)
        for i, (line, which) in enumerate(lines):
            mark = "bold" if title and i == 0 else style(records[which]) if style and which is not None else None
            console.print(Text(line, style=mark or ""), soft_wrap=True)


def print_pairs(console, pairs: Sequence[tuple[str, ...]], breaks: str = " ") -> None:
    """``name  value`` lines, the values aligned and wrapped under themselves at the width
    (at ``breaks``, or a pair's own third item: ``"/"`` for a path)."""
    label = max(len(pair[0]) for pair in pairs)
    for name, value, *own in pairs:
        for line in labelled(name, value, label, console.width, own[0] if own else breaks, indent=0):
            console.print(Text(line), soft_wrap=True)
