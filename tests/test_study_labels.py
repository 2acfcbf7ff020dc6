"""What optuna-dashboard reads of a study: the short label, the key's parts as user attrs,
the objective's name; the study's name stays the whole key."""

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
    assert study.study_name == key.study_name and len(study.study_name) > 100  # the name is the key, unchanged
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
