"""A table's column: one field of a record, its raw value for JSON and CSV, and how a table
shows it (:class:`Column`); and how every table shows a figure of merit (:func:`rate`).

The command line's tables, JSON and CSV (``autotune.cli.output``) print records by their
columns; the columns of the results tables are in :mod:`autotune.report.result_tables`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["Column", "rate"]


@dataclass(frozen=True)
class Column:
    """One field of a record.

    ``get`` returns the raw value (``None`` when the record lacks it); ``text`` formats it for the
    table (default :func:`str`); ``long`` puts it on a line of its own, wrapped at ``breaks``;
    ``wide`` shows it in the table with ``--wide`` only; ``table=False``: in JSON/CSV only,
    ``data=False``: in the table only (a column combining others for people).
    """

    name: str
    key: str
    get: Callable[[Any], Any]
    text: Callable[[Any], str] = str
    long: bool = False
    wide: bool = False
    right: bool = False
    breaks: str = ", "
    table: bool = True
    data: bool = True

    def cell(self, record: Any) -> str:
        value = self.get(record)
        return "" if value is None or value == "" else self.text(value)


def rate(value: float | None, unit: str = "") -> str:
    """A figure of merit as every table prints it: GB/s and GFLOP/s as whole numbers
    (``2800``, ``24447``), a time by :func:`autotune.measure.figures.duration` (``0.1938 ms``,
    ``4.20 µs``), small rates (< 10) with 3 significant digits."""
    if value is None:
        return ""
    if unit == "ms":
        from autotune.measure.figures import duration

        return duration(value)
    return f"{value:.0f}" if abs(value) >= 10 else f"{value:.3g}"
