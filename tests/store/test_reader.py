"""The stdlib ``sqlite3`` reader of a process's first lookup (:mod:`autotune.store.reader`) and
the one best query it shares with the Store (:mod:`autotune.store.best_sql`): the same records as
the SQLAlchemy Store, the same schema states and refusals, nothing written, SQLAlchemy never
imported."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from dataclasses import replace
from datetime import UTC
from pathlib import Path

import optuna
import pytest

from autotune.store.opening import open_results
import sqlalchemy as sa

from autotune.errors import StoreError
from autotune.kernel.catalog import get_kernel
from autotune.search.options import SearchOptions
from autotune.search.tuner import search
from autotune.store import best_sql, schema
from autotune.kernel.problem import Problem
from autotune.measure.toolchain import Toolchain
from autotune.store.key import TuningKey, tuning_key
from autotune.store.location import sqlite_path
from autotune.store.models import Best, Device, Kernel, Search, Trial
from autotune.store.reader import SqliteReader

from fakes import FakeTimer, fake_retime
from test_schema_migrations import _migrated_then

VERSION_TABLE = "autotune_alembic_version"


@pytest.fixture
def url(tmp_path) -> str:
    return f"sqlite:///{tmp_path / 'results.db'}"


def _tune(url, device, shape, dtype="float32", kernel="smem_pad", retimed=True):
    key = tuning_key(kernel, device, shape, dtype)
    store = open_results(url)
    search(key, get_kernel(kernel).space(), FakeTimer(), store, SearchOptions(trials=5, seed=1, strategy="random"),
           retime=fake_retime(tie_band=0.5) if retimed else None)
    store.close()
    return key


@pytest.fixture
def tuned(url, device_info, built_db):
    """Results of two kernels, two shapes, two dtypes and two devices (one named with LIKE's
    wildcards), some re-timed (with a tie group), some not: searched once a run (``built_db``),
    this test's copy at ``url``."""
    odd = replace(device_info, name="GPU_50% special", sm_count=7)
    plan = [(device_info, (256, 256), "float32", "smem_pad", True),
            (device_info, (512, 256), "float64", "smem_pad", False),
            (odd, (256, 256), "float32", "smem_pad", True), (device_info, (256, 256), "float32", "smem", False)]
    built_db(Path(url.removeprefix("sqlite:///")), "reader_tuned",
             lambda built: [_tune(built, *planned) for planned in plan])
    return [tuning_key(kernel, device, shape, dtype) for device, shape, dtype, kernel, _ in plan]


def test_every_column_of_the_best_query_is_a_column_of_the_models():
    tables = {"b": Best, "d": Device, "k": Kernel, "t": Trial, "s": Search}
    for field, column in best_sql.COLUMNS.items():
        alias, name = column.split(".")
        assert name in tables[alias].__table__.columns, f"{field}: {column}"


def test_the_reader_reads_exactly_what_the_store_reads(url, tuned):
    store, reader = open_results(url, "read_only"), SqliteReader(url)
    try:
        assert reader.schema_state == store.schema_state == "current"
        for key in tuned:
            assert reader.best(key) == store.best(key) is not None
        assert reader.best(tuned[0].replace(dtype="int8")) is None is store.best(tuned[0].replace(dtype="int8"))
        filters = [{}, {"kernel": "smem_pad"}, {"dtype": "float64"}, {"dims": {"rows": 256, "cols": 256}},
                   {"dims": "rows=512,cols=256"}, {"device_name": "50%"}, {"device_name": "gpu_5"},
                   {"device_name": "%"}, {"device_name": "_"}, {"device_name": "h100"}, {"device_name": "h1%"},
                   {"device_name": "h_00"}, {"device_name": "\\"},
                   {"kernel": "smem_pad", "dtype": "float32", "device_name": "H100"},
                   {"source_hash": tuned[0].source_hash, "spec_hash": tuned[0].spec_hash}]
        for given in filters:
            assert reader.find_best(**given) == store.find_best(**given), given
        everything = reader.find_best()
        assert len(everything) == len(tuned)
        assert [b.device_name for b in reader.find_best(device_name="50%")] == ["GPU_50% special"]
        assert len(reader.find_best(device_name="_")) == 1 == len(reader.find_best(device_name="%"))
        assert reader.find_best(device_name="h1%") == [] == reader.find_best(device_name="h_00")  # literal, not wildcards
        retimed = reader.best(tuned[0])
        assert retimed.rounds and retimed.pooled_median_ms and retimed.tie_group
        assert retimed.updated_at.tzinfo == UTC
    finally:
        store.close()
        reader.close()


def test_a_filter_that_is_not_one_is_refused():
    with pytest.raises(ValueError, match="no best filter"):
        best_sql.select_best({"kernel; drop table autotune_best": 1})


def test_schema_states_as_the_read_only_store_finds_them(url, tmp_path, device_info):
    missing = SqliteReader(f"sqlite:///{tmp_path / 'none.db'}")
    assert missing.schema_state == "missing" and not (tmp_path / "none.db").exists()
    key = TuningKey.of(Problem.of("smem_pad", {"rows": 64, "cols": 64}, "float32"), device_info,
                       Toolchain.of(device_info.arch))
    assert missing.best(key) is None and missing.shape_trials(key) == [] and missing.find_best() == []
    assert missing.trials_state("smem_pad") == (None, 0) and not (tmp_path / "none.db").exists()
    optuna.create_study(study_name="theirs", storage=url)  # Optuna's alembic_version is not ours
    assert SqliteReader(url).schema_state == "empty"
    (tmp_path / "results.db").unlink()
    store = open_results(url, "unmigrated")
    for revision in schema.REVISIONS:
        store.upgrade(revision)
        assert SqliteReader(url).schema_state == ("current" if revision == schema.HEAD_REVISION else "older")
    store.close()


def test_a_newer_or_ambiguous_schema_is_refused_naming_it(url, tmp_path):
    _migrated_then(url, f"update {VERSION_TABLE} set version_num = 'ffff_from_the_future'")
    with pytest.raises(StoreError, match=f"results database {url} has schema revision 'ffff_from_the_future', "
                                         f"newer than this autotune knows \\(up to '{schema.HEAD_REVISION}'\\)"):
        SqliteReader(url)
    other = f"sqlite:///{tmp_path / 'two.db'}"
    _migrated_then(other, f"insert into {VERSION_TABLE} (version_num) values ('0001')")
    with pytest.raises(StoreError, match="holds several schema revisions"):
        SqliteReader(other)


def test_a_folder_or_a_file_that_is_not_a_database_is_one_store_error(tmp_path):
    (tmp_path / "folder.db").mkdir()
    with pytest.raises(StoreError, match="is a folder, not a database file"):
        SqliteReader(f"sqlite:///{tmp_path / 'folder.db'}")
    (tmp_path / "text.db").write_text("not a database " * 100)
    with pytest.raises(StoreError, match=f"results database sqlite:///{tmp_path / 'text.db'}: file is not a database"):
        SqliteReader(f"sqlite:///{tmp_path / 'text.db'}")


@pytest.mark.parametrize("url, path", [
    ("sqlite:///rel/x.db", "rel/x.db"), ("sqlite:////abs/x.db", "/abs/x.db"), ("sqlite:///a%20b.db", "a b.db"),
    ("sqlite:///~/x.db", str(Path("~/x.db").expanduser())), ("sqlite://", None), ("sqlite:///:memory:", None),
    ("sqlite:///x.db?mode=ro", None), ("sqlite+pysqlite:///x.db", None), ("sqlite:///file:x.db", None),
    ("postgresql+psycopg://u:p@h/db", None),
])
def test_sqlite_path_names_the_file_sqlalchemy_opens(url, path):
    assert sqlite_path(url) == (None if path is None else Path(path))
    if path is not None and "~" not in url:
        assert sa.engine.make_url(url).database == path


def test_answers_are_the_same_from_several_threads_and_close_closes_them_all(url, tuned):
    reader = SqliteReader(url)
    answers, errors = [], []

    def read():
        try:
            answers.append([reader.best(key) for key in tuned])
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=read) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(answers) == 6 and all(a == answers[0] for a in answers)
    assert len(reader._connections) == 1 + 6  # the opening thread read the revision; one per reader thread
    reader.close()
    assert reader._connections == []
    assert reader.best(tuned[0]) == answers[0][0]  # a closed reader opens again when asked


def test_the_first_lookup_of_a_process_imports_no_sqlalchemy(url, tuned, device_info):
    """What a process's first ``transpose`` pays for: the reader, not SQLAlchemy or Optuna."""
    code = f"""
import sys
import autotune
from autotune.measure.device import DeviceInfo
info = DeviceInfo(**{device_info.__dict__!r})
got = autotune.lookup("smem_pad", (256, 256), "float32", device=info, db={url!r})
print(got.rung, sorted(m for m in ("sqlalchemy", "optuna", "alembic") if m in sys.modules))
"""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[0] == "exact []"


@pytest.mark.postgres
def test_postgres_answers_the_shared_best_query_as_sqlite_does(pg_url, url, device_info):
    """The same searches stored in PostgreSQL and in SQLite read back as the same records
    (apart from row ids and times): JSON columns and timestamps come back as values there."""
    odd = replace(device_info, name="GPU_50% special", sm_count=7)
    for db in (pg_url, url):
        _tune(db, device_info, (256, 256)), _tune(db, odd, (512, 256), "float64", retimed=False)
    pg, lite = open_results(pg_url, "read_only"), SqliteReader(url)

    def comparable(records):
        return [replace(r, trial_id=0, search_id=0, updated_at=None) for r in records]

    try:
        for given in ({}, {"device_name": "50%"}, {"device_name": "h1%"}, {"device_name": "_"}, {"dtype": "float64"},
                      {"dims": {"rows": 256, "cols": 256}, "kernel": "smem_pad"}):
            assert comparable(pg.find_best(**given)) == comparable(lite.find_best(**given)), given
        assert len(pg.find_best()) == 2 and pg.find_best(device_name="h1%") == []
        assert pg.best(tuning_key("smem_pad", device_info, (256, 256), "float32")).updated_at.tzinfo == UTC
    finally:
        pg.close()
        lite.close()
