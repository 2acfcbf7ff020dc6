"""The Alembic migrations of autotune's tables: one head, hand-written, matching the models,
and sharing one database with Optuna's RDB storage."""

from __future__ import annotations

import ast
import io
import re
from pathlib import Path

import optuna
import pytest

from autotune.store.opening import open_results

from autotune.errors import StoreError
from autotune.store import schema
from autotune.store.schema import head_revision
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config as AlembicConfig
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from autotune import resources
from autotune.store.models import Base

OUR_TABLES = {"autotune_devices", "autotune_kernels", "autotune_searches", "autotune_trials", "autotune_best",
              "autotune_bench_runs", "autotune_bench_rows", "autotune_workloads", "autotune_workload_calls",
              "autotune_workload_tunings", "autotune_workload_results"}
VERSION_TABLE = "autotune_alembic_version"


@pytest.fixture
def url(tmp_path) -> str:
    return f"sqlite:///{tmp_path / 'results.db'}"


def _alembic_config(url: str) -> AlembicConfig:
    config = AlembicConfig()
    config.set_main_option("script_location", str(resources.data_dir("migrations")))
    config.set_main_option("sqlalchemy.url", url)
    return config


def _tables(url: str) -> set[str]:
    engine = sa.create_engine(url)
    try:
        return set(sa.inspect(engine).get_table_names())
    finally:
        engine.dispose()


def test_upgrade_from_empty_creates_our_tables_and_optunas(url):
    store = open_results(url)
    assert _tables(url) == OUR_TABLES | {VERSION_TABLE}  # opening does not load Optuna
    # Optuna's study storage is created when a search first asks for it, under the init lock
    store.optuna_storage().engine.dispose()
    tables = _tables(url)
    assert OUR_TABLES | {VERSION_TABLE} <= tables
    assert {"studies", "trials", "version_info", "alembic_version"} <= tables
    assert store.current_revision() == ScriptDirectory.from_config(_alembic_config(url)).get_current_head()


def test_store_without_upgrade_leaves_database_empty(url):
    store = open_results(url, "unmigrated")
    assert store.current_revision() is None
    store.upgrade()
    assert store.current_revision() is not None


def test_exactly_one_head():
    heads = ScriptDirectory.from_config(_alembic_config("sqlite://")).get_heads()
    assert len(heads) == 1


def test_revisions_constant_names_every_migration_oldest_first():
    """A read-only opening compares with schema.REVISIONS instead of parsing the migrations:
    a new migration must add its id there, or a database at it would read as "newer"."""
    scripts = ScriptDirectory.from_config(_alembic_config("sqlite://"))
    walked = tuple(script.revision for script in reversed(list(scripts.walk_revisions())))
    assert schema.REVISIONS == walked, "add the new migration's id to autotune.store.revisions.REVISIONS"
    assert schema.HEAD_REVISION == scripts.get_current_head() == head_revision()


def _read_only_state(url: str) -> str:
    store = open_results(url, "read_only")
    try:
        return store.schema_state
    finally:
        store.close()


def test_read_only_opening_reads_the_revision_alembic_reads_at_every_revision(url):
    store = open_results(url, "unmigrated")
    assert schema.stored_revision(store.engine) is None is store.current_revision()
    for revision in schema.REVISIONS:
        store.upgrade(revision)
        assert schema.stored_revision(store.engine) == store.current_revision() == revision
        assert _read_only_state(url) == ("current" if revision == schema.HEAD_REVISION else "older")
    store.close()


def test_read_only_opening_of_a_database_without_our_tables_is_empty(url):
    optuna.create_study(study_name="theirs", storage=url)  # Optuna's alembic_version is not ours
    assert _read_only_state(url) == "empty"
    assert VERSION_TABLE not in _tables(url)  # and read-only opening created nothing


def _migrated_then(url, sql) -> None:
    """Migrate a new database at ``url`` to head, then run one statement on it."""
    open_results(url).close()
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    with engine.begin() as connection:
        connection.execute(sa.text(sql))
    engine.dispose()


def test_read_only_opening_refuses_a_newer_revision_naming_it(url):
    _migrated_then(url, f"update {VERSION_TABLE} set version_num = 'ffff_from_the_future'")
    with pytest.raises(StoreError, match=f"has schema revision 'ffff_from_the_future', newer than this autotune "
                                         f"knows \\(up to '{schema.HEAD_REVISION}'\\); upgrade autotune"):
        open_results(url, "read_only")


def test_read_only_opening_refuses_a_version_table_of_several_rows(url):
    _migrated_then(url, f"insert into {VERSION_TABLE} (version_num) values ('0001')")
    with pytest.raises(StoreError, match="holds several schema revisions"):
        open_results(url, "read_only")


def test_migrations_do_not_import_autotune():
    files = list(resources.data_dir("migrations").rglob("*.py"))
    assert any(f.parent.name == "versions" for f in files)
    for path in files:
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            assert not any(n.split(".")[0] == "autotune" for n in names), f"{path} imports {names}"
        assert not re.search(r"^\s*(from|import)\s+autotune\b", path.read_text(), re.MULTILINE)


def test_optuna_and_autotune_share_one_database(url):
    store = open_results(url)
    study = optuna.create_study(study_name="coexist", storage=store.optuna_storage())
    study.optimize(lambda t: t.suggest_float("x", 0, 1), n_trials=2)
    open_results(url)  # reopening and re-running our upgrade leaves Optuna's tables alone
    tables = _tables(url)
    assert OUR_TABLES | {VERSION_TABLE} <= tables
    assert {"studies", "trials", "version_info", "alembic_version"} <= tables
    assert store.current_revision() == ScriptDirectory.from_config(_alembic_config(url)).get_current_head()
    assert len(optuna.load_study(study_name="coexist", storage=store.optuna_storage()).trials) == 2


def test_optuna_first_then_autotune(url):
    optuna.create_study(study_name="first", storage=url)
    store = open_results(url)
    assert OUR_TABLES <= _tables(url)
    assert store.current_revision() is not None
    assert optuna.load_study(study_name="first", storage=store.optuna_storage()) is not None


def _ours(name, type_, parent_names) -> bool:
    """Compare only autotune's tables (not Optuna's, nor the version table)."""
    return type_ != "table" or name in Base.metadata.tables


def test_migrated_schema_matches_models(url):
    command.upgrade(_alembic_config(url), "head")  # the migrations, not a new database's create_head
    store = open_results(url)
    optuna.create_study(study_name="other", storage=store.optuna_storage())
    engine = sa.create_engine(url)
    with engine.connect() as connection:
        opts = {"compare_type": True, "include_name": _ours}
        context = MigrationContext.configure(connection, opts=opts)
        diffs = compare_metadata(context, Base.metadata)
    engine.dispose()
    assert diffs == []


def _schema(url: str) -> dict:
    """Our tables and the version table as the database describes them: columns (type,
    nullability, server default), primary key, foreign keys, indexes and unique constraints,
    each as a set (a table rebuilt by a SQLite batch migration may order them otherwise)."""
    engine = sa.create_engine(url)
    try:
        inspector = sa.inspect(engine)
        out = {}
        for table in sorted(set(Base.metadata.tables) | {VERSION_TABLE}):
            out[table] = {
                "columns": {(c["name"], str(c["type"]), c["nullable"], c.get("default"))
                            for c in inspector.get_columns(table)},
                "primary key": tuple(inspector.get_pk_constraint(table)["constrained_columns"]),
                "foreign keys": {(tuple(f["constrained_columns"]), f["referred_table"], tuple(f["referred_columns"]),
                                  (f.get("options") or {}).get("ondelete")) for f in inspector.get_foreign_keys(table)},
                "indexes": {(i["name"], tuple(i["column_names"]), bool(i["unique"]))
                            for i in inspector.get_indexes(table)},
                "uniques": {tuple(u["column_names"]) for u in inspector.get_unique_constraints(table)},
            }
        return out
    finally:
        engine.dispose()


def test_a_new_database_gets_the_schema_the_migrations_build(tmp_path):
    """A new database is made from the models in one step (schema.create_head), not by replaying
    the ten migrations: it must be the database the migrations build, table by table, at the
    head revision, and later migrations and downgrades must run on it."""
    migrated, created = (f"sqlite:///{tmp_path / name}" for name in ("migrated.db", "created.db"))
    command.upgrade(_alembic_config(migrated), "head")
    open_results(created).close()
    assert _schema(created) == _schema(migrated)
    assert open_results(created, "unmigrated").current_revision() == head_revision()
    command.downgrade(_alembic_config(created), "0009")  # Alembic reads the version row it wrote itself
    command.upgrade(_alembic_config(created), "head")
    assert _schema(created) == _schema(migrated)


def test_a_database_with_some_of_our_tables_is_migrated_not_created(url):
    """create_head only makes a database holding none of our tables: one with a table but no
    version row (a migration cut short before our version table was written) is left to Alembic."""
    engine = sa.create_engine(url)
    with engine.begin() as connection:
        Base.metadata.tables["autotune_devices"].create(connection)
    assert schema.create_head(engine) is False
    engine.dispose()


def test_models_use_autotune_prefix():
    assert set(Base.metadata.tables) == OUR_TABLES


def test_env_builds_engine_from_url_without_connection(url):
    command.upgrade(_alembic_config(url), "head")
    assert OUR_TABLES <= _tables(url)
    assert open_results(url, "unmigrated").current_revision() is not None


def test_downgrade_to_base_keeps_optuna_tables(url):
    open_results(url)
    optuna.create_study(study_name="kept", storage=url)
    command.downgrade(_alembic_config(url), "base")
    tables = _tables(url)
    assert not tables & OUR_TABLES
    assert "studies" in tables
    open_results(url)
    assert OUR_TABLES <= _tables(url)


def test_offline_sql_uses_our_version_table():
    # PostgreSQL: SQLite's batch migrations need a live connection to reflect tables
    buffer = io.StringIO()
    config = _alembic_config("postgresql://")
    config.output_buffer = buffer
    command.upgrade(config, "head", sql=True)
    sql = buffer.getvalue()
    assert "CREATE TABLE autotune_trials" in sql
    assert "ALTER TABLE autotune_devices ADD COLUMN uuid" in sql
    assert VERSION_TABLE in sql
    assert "alembic_version " not in sql.replace(VERSION_TABLE, "")


def test_data_dir_finds_repository_folders():
    for name in ("kernels", "configs", "migrations"):
        assert resources.data_dir(name).is_dir()
    assert (resources.data_dir("migrations") / "env.py").is_file()


def test_data_dir_errors(monkeypatch, tmp_path):
    with pytest.raises(ValueError, match="unknown data folder"):
        resources.data_dir("secrets")
    monkeypatch.setattr(resources, "_PACKAGE", tmp_path / "autotune")
    with pytest.raises(FileNotFoundError, match="'kernels' data folder is missing"):
        resources.data_dir("kernels")


def test_data_dir_prefers_wheel_layout(monkeypatch, tmp_path):
    (tmp_path / "autotune" / "_data" / "configs").mkdir(parents=True)
    (tmp_path / "configs").mkdir()
    monkeypatch.setattr(resources, "_PACKAGE", tmp_path / "autotune")
    assert resources.data_dir("configs") == tmp_path / "autotune" / "_data" / "configs"


def test_an_older_database_is_backed_up_then_migrated_keeping_its_rows(tmp_path):
    import sqlite3

    db = tmp_path / "old.db"
    url = f"sqlite:///{db}"
    open_results(url, "unmigrated").upgrade("0001")
    con = sqlite3.connect(db)
    con.execute("insert into autotune_devices (name, compute_capability, sm_count, total_memory, driver_version,"
                " cuda_version) values ('NVIDIA H100 80GB HBM3', '9.0', 132, 85000000000, '13.0', '13.0')")
    con.commit()
    before = list(con.iterdump())
    con.close()

    store = open_results(url)  # opening migrates automatically, after a backup
    assert store.current_revision() == ScriptDirectory.from_config(_alembic_config(url)).get_current_head() != "0001"
    assert store.backup is not None and store.backup.startswith(f"{db}.bak-0001-")
    copy = sqlite3.connect(f"file:{store.backup}?mode=ro", uri=True)
    assert list(copy.iterdump()) == before  # every table and row as it was (SQLite's backup API)
    copy.close()
    con = sqlite3.connect(db)
    assert con.execute("select name from autotune_devices").fetchall() == [("NVIDIA H100 80GB HBM3",)]
    con.close()
    assert open_results(url).backup is None  # at head: nothing to migrate, no second backup


def _wal_only_rows(db, n: int):
    """Insert ``n`` device rows into the SQLite file ``db`` (at revision 0001) through a
    connection that never checkpoints (``wal_autocheckpoint=0``) and stays open, so that the
    rows are committed but only in ``db-wal``; returns that connection (close it to checkpoint)."""
    import sqlite3

    con = sqlite3.connect(db)
    assert con.execute("PRAGMA journal_mode=WAL").fetchone()[0] == "wal"
    con.execute("PRAGMA wal_autocheckpoint=0")
    for i in range(n):
        con.execute("insert into autotune_devices (name, compute_capability, sm_count, total_memory, "
                    "driver_version, cuda_version) values (?, '9.0', 132, 85000000000, '13.0', '13.0')",
                    (f"GPU {i}",))
        con.commit()
    return con


def test_the_backup_before_a_migration_holds_the_rows_still_in_the_wal(tmp_path):
    import sqlite3

    db = tmp_path / "old.db"
    url = f"sqlite:///{db}"
    old = open_results(url, "unmigrated")
    old.upgrade("0001")
    old.close()  # its tables checkpointed into the file; the rows below are not
    held = _wal_only_rows(db, 301)
    try:
        assert (tmp_path / "old.db-wal").stat().st_size > 0
        main_only = sqlite3.connect(f"file:{db}?immutable=1", uri=True)  # the main file alone: rows not in it
        assert main_only.execute("select count(*) from autotune_devices").fetchone()[0] == 0
        main_only.close()
        store = open_results(url)  # migrates, after a backup
        assert store.backup is not None
        store.close()
    finally:
        held.close()
    copy = sqlite3.connect(f"file:{store.backup}?mode=ro", uri=True)
    try:
        names = [r[0] for r in copy.execute("select name from autotune_devices order by id")]
        assert names == [f"GPU {i}" for i in range(301)]
        assert copy.execute("select version_num from autotune_alembic_version").fetchall() == [("0001",)]
        assert copy.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        copy.close()
    assert sorted(p.name for p in tmp_path.iterdir() if ".bak-" in p.name) == [Path(store.backup).name]


def check_units_of_one_model_are_merged(url: str) -> None:
    """0004 on a database at 0003 holding two H100 units, each with a search and a best of
    the same key: one device row is left, both searches keep their GPU's UUID, and the
    faster trial stays the best."""
    from datetime import UTC, datetime

    open_results(url, "unmigrated").upgrade("0003")
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    tables = sa.MetaData()
    tables.reflect(engine)
    t = tables.tables
    now = datetime.now(UTC)
    model = {"name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0", "sm_count": 132,
             "total_memory": 85_000_000_000, "driver_version": "13.0", "cuda_version": "13.0"}
    shape = {"rows": 512, "cols": 512, "dtype": "float32", "nvcc_version": "13.0.88", "compile_flags": "-O3"}
    with engine.begin() as c:
        c.execute(t["autotune_devices"].insert(), [{"id": 1, **model, "uuid": "GPU-a"},
                                                   {"id": 2, **model, "uuid": "GPU-b"},
                                                   {"id": 3, **model, "name": "NVIDIA A100", "uuid": "GPU-c"}])
        c.execute(t["autotune_kernels"].insert(), [{"id": 1, "name": "smem_pad", "source_hash": "0" * 64}])
        for unit, gbps in ((1, 2000.0), (2, 2500.0), (3, 1500.0)):
            c.execute(t["autotune_searches"].insert(), [{"id": unit, "device_id": unit, "kernel_id": 1, **shape,
                                                         "study_name": f"s{unit}", "sampler": "tpe",
                                                         "started_at": now, "status": "finished"}])
            c.execute(t["autotune_trials"].insert(), [{"id": unit, "search_id": unit, "number": 0, "config_key": "c",
                                                       "macros": {}, "status": "ok", "gbps": gbps,
                                                       "median_ms": 1000.0 / gbps, "created_at": now}])
            c.execute(t["autotune_best"].insert(), [{"device_id": unit, "kernel_id": 1, **shape, "trial_id": unit,
                                                     "updated_at": now}])
    open_results(url)
    with engine.connect() as c:
        q = lambda sql: [tuple(r) for r in c.execute(sa.text(sql))]  # noqa: E731
        assert q("select id, name from autotune_devices order by id") == [(1, model["name"]), (3, "NVIDIA A100")]
        assert q("select id, device_id, gpu_uuid from autotune_searches order by id") == [
            (1, 1, "GPU-a"), (2, 1, "GPU-b"), (3, 3, "GPU-c")]
        assert q("select device_id, trial_id from autotune_best order by device_id") == [(1, 2), (3, 3)]
    engine.dispose()


def test_units_of_one_model_are_merged_by_0004(url):
    check_units_of_one_model_are_merged(url)


# --- 0006: named dims and spec hashes -------------------------------------------------------------

def _migration_0006():
    import importlib.util

    path = resources.data_dir("migrations") / "versions" / "0006_named_dims_and_spec_hash.py"
    spec = importlib.util.spec_from_file_location("migration_0006", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_0_1_spec_hash_tables_agree_with_each_other_and_the_catalog():
    from autotune.kernel.catalog import KERNELS, get_kernel
    from autotune.interchange import share

    migration = _migration_0006()
    assert migration.SPEC_HASHES_0_1 == share.SPEC_HASHES_0_1
    assert migration.MATMUL_0_1 == share.MATMUL_0_1
    # issue 14 gave the shared-memory transposes a row pitch and batch stride (new arguments, a new spec hash):
    # their 0.1 results import under their 0.1 hash and are stale, as their source changed too
    changed = {"smem", "smem_pad", "smem_unroll_pad", "smem_vec",  # and, with the direct ones, naive-pitch:
               "naive_row", "naive_col", "unroll_row", "unroll_col", "diagonal_row", "diagonal_col"}
    added = {"matmul_warp", "smem_vec_realign", "smem_bytes", "skinny", "smem_aligned_out", "naive_flat",
             "smem_bytes_aligned_out"}  # added after 0.1
    assert set(share.SPEC_HASHES_0_1) == {name for name in KERNELS if name not in added}
    assert {n: h for n, h in share.SPEC_HASHES_0_1.items() if n not in changed} == {
        name: get_kernel(name).spec_hash for name in KERNELS if name not in changed | added}
    assert all(share.SPEC_HASHES_0_1[n] != get_kernel(n).spec_hash for n in changed)
    assert not added & set(share.SPEC_HASHES_0_1)
    assert {name for name in KERNELS if get_kernel(name).dims == ("m", "n", "k")} == {*share.MATMUL_0_1, "matmul_warp"}


def _a_0005_database(url: str):
    """A database at 0005 holding what autotune 0.1 stored (copy_row: a 0.1 kernel issue 14 left unchanged):
    a copy_row search of 512x256 and a
    matmul_reg search of 128x64x32 (each with a failed and two ok trials, the faster the best),
    an older copy_row source, and a bench run of each kind. Returns the expected best configs."""
    from datetime import UTC, datetime

    from autotune.kernel.catalog import get_kernel

    open_results(url, "unmigrated").upgrade("0005")
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    meta = sa.MetaData()
    meta.reflect(engine)
    t = meta.tables
    now = datetime.now(UTC)
    device = {"id": 1, "name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0", "sm_count": 132,
              "total_memory": 85_000_000_000, "driver_version": "13.0", "cuda_version": "13.0"}
    rows_kernel, reg = get_kernel("copy_row"), get_kernel("matmul_reg")
    toolchain = {"dtype": "float32", "nvcc_version": "13.0.88", "compile_flags": "-O3 -arch=sm_90"}
    searches = [(1, 1, (512, 256, 0)), (2, 2, (128, 64, 32)), (3, 3, (512, 256, 0))]
    fast = {1: rows_kernel.default_config(), 2: reg.default_config(), 3: rows_kernel.default_config()}
    with engine.begin() as c:
        c.execute(t["autotune_devices"].insert(), [device])
        c.execute(t["autotune_kernels"].insert(), [{"id": 1, "name": "copy_row", "source_hash": rows_kernel.source_hash},
                                                   {"id": 2, "name": "matmul_reg", "source_hash": reg.source_hash},
                                                   {"id": 3, "name": "copy_row", "source_hash": "0" * 64}])
        for sid, kid, (rows, cols, depth) in searches:
            c.execute(t["autotune_searches"].insert(), [{
                "id": sid, "device_id": 1, "kernel_id": kid, "rows": rows, "cols": cols, "depth": depth, **toolchain,
                "study_name": f"old study {sid}", "sampler": "tpe", "started_at": now, "status": "finished",
                "gpu_uuid": "GPU-1"}])
            macros = fast[sid].as_dict()
            slower = {**macros, sorted(macros)[0]: macros[sorted(macros)[0]] + 1}
            trials = [{"number": 0, "config_key": "x", "macros": slower, "status": "ok", "gbps": 1000.0,
                       "median_ms": 2.0, "min_ms": 2.0, "max_ms": 2.0, "registers": 30, "shared_bytes": 0},
                      {"number": 1, "config_key": fast[sid].key, "macros": macros, "status": "ok", "gbps": 2000.0,
                       "median_ms": 1.0, "min_ms": 1.0, "max_ms": 1.0, "registers": 30, "shared_bytes": 0,
                       "pct_memcpy": None if depth else 66.0, "gflops": 500.0 if depth else None},
                      {"number": 2, "config_key": "y", "macros": macros, "status": "compile_error", "reason": "x"}]
            for i, trial in enumerate(trials):
                c.execute(t["autotune_trials"].insert(), [{"id": 10 * sid + i, "search_id": sid, "created_at": now,
                                                           **trial}])
            c.execute(t["autotune_best"].insert(), [{"device_id": 1, "kernel_id": kid, "rows": rows, "cols": cols,
                                                     "depth": depth, **toolchain, "trial_id": 10 * sid + 1,
                                                     "updated_at": now}])
        c.execute(t["autotune_bench_runs"].insert(), [
            {"id": 1, "device_id": 1, "rows": 64, "cols": 32, "depth": 0, "dtype": "float32", "nvcc_version": "13.0.88",
             "memcpy_gbps": 2900.0, "l2_mode": "single", "created_at": now},
            {"id": 2, "device_id": 1, "rows": 64, "cols": 32, "depth": 16, "dtype": "float32",
             "nvcc_version": "13.0.88", "memcpy_gbps": None, "l2_mode": "single", "created_at": now}])
    engine.dispose()
    return fast


def check_a_0005_database_upgrades_and_answers_as_before(url: str) -> None:
    from typer.testing import CliRunner

    import autotune
    from autotune.cli import app
    from autotune.kernel.catalog import get_kernel
    from autotune.measure.device import DeviceInfo

    fast = _a_0005_database(url)
    store = open_results(url)
    assert store.current_revision() == head_revision()
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    with engine.connect() as c:
        q = lambda sql: [tuple(r) for r in c.execute(sa.text(sql))]  # noqa: E731
        assert q("select id, dims, study_name from autotune_searches order by id") == [
            (1, "rows=512,cols=256", "old study 1"), (2, "m=128,n=64,k=32", "old study 2"),
            (3, "rows=512,cols=256", "old study 3")]
        assert q("select kernel_id, dims, trial_id from autotune_best order by kernel_id") == [
            (1, "rows=512,cols=256", 11), (2, "m=128,n=64,k=32", 21), (3, "rows=512,cols=256", 31)]
        assert q("select dims from autotune_bench_runs order by id") == [("rows=64,cols=32",), ("m=64,n=32,k=16",)]
        assert q("select name, spec_hash from autotune_kernels order by id") == [
            ("copy_row", get_kernel("copy_row").spec_hash), ("matmul_reg", get_kernel("matmul_reg").spec_hash),
            ("copy_row", get_kernel("copy_row").spec_hash)]
    engine.dispose()

    h100 = DeviceInfo("NVIDIA H100 80GB HBM3", "9.0", 132, 85_000_000_000, "13.0", "13.0")
    autotune.clear_cache()
    got = autotune.lookup("copy_row", (512, 256), "float32", device=h100, db=url)
    assert (got.rung, got.config, got.gbps) == ("exact", fast[1], 2000.0)
    assert "stale" not in got.note  # the exact key: no ladder climbed
    got = autotune.lookup("matmul_reg", (128, 64, 32), "float32", device=h100, db=url)
    assert (got.rung, got.config, got.gflops, got.tuned_dims) == ("exact", fast[2], 500.0,
                                                                 (("m", 128), ("n", 64), ("k", 32)))
    got = autotune.lookup("copy_row", (1024, 256), "float32", device=h100, db=url)
    assert got.rung == "dispatch" and got.note.endswith("skipped 1 stale result (1 kernel source changed)")
    autotune.clear_cache()

    r = CliRunner().invoke(app, ["best", "--rows", "512", "--cols", "256", "--db", url])
    assert r.exit_code == 0, r.output
    assert fast[1].key in r.output and "left out 1 stale result (1 kernel source changed); --include-stale shows them" in r.output
    r = CliRunner().invoke(app, ["best", "--m", "128", "--n", "64", "--k", "32", "--db", url])
    assert r.exit_code == 0 and fast[2].key in r.output and "500" in r.output


def test_a_0005_database_upgrades_to_0006_and_answers_best_and_lookup_as_before(shared_db):
    check_a_0005_database_upgrades_and_answers_as_before(shared_db)



def test_0006_downgrades_by_the_reverse_rule_and_refuses_what_0005_cannot_hold(shared_db):
    url = shared_db
    _a_0005_database(url)
    open_results(url)
    command.downgrade(_alembic_config(url), "0005")
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    with engine.connect() as c:
        q = lambda sql: [tuple(r) for r in c.execute(sa.text(sql))]  # noqa: E731
        assert q("select id, rows, cols, depth from autotune_searches order by id") == [
            (1, 512, 256, 0), (2, 128, 64, 32), (3, 512, 256, 0)]
        assert q("select rows, cols, depth, trial_id from autotune_best order by id") == [
            (512, 256, 0, 11), (128, 64, 32, 21), (512, 256, 0, 31)]
        assert q("select rows, cols, depth from autotune_bench_runs order by id") == [(64, 32, 0), (64, 32, 16)]
    open_results(url)  # and up again
    with engine.begin() as c:  # a user's kernel with dims 0005 has no columns for
        c.execute(sa.text("update autotune_searches set dims = 'n=5' where id = 1"))
    with pytest.raises(RuntimeError, match="cannot downgrade to 0005: autotune_searches holds dims with no "
                                           "rows/cols/depth form \\(n=5\\)"):
        command.downgrade(_alembic_config(url), "0005")
    engine.dispose()
    assert open_results(url, "unmigrated").current_revision() in ("0006", head_revision())  # 0006's data unchanged


def test_0007_keeps_crash_and_timeout_trials_and_phases_and_downgrades_only_without_them(shared_db):
    url = shared_db
    _a_0005_database(url)
    open_results(url)
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    with engine.begin() as c:
        c.execute(sa.text("update autotune_trials set status = 'crash', reason = 'illegal address', "
                          "median_ms = null where id = 12"))
        c.execute(sa.text("update autotune_trials set phases = '{\"compile\": 800.0}' where id = 11"))
    with engine.connect() as c:
        assert c.execute(sa.text("select status from autotune_trials where id = 12")).scalar() == "crash"
    with pytest.raises(RuntimeError, match="cannot downgrade to 0006: autotune_trials holds 1 crash or timeout"):
        command.downgrade(_alembic_config(url), "0006")
    with engine.begin() as c:
        c.execute(sa.text("update autotune_trials set status = 'compile_error' where id = 12"))
    command.downgrade(_alembic_config(url), "0006")
    with engine.connect() as c:
        columns = {col["name"] for col in sa.inspect(c).get_columns("autotune_trials")}
        assert "phases" not in columns and "status" in columns
    engine.dispose()
    assert open_results(url).current_revision() == head_revision()  # 0006 -> 0007 -> ... the newest


def test_0009_adds_certified_timing_and_energy_null_for_older_rows_and_downgrades(shared_db):
    url = shared_db
    _a_0005_database(url)
    open_results(url)  # 0005 -> the newest
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    with engine.connect() as c:
        old = c.execute(sa.text("select samples, ci_low_ms, ci_high_ms, energy_j, sm_mhz from autotune_trials "
                                "where id = 11")).one()
        assert tuple(old) == (None,) * 5  # not measured: unknown, not zero
        assert c.execute(sa.text("select count(*) from autotune_searches where objective != 'time'")).scalar() == 0
        assert c.execute(sa.text("select count(*) from autotune_best where certificate is not null")).scalar() == 0
    with engine.begin() as c:
        c.execute(sa.text("update autotune_trials set samples = 40, ci_low_ms = 0.1, ci_high_ms = 0.12, "
                          "energy_j = 0.002, sm_mhz = 1980 where id = 11"))
    command.downgrade(_alembic_config(url), "0008")
    with engine.connect() as c:
        trials = {col["name"] for col in sa.inspect(c).get_columns("autotune_trials")}
        best = {col["name"] for col in sa.inspect(c).get_columns("autotune_best")}
        searches = {col["name"] for col in sa.inspect(c).get_columns("autotune_searches")}
        assert not trials & {"samples", "ci_low_ms", "ci_high_ms", "energy_j", "sm_mhz"} and "median_ms" in trials
        assert "certificate" not in best and "objective" not in searches
        assert c.execute(sa.text("select count(*) from autotune_trials where id = 11")).scalar() == 1
    engine.dispose()
    assert open_results(url).current_revision() == head_revision()  # 0008 -> 0009 -> ... the newest


def test_0010_names_a_tunings_process_and_lets_a_result_run_and_downgrades(shared_db):
    """0010: a tuning's owner and heartbeat (NULL for older rows: such a tuning left running
    counts as gone), and a result 'running'; the downgrade makes a running result 'interrupted'."""
    from autotune.measure.device import DeviceInfo
    from autotune.store.leases import Owner
    from autotune.kernel.problem import ProblemKey
    from autotune.store.workload_records import CallCount, ProblemResult
    from autotune.store.workloads import latest_tuning, open_tuning, save_result, write_batch

    url = shared_db
    device = DeviceInfo("NVIDIA H100 80GB HBM3", "9.0", 132, 85_000_000_000, "13.0", "13.0")
    store = open_results(url)
    stored = ProblemKey("smem_pad", "s", "p", (("rows", 64), ("cols", 64)), "float32", "smem_pad")
    write_batch(store, "app", "run", 1, [CallCount(device, stored, 3)])
    problem = ProblemResult(stored)
    tuning, _ = open_tuning(store, "app", device, 60.0, 1, [problem], owner=Owner.mine())
    save_result(store, tuning.id, ProblemResult(**{**problem.__dict__, "status": "running"}))
    store.close()
    command.downgrade(_alembic_config(url), "0009")
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    with engine.connect() as c:
        assert c.execute(sa.text("select status from autotune_workload_results")).scalar() == "interrupted"
        columns = {col["name"] for col in sa.inspect(c).get_columns("autotune_workload_tunings")}
        assert not columns & {"owner_host", "owner_pid", "owner_token", "heartbeat_at"} and "status" in columns
        assert c.execute(sa.text("select status from autotune_workload_tunings")).scalar() == "running"
    engine.dispose()
    store = open_results(url)  # 0009 -> 0010: the tuning left running holds no owner: it is resumed
    assert store.current_revision() == head_revision()
    again, resumed = open_tuning(store, "app", device, 60.0, 1, [problem], owner=Owner.mine())
    assert resumed and again.id == tuning.id and [r.status for r in again.results] == ["interrupted"]
    save_result(store, tuning.id, ProblemResult(**{**problem.__dict__, "status": "running"}))  # allowed now
    assert [r.status for r in latest_tuning(store, "app").results] == ["running"]
    store.close()
