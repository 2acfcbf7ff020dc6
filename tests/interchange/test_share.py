"""Sharing tuned results: export to JSON, import into another database (issue 4)."""

from __future__ import annotations

import dataclasses
import gc
import json
import os
import sqlite3
from datetime import datetime
from pathlib import Path

import pytest

from autotune.store.opening import open_results
from sqlalchemy import func, select
from typer.testing import CliRunner

from autotune import __version__
from autotune.cli import app
from autotune.kernel.config import Config
from autotune.errors import InvalidInputError
from autotune.kernel.catalog import get_kernel
from autotune.measure.measurement import Measurement
from autotune.store.models import Search, Trial
from autotune.interchange.share import SCHEMA_VERSION, export_results, import_results, read_results
from autotune.store.repository import Store

from stored_results import A100, H100, configs, key, tune

runner = CliRunner()


def export_all(store: Store, path, **filters):
    """Export, stale results included (database A holds one on purpose)."""
    return export_results(store, path, include_stale=True, **filters)


def comparable(record):
    """A BestRecord without the row ids, which differ between databases."""
    return dataclasses.replace(record, trial_id=0, search_id=0)


@pytest.fixture
def url_a(tmp_path) -> str:
    return f"sqlite:///{tmp_path / 'a.db'}"


@pytest.fixture
def url_b(tmp_path) -> str:
    return f"sqlite:///{tmp_path / 'b.db'}"


def _tune_a(url: str) -> None:
    store = open_results(url)
    c = configs()
    tune(store, key(), [(c[0], 2500.0), (c[1], 2700.0), (c[2], 2600.0)], retime=True)
    tune(store, key("smem", rows=512, cols=256, dtype="float64"), [(configs("smem")[0], 2100.0)],
         copy_gbps=None)
    tune(store, key(device=A100), [(c[1], 1400.0)], memcpy_gbps=1500.0)
    tune(store, key(source_hash="0" * 64, rows=2048, cols=2048), [(c[0], 2650.0)])
    store.close()


@pytest.fixture
def tuned_a(built_db, url_a, tmp_path) -> Store:
    """Database A: two keys on the H100 (one re-timed), one on the A100, and one tuned with a
    kernel source that has changed since (stale); this test's copy (``built_db``) at ``url_a``."""
    return open_results(built_db(tmp_path / "a.db", "share_a", _tune_a))


def exported(store: Store, path: Path, **filters) -> dict:
    export_all(store, path, **filters)
    return json.loads(path.read_text())


# --- round trip -------------------------------------------------------------------------------


def test_round_trip_keeps_every_provenance_field_and_figure(tuned_a, url_b, tmp_path):
    path = tmp_path / "tuned.json"
    assert export_all(tuned_a, path).exported == 4
    b = open_results(url_b)
    report = import_results(b, path)
    assert (report.imported, report.skipped, report.stale, report.best) == (4, 0, 1, 4)

    a_best, b_best = tuned_a.find_best(), b.find_best()
    assert [comparable(r) for r in b_best] == [comparable(r) for r in a_best]
    retimed = next(r for r in b_best if r.pooled_median_ms is not None)
    assert retimed.rounds == 2 and len(retimed.tie_group) == 2 and retimed.spread > 0
    assert retimed.device_uuid == H100.uuid and retimed.copy_gbps == 2900.0 and retimed.pct_copy is not None
    assert retimed.samples == 40 and retimed.ci_low_ms < retimed.median_ms < retimed.ci_high_ms
    assert retimed.energy_j is not None and retimed.certificate["winner"]["config"] == retimed.config.key

    # what BestRecord does not carry (memory size, launches, L2 mode, the tie group's figures)
    # survives too: B exports exactly what A did
    again = exported(b, tmp_path / "again.json")
    assert again["results"] == json.loads(path.read_text())["results"]


def test_imported_results_are_finished_searches_of_sampler_import(tuned_a, url_b, tmp_path):
    path = tmp_path / "tuned.json"
    export_all(tuned_a, path, kernel="smem")
    entry = json.loads(path.read_text())["results"][0]
    b = open_results(url_b)
    import_results(b, path)
    with b.session() as s:
        search = s.scalars(select(Search)).one()
        trial = s.scalars(select(Trial)).one()
        assert (search.sampler, search.study_name, search.status) == ("import", "import:tuned.json", "finished")
        tuned_at = datetime.fromisoformat(entry["tuned_at"])
        assert search.started_at == search.finished_at == trial.created_at == tuned_at
        assert search.memcpy_gbps == 3000.0 and search.copy_gbps is None and search.l2_mode == "rotating"
        assert (trial.status, trial.number, trial.reason) == ("ok", 0, None)
        assert trial.macros == entry["config"] and trial.median_ms == entry["measurement"]["median_ms"]
        assert trial.launches == 50


def test_reimport_skips_everything_as_duplicates(tuned_a, url_b, tmp_path):
    path = tmp_path / "tuned.json"
    export_all(tuned_a, path)
    b = open_results(url_b)
    import_results(b, path)
    before = b.find_best()
    report = import_results(b, path)
    assert (report.imported, report.skipped, report.stale) == (0, 4, 0)
    assert b.find_best() == before
    with b.session() as s:
        assert s.scalar(select(func.count()).select_from(Search)) == 4

    # importing into the database it came from adds nothing either
    report = import_results(tuned_a, path)
    assert (report.imported, report.skipped) == (0, 4)


def test_a_slower_best_is_replaced_and_a_faster_one_kept(tuned_a, tmp_path):
    path = tmp_path / "tuned.json"
    export_all(tuned_a, path, device_name="h100", kernel="smem_pad")  # the re-timed key and the stale one
    c = configs()
    winner = next(r for r in tuned_a.find_best(device_name="h100", kernel="smem_pad") if r.rounds)

    slower = open_results(f"sqlite:///{tmp_path / 'slower.db'}")
    tune(slower, key(), [(c[3], 2000.0)])  # another config, slower than A's winner
    report = import_results(slower, path)
    assert report.imported == 2 and report.best == 2
    assert comparable(slower.best(key())) == comparable(winner)  # with its pooled figures and tie group

    faster = open_results(f"sqlite:///{tmp_path / 'faster.db'}")
    tune(faster, key(), [(c[3], 2999.0)], retime=True)
    kept = faster.best(key())
    report = import_results(faster, path)
    assert report.imported == 2 and report.best == 1  # only the stale key, new there, became a best
    assert faster.best(key()) == kept
    assert winner.config in {t.config for t in faster.key_trials(key())}  # stored, but not the best


def test_the_same_config_already_stored_for_the_key_is_a_duplicate(tuned_a, tmp_path):
    path = tmp_path / "tuned.json"
    export_all(tuned_a, path, kernel="smem")
    other = open_results(f"sqlite:///{tmp_path / 'other.db'}")
    k = key("smem", rows=512, cols=256, dtype="float64")
    tune(other, k, [(configs("smem")[0], 1000.0)])
    assert import_results(other, path).skipped == 1
    assert other.best(k).gbps == 1000.0

    # another unit of the same model (another UUID) is the same key: the same config is skipped
    data = json.loads(path.read_text())
    data["results"][0]["device"]["uuid"] = "GPU-another"
    path.write_text(json.dumps(data))
    assert import_results(other, path).skipped == 1

    # another device identity (here: its driver) is another key: imported as it is
    data["results"][0]["device"]["driver_version"] = "12.8"
    path.write_text(json.dumps(data))
    report = import_results(other, path)
    assert (report.imported, report.skipped) == (1, 0)
    assert {(r.driver_version, r.device_uuid) for r in other.find_best(kernel="smem")} == {
        ("13.0", H100.uuid), ("12.8", "GPU-another")}


# --- the file ---------------------------------------------------------------------------------


def test_export_file_is_versioned_json(tuned_a, tmp_path):
    data = exported(tuned_a, tmp_path / "tuned.json")
    assert data["format"] == "autotune-results" and data["schema_version"] == SCHEMA_VERSION == 2
    assert data["autotune_version"] == __version__
    assert data["exported_at"].endswith("Z") and datetime.fromisoformat(data["exported_at"]).tzinfo is not None
    entry = next(e for e in data["results"] if e["device"]["uuid"] == H100.uuid and e["rounds"])
    assert entry["device"] == {"name": H100.name, "compute_capability": "9.0", "sm_count": 132,
                               "total_memory": 85_000_000_000, "driver_version": "13.0", "cuda_version": "13.0",
                               "uuid": H100.uuid}
    k = get_kernel("smem_pad")
    assert entry["kernel"] == {"name": "smem_pad", "source_hash": k.source_hash, "spec_hash": k.spec_hash}
    assert entry["dims"] == "rows=1024,cols=1024" and not {"rows", "cols", "depth"} & set(entry)
    assert set(entry["measurement"]) >= {"median_ms", "min_ms", "max_ms", "gbps", "pct_memcpy", "pct_copy",
                                         "registers", "shared_bytes"}
    assert set(entry) >= {"dims", "dtype", "nvcc_version", "compile_flags", "config", "memcpy_gbps",
                          "copy_gbps", "pooled_median_ms", "spread", "rounds", "tie_group", "tuned_at"}
    assert [m["config"] for m in entry["tie_group"]] == [configs()[1].key, configs()[2].key]
    assert get_kernel("smem_pad").check(Config.of("smem_pad", entry["config"])) is None


def test_export_filters(tuned_a, tmp_path):
    assert len(exported(tuned_a, tmp_path / "x.json", kernel="smem")["results"]) == 1
    assert len(exported(tuned_a, tmp_path / "x.json", device_name="A100")["results"]) == 1
    assert len(exported(tuned_a, tmp_path / "x.json", device_name="h100", kernel="smem_pad")["results"]) == 2
    assert exported(tuned_a, tmp_path / "x.json", device_name="V100")["results"] == []
    with pytest.raises(InvalidInputError, match="unknown kernel 'nope'"):
        export_all(tuned_a, tmp_path / "x.json", kernel="nope")


def test_export_replaces_the_file_whole_or_not_at_all(tuned_a, tmp_path, monkeypatch):
    path = tmp_path / "tuned.json"
    path.write_text("old contents")
    assert export_all(tuned_a, path, kernel="smem").exported == 1
    assert len(json.loads(path.read_text())["results"]) == 1
    good = path.read_bytes()

    def broken_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(InvalidInputError, match="cannot write .*No space left on device"):
        export_all(tuned_a, path)
    assert path.read_bytes() == good
    assert sorted(p.name for p in tmp_path.iterdir() if "tuned" in p.name) == ["tuned.json"]  # no temp file left


def test_read_results_refuses_the_whole_file_for_one_bad_entry(tuned_a, tmp_path):
    path = tmp_path / "tuned.json"
    data = exported(tuned_a, path)
    data["results"][2]["measurement"]["gbps"] = -1
    path.write_text(json.dumps(data))
    with pytest.raises(InvalidInputError, match=r"results\[2\]\.measurement\.gbps is -1; it must be a positive"):
        read_results(path)


# --- the commands -----------------------------------------------------------------------------


def run(*args):
    result = runner.invoke(app, [str(a) for a in args])
    assert "Traceback" not in result.output, result.output
    return result


def test_cli_export_then_import(tuned_a, url_a, url_b, tmp_path):
    path = tmp_path / "tuned.json"
    r = run("export", "--out", path, "--db", url_a)
    assert r.exit_code == 0, r.output
    assert f"exported 3 results to {path}" in r.output
    assert "left out 1 stale result (1 kernel source changed); --include-stale writes them too" in r.output
    r = run("export", "--out", path, "--include-stale", "--db", url_a)
    assert r.exit_code == 0 and f"exported 4 results to {path}" in r.output and "left out" not in r.output
    r = run("export", "--out", tmp_path / "shape.json", "--kernel", "smem", "--dims", "rows=512,cols=256",
            "--db", url_a)
    assert r.exit_code == 0 and "exported 1 result to" in r.output
    r = run("export", "--out", tmp_path / "shape.json", "--rows", 512, "--cols", 256, "--db", url_a)
    assert r.exit_code == 0 and "exported 1 result to" in r.output
    r = run("export", "--out", tmp_path / "shape.json", "--kernel", "smem", "--dims", "n=3", "--db", url_a)
    assert r.exit_code == 2 and "error: --dims n is not a dim of kernel smem; it takes rows, cols" in r.output
    r = run("export", "--out", tmp_path / "smem.json", "--kernel", "smem", "--device", "H100", "--db", url_a)
    assert r.exit_code == 0 and "exported 1 result to" in r.output

    r = run("import", path, "--db", url_b)
    assert r.exit_code == 0, r.output
    assert "imported 4 result(s)" in r.output and "skipped 0 already stored" in r.output
    assert "1 of them are stale here" in r.output
    assert "made 4 Optuna studies of the imported trials for optuna-dashboard" in r.output  # one per key
    r = run("import", path, "--db", url_b)
    assert r.exit_code == 0 and "imported 0 result(s)" in r.output and "skipped 4 already stored" in r.output
    assert "stale" not in r.output and "Optuna" not in r.output

    r = run("export", "--out", tmp_path / "none.json", "--device", "V100", "--db", url_a)
    assert r.exit_code == 2 and "error: nothing is tuned for those filters; run: autotune list" in r.output
    assert not (tmp_path / "none.json").exists()


def test_cli_export_refusals(url_a, tmp_path):
    r = run("export", "--out", tmp_path / "x.json", "--kernel", "smem_padd", "--db", url_a)
    assert r.exit_code == 2 and "error: unknown kernel 'smem_padd'" in r.output
    assert not (tmp_path / "a.db").exists()  # a typo creates no database
    r = run("export", "--out", tmp_path / "missing" / "x.json", "--db", url_a)
    assert r.exit_code == 2 and f"error: cannot write {tmp_path / 'missing' / 'x.json'}" in r.output


def _edit(change):
    """A setup that rewrites the exported file's JSON with ``change(data)``."""
    def setup(path: Path):
        data = json.loads(path.read_text())
        change(data)
        path.write_text(json.dumps(data))
    return setup


def _entry(i, change):
    return _edit(lambda d: change(d["results"][i]))


def _set(obj, dotted, value):
    *parents, last = dotted.split(".")
    for p in parents:
        obj = obj[p]
    obj[last] = value


def _drop_a_tunable(e):
    del e["config"][sorted(e["config"])[0]]


def _current(data):
    """Index of an entry tuned with the current kernel source."""
    return next(i for i, e in enumerate(data["results"])
                if e["kernel"]["source_hash"] == get_kernel(e["kernel"]["name"]).source_hash)


REFUSALS = [
    ("missing file", lambda p: p.unlink(), "cannot read {file}: no such file"),
    ("not json", lambda p: p.write_text("{'format': 1"), "{file} is not valid JSON"),
    ("empty file", lambda p: p.write_text(""), "{file} is not valid JSON"),
    ("a list", lambda p: p.write_text(f"[{p.read_text()}]"), "{file} is not an autotune results file"),
    ("format", _edit(lambda d: d.update(format="optuna-study")),
     "{file} is not an autotune results file (format is 'optuna-study', expected 'autotune-results')"),
    ("schema 3", _edit(lambda d: d.update(schema_version=3)),
     "{file} has schema version 3; this autotune reads versions 1, 2"),
    ("schema missing", _edit(lambda d: d.pop("schema_version")), "{file} has no schema version"),
    ("schema string", _edit(lambda d: d.update(schema_version="1")), 'has schema version "1"; this autotune reads'),
    ("results missing", _edit(lambda d: d.pop("results")), "{file}: results is missing"),
    ("results object", _edit(lambda d: d.update(results={})), "{file}: results is an object; it must be a list"),
    ("entry not object", _edit(lambda d: d["results"].append(3)), "results[4] is an integer 3; it must be an object"),
    ("device missing", _entry(1, lambda e: e.pop("device")), "results[1].device is missing"),
    ("uuid missing", _entry(0, lambda e: e["device"].pop("uuid")), "results[0].device.uuid is missing"),
    ("dims number", _entry(3, lambda e: _set(e, "dims", 1024)),
     "results[3].dims is an integer 1024; it must be a string"),
    ("dims zero", _entry(0, lambda e: _set(e, "dims", "rows=0,cols=4")),
     "results[0].dims is 'rows=0,cols=4'; it must be NAME=VALUE pairs joined by commas"),
    ("dims missing", _entry(0, lambda e: e.pop("dims")), "results[0].dims is missing"),
    ("dims of another kernel", _edit(lambda d: _set(d["results"][_current(d)], "dims", "m=4,n=4,k=4")),
     ".dims is 'm=4,n=4,k=4'; kernel smem_pad has the dims rows, cols"),
    ("spec missing", _entry(0, lambda e: e["kernel"].pop("spec_hash")), "results[0].kernel.spec_hash is missing"),
    ("median missing", _entry(0, lambda e: e["measurement"].pop("median_ms")),
     "results[0].measurement.median_ms is missing"),
    ("sm_count bool", _entry(0, lambda e: _set(e, "device.sm_count", True)),
     "results[0].device.sm_count is a boolean; it must be an integer"),
    ("gbps negative", _entry(1, lambda e: _set(e, "measurement.gbps", -2.5)),
     "results[1].measurement.gbps is -2.5; it must be a positive number"),
    ("median zero", _entry(1, lambda e: _set(e, "measurement.median_ms", 0)),
     "results[1].measurement.median_ms is 0; it must be a positive number"),
    ("memcpy string", _entry(2, lambda e: _set(e, "memcpy_gbps", "fast")),
     'results[2].memcpy_gbps is a string "fast"; it must be a positive number'),
    ("nan", lambda p: p.write_text(p.read_text().replace('"gbps": ', '"gbps": NaN, "x": ', 1)),
     "{file} is not valid JSON: NaN is not a number JSON allows"),
    ("min above median", _entry(0, lambda e: _set(e, "measurement.min_ms", e["measurement"]["median_ms"] * 2)),
     "results[0].measurement has min_ms"),
    ("tuned_at naive", _entry(0, lambda e: _set(e, "tuned_at", "2026-11-22T10:00:00")),
     "results[0].tuned_at is '2026-11-22T10:00:00', without a time zone"),
    ("tuned_at garbage", _entry(0, lambda e: _set(e, "tuned_at", "yesterday")),
     "results[0].tuned_at is 'yesterday'; it must be an ISO-8601 time"),
    ("dtype", _entry(0, lambda e: _set(e, "dtype", "float128")), "results[0].dtype is 'float128'; allowed: int8"),
    ("unknown kernel", _entry(2, lambda e: _set(e, "kernel.name", "smem_padd")),
     "results[2].kernel.name is not usable: unknown kernel 'smem_padd'"),
    ("extra macro", _edit(lambda d: _set(d["results"][_current(d)], "config.WARPS", 2)), ".config does not fit kernel smem_pad"),
    ("missing macro", _edit(lambda d: _drop_a_tunable(d["results"][_current(d)])), ".config does not fit kernel"),
    ("macro string", _entry(0, lambda e: _set(e, "config.TILE_DIM", "32")),
     'results[0].config.TILE_DIM is a string "32"; it must be an integer 0..4096'),
    ("macro name", _entry(0, lambda e: _set(e, "config.-DEVIL", 1)), "results[0].config has the macro name '-DEVIL'"),
    ("stale extra macro", _edit(lambda d: _set(_stale(d), "config.WARPS", 2)), "config sets WARPS, not a macro"),
    ("tie group", _entry(0, lambda e: _set(e, "tie_group", "all")), "results[0].tie_group is a string"),
    ("exported_at beyond year 9999 in UTC", _edit(lambda d: d.update(exported_at="9999-12-31T23:59:59-23:59")),
     "exported_at is '9999-12-31T23:59:59-23:59', out of range once in UTC"),
    ("tuned_at beyond year 9999 in UTC", _entry(0, lambda e: _set(e, "tuned_at", "9999-12-31T23:59:59-00:01")),
     "results[0].tuned_at is '9999-12-31T23:59:59-00:01', out of range once in UTC"),
    ("not utf-8", lambda p: p.write_bytes(b'{"format": "\xff"}'), "cannot read {file}: not UTF-8 text (byte 12)"),
]


def settled(db: Path) -> bytes:
    """The bytes of a SQLite database with its WAL checkpointed into it (connections a
    dropped Store still holds, e.g. Optuna's, are collected first)."""
    gc.collect()
    con = sqlite3.connect(db)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    return db.read_bytes()


def _stale(data):
    return next(e for e in data["results"] if e["kernel"]["source_hash"] == "0" * 64)


@pytest.mark.parametrize("what, setup, message", REFUSALS, ids=[r[0] for r in REFUSALS])
def test_cli_import_refuses_a_bad_file_and_leaves_the_database_as_it_was(what, setup, message, tuned_a, url_a,
                                                                        tmp_path):
    file = tmp_path / "tuned.json"
    export_all(tuned_a, file)
    setup(file)
    target = tmp_path / "b.db"
    open_results(f"sqlite:///{target}").engine.dispose()  # an up-to-date, empty database
    tuned_a.engine.dispose()
    before = {p: settled(p) for p in (target, tmp_path / "a.db")}

    for db in (target, tmp_path / "new.db"):
        r = run("import", file, "--db", f"sqlite:///{db}")
        assert r.exit_code == 2, r.output
        lines = [line for line in r.output.splitlines() if line.startswith("error:")]
        assert len(lines) == 1 and message.format(file=file) in lines[0], r.output
    assert {p: settled(p) for p in before} == before, "a database was touched"
    assert not (tmp_path / "new.db").exists(), "a refused import created a database"


def test_cli_import_into_something_that_is_not_a_database(tuned_a, tmp_path):
    file = tmp_path / "tuned.json"
    export_all(tuned_a, file)
    db = tmp_path / "junk.db"
    db.write_bytes(b"not SQLite\n" * 100)
    r = run("import", file, "--db", f"sqlite:///{db}")
    assert r.exit_code == 2 and "error:" in r.output and "file is not a database" in r.output
    assert db.read_bytes() == b"not SQLite\n" * 100


def test_an_entry_twice_in_one_file_and_a_stale_entry_with_an_older_macro_set(tuned_a, url_b, tmp_path):
    path = tmp_path / "tuned.json"
    data = exported(tuned_a, path)
    data["results"].append(json.loads(json.dumps(data["results"][0])))
    stale = _stale(data)
    del stale["config"][sorted(stale["config"])[0]]  # the kernel has gained a macro since it was tuned
    path.write_text(json.dumps(data))
    report = import_results(open_results(url_b), path)
    assert (report.imported, report.skipped, report.stale) == (4, 1, 1)
    assert len(open_results(url_b).find_best()) == 4


# --- version 2: named dims, spec hashes, kernels without GB/s; version 1 still imports ----------


def test_export_leaves_stale_results_out_unless_asked(tuned_a, tmp_path):
    path = tmp_path / "tuned.json"
    report = export_results(tuned_a, path)
    assert (report.exported, report.stale, report.stale_note) == (3, 1, "1 stale result (1 kernel source changed)")
    assert all(e["kernel"]["source_hash"] != "0" * 64 for e in json.loads(path.read_text())["results"])
    report = export_results(tuned_a, path, nvcc_version="99.0.1")  # this machine's nvcc is newer: all are stale
    assert (report.exported, report.stale) == (0, 4)


def as_version_1(data: dict) -> dict:
    """What autotune 0.1 wrote for the same results: rows, cols, depth; no spec hash."""
    for e in data["results"]:
        values = [int(part.split("=")[1]) for part in e.pop("dims").split(",")]
        e["rows"], e["cols"], e["depth"] = (values + [0])[:3]
        if e["measurement"].get("gbps") is None:  # 0.1 stored a product's GB/s of its three float32 matrices
            m, n, k = values
            e["measurement"]["gbps"] = (m * k + k * n + m * n) * 4 / (e["measurement"]["median_ms"] * 1e6)
        del e["kernel"]["spec_hash"]
    return {**data, "schema_version": 1}


def test_a_version_1_file_still_imports_by_the_0_1_rule(db_url, device_info, tmp_path):
    # copy_row: a 0.1 kernel whose description is unchanged (issue 14 gave every transpose a row pitch)
    from autotune.kernel.dtypes import get_dtype
    from autotune.search.options import SearchOptions
    from autotune.search.tuner import search
    from autotune.store.key import tuning_key
    from autotune.interchange.share import MATMUL_0_1, SPEC_HASHES_0_1

    from fakes import FakeMatmulBench, FakeTimer

    old = open_results(db_url)
    search(tuning_key("copy_row", device_info, (256, 512), "float32"), get_kernel("copy_row").space(), FakeTimer(), old,
           SearchOptions(trials=3, seed=1))
    bench = FakeMatmulBench(device_info, 128, 64, 32, get_dtype("float32"))
    search(tuning_key("matmul_tiled", device_info, (128, 64, 32), "float32"), get_kernel("matmul_tiled").space(),
           bench.measure, old, SearchOptions(trials=3, seed=1))
    path = tmp_path / "v1.json"
    export_results(old, path)
    v2 = json.loads(path.read_text())
    path.write_text(json.dumps(as_version_1(json.loads(path.read_text()))))
    assert "matmul_tiled" in MATMUL_0_1 and SPEC_HASHES_0_1["copy_row"] == get_kernel("copy_row").spec_hash

    loaded = read_results(path)
    assert loaded.schema_version == 1 and loaded.stale == (False, False)
    assert {r.kernel: r.dims for r in loaded.results} == {
        "copy_row": (("rows", 256), ("cols", 512)), "matmul_tiled": (("m", 128), ("n", 64), ("k", 32))}
    assert {r.spec_hash for r in loaded.results} == {SPEC_HASHES_0_1["copy_row"], SPEC_HASHES_0_1["matmul_tiled"]}
    new = open_results(f"sqlite:///{tmp_path / 'new.db'}")
    report = import_results(new, loaded)
    assert (report.imported, report.stale, report.best) == (2, 0, 2)
    again = tmp_path / "again.json"
    export_results(new, again)
    assert [e["dims"] for e in json.loads(again.read_text())["results"]] == [e["dims"] for e in v2["results"]]
    assert import_results(old, path).skipped == 2  # the same results as the v2 ones: duplicates

    data = json.loads(path.read_text())
    del data["results"][0]["measurement"]["gbps"]  # version 1 always had GB/s
    path.write_text(json.dumps(data))
    with pytest.raises(InvalidInputError, match=r"results\[0\]\.measurement\.gbps is missing"):
        read_results(path)


class Reduction:
    """A user's 1-D kernel without a bytes objective (only what the store and share use)."""

    name, dims, source_hash, spec_hash = "reduce_sum", ("n",), "1" * 64, "2" * 64
    tunables, fixed = ("BLOCK_SIZE",), {}

    def check(self, config):
        if set(config.as_dict()) != {"BLOCK_SIZE"}:
            raise InvalidInputError(f"config {config} sets macros {sorted(config.as_dict())}; reduce_sum takes "
                                    "['BLOCK_SIZE']")


def test_a_user_kernel_without_gbps_round_trips_when_its_file_is_given(url_a, url_b, tmp_path):
    from autotune.store.key import tuning_key

    kernel, a = Reduction(), open_results(url_a)
    k = tuning_key(kernel, H100, {"n": 1 << 20}, "float32")
    sid = a.start_search(k, study_name=k.study_name, sampler="tpe", seed=1, memcpy_gbps=None)
    a.record_trial(sid, 0, Config.of("reduce_sum", {"BLOCK_SIZE": 256}), status="ok",
                   measurement=Measurement(0.2, 0.19, 0.22, None, None, 30, 1024, 50))
    path = tmp_path / "user.json"
    assert export_results(a, path, kernel=kernel).exported == 1
    assert export_results(a, path).unchecked == 1  # not in the catalog: written, but not judged
    e = json.loads(path.read_text())["results"][0]
    assert (e["dims"], e["measurement"]["gbps"], e["kernel"]["spec_hash"]) == ("n=1048576", None, "2" * 64)

    with pytest.raises(InvalidInputError, match=r"results\[0\]\.kernel\.name is not usable: unknown kernel "
                                                r"'reduce_sum'; allowed: .* --kernel"):
        read_results(path)
    b = open_results(url_b)
    assert import_results(b, path, kernels=[kernel]).imported == 1
    (best,) = b.find_best(kernel="reduce_sum", dims={"n": 1 << 20})
    assert (best.gbps, best.median_ms, best.spec_hash) == (None, 0.2, "2" * 64)
    e["config"] = {"BLOCK": 256}
    path.write_text(json.dumps({**json.loads(path.read_text()), "results": [e]}))
    with pytest.raises(InvalidInputError, match="config does not fit kernel reduce_sum"):
        read_results(path, [kernel])


# --- issue 41 item 12: what an interrupted import says it kept ------------------------------------


@pytest.mark.parametrize("fmt", ["results", "t4"])
def test_an_import_interrupted_before_its_write_says_nothing_was_imported(tuned_a, tmp_path, monkeypatch, fmt):
    """Ctrl-C while the file is read and checked: the database is not touched, and the import
    says nothing was imported (it said "trials so far are stored")."""
    import signal

    import autotune.interchange.t4_read
    from autotune.interchange.t4 import export_t4

    path = tmp_path / "in.json"
    (export_all if fmt == "results" else export_t4)(tuned_a, path)
    url_b = f"sqlite:///{tmp_path / 'b.db'}"
    open_results(url_b).close()
    before = (tmp_path / "b.db").read_bytes()
    real = autotune.interchange.t4_read.load_document

    def ctrl_c_while_reading(*args, **kwargs):
        document = real(*args, **kwargs)
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(1000):  # the handler runs between two bytecodes of this loop
            pass
        return document

    monkeypatch.setattr(autotune.interchange.t4_read, "load_document", ctrl_c_while_reading)
    r = runner.invoke(app, ["import", str(path), "--db", url_b])
    assert r.exit_code == 130, r.output
    assert r.output.strip() == "interrupted: nothing was imported (an import is all or nothing)"
    assert (tmp_path / "b.db").read_bytes() == before


def test_an_import_interrupted_in_its_commit_says_it_was_done(tuned_a, tmp_path, monkeypatch):
    """A signal while the one transaction is written is acted on once it is committed: then
    the import is whole, and says so."""
    import signal

    path = tmp_path / "in.json"
    export_all(tuned_a, path)
    url_b = f"sqlite:///{tmp_path / 'b.db'}"
    real = Store.add_imported

    def ctrl_c_while_writing(self, *args, **kwargs):
        os.kill(os.getpid(), signal.SIGINT)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Store, "add_imported", ctrl_c_while_writing)
    r = runner.invoke(app, ["import", str(path), "--db", url_b])
    assert r.exit_code == 130, r.output
    assert r.output.strip() == "interrupted: the import was done first: 4 result(s) imported, 0 already stored"
    assert len(open_results(url_b).find_best()) == 4
