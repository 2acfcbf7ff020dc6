"""A table's column and how a figure prints (autotune/report/columns.py): what every table,
JSON and CSV of the command line shows of a record's field."""

from __future__ import annotations

import pytest

from autotune.report.columns import Column, rate


def test_a_cell_is_the_value_as_text_and_empty_where_the_record_lacks_it():
    column = Column("GB/s", "gbps", lambda r: r.get("gbps"), text=lambda v: f"{v:.0f}")
    assert column.cell({"gbps": 2799.6}) == "2800"
    assert column.cell({}) == "" and column.cell({"gbps": ""}) == ""
    assert Column("#", "number", lambda r: r).cell(0) == "0"  # a zero is a value, not a missing one


def test_a_column_is_in_the_table_and_the_data_unless_told_otherwise():
    column = Column("config", "config", str)
    assert (column.table, column.data, column.long, column.wide, column.right, column.breaks) == (
        True, True, False, False, False, ", ")


@pytest.mark.parametrize("value, unit, text", [
    (None, "", ""), (2799.6, "", "2800"), (24447.2, "", "24447"), (10.0, "", "10"), (-12.4, "", "-12"),
    (9.87654, "", "9.88"), (0.0123456, "", "0.0123"), (0.1938, "ms", "0.1938 ms"), (0.0042, "ms", "4.20 µs"),
])
def test_rate_prints_figures_whole_small_ones_to_three_digits_and_times_as_durations(value, unit, text):
    assert rate(value, unit) == text
