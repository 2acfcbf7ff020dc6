"""autotune.store.opening: the one door to a results database, on SQLite and PostgreSQL.

Another application's database, a URL that cannot be parsed and a version table of two rows are
refused with one StoreError line, and nothing is written: SQLite files are compared byte for
byte with their folder's listing (no table, no WAL switch, no lock file), PostgreSQL databases by
their tables and rows. A read-only opening creates nothing.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from autotune.cli import app
from autotune.errors import InvalidInputError, StoreError
from autotune.store import urls
from autotune.store.opening import open_results, open_store
from autotune.store.urls import foreign_tables, resolve_url
from autotune.store.revisions import HEAD_REVISION

runner = CliRunner()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def backend(request, tmp_path):
    """(URL of an empty database, snapshot() of everything it holds: files or tables and rows)."""
    if request.param == "postgres":
        url = request.getfixturevalue("pg_url")

        def snapshot():
            engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
            try:
                with engine.connect() as connection:
                    names = sorted(sa.inspect(connection).get_table_names())
                    return [(n, sorted(map(tuple, connection.execute(sa.text(f'select * from "{n}"')))))
                            for n in names]
            finally:
                engine.dispose()

        return url, snapshot
    folder = tmp_path / "dbs"
    folder.mkdir()

    def listing():  # a reader of a WAL database may add SQLite's -shm index and an empty -wal: no write
        return sorted((p.name, hashlib.sha256(p.read_bytes()).hexdigest()) for p in folder.iterdir()
                      if not p.name.endswith("-shm") and not (p.name.endswith("-wal") and not p.stat().st_size))

    return f"sqlite:///{folder / 'results.db'}", listing


def _execute(url: str, *statements: str) -> None:
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    with engine.begin() as connection:
        for statement in statements:
            connection.execute(sa.text(statement))
    engine.dispose()


def _one_error_line(args):
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    return lines[0]


FOREIGN_COMMANDS = [["best", "--size", "64"], ["list"], ["db", "upgrade"], ["export", "--out", "{tmp}/out.json"],
                    ["report", "--out", "{tmp}/plots"]]


@pytest.mark.parametrize("args", FOREIGN_COMMANDS, ids=[" ".join(a[:2]) for a in FOREIGN_COMMANDS])
def test_another_applications_database_is_refused_and_left_as_it_was(backend, args, tmp_path):
    url, snapshot = backend
    _execute(url, "create table customers (id integer primary key, name text)",
             "insert into customers (id, name) values (1, 'ada')")
    before = snapshot()
    line = _one_error_line([a.format(tmp=tmp_path) for a in args] + ["--db", url])
    assert "is not an autotune database: it holds other tables (customers)" in line
    assert snapshot() == before  # no autotune table, no WAL switch, no lock file
    assert not (tmp_path / "out.json").exists() and not (tmp_path / "plots").exists()


def test_the_library_door_refuses_it_too(backend):
    url, snapshot = backend
    _execute(url, "create table customers (id integer primary key)")
    before = snapshot()
    with pytest.raises(StoreError, match=r"holds other tables \(customers\)"):
        open_store(url)
    assert snapshot() == before
    assert foreign_tables(url) == ["customers"]


def test_optunas_own_database_is_not_foreign(backend):
    import optuna

    url, _ = backend
    optuna.create_study(storage=url, study_name="someone's study")
    assert foreign_tables(url) == []
    store = open_store(url)
    assert store.current_revision() == HEAD_REVISION
    store.close()


def test_a_version_table_of_two_rows_is_one_error_line(backend):
    url, snapshot = backend
    open_store(url).close()
    _execute(url, "insert into autotune_alembic_version (version_num) values ('0003')")
    before = snapshot()
    for args in (["best", "--size", "64"], ["list"], ["db", "upgrade"], ["db", "current"]):
        line = _one_error_line(args + ["--db", url])
        assert "holds several schema revisions in autotune_alembic_version" in line, line
        assert "file%3A" not in line  # the database as given, not the read-only URI
    assert snapshot() == before


@pytest.mark.parametrize(("url", "message"), [
    ("postgresql+psycopg://autotune:s3cret@localhost:abc/db", "the port is not a number"),
    ("postgresql+psycopg://autotune@localhost:99999/db", "port 99999 is not allowed; give 1..65535"),
    ("not a url", "give dialect://"),
])
def test_a_url_that_cannot_be_parsed_is_one_error_line(url, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for args in (["best", "--size", "64"], ["db", "current"], ["db", "upgrade"]):
        line = _one_error_line(args + ["--db", url])
        assert line.startswith("error: invalid database URL") and message in line, line
        assert "s3cret" not in line
    with pytest.raises(StoreError, match=message):
        open_store(url)
    assert list(tmp_path.iterdir()) == []


def test_a_url_that_is_not_a_string_names_the_argument():
    with pytest.raises(InvalidInputError, match="db 42 is not allowed"):
        open_store(42)  # type: ignore[arg-type]


def test_the_default_is_resolved_in_one_place(tmp_path, monkeypatch):
    monkeypatch.setenv(urls.ENV, f"sqlite:///{tmp_path / 'env.db'}")
    assert resolve_url() == f"sqlite:///{tmp_path / 'env.db'}"
    assert resolve_url("sqlite:///given.db") == "sqlite:///given.db"
    assert urls.given_url() == f"sqlite:///{tmp_path / 'env.db'}"
    monkeypatch.delenv(urls.ENV)
    monkeypatch.setattr(urls, "default_url", lambda create=True: f"sqlite:///{tmp_path / 'default.db'}")
    assert resolve_url() == f"sqlite:///{tmp_path / 'default.db'}" and urls.given_url() == ""


def test_read_only_creates_nothing(tmp_path):
    url = f"sqlite:///{tmp_path / 'missing.db'}"
    store = open_results(url, "read_only")
    assert store.schema_state == "missing"
    result = runner.invoke(app, ["db", "current", "--db", url])
    assert result.exit_code == 0 and "no database at" in result.output, result.output
    assert list(tmp_path.iterdir()) == []


def test_bench_without_a_cuda_backend_creates_no_database(tmp_path, monkeypatch):
    from fakes import NO_BACKEND, no_backend

    no_backend(monkeypatch)
    line = _one_error_line(["bench", "--size", "64", "--db", f"sqlite:///{tmp_path / 'bench.db'}"])
    assert NO_BACKEND in line
    assert list(tmp_path.iterdir()) == []


def test_every_store_is_opened_through_the_door():
    """No module but the door builds a Store (the class itself aside)."""
    import pathlib
    import re

    import autotune

    root = pathlib.Path(autotune.__file__).parent
    builders = sorted(str(p.relative_to(root)) for p in root.rglob("*.py")
                      if re.search(r"(?<![\w.\"])(?<!class )Store\(", p.read_text()) and p.name not in ("opening.py",))
    assert builders == [], builders
    readers = sorted(str(p.relative_to(root)) for p in root.rglob("*.py")
                     if '"AUTOTUNE_DB"' in p.read_text() and p != root / "settings.py")
    assert readers == [], readers  # named in autotune/settings.py only, read by store/urls.py through it


@pytest.mark.postgres
def test_a_postgresql_schema_of_its_own_beside_another_applications_tables(pg_url):
    """What docs/errors.md advises: autotune's tables in a schema of their own (the URL's
    search_path), the other application's tables in public left alone."""
    _execute(pg_url, "create table customers (id integer primary key)", "create schema autotune")
    with pytest.raises(StoreError, match="holds other tables"):
        open_store(pg_url)
    store = open_store(pg_url + "?options=-csearch_path%3Dautotune")
    assert store.current_revision() == HEAD_REVISION
    store.optuna_storage().engine.dispose()
    store.close()
    reader = open_results(pg_url + "?options=-csearch_path%3Dautotune", "read_only")
    assert reader.schema_state == "current"
    reader.close()
    engine = sa.create_engine(pg_url, poolclass=sa.pool.NullPool)
    inspector = sa.inspect(engine)
    assert inspector.get_table_names(schema="public") == ["customers"]
    assert {"autotune_best", "studies"} <= set(inspector.get_table_names(schema="autotune"))
    engine.dispose()


@pytest.mark.parametrize("args", [["best", "--size", "64"], ["list"]], ids=["best", "list"])
def test_reading_commands_create_no_database(args, tmp_path):
    result = runner.invoke(app, args + ["--db", f"sqlite:///{tmp_path / 'new.db'}"])
    assert result.exit_code == 2 and result.output.startswith("error: nothing is tuned "), result.output
    assert list(tmp_path.iterdir()) == []


EMPTY_HOME_ANSWERS = {  # issue 49 item 1: what each reading command says in a home with no data folder yet
    ("list",): "error: nothing is tuned yet; run: autotune search --kernel smem_pad --size 2048",
    ("list", "--format", "json"): "error: nothing is tuned yet; run: autotune search",
    ("best",): "error: nothing is tuned yet; run: autotune search --kernel smem_pad --size 2048",
    ("best", "--kernel", "smem_pad", "--size", "64"): "error: nothing is tuned for smem_pad 64x64 float32; run: "
                                                       "autotune search --kernel smem_pad --rows 64 --cols 64",
    ("dispatch", "smem_pad"): "error: nothing is tuned for smem_pad; run: autotune tune-shapes smem_pad",
    ("trials", "--size", "64"): "error: nothing is tuned for smem_pad 64x64 float32; run: autotune search",
    ("export", "--out", "x.json"): "error: nothing is tuned yet; run: autotune search --kernel smem_pad --size 2048",
    ("workloads",): "error: no workload is recorded yet; record one:",
    ("db", "current"): "no database at sqlite:///",
}


@pytest.mark.parametrize("args", list(EMPTY_HOME_ANSWERS), ids=" ".join)
def test_reading_commands_in_an_empty_home_say_nothing_is_tuned(args, tmp_path, monkeypatch):
    """No ``AUTOTUNE_DB``, and the default database's folder (platformdirs' user data
    directory) not made yet: every reading command answers in one line, ``nothing is tuned
    ...; run: ...``, exit 2 (``db current``: the revision question has an answer, exit 0), and
    creates nothing (no data folder, no output file)."""
    monkeypatch.delenv("AUTOTUNE_DB")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, list(args))
    assert result.output.startswith(EMPTY_HOME_ANSWERS[args]), result.output
    assert len(result.output.strip().splitlines()) == 1, result.output
    assert result.exit_code == (0 if args[0] == "db" else 2), result.output
    assert list(tmp_path.iterdir()) == [], list(tmp_path.rglob("*"))


def test_a_store_is_built_by_the_door_only():
    """Issue 38, step 3: ``Store(...)`` is constructed in autotune/store/opening.py and nowhere
    else, in the package and in the tests (which use the ``store`` fixture or the door)."""
    import ast

    root = Path(__file__).resolve().parents[2]
    builders = []
    for path in sorted([*root.glob("autotune/**/*.py"), *root.glob("tests/**/*.py")]):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "Store":
                builders.append(f"{path.relative_to(root)}:{node.lineno}")
    assert builders and all(b.startswith("autotune/store/opening.py:") for b in builders), builders


def test_every_mode_of_the_door_opens_as_it_says(tmp_path):
    from autotune.errors import InvalidInputError, NotTunedError
    from autotune.store.opening import MODES, open_results
    from autotune.store.reader import SqliteReader
    from autotune.store.repository import Store

    url = f"sqlite:///{tmp_path / 'door.db'}"
    for mode in ("read_only", "inspect", "lookup"):  # a missing file stays missing
        opened = open_results(url, mode)
        assert opened.schema_state in ("missing", None) and not (tmp_path / "door.db").exists(), mode
        opened.close()
    with pytest.raises(NotTunedError, match=r"^nothing is tuned yet; run: .* \(no results database at "):
        open_results(url, "existing")
    assert not (tmp_path / "door.db").exists()
    unmigrated = open_results(url, "unmigrated")
    assert isinstance(unmigrated, Store) and unmigrated.current_revision() is None
    unmigrated.close()
    written = open_results(url, "write")
    assert written.current_revision() is not None
    written.close()
    assert isinstance(open_results(url, "lookup"), SqliteReader)
    for mode in ("read", "existing", "read_only", "inspect"):
        opened = open_results(url, mode)
        assert isinstance(opened, Store), mode
        opened.close()
    with pytest.raises(InvalidInputError, match=r"mode 'rw' is not allowed; allowed: " + ", ".join(MODES)):
        open_results(url, "rw")


def test_a_postgresql_url_without_its_driver_names_the_extra(monkeypatch):
    """Issue 49 item 12: ``--db postgresql+psycopg://...`` without psycopg said only ``No module
    named 'psycopg'``."""
    import builtins

    real = builtins.__import__

    def no_psycopg(name, *args, **kwargs):
        if name.split(".")[0] == "psycopg":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_psycopg)
    result = runner.invoke(app, ["best", "--size", "64", "--db", "postgresql+psycopg://me@127.0.0.1:1/db"])
    assert result.exit_code == 2, result.output
    assert "pip install 'cuda-autotune[postgres]'" in result.output and "Traceback" not in result.output, result.output
