"""Recorded tables: every config of a space measured once, ``config key -> median ms``.

A table is what a grid search (``autotune sweep``, ``autotune search --strategy grid``) leaves in
the database for one key, kept as a CSV file so that strategies can be replayed against it on
any CPU (:mod:`autotune.interchange.replay`) and scored (:mod:`autotune.interchange.score`)::

    config,median_ms
    "BLOCK_ROWS=8,IPAD=1,TILE_DIM=32",0.0489
    "BLOCK_ROWS=32,IPAD=1,TILE_DIM=64",          <- empty: the config failed

Config keys are :attr:`autotune.kernel.config.Config.key` (macros sorted by name).
"""

from __future__ import annotations

import csv
import io
import math
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from autotune.base.files import read_text, write_atomically
from autotune.errors import InvalidInputError
from autotune.kernel.config import Config

__all__ = ["Table", "read_table", "write_table", "table_from_trials", "params_of", "table_configs"]

Table = dict[str, float | None]
"""config key -> median ms (``None``: the config failed: compile error, out of resources, ...)."""


def params_of(key: str) -> dict[str, int]:
    """``{"BLOCK_ROWS": 8, ...}`` of a config key ``"BLOCK_ROWS=8,..."``.

    Raises:
        InvalidInputError: not ``NAME=INTEGER`` pairs joined by commas.
    """
    try:
        pairs = [item.split("=") for item in key.split(",")]
        out = {name.strip(): int(value) for name, value in pairs}
    except ValueError:
        raise InvalidInputError(f"config {key!r} is not NAME=INTEGER pairs joined by commas") from None
    if len(out) != len(pairs) or not all(out):
        raise InvalidInputError(f"config {key!r} names a macro twice or none")
    return out


def read_table(path: str | os.PathLike[str]) -> Table:
    """Read a table CSV (header ``config,median_ms``; an empty median is a failed config).

    Raises:
        InvalidInputError: missing file, another header, a bad key or time (the message names the line).
    """
    try:
        rows = list(csv.reader(io.StringIO(read_text(path, "table"), newline="")))
    except csv.Error as exc:  # a NUL byte, a field over csv's limit
        raise InvalidInputError(f"{path} is not a recorded table: {exc}") from None
    if not rows or [c.strip() for c in rows[0]] != ["config", "median_ms"]:
        raise InvalidInputError(f"{path} is not a recorded table: its first line must be 'config,median_ms'")
    table: Table = {}
    for line, row in enumerate(rows[1:], start=2):
        if len(row) != 2:
            raise InvalidInputError(f"{path}:{line} has {len(row)} fields; a row is config,median_ms")
        key, text = row[0], row[1].strip()
        params_of(key)
        try:
            ms = float(text) if text else None
        except ValueError:
            ms = math.nan
        if ms is not None and not (math.isfinite(ms) and ms > 0):
            raise InvalidInputError(f"{path}:{line}: median_ms is {text!r}; it must be a positive number "
                                    "or empty (failed)")
        if key in table:
            raise InvalidInputError(f"{path}:{line}: config {key} appears twice")
        table[key] = ms
    if not table:
        raise InvalidInputError(f"{path} holds no configs")
    return table


def write_table(table: Mapping[str, float | None], path: str | os.PathLike[str]) -> None:
    """Write ``table`` as CSV (``config,median_ms``; empty median = failed), in its order."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    text = io.StringIO(newline="")
    w = csv.writer(text)
    w.writerow(["config", "median_ms"])
    w.writerows([key, "" if ms is None else repr(float(ms))] for key, ms in table.items())
    write_atomically(path, text.getvalue(), "table")


def table_from_trials(trials: Iterable) -> Table:
    """The table of stored trials (:class:`~autotune.store.records.TrialRecord`, e.g.
    ``Store.key_trials(key)``): per config the lowest median of its ``ok`` trials, ``None`` where
    it only failed; in the order each config was first tried."""
    table: Table = {}
    for t in trials:
        ms = t.median_ms if t.status == "ok" else None
        old = table.get(t.config.key)
        table[t.config.key] = ms if old is None else old if ms is None else min(old, ms)
    return table


def table_configs(table: Mapping[str, float | None], space) -> dict[str, Config]:
    """The Config of each key of ``table``, checked against ``space``
    (:class:`~autotune.kernel.space.SearchSpace`).

    Raises:
        InvalidInputError: a key is not a valid config of the space (the message names it).
    """
    out = {}
    for key in table:
        config = Config.of(space.kernel, params_of(key))
        broken = space.violations(config)
        if broken:
            raise InvalidInputError(f"config {key} of the table is not in the space of {space.kernel}: "
                                    f"{'; '.join(broken)}")
        out[key] = config
    return out
