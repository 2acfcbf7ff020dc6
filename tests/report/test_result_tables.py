"""The results tables' columns (autotune/report/result_tables.py): what ``best``, ``list``,
``trials``, ``kernels`` and a best's Pareto front show of a record in a table, and the raw
values JSON and CSV carry; on records made here, no database (the commands themselves are
tests/test_cli.py's and tests/cli/test_output.py's)."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from types import SimpleNamespace

from autotune.kernel.catalog import get_kernel
from autotune.report.result_tables import (FRONT_COLUMNS, best_columns, front_data, front_role, kernel_columns,
                                           trial_columns)
from autotune.store.records import BestRecord

from stored_results import configs, key

AT = datetime(2026, 11, 28, 8, 15, 29, tzinfo=UTC)


def best(**changes) -> BestRecord:
    """A transpose's best: 2000 GB/s against a 3000 GB/s memcpy, its trial's CI ±0.5 %."""
    fields = dict(key=key(), device_uuid="", config=configs()[0], median_ms=0.02, min_ms=0.0198, max_ms=0.021,
                  gbps=2000.0, pct_memcpy=60.0, registers=24, shared_bytes=4224, trial_id=1, search_id=1,
                  memcpy_gbps=3000.0, updated_at=AT, copy_gbps=2500.0, ci_low_ms=0.0199, ci_high_ms=0.0201)
    fields.update(changes)
    return BestRecord(**fields)


def shown(columns, record, *, table=True) -> dict:
    """``{key: cell}`` of the columns of a table (``table=False``: ``{key: raw value}`` of JSON/CSV's)."""
    if table:
        return {c.key: c.cell(record) for c in columns if c.table}
    return {c.key: c.get(record) for c in columns if c.data}


def test_a_best_shows_its_figure_in_the_table_and_raw_numbers_in_the_data():
    b = best()
    table, data = shown(best_columns([b]), b), shown(best_columns([b]), b, table=False)
    assert table["figure"] == "2000 GB/s" and table["pct_memcpy"] == "66.7" and table["pct_copy"] == "80.0"
    assert table["median_ms"] == "20.00 µs" and table["ci_pct"] == "±0.50%" and table["tuned_at"] == "2026-11-28 08:15"
    assert "figure" not in data and "certified" not in data  # for people only
    assert data["gbps"] == 2000.0 and data["gflops"] is None and data["ci_low_ms"] == 0.0199
    assert {"gbps", "gflops", "ci_low_ms", "ci_high_ms", "certificate"}.isdisjoint(table)  # for scripts only
    assert "stale" not in table and "pareto_front" not in data  # neither asked for


def test_a_re_timed_best_shows_its_pooled_figure_its_re_timings_ci_and_the_rest_of_its_tie_group():
    cs = configs()
    b = best(pooled_median_ms=0.025, tie_group=(cs[0].key, cs[1].key),
             certificate={"winner": {"config": cs[0].key, "pooled_median_ms": 0.025, "ci_low_ms": 0.024,
                                     "ci_high_ms": 0.026, "rounds": 2}})
    table, data = shown(best_columns([b]), b), shown(best_columns([b]), b, table=False)
    assert table["figure"] == "1600 GB/s" and data["gbps"] == 1600.0 and table["median_ms"] == "25.00 µs"
    assert (data["ci_low_ms"], data["ci_high_ms"]) == (0.024, 0.026) and table["ci_pct"] == "±4.00%"
    assert data["tie_group"] == [cs[1].key]  # the best's own config is its row's
    assert table["certified"].startswith("not tied") and "winner" not in table["certified"]  # the row shows it
    assert data["certificate"]["winner"]["rounds"] == 2


def test_a_matrix_product_shows_gflops_and_no_bandwidth():
    b = best(gbps=None, pct_memcpy=None, gflops=24447.2)
    table, data = shown(best_columns([b]), b), shown(best_columns([b]), b, table=False)
    assert table["figure"] == "24447 GFLOP/s" and table["pct_memcpy"] == "" and table["pct_copy"] == ""
    assert data["gflops"] == 24447.2 and data["gbps"] is None


def test_columns_no_record_has_are_left_to_wide_and_one_device_is_named_only_with_wide():
    one = best_columns([best(ci_low_ms=None, ci_high_ms=None)])
    assert {c.key for c in one if c.wide} >= {"ci_pct", "energy_j", "device"}
    other = best(key=key(device=dataclasses.replace(key().device, name="NVIDIA A100-SXM4-40GB")), energy_j=0.002)
    two = {c.key: c.wide for c in best_columns([best(), other])}
    assert two["device"] is False and two["ci_pct"] is False and two["energy_j"] is False


def test_stale_marks_and_pareto_fronts_add_their_columns():
    b, c = best(), best(objective="time,energy")
    marked = shown(best_columns([b, c], marks={id(b): "yes (another nvcc)"}), b)
    assert marked["stale"] == "yes (another nvcc)"
    members = [SimpleNamespace(config=configs()[0], median_ms=0.02, energy_j=0.003)]
    data = shown(best_columns([b, c], fronts={id(c): members}), c, table=False)
    assert data["objective"] == "time,energy" and data["pareto_front"] == front_data(members)
    assert shown(best_columns([b, c], fronts={id(c): members}), b, table=False)["pareto_front"] is None


def test_a_front_names_its_time_optimal_and_energy_optimal_members():
    cs = configs()
    fast = SimpleNamespace(config=cs[0], median_ms=0.02, energy_j=0.008)
    middle = SimpleNamespace(config=cs[1], median_ms=0.03, energy_j=0.005)
    frugal = SimpleNamespace(config=cs[2], median_ms=0.04, energy_j=0.003)
    members = [fast, middle, frugal]
    assert [front_role(members, t) for t in members] == ["time-optimal", "", "energy-optimal"]
    assert front_role([fast], fast) == "time-optimal and energy-optimal" and front_role([], fast) == ""
    assert front_data(None) is None
    assert front_data(members)[2] == {"config": cs[2].as_dict(), "median_ms": 0.04, "energy_j": 0.003,
                                      "role": "energy-optimal"}
    assert front_data(members)[1]["role"] is None
    assert [c.cell((middle, "")) for c in FRONT_COLUMNS] == ["", "30.00 µs", "0.005", cs[1].key]


def trial(number: int, **changes) -> SimpleNamespace:
    fields = dict(number=number, status="ok", median_ms=0.02, min_ms=0.019, max_ms=0.021, gbps=2000.0, gflops=None,
                  pct_memcpy=66.7, registers=24, occupancy=0.5, created_at=AT, config=configs()[0], reason=None)
    return SimpleNamespace(**{**fields, **changes})


def test_a_keys_trials_show_the_figure_they_have_and_a_failures_reason():
    failed = trial(1, status="compile_error", median_ms=None, gbps=None, reason="ptxas error")
    columns = trial_columns([trial(0), failed])
    assert {c.key: c.wide for c in columns}["gflops"] and not {c.key: c.wide for c in columns}["gbps"]
    assert shown(columns, trial(0))["gbps"] == "2000" and shown(columns, trial(0))["occupancy"] == "50 %"
    assert shown(columns, failed)["reason"] == "ptxas error" and shown(columns, failed)["median_ms"] == ""
    assert shown(columns, trial(0))["created_at"] == "2026-11-28 08:15:29"
    product = trial_columns([trial(0, gbps=None, gflops=24447.2)])
    assert not {c.key: c.wide for c in product}["gflops"] and {c.key: c.wide for c in product}["gbps"]


def test_the_catalog_shows_each_kernels_default_config_and_with_wide_its_tunables_dtypes_and_source():
    k = get_kernel("smem_pad")
    columns = kernel_columns()
    assert [c.key for c in columns if not c.wide] == ["kernel", "dims", "objective", "summary", "default_config"]
    assert [c.key for c in columns if c.wide] == ["tunables", "dtypes", "source"]
    table = shown(columns, k)
    assert table["dims"] == "rows,cols" and table["default_config"] == k.default_config().key
    assert table["tunables"] == ",".join(k.tunables) and table["source"] == str(k.path)
