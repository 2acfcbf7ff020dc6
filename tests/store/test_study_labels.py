"""What optuna-dashboard reads of a study: the short label, the key's parts as user attrs,
the objective's name; the study's name, readable first."""

from __future__ import annotations

import optuna

from autotune.store.opening import open_results
from autotune.kernel.catalog import get_kernel
from autotune.search.options import SearchOptions
from autotune.search.tuner import search
from autotune.store.key import tuning_key
from autotune.store.study_labels import METRIC_NAMES, label_study

from fakes import FakeTimer


def test_a_searched_study_carries_its_label_attrs_and_metric_name(db_url, device_info):
    store = open_results(db_url)
    key = tuning_key("smem_pad", device_info, (256, 128), "float32")
    search(key, get_kernel("smem_pad").space(), FakeTimer(), store, SearchOptions(trials=2, seed=1, strategy="random"))
    study = optuna.load_study(study_name=key.study_name, storage=store.optuna_storage())
    assert study.study_name == key.study_name and study.study_name.startswith("smem_pad 256x128 float32 NVIDIA H100")
    assert study.metric_names == METRIC_NAMES == ["median ms"]
    assert study.user_attrs == {
        "label": "smem_pad 256x128 float32 on NVIDIA H100 80GB HBM3", "kernel": "smem_pad",
        "dims": {"rows": 256, "cols": 128}, "shape": "256x128", "dtype": "float32",
        "device": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0", "nvcc": key.nvcc_version,
        "strategy": "random"}
    summary = next(s for s in optuna.get_all_study_summaries(store.optuna_storage()) if s.study_name == key.study_name)
    assert summary.user_attrs["label"] == "smem_pad 256x128 float32 on NVIDIA H100 80GB HBM3"

    search(key, get_kernel("smem_pad").space(), FakeTimer(), store, SearchOptions(trials=1, seed=2, strategy="tpe", resume=True))
    assert optuna.load_study(study_name=key.study_name, storage=store.optuna_storage()).user_attrs["strategy"] == "tpe"


def test_labelling_writes_only_what_differs(device_info):
    study = optuna.create_study()
    key = tuning_key("smem_pad", device_info, (64, 64), "float16")
    writes = []
    set_user_attr = study.set_user_attr
    study.set_user_attr = lambda name, value: (writes.append(name), set_user_attr(name, value))
    assert label_study(study, key, "grid") is study
    assert len(writes) == 9 and study.metric_names == ["median ms"]
    writes.clear()
    label_study(study, key, "grid")  # a second worker opening the same study
    assert writes == []


def _unlabelled_search(monkeypatch, db_url, device_info):
    """A study searched as before labels existed (autotune < 0.4.0: no attrs, "Objective 0")."""
    import autotune.search.tuner as tuner

    with monkeypatch.context() as m:
        m.setattr(tuner, "label_study", lambda study, *a, **k: study)
        store = open_results(db_url)
        key = tuning_key("smem_pad", device_info, (256, 128), "float32")
        search(key, get_kernel("smem_pad").space(), FakeTimer(), store, SearchOptions(trials=2, seed=1, strategy="random"))
    study = optuna.load_study(study_name=key.study_name, storage=store.optuna_storage())
    assert study.user_attrs == {} and study.metric_names is None
    return store, key


def test_db_upgrade_and_import_label_old_studies_once(monkeypatch, db_url, device_info, tmp_path):
    from typer.testing import CliRunner

    from autotune.cli import app

    store, key = _unlabelled_search(monkeypatch, db_url, device_info)
    runner = CliRunner()
    result = runner.invoke(app, ["db", "upgrade", "--db", db_url])
    assert result.exit_code == 0 and "labelled 1 study for optuna-dashboard" in result.output, result.output
    study = optuna.load_study(study_name=key.study_name, storage=store.optuna_storage())
    assert study.metric_names == ["median ms"] and study.user_attrs["label"] == "smem_pad 256x128 float32 on NVIDIA H100 80GB HBM3"
    again = runner.invoke(app, ["db", "upgrade", "--db", db_url])
    assert again.exit_code == 0 and "labelled" not in again.output  # nothing left to label

    other = f"sqlite:///{tmp_path / 'other.db'}"
    store2, key2 = _unlabelled_search(monkeypatch, other, device_info)
    exported = tmp_path / "tuned.json"
    assert runner.invoke(app, ["export", "--out", str(exported), "--db", db_url]).exit_code == 0
    result = runner.invoke(app, ["import", str(exported), "--db", other])
    assert result.exit_code == 0 and "labelled 1 study" in result.output, result.output
    assert optuna.load_study(study_name=key2.study_name, storage=store2.optuna_storage()).metric_names == ["median ms"]
