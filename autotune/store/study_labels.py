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

__all__ = ["METRIC_NAMES", "PARETO_METRIC_NAMES", "label_study", "label_stored_studies", "study_attrs"]

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
