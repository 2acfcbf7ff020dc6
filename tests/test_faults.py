"""The fault table: every command and library entry point against a database that is down,
refuses us, is of a newer schema, or goes away mid-search, on SQLite and on PostgreSQL; and
the runtime reading a database it may not write.

Each cell: one ``error:`` line naming the database (password masked), exit 2, no traceback,
nothing written. The SQLite analogues of a server's faults: "down" is a path that cannot be
opened (a folder where the file should be), "refused" a write lock another process holds past the retries (readers,
such as ``lookup``, are not refused by it: they answer). A server that goes away mid-search
is a cluster of the test's own, stopped (``tests/pgcluster.py``).
"""

from __future__ import annotations

import os
import socket
import sqlite3
import warnings
from pathlib import Path

import pytest

from autotune.store.opening import open_results
import sqlalchemy as sa
from sqlalchemy.engine import make_url
from typer.testing import CliRunner

import autotune
import autotune.measure.benchmark
from autotune.store import locking
from autotune.cli import app
from autotune.errors import StoreError
from autotune.kernel.catalog import KERNELS
from autotune.search.options import SearchOptions
from autotune.search.tuner import search
from autotune.store.key import tuning_key
from autotune.store.schema import head_revision
from autotune.interchange.share import export_results

from fakes import FakeTimer, fake_retime
from signals import finish, release, start_cli, wait_for
from test_concurrency import rows
from workers import DEVICE, fake_device, fake_open_benchmark

from autotune.store.revisions import HEAD_REVISION

runner = CliRunner()
PASSWORD = "s3cret"
FUTURE = "ffff_from_the_future"

CLI = {  # every command that opens the database
    "search": ["search", "--size", "64", "--trials", "2"],
    "sweep": ["sweep", "--size", "64"],
    "bench": ["bench", "--size", "64", "--kernel", "smem_pad"],
    "best": ["best", "--size", "64"],
    "list": ["list"],
    "trials": ["trials", "--size", "64"],
    "dispatch": ["dispatch", "smem_pad"],
    "tune-shapes": ["tune-shapes", "smem_pad", "--dims-range", "rows=64:128,cols=64:128", "--count", "1",
                    "--trials", "2"],
    "export": ["export", "--out", "{tmp}/out.json"],
    "import": ["import", "{tmp}/in.json"],
    "report": ["report", "--out", "{tmp}/plots"],
    "db current": ["db", "current"],
    "db upgrade": ["db", "upgrade"],
    "workloads": ["workloads"],
    "plan": ["plan", "app"],
    "tune": ["tune", "app", "--budget", "10s"],
}
ENTRIES = [*CLI, "Store", "lookup"]
FAULTS = {  # backend: {fault: what the error line says}
    "sqlite": {"down": "is a folder, not a database file", "refused": "database is locked (still refused after",
               "newer": f"has schema revision '{FUTURE}', newer than this autotune knows"},
    "postgres": {"down": "Connection refused", "refused": 'role "intruder" does not exist',
                 "newer": f"has schema revision '{FUTURE}', newer than this autotune knows"},
}
ANSWERS = {("newer", "db current"), ("sqlite-refused", "lookup"), ("sqlite-refused", "db current"),
           ("sqlite-refused", "best"), ("sqlite-refused", "list"), ("sqlite-refused", "dispatch"),
           ("sqlite-refused", "workloads"), ("sqlite-refused", "plan"), ("sqlite-refused", "tune"),
           ("sqlite-refused", "trials")}
"""Cells that answer: ``db current`` prints the revision it finds, a newer one too; a SQLite
reader (lookup, ``db current``, ``best``, ``list``, ``dispatch``, ``trials``, ``workloads``, ``plan``, and ``tune``
before it writes: they open read only) is not
refused by another process's write lock (WAL)."""
SAID = {"db current": None, "best": "nothing is tuned for any kernel", "list": "nothing is tuned yet",
        "dispatch": "nothing is tuned for smem_pad", "trials": "nothing is tuned for smem_pad",
        "workloads": "no workload is recorded yet",
        "plan": "workload 'app' does not exist", "tune": "workload 'app' does not exist"}
"""What an answering command says on the faulty database (``None``: the revision it holds);
every reading command but ``db current`` answers "nothing is tuned" (or "no workload is recorded") with exit
code 2, as it does on any empty database."""
CELLS = [pytest.param(backend, fault, entry, id=f"{backend}-{fault}-{entry}",
                      marks=[pytest.mark.postgres] if backend == "postgres" else [])
         for backend, faults in FAULTS.items() for fault in faults for entry in ENTRIES]


def _future(url: str) -> None:
    open_results(url).close()
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    with engine.begin() as connection:
        connection.execute(sa.text(f"update autotune_alembic_version set version_num = '{FUTURE}'"))
    engine.dispose()


def _sqlite_snapshot(folder: Path):
    """The folder's files and their bytes (a ``-shm`` file's bytes aside: SQLite's shared
    memory index changes as anyone reads)."""
    return sorted((p.name, p.read_bytes() if p.is_file() and not p.name.endswith("-shm") else None)
                  for p in folder.iterdir())


@pytest.fixture
def faulty(request, tmp_path, monkeypatch):
    """``faulty(backend, fault)`` -> (URL of a database with that fault, check that nothing was
    written). Fakes the GPU; the SQLite lock is held until the test ends."""
    monkeypatch.setattr(autotune.measure.benchmark, "open_benchmark", fake_open_benchmark)
    monkeypatch.setattr(autotune.measure.device, "query_device", fake_device)  # asked before measuring starts
    monkeypatch.setattr(locking, "LOCK_WAIT_S", 0.3)
    monkeypatch.setattr(locking, "BUSY_TIMEOUT_S", 0.1)
    monkeypatch.setattr(locking, "SESSION_BUSY_TIMEOUT_S", 0.3)
    export_results(open_results(f"sqlite:///{tmp_path / 'source.db'}"), tmp_path / "in.json")  # a valid file to import
    holders = []

    def make(backend: str, fault: str):
        if backend == "sqlite":
            folder = tmp_path / "db"
            folder.mkdir()
            path = folder / "results.db"
            if fault == "down":
                path.mkdir()  # no database can be opened there
            else:
                open_results(f"sqlite:///{path}").close()
                if fault == "newer":
                    _future(f"sqlite:///{path}")
                else:  # refused: another process holds the write lock
                    holder = sqlite3.connect(path, isolation_level=None)
                    holder.execute("BEGIN IMMEDIATE")
                    holders.append(holder)
            before = _sqlite_snapshot(folder)

            def untouched() -> bool:  # a reader may add SQLite's -wal/-shm companions, nothing else
                after = [(n, b) for n, b in _sqlite_snapshot(folder) if (n, b) not in before]
                return all(n.endswith(("-wal", "-shm")) and not b for n, b in after) and \
                    all(item in _sqlite_snapshot(folder) or item[0].endswith("-shm") for item in before)

            return f"sqlite:///{path}", untouched
        url = make_url(request.getfixturevalue("pg_url")).set(password=PASSWORD)
        if fault == "down":
            with socket.socket() as s:  # a port nobody listens on
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
            return url.set(port=port).render_as_string(hide_password=False), lambda: True
        if fault == "refused":
            return url.set(username="intruder").render_as_string(hide_password=False), lambda: True
        text = url.render_as_string(hide_password=False)
        _future(text)
        before = rows(text, "select version_num from autotune_alembic_version"), _pg_tables(text)
        return text, lambda: (rows(text, "select version_num from autotune_alembic_version"), _pg_tables(text)) == before

    yield make
    for holder in holders:
        holder.execute("ROLLBACK")
        holder.close()


def _pg_tables(url: str) -> set[str]:
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    try:
        return set(sa.inspect(engine).get_table_names())
    finally:
        engine.dispose()


@pytest.mark.parametrize(("backend", "fault", "entry"), CELLS)
def test_fault_table(backend, fault, entry, faulty, tmp_path):
    url, untouched = faulty(backend, fault)
    message = FAULTS[backend][fault]
    answers = (fault, entry) in ANSWERS or (f"{backend}-{fault}", entry) in ANSWERS
    if entry in CLI:
        args = [a.format(tmp=tmp_path) for a in CLI[entry]] + ["--db", url]
        result = runner.invoke(app, args)
        output = result.output
        assert "Traceback" not in output and PASSWORD not in output, output
        if answers:
            said = SAID[entry] or (FUTURE if fault == "newer" else HEAD_REVISION)
            assert result.exit_code == (0 if entry == "db current" else 2) and said in output, output
        else:
            assert result.exit_code == 2, output
            lines = [line for line in output.splitlines() if line.startswith("error:")]
            assert len(lines) == 1 and message in lines[0], output
            where = make_url(url)
            assert where.render_as_string(hide_password=True) in lines[0] or where.database in lines[0], output
        assert not (tmp_path / "out.json").exists() and not (tmp_path / "plots").exists()
    else:
        call = (lambda: open_results(url)) if entry == "Store" else \
            (lambda: autotune.lookup("smem_pad", (64, 64), device=DEVICE, db=url))
        autotune.clear_cache()
        if answers:
            assert call().rung == "default"
        else:
            with pytest.raises(StoreError) as raised:
                call()
            text = str(raised.value)
            assert message in text and PASSWORD not in text and "\n" not in text
        autotune.clear_cache()
    assert untouched(), "the database was written"


def test_the_table_covers_every_command_and_entry_point():
    import typer.main

    group = typer.main.get_command(app)
    no_database = ("kernels", "check", "info", "bundle", "examples")
    names = {name for name in group.commands if name not in no_database}
    names = (names - {"db"}) | {f"db {sub}" for sub in group.commands["db"].commands}
    assert names == set(CLI)
    assert len(CELLS) == 2 * 3 * len(ENTRIES)


def _stored_configs(url: str) -> list[str]:
    return [c for (c,) in rows(url, "select config_key from autotune_trials where status = 'ok'")]


def _small_space(tmp_path) -> Path:
    """8 configs of smem_pad's space (its own constraints, fewer values), a file for ``--space``:
    a search stopped at its third config has most of them left to resume (the whole space's 54
    cost the resume about 8 CPU seconds of fake measurements for nothing more)."""
    path = tmp_path / "space.toml"
    text = Path(KERNELS["smem_pad"].space().path).read_text()  # the shipped space file
    path.write_text(text[:text.index("[params]")] + "[params]\nTILE_DIM = [16, 32]\nBLOCK_ROWS = [4, 8]\n"
                                                     "IPAD = [1, 2]\nDIAGONAL = [0]\n")
    return path


def _check_lost_and_resumed(tmp_path, url, output, code) -> None:
    """The search stopped with one error line saying what it stored and lost; --resume then
    measures only what is missing."""
    assert code == 2, output
    assert "Traceback" not in output
    lines = [line for line in output.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, output
    assert "the search stopped: 2 trials of this run stored; lost: trial 2 (" in lines[0], output
    # measured, or still measuring when the next config's claim met the lock (it is sent ahead)
    assert ("measured, not stored" in lines[0] or "its measurement cut, not stored" in lines[0]) \
        and "--resume" in lines[0], output
    assert len(_stored_configs(url)) == 2
    space = _small_space(tmp_path)
    # the stopped search's trials left RUNNING are failed once their heartbeat is GRACE_S old, and the
    # resume waits for them (each HEARTBEAT_S): that process is gone, so a grace of 3 s (heartbeat 1 s,
    # tests/workers.py) fails them as surely as the store's 20 s, which the resume waited out
    proc, _ = start_cli(tmp_path, "--sampler", "grid", "--space", str(space), "--resume", "--db", url,
                        env={"AUTOTUNE_TEST_GRACE_S": "3"})
    output = finish(proc)
    assert proc.returncode == 0, output
    stored = _stored_configs(url)
    assert len(stored) == len(set(stored)) == len(KERNELS["smem_pad"].space(str(space)).configs()) == 8  # each once
    assert rows(url, "select status from autotune_searches order by id") == [("running",), ("finished",)]


def test_a_sqlite_database_locked_mid_search_stops_it_and_resume_goes_on(tmp_path):
    path = tmp_path / "results.db"
    url = f"sqlite:///{path}"
    proc, marks = start_cli(tmp_path, "--sampler", "grid", "--space", str(_small_space(tmp_path)), "--db", url,
                            hold="measure:3", env={"AUTOTUNE_TEST_LOCK_WAIT_S": "1"})
    wait_for(proc, marks, "measure-0-3")
    holder = sqlite3.connect(path, isolation_level=None, timeout=60)
    holder.execute("BEGIN IMMEDIATE")  # another process keeps the write lock past the retries
    try:
        release(marks)
        output = finish(proc)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert "database is locked" in output
    _check_lost_and_resumed(tmp_path, url, output, proc.returncode)


@pytest.mark.postgres
def test_a_postgres_server_gone_mid_search_stops_it_and_resume_goes_on(tmp_path):
    from pgcluster import Cluster

    cluster = Cluster()
    try:
        url = make_url(cluster.url).set(password=PASSWORD).render_as_string(hide_password=False)
        proc, marks = start_cli(tmp_path, "--sampler", "grid", "--space", str(_small_space(tmp_path)), "--db", url,
                                hold="measure:3")
        wait_for(proc, marks, "measure-0-3")
        cluster.stop()  # the server goes away while the third config is measured
        release(marks)
        output = finish(proc)
        assert PASSWORD not in output
        cluster.start()
        _check_lost_and_resumed(tmp_path, url, output, proc.returncode)
    finally:
        cluster.remove()


# ---------------------------------------------------------------------------------------------
# the runtime reads without writing


def _tuned(url: str) -> None:
    key = tuning_key("smem_pad", DEVICE, (256, 256), "float32")
    store = open_results(url)
    search(key, KERNELS["smem_pad"].space(), FakeTimer(), store, SearchOptions(trials=6, seed=1, strategy="random"),
           retime=fake_retime())
    store.close()


def test_lookup_reads_a_database_it_may_not_write(tmp_path):
    """Another user's database, in another user's folder (a read-only mount is the same to
    SQLite): lookup answers from it, and nothing beside it or in it changes."""
    folder = tmp_path / "theirs"
    folder.mkdir()
    url = f"sqlite:///{folder / 'results.db'}"
    _tuned(url)
    if os.geteuid() == 0:  # root may write anything: the files become another user's
        for p in (folder, *folder.iterdir()):
            os.chown(p, 65534, 65534)
    else:
        (folder / "results.db").chmod(0o444)
        folder.chmod(0o555)
    before = _sqlite_snapshot(folder)
    try:
        autotune.clear_cache()
        got = autotune.lookup("smem_pad", (256, 256), "float32", device=DEVICE, db=url)
        autotune.clear_cache()
        assert got.rung == "exact"
        assert _sqlite_snapshot(folder) == before  # no lock file, no WAL companions, no write
    finally:
        folder.chmod(0o755)


def _older(url: str) -> None:
    store = open_results(url, "unmigrated")
    store.upgrade("0004")
    store.close()  # not left to the garbage collector: closing checkpoints the WAL into the file


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_lookup_on_an_older_schema_says_which_command_upgrades_it_and_migrates_nothing(backend, request, tmp_path):
    url = request.getfixturevalue("pg_url") if backend == "postgres" else f"sqlite:///{tmp_path / 'old.db'}"
    _older(url)
    before = _sqlite_snapshot(tmp_path) if backend == "sqlite" else None
    autotune.clear_cache()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = autotune.lookup("smem_pad", (256, 256), "float32", device=DEVICE, db=url)
    autotune.clear_cache()
    assert got.rung == "default" and "autotune db upgrade --db" in got.note
    assert any("autotune db upgrade" in str(w.message) for w in caught if w.category is RuntimeWarning)
    assert rows(url, "select version_num from autotune_alembic_version") == [("0004",)]
    if before is not None:
        assert _sqlite_snapshot(tmp_path) == before  # no backup, no lock file
    result = runner.invoke(app, ["db", "upgrade", "--db", url])
    assert result.exit_code == 0 and head_revision() in result.output, result.output


@pytest.mark.postgres
def test_lookup_on_postgres_reads_in_read_only_transactions(pg_url):
    _tuned(pg_url)
    autotune.clear_cache()
    got = autotune.lookup("smem_pad", (256, 256), "float32", device=DEVICE, db=pg_url)
    autotune.clear_cache()
    assert got.rung == "exact"
    store = open_results(pg_url, "read_only")
    with pytest.raises(StoreError, match="read-only transaction"):
        with store.session() as session:
            session.execute(sa.text("delete from autotune_best"))
    store.close()
    assert rows(pg_url, "select count(*) from autotune_best") == [(1,)]


def test_lookup_without_a_database_creates_none(tmp_path):
    url = f"sqlite:///{tmp_path / 'none' / 'results.db'}"
    (tmp_path / "none").mkdir()
    autotune.clear_cache()
    got = autotune.lookup("smem_pad", (256, 256), "float32", device=DEVICE, db=url)
    autotune.clear_cache()
    assert got.rung == "default" and "no results database at" in got.note
    assert list((tmp_path / "none").iterdir()) == []
