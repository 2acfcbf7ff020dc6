"""T4 interchange (issue 22): `autotune export --t4` and the import of such a file."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from autotune.store.opening import open_results
from sqlalchemy import select
from typer.testing import CliRunner

from autotune.cli import app
from autotune.errors import InvalidInputError
from autotune.store.models import Trial
from autotune.store.repository import Store
from autotune.interchange.t4 import export_t4
from autotune.interchange.t4_read import import_t4, is_t4, read_t4
from stored_results import A100, configs, key, tune

runner = CliRunner()
SCHEMA = Path("kernel_tuner/schema/T4/1.0.0/results-schema.json")


@pytest.fixture
def store_a(tmp_path) -> Store:
    """Two keys of smem_pad (H100, A100), each with ok trials and one failed trial, and a key of
    another shape."""
    store = open_results(f"sqlite:///{tmp_path / 'a.db'}")
    c = configs()
    tune(store, key(), [(c[0], 2500.0), (c[1], 2700.0), (c[2], 2600.0)])
    tune(store, key(device=A100), [(c[1], 1400.0)], memcpy_gbps=1500.0)
    tune(store, key(rows=2048, cols=2048), [(c[3], 2000.0)])
    return store


def trials_of(store: Store) -> list[tuple]:
    with store.session() as s:
        return sorted((t.config_key, t.status, t.reason, t.median_ms, t.gbps, t.registers)
                      for t in s.scalars(select(Trial)))


def test_round_trip_keeps_every_trial_and_the_best(store_a, tmp_path):
    path = tmp_path / "t4.json"
    report = export_t4(store_a, path)
    assert report.exported == 4 + 2 + 2  # every trial, the failed ones included
    doc = json.loads(path.read_text())
    assert doc["schema_version"] == "1.0.0" and len(doc["metadata"]["autotune"]["keys"]) == 3
    statuses = {r["invalidity"] for r in doc["results"]}
    assert statuses == {"correct", "compile"}
    assert is_t4(path)
    b = open_results(f"sqlite:///{tmp_path / 'b.db'}")
    loaded = read_t4(path)
    result = import_t4(b, loaded)
    assert (result.imported, result.skipped, result.best) == (8, 0, 3)
    assert trials_of(b) == trials_of(store_a)
    for k in (key(), key(device=A100), key(rows=2048, cols=2048)):
        assert b.best(k).config == store_a.best(k).config and b.best(k).median_ms == store_a.best(k).median_ms
    again = import_t4(b, read_t4(path))
    assert (again.imported, again.skipped) == (0, 8)  # already stored: skipped, nothing doubled
    assert len(trials_of(b)) == 8


def test_an_import_meeting_another_writer_is_retried_until_it_commits(store_a, tmp_path, monkeypatch):
    """Issue 51: two imports at once, the second gave up with "database is locked" after 30 s in
    one attempt (38 s on a loaded machine) where the docs promise 60 s of retries. Another writer
    holds the lock until the retry loop's second backoff; the import then writes everything."""
    import sqlite3

    from autotune.store import locking

    path = tmp_path / "t4.json"
    export_t4(store_a, path)
    b = open_results(f"sqlite:///{tmp_path / 'b.db'}")
    monkeypatch.setattr(locking, "BUSY_TIMEOUT_S", 0.01)  # each attempt gives up at once: no real wait
    monkeypatch.setattr(locking, "SESSION_BUSY_TIMEOUT_S", 0.01)  # nor one transaction not retried
    holder = sqlite3.connect(tmp_path / "b.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # the other import, mid-transaction
    backoffs = []

    def backoff(seconds):  # the retry loop's wait between attempts: the other import commits in the second
        backoffs.append(seconds)
        if len(backoffs) == 2:
            holder.execute("COMMIT")

    monkeypatch.setattr(locking.stop, "sleep", backoff)
    try:
        result = import_t4(b, read_t4(path))
    finally:
        holder.close()
    assert len(backoffs) == 2
    assert (result.imported, result.skipped, result.best) == (8, 0, 3)  # counted once, not per attempt
    assert trials_of(b) == trials_of(store_a)


def test_export_selects_like_export_does(store_a, tmp_path):
    path = tmp_path / "t4.json"
    assert export_t4(store_a, path, device_name="A100").exported == 2
    assert export_t4(store_a, path, dims={"rows": 2048, "cols": 2048}).exported == 2
    assert export_t4(store_a, path, kernel="smem").exported == 0


def test_export_validates_against_kernel_tuners_t4_schema(store_a, tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    kt = pytest.importorskip("kernel_tuner")
    schema = json.loads((Path(kt.__file__).parent / "schema" / "T4" / "1.0.0" / "results-schema.json").read_text())
    path = tmp_path / "t4.json"
    export_t4(store_a, path)
    jsonschema.validate(json.loads(path.read_text()), schema)


def broken(path: Path, change) -> Path:
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize("change, message", [
    (lambda d: d["metadata"].pop("autotune"), "another tool does not say"),
    (lambda d: d.update(schema_version="2.0.0"), "schema_version"),
    (lambda d: d["results"][0].update(invalidity="melted"), r"results\[0\].invalidity"),
    (lambda d: d["results"][0]["configuration"].update(WARP_SPEED=1), r"results\[0\].configuration"),
    (lambda d: d["results"][1]["autotune"].update(key=9), r"results\[1\].autotune.key"),
    (lambda d: d["results"][0].update(measurements=[]), "no 'time'"),
    (lambda d: d["metadata"]["autotune"]["keys"][0].update(dtype="float7"), "dtype"),
    (lambda d: d["metadata"]["autotune"]["keys"][0]["kernel"].update(name="nope"), "unknown kernel"),
])
def test_bad_files_are_refused_whole_with_one_error_line(store_a, tmp_path, change, message):
    path = tmp_path / "t4.json"
    export_t4(store_a, path)
    broken(path, change)
    url = f"sqlite:///{tmp_path / 'b.db'}"
    result = runner.invoke(app, ["import", str(path), "--db", url])
    assert result.exit_code == 2, result.output
    lines = [l for l in result.output.splitlines() if l.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and "nothing was imported" in result.output
    assert re.search(message, result.output), result.output
    assert "Traceback" not in result.output
    with pytest.raises(InvalidInputError):
        read_t4(path)
    assert not (tmp_path / "b.db").exists() or trials_of(open_results(url)) == []


def test_cli_export_t4_and_import_detects_the_format(store_a, tmp_path):
    url_a = f"sqlite:///{tmp_path / 'a.db'}"
    path = tmp_path / "out.json"
    result = runner.invoke(app, ["export", "--t4", str(path), "--db", url_a])
    assert result.exit_code == 0, result.output
    assert "exported 8 trials" in result.output
    url_b = f"sqlite:///{tmp_path / 'b.db'}"
    result = runner.invoke(app, ["import", str(path), "--db", url_b])
    assert result.exit_code == 0, result.output
    assert "imported 8 trial(s) from T4 file" in result.output
    assert "made 3 Optuna studies of the imported trials for optuna-dashboard" in result.output
    both = runner.invoke(app, ["export", "--t4", str(path), "--out", str(tmp_path / "x.json"), "--db", url_a])
    assert both.exit_code == 2 and both.output.startswith("error:")


def test_imported_t4_trials_make_an_optuna_study_per_key_that_the_dashboard_shows(store_a, tmp_path):
    """Issue 49 item 12: imported results made no Optuna study, so optuna-dashboard never showed
    them. Each key's imported trials are a study of their own (never the key's search study):
    ok trials COMPLETE at their median ms, the failed one FAIL with its reason."""
    import optuna

    from autotune.store.study_labels import import_study_name, make_import_studies

    path = tmp_path / "t4.json"
    export_t4(store_a, path)
    b = open_results(f"sqlite:///{tmp_path / 'b.db'}")
    report = import_t4(b, read_t4(path))
    made = make_import_studies(b, report.searches)
    [h100] = [k for k in b.trials_of_searches("import:t4.json") if k.device.name.startswith("NVIDIA H100")
              and k.shape == (1024, 1024)]
    name = import_study_name(h100, "import:t4.json")
    assert len(made) == 3 and name in made and name.startswith("smem_pad 1024x1024 float32 NVIDIA H100")
    study = optuna.load_study(study_name=name, storage=b.optuna_storage())
    states = sorted(t.state.name for t in study.trials)
    assert states == ["COMPLETE", "COMPLETE", "COMPLETE", "FAIL"]
    stored = {t.config.key: t for t in store_a.trials_by_key(kernel="smem_pad", dims={"rows": 1024, "cols": 1024},
                                                              dtype="float32", device_name="H100")[h100]}
    for trial in study.trials:
        config = ",".join(f"{m}={v}" for m, v in sorted(trial.params.items()))
        assert trial.value == stored[config].median_ms or (trial.value is None and trial.user_attrs["reason"])
    assert study.user_attrs["imported_from"] == "t4.json" and study.user_attrs["kernel"] == "smem_pad"
    assert study.metric_names == ["median ms"]
    assert all(s.study_name != h100.study_name for s in optuna.get_all_study_summaries(b.optuna_storage()))
    assert make_import_studies(b, report.searches) == made  # again: made afresh, not doubled
    assert len(optuna.load_study(study_name=name, storage=b.optuna_storage()).trials) == 4


def test_constraint_results_are_left_out(store_a, tmp_path):
    path = tmp_path / "t4.json"
    export_t4(store_a, path)
    broken(path, lambda d: d["results"].append({**d["results"][0], "invalidity": "constraints"}))
    loaded = read_t4(path)
    assert loaded.constraints == 1 and len(loaded.trials) == 8


def test_a_result_given_twice_in_one_file_is_stored_once(store_a, tmp_path):
    """Issue 41 item 2: the duplicate filter sees the results of the file itself, not only the database's."""
    path = tmp_path / "t4.json"
    export_t4(store_a, path)
    doc = json.loads(path.read_text())
    doc["results"] += [dict(doc["results"][0]), dict(doc["results"][0])]  # the same trial twice more
    path.write_text(json.dumps(doc))
    b = open_results(f"sqlite:///{tmp_path / 'b.db'}")
    result = import_t4(b, read_t4(path))
    assert (result.imported, result.skipped) == (8, 2)
    assert trials_of(b) == trials_of(store_a)  # each trial once


def test_is_t4_reads_through_the_one_reader(tmp_path):
    """Issue 41 item 1: a FIFO, a device or a folder is not read (a FIFO would block), and a
    file over 16 MiB is refused by its size, before it is parsed."""
    import os

    os.mkfifo(tmp_path / "fifo")
    for path in (tmp_path / "fifo", Path("/dev/zero"), tmp_path, tmp_path / "missing.json"):
        assert not is_t4(path)
        with pytest.raises(InvalidInputError, match="cannot read"):
            read_t4(path)
    big = tmp_path / "big.json"
    big.write_text('{"schema_version": "1.0.0", "results": []}' + " " * (16 * 1024 * 1024))
    assert not is_t4(big)
    with pytest.raises(InvalidInputError, match="allowed: at most 16777216 bytes"):
        read_t4(big)
