"""Shared fixtures. Every test gets its own temporary SQLite database.

Tests marked ``gpu`` (the fast GPU tier) or ``gpu_slow`` (the slower one; docs/architecture.md,
"GPU tests in two tiers") run only where a CUDA backend (cuda-bindings or PyCUDA) and a CUDA
device are present; elsewhere they are skipped with the reason. Tests marked ``postgres`` run only where
``AUTOTUNE_TEST_POSTGRES_URL`` names a reachable PostgreSQL server (a superuser URL, e.g.
``postgresql+psycopg://autotune@127.0.0.1:5432/postgres``; ``.ci/postgres.sh`` starts one);
each gets a database of its own (:func:`pg_url`), created for it and dropped afterwards.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import os
import signal
import sqlite3
import uuid
from pathlib import Path

import pytest

from autotune.measure.device import DeviceInfo


@functools.cache
def _gpu_missing() -> str | None:
    try:
        from autotune.measure.device import device_count

        return None if device_count() > 0 else "no CUDA device"
    except Exception as exc:  # GPUUnavailableError, or a driver that cannot initialise
        return f"no GPU: {exc}"


PG_ENV = "AUTOTUNE_TEST_POSTGRES_URL"


@functools.cache
def _postgres_missing() -> str | None:
    url = os.environ.get(PG_ENV)
    if not url:
        return f"no PostgreSQL server: {PG_ENV} is not set (.ci/postgres.sh starts one)"
    try:
        engine = _admin_engine()
        with engine.connect() as connection:
            connection.exec_driver_sql("select 1")
    except Exception as exc:  # driver missing, server down, bad URL
        return f"PostgreSQL at {PG_ENV} unusable: {str(exc).strip().splitlines()[0]}"
    return None


@functools.cache
def _admin_engine():
    import sqlalchemy as sa

    return sa.create_engine(os.environ[PG_ENV], isolation_level="AUTOCOMMIT", poolclass=sa.pool.NullPool)


def pytest_collection_finish(session):
    """What the collection imported and built (the package, its dependencies, every test module)
    moved to the garbage collector's permanent generation (:func:`gc.freeze`): a full collection,
    automatic or a test's own ``gc.collect()``, then walks what the tests made since, not the
    whole heap of a worker that imported everything (a tenth to a third of a second each)."""
    gc.freeze()


def pytest_collection_modifyitems(config, items):
    """Skip what this machine cannot run (module doc); under pytest-xdist (the README's command,
    ``-n auto --dist loadgroup``) every ``gpu`` test goes to one worker, so no two share the GPU."""
    for item in items:
        if "gpu" in item.keywords or "gpu_slow" in item.keywords:
            item.add_marker(pytest.mark.xdist_group("gpu"))
        for mark, missing in (("gpu", _gpu_missing), ("gpu_slow", _gpu_missing), ("postgres", _postgres_missing)):
            if mark in item.keywords:
                reason = missing()
                if reason:
                    item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture
def pg_url():
    """URL of a fresh, empty PostgreSQL database for this test (dropped afterwards)."""
    from sqlalchemy.engine import make_url

    name = f"autotune_test_{uuid.uuid4().hex[:16]}"
    admin = _admin_engine()
    with admin.connect() as connection:
        connection.exec_driver_sql(f'create database "{name}"')
    try:
        yield make_url(os.environ[PG_ENV]).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as connection:
            connection.exec_driver_sql(f'drop database if exists "{name}" with (force)')


@pytest.fixture
def device_info() -> DeviceInfo:
    """A device identity like the H100 we test on (no GPU needed)."""
    return DeviceInfo(name="NVIDIA H100 80GB HBM3", compute_capability="9.0", sm_count=132,
                      total_memory=85_000_000_000, driver_version="13.0", cuda_version="13.0")


@pytest.fixture
def db_url(tmp_path) -> str:
    """URL of a fresh SQLite file for this test."""
    return f"sqlite:///{tmp_path / 'autotune.db'}"


@pytest.fixture(autouse=True)
def _isolated_db(monkeypatch, tmp_path):
    """No test may touch the user's real database: AUTOTUNE_DB points into tmp_path."""
    monkeypatch.setenv("AUTOTUNE_DB", f"sqlite:///{tmp_path / 'default.db'}")
    monkeypatch.setenv("AUTOTUNE_CACHE_DIR", str(tmp_path / "cubins"))  # nor the user's cubin cache
    monkeypatch.setenv("AUTOTUNE_COMPILE_WORKERS", "0")  # fake GPUs: no nvcc in the background


def _run_folder(request, tmp_path_factory) -> Path:
    """The test run's own temporary folder: under pytest-xdist the one its workers share (their
    base temporary folders are in it), else this session's base temporary folder."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if hasattr(request.config, "workerinput") else base


@pytest.fixture(scope="session")
def _session_cubins(request, tmp_path_factory):
    """One cubin cache folder for the whole test run: under pytest-xdist the run's own folder,
    which its workers share (the cache's writes are atomic and a build in progress is waited for:
    autotune/measure/cubin_cache.py), else this session's base temporary folder."""
    folder = _run_folder(request, tmp_path_factory) / "session-cubins"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="session")
def run_once(request, tmp_path_factory):
    """``run_once(name, make)``: the folder ``run-once/NAME`` of the test run (:func:`_run_folder`),
    filled by ``make(folder)`` once a run, not once an xdist worker: the first worker to ask makes
    it while a lock on the name keeps the others waiting, and marks it complete (``NAME.done``);
    they then use what it made. ``make`` gets an empty folder (a half-made one, left by a
    ``make`` that failed, is emptied first) and writes there only."""
    import shutil

    from autotune.base.files import lock_file

    root = _run_folder(request, tmp_path_factory) / "run-once"

    def get(name: str, make) -> Path:
        folder, complete = root / name, root / f"{name}.done"
        with lock_file(root / f"{name}.lock"):
            if not complete.exists():
                shutil.rmtree(folder, ignore_errors=True)
                folder.mkdir(parents=True)
                make(folder)
                complete.touch()
        return folder
    return get


@pytest.fixture
def shared_cubins(monkeypatch, _session_cubins):
    """``AUTOTUNE_CACHE_DIR`` set to the run's one cubin cache (:func:`_session_cubins`) instead
    of this test's own: a (source, options, arch, nvcc) that another test built already is
    loaded, not compiled again. For tests that only build and check what they build (the
    catalog's and the examples' spaces), never for tests of the cache, of a build counted or
    timed: those keep their own folder. A failed build is not cached, so a compile error is
    still a compile error."""
    monkeypatch.setenv("AUTOTUNE_CACHE_DIR", str(_session_cubins))
    return _session_cubins


@pytest.fixture(autouse=True)
def _signal_handlers_restored():
    """A test that runs a worker's body in this process (it ignores SIGINT once its search is
    over: autotune/search/workers.py, autotune/workload/pool.py) leaves the handlers as they were
    found: a child started by a later test in the same worker inherited SIGINT ignored."""
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    yield
    for s, handler in before.items():
        if signal.getsignal(s) is not handler and handler is not None:
            signal.signal(s, handler)


@pytest.fixture
def built_db(run_once):
    """``built_db(path, name, build)``: this test's own database at ``path``, a copy of the one
    ``build(url)`` wrote under ``name`` once in this test run (:func:`run_once`: under
    pytest-xdist once, not once per worker); returns its URL. For fixtures whose stored results
    are the same for every test that reads them (many searches of a fake timer): the test still
    has a database of its own, which it may change, but the searches run once, not once a test.
    Copied by SQLite's backup (what a connection left open holds in its WAL is copied too);
    ``build`` closes what it opens."""
    def make(path: Path, name: str, build) -> str:
        def build_in(folder: Path) -> None:
            build(f"sqlite:///{folder / 'built.db'}")
            with contextlib.closing(sqlite3.connect(folder / "built.db")) as source, \
                    contextlib.closing(sqlite3.connect(folder / "whole.db")) as whole:
                source.backup(whole)  # one file, its WAL's pages in it: what the other workers copy

        original = run_once(f"db-{name}", build_in) / "whole.db"
        with contextlib.closing(sqlite3.connect(original)) as source, \
                contextlib.closing(sqlite3.connect(path)) as copy:
            source.backup(copy)
        return f"sqlite:///{path}"
    return make


@pytest.fixture
def store(db_url):
    """This test's own results database (``db_url``), migrated, through the one door
    (:func:`autotune.store.opening.open_results`, mode ``write``); closed afterwards."""
    from autotune.store.opening import open_results

    opened = open_results(db_url)
    yield opened
    opened.close()



@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def shared_db(request, tmp_path):
    """URL of an empty database for a test's several processes: a SQLite file, and (a second
    run of the test) a fresh PostgreSQL database."""
    if request.param == "postgres":
        return request.getfixturevalue("pg_url")
    return f"sqlite:///{tmp_path / 'shared.db'}"


@pytest.fixture
def cpu_load():
    """The machine loaded by busy-loop processes (one per CPU) while the test runs: timing tests
    must hold on a loaded machine (the signal tests load it from the signal to the exit:
    ``tests/signals.py``)."""
    from signals import cpu_load as load

    with load():
        yield
