"""autotune on a real PostgreSQL server: migrations, the CLI and ``lookup`` reading from it.

Concurrent writers and crashed workers on PostgreSQL are in ``test_concurrency.py`` (each
of its tests runs on SQLite and on PostgreSQL). Every test here gets a fresh database
(``pg_url``) and is skipped where no server is configured (see conftest).
"""

from __future__ import annotations

import optuna
import pytest

from autotune.store.opening import open_results
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from typer.testing import CliRunner

import autotune
from autotune.kernel.catalog import get_kernel
from autotune.cli import app
from autotune.store.key import tuning_key
from autotune.store.models import Base
from autotune.store.schema import head_revision
from autotune.search.options import SearchOptions
from autotune.search.tuner import search

from fakes import FakeTimer, fake_retime
from test_schema_migrations import OUR_TABLES, VERSION_TABLE, _ours, check_units_of_one_model_are_merged

pytestmark = pytest.mark.postgres
runner = CliRunner()


def _tables(url: str) -> set[str]:
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    try:
        return set(sa.inspect(engine).get_table_names())
    finally:
        engine.dispose()


def test_migrations_on_an_empty_database_reach_head_and_match_the_models(pg_url):
    store = open_results(pg_url)
    assert store.current_revision() == head_revision()
    assert store.backup is None
    assert _tables(pg_url) == OUR_TABLES | {VERSION_TABLE}
    optuna.create_study(study_name="coexist", storage=store.optuna_storage())
    assert {"studies", "trials", "alembic_version"} <= _tables(pg_url)
    with store.engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True, "include_name": _ours})
        assert compare_metadata(context, Base.metadata) == []
    store.close()


def test_db_upgrade_and_current_through_the_cli(pg_url):
    result = runner.invoke(app, ["db", "upgrade", "--db", pg_url])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["db", "current", "--db", pg_url])
    assert result.exit_code == 0 and head_revision() in result.output


def test_an_older_database_is_migrated_in_place_keeping_its_rows(pg_url):
    open_results(pg_url, "unmigrated").upgrade("0001")
    engine = sa.create_engine(pg_url, poolclass=sa.pool.NullPool)
    with engine.begin() as connection:
        connection.execute(sa.text(
            "insert into autotune_devices (name, compute_capability, sm_count, total_memory, driver_version,"
            " cuda_version) values ('NVIDIA H100 80GB HBM3', '9.0', 132, 85000000000, '13.0', '13.0')"))
    store = open_results(pg_url)
    assert store.current_revision() == head_revision() and store.backup is None  # no file to copy
    with engine.connect() as connection:
        assert connection.execute(sa.text("select name from autotune_devices")).all() == [("NVIDIA H100 80GB HBM3",)]
    engine.dispose()


def test_best_and_lookup_read_a_search_stored_in_postgres(pg_url, device_info):
    key = tuning_key("smem_pad", device_info, (256, 256), "float32")
    result = search(key, get_kernel("smem_pad").space(), FakeTimer(), open_results(pg_url),
                    SearchOptions(trials=30, seed=3, strategy="random"), retime=fake_retime())
    best = open_results(pg_url).best(key)
    assert best is not None and best.config == result.decision.winner.config and best.rounds == 5

    out = runner.invoke(app, ["best", "--size", "256", "--kernel", "smem_pad", "--db", pg_url])
    assert out.exit_code == 0, out.output
    assert best.config.key in out.output and device_info.name in out.output

    autotune.clear_cache()
    got = autotune.lookup("smem_pad", (256, 256), "float32", device=device_info, db=pg_url)
    assert (got.rung, got.config) == ("exact", best.config)
    autotune.clear_cache()


def test_units_of_one_model_are_merged_by_0004(pg_url):
    check_units_of_one_model_are_merged(pg_url)


def test_a_time_energy_study_and_its_front_on_postgres(pg_url, device_info):
    """The two-direction Optuna study, the search's objective and the front derived from the
    stored trials read the same on PostgreSQL as on SQLite (tests/test_pareto.py)."""
    from autotune.store.pareto import dominates

    from test_pareto import EnergyTimer

    key = tuning_key("smem_pad", device_info, (256, 256), "float32")
    store = open_results(pg_url)
    result = search(key, get_kernel("smem_pad").space(), EnergyTimer(), store,
                    SearchOptions(trials=12, seed=3, objective="time,energy", strategy_options={"population": 4}),
                    retime=fake_retime())
    assert store.best(key).objective == "time,energy"
    ok = [t for t in store.key_trials(key) if t.status == "ok"]
    members = store.pareto_front(result.search_id)
    assert members and all(not any(dominates((o.median_ms, o.energy_j), (m.median_ms, m.energy_j)) for o in ok)
                           for m in members)
    out = runner.invoke(app, ["best", "--size", "256", "--kernel", "smem_pad", "--db", pg_url])
    assert out.exit_code == 0 and "Pareto front of time and energy" in out.output, out.output
