"""What optuna-dashboard shows of a study: a short label, the key's parts as user attrs to
filter by, and the objective's name.

The study's *name* (:attr:`autotune.store.key.TuningKey.study_name`) reads kernel, shape,
dtype and device model, then a hash of the whole key; a study of autotune < 0.4.0 keeps its
legacy name (the whole key, 123-136 characters), by which a search still finds it. The label
and the other attrs are on each study's page and in its user-attr filter.

A search labels its study when it opens it (:func:`label_study`); ``autotune db upgrade`` and
``autotune import`` label every other study of the database (:func:`label_stored_studies`):
those searched before labels existed (autotune < 0.4.0), or brought by a copied database.

Source: Optuna's ``Study.set_user_attr`` and ``Study.set_metric_names`` (optuna-dashboard shows
both; the metric name replaces "Objective 0").
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ContextManager

if TYPE_CHECKING:
    import optuna

    from autotune.store.key import TuningKey

__all__ = ["METRIC_NAMES", "PARETO_METRIC_NAMES", "label_study", "label_stored_studies", "study_attrs",
           "import_study_name", "make_import_studies"]

METRIC_NAMES = ["median ms"]
"""The objective as the dashboard names it: the median time per launch of a config, ms."""

PARETO_METRIC_NAMES = ["median ms", "J per launch"]
"""The two objectives of a Pareto study (``--objective time,energy``) as the dashboard names them."""


def study_attrs(key: TuningKey, strategy: str | None = None,
                strategy_options: dict[str, Any] | None = None) -> dict[str, Any]:
    """The user attrs of ``key``'s study: ``label`` (kernel, shape, dtype, device), ``kernel``,
    ``dims`` (``{"rows": 4096, "cols": 4096}``), ``shape``, ``dtype``, ``device`` (model name),
    ``compute_capability``, ``nvcc`` and, where given, ``strategy`` (the sampler of the last
    search that opened the study) and ``strategy_options`` (that search's options of its
    strategy, name -> value, where it gave any: ``{"startup": 20}``)."""
    attrs = {"label": f"{key.kernel} {key.display} {key.dtype} on {key.device.name}", "kernel": key.kernel,
             "dims": dict(key.dims), "shape": key.display, "dtype": key.dtype, "device": key.device.name,
             "compute_capability": key.device.compute_capability, "nvcc": key.nvcc_version}
    if strategy is not None:
        attrs["strategy"] = strategy
    if strategy is not None and strategy_options:
        attrs["strategy_options"] = dict(strategy_options)
    return attrs


def label_study(study: optuna.Study, key: TuningKey, strategy: str | None = None,
                errors: Callable[[], ContextManager] = contextlib.nullcontext, *,
                strategy_options: dict[str, Any] | None = None) -> optuna.Study:
    """Give ``study`` the user attrs of :func:`study_attrs` and the objective's name
    (:data:`METRIC_NAMES`; a study of two directions: :data:`PARETO_METRIC_NAMES`), writing only what differs (several workers open one study; a search
    that gives its strategy no option empties the ``strategy_options`` of an earlier one); returns
    ``study``, so that it wraps the call that opens it. ``errors``: the store's
    :meth:`~autotune.store.repository.Store.errors`, turning a database error into one line.

    Raises:
        StoreError: (through ``errors``) the database refused the writes.
    """
    with errors():
        current = study.user_attrs
        wanted = study_attrs(key, strategy, strategy_options)
        for name, value in wanted.items():
            if current.get(name) != value:
                study.set_user_attr(name, value)
        if strategy is not None and "strategy_options" in current and "strategy_options" not in wanted:
            study.set_user_attr("strategy_options", {})  # this search's strategy took its defaults
        names = PARETO_METRIC_NAMES if len(study.directions) == 2 else METRIC_NAMES
        if study.metric_names != names:
            with warnings.catch_warnings():  # "experimental" since Optuna 3.2, and what the dashboard reads
                warnings.simplefilter("ignore", category=Warning)
                study.set_metric_names(names)
    return study


def label_stored_studies(store) -> int:
    """Label every study of ``store``'s database that lacks its labels or metric name
    (:func:`label_study`): each study's key is read back from the searches that used it (a study
    no search names, e.g. one of another program, is left alone). Returns how many were labelled.

    Raises:
        StoreError: the database cannot be read or written.
    """
    import optuna

    keys = store.study_keys()
    if not keys:
        return 0
    storage = store.optuna_storage()
    labelled = 0
    with store.errors("cannot label the studies of"):
        studies = storage.get_all_studies()
    for frozen in studies:
        key = keys.get(frozen.study_name)
        if key is None:
            continue
        wanted = study_attrs(key)
        if all(frozen.user_attrs.get(k) == v for k, v in wanted.items()) and \
                list(frozen.system_attrs.get("study:metric_names") or []) in (METRIC_NAMES, PARETO_METRIC_NAMES):
            continue
        with store.errors("cannot label the studies of"):
            study = optuna.load_study(study_name=frozen.study_name, storage=storage)
        label_study(study, key, frozen.user_attrs.get("strategy"), store.errors,
                    strategy_options=frozen.user_attrs.get("strategy_options"))
        labelled += 1
    return labelled


def import_study_name(key: TuningKey, searches: str) -> str:
    """The Optuna study of ``key``'s trials imported under ``searches`` (``import:<file name>``):
    ``smem_pad 4096x4096 float32 NVIDIA H100 80GB HBM3 #0123456789 import:tuned.json``. Never the
    key's own study (:attr:`~autotune.store.key.TuningKey.study_name`), which a search resumes:
    a config measured elsewhere is no trial of this machine's search."""
    return f"{key.study_name} {searches}"[:512]


def make_import_studies(store, searches: str) -> list[str]:
    """Make, for each key with trials imported under ``searches`` (the search rows' study name of
    one import, ``import:<file name>``), an Optuna study of those trials, so that
    optuna-dashboard shows them (:func:`import_study_name`; made again from the stored trials
    when the same file is imported again). An ``ok`` trial is a COMPLETE trial valued by its
    median time (ms, the metric ``median ms``); any other a FAIL trial; each keeps the ``status``,
    the ``reason`` and when it was measured (``measured_at``, UTC) as user attrs, since Optuna
    dates a trial it is given now. The study carries the key's labels (:func:`study_attrs`) and
    ``imported_from``. Returns the names of the studies made.

    Raises:
        StoreError: the database cannot be read or written.
    """
    import optuna
    from optuna.distributions import CategoricalDistribution
    from optuna.trial import TrialState, create_trial

    found = store.trials_of_searches(searches)
    if not found:
        return []
    storage = store.optuna_storage()
    made = []
    for key, trials in found.items():
        name = import_study_name(key, searches)
        macros = sorted({m for t in trials for m, _ in t.config.macros})
        choices = {m: sorted({v for t in trials for n, v in t.config.macros if n == m}) for m in macros}
        dists = {m: CategoricalDistribution(choices[m]) for m in macros}
        frozen = []
        for t in trials:
            params = dict(t.config.macros)
            ok = t.status == "ok" and t.median_ms is not None
            attrs = {"status": t.status, "measured_at": f"{t.created_at:%Y-%m-%dT%H:%M:%S}Z" if t.created_at else None}
            if t.reason:
                attrs["reason"] = t.reason
            frozen.append(create_trial(state=TrialState.COMPLETE if ok else TrialState.FAIL,
                                       value=t.median_ms if ok else None, params=params,
                                       distributions={m: dists[m] for m in params}, user_attrs=attrs))
        with store.errors():
            with contextlib.suppress(KeyError):
                optuna.delete_study(study_name=name, storage=storage)  # the same file imported again
            study = optuna.create_study(study_name=name, storage=storage, direction="minimize")
            study.add_trials(frozen)
            study.set_user_attr("imported_from", searches.removeprefix("import:"))
        label_study(study, key, None, store.errors)
        made.append(name)
    return made
