"""Reading a T4 results file (:mod:`autotune.interchange.t4`) and importing its trials.

``autotune import FILE`` tells a T4 file from autotune's own export by its content
(:func:`is_t4`: a ``schema_version`` string and a ``results`` list, no ``format`` of autotune's
own). The whole file is validated before the database is opened (every message names the file,
the entry and the field, and ends "nothing was imported"); then every trial is written in one
transaction, or none.

Each key of ``metadata.autotune.keys`` gets one finished search (sampler ``import``, study
``import:<file name>``) holding its trials not already stored: a trial whose key already has a
trial of the same config and status is skipped. An ``ok`` trial becomes its key's best where
there is none or it is faster. Results of invalidity ``constraints`` are not trials (autotune
never measures a constraint breaker) and are left out. A T4 file without
``metadata.autotune`` (written by Kernel Tuner or KTT) does not say which GPU, kernel, shape and
dtype it measured, so it is refused with a message saying so.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from autotune.errors import InvalidInputError
from autotune.kernel.config import Config
from autotune.kernel.dtypes import DTYPES
from autotune.store import stale
from autotune.store.models import TRIAL_STATUSES
from autotune.store.repository import Store
from autotune.interchange.share import FORMAT as OWN_FORMAT, ImportReport, ResultsFile, known_kernels, load_document, results_of
from autotune.interchange.share_entry import BIGINT_MAX, Checker, _config, _dims, describe, moment
from autotune.interchange.t4 import FORMAT, INVALIDITY, MEASUREMENTS, T4_VERSION

__all__ = ["T4File", "T4Trial", "is_t4", "is_t4_document", "read_t4", "t4_of", "read_import", "import_t4"]

_STATUS_OF = {"correct": "ok", "compile": "compile_error", "runtime": "launch_error", "correctness": "wrong_result",
              "timeout": "timeout"}
_INT_COLUMNS = {"registers", "shared_bytes", "launches"}


@dataclass(frozen=True)
class T4Trial:
    """One validated trial of a T4 file: the index of its key, its config, status, reason,
    measured columns (``None`` where absent; all ``None`` for a failed trial), phases (ms) and time."""

    key: int
    config: Config
    status: str
    reason: str | None
    measured: dict[str, Any]
    phases: dict[str, float] | None
    created_at: datetime


@dataclass(frozen=True)
class T4File:
    """A T4 file read by :func:`read_t4`: its keys (validated dicts, ``dims`` parsed), trials,
    ``constraints`` results left out, and per key whether it is stale on this machine."""

    path: str
    keys: tuple[dict[str, Any], ...]
    trials: tuple[T4Trial, ...]
    constraints: int
    stale: tuple[bool, ...]


def is_t4(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` holds a T4 results document (False for anything else, unreadable
    included). Read through the one reader of users' files: a folder, device, FIFO or a file
    over 16 MiB is not read (False)."""
    try:
        return is_t4_document(load_document(path))
    except InvalidInputError:
        return False


def is_t4_document(doc: Any) -> bool:
    """Whether the parsed JSON ``doc`` is a T4 results document: a ``schema_version`` string and
    a ``results`` list, no ``format`` of autotune's own export."""
    return (isinstance(doc, dict) and doc.get("format") != OWN_FORMAT
            and isinstance(doc.get("schema_version"), str) and isinstance(doc.get("results"), list))


def read_import(path: str | os.PathLike[str], kernels=()) -> ResultsFile | T4File:
    """Read the file ``path`` to import once (:func:`autotune.interchange.share.load_document`) and
    validate it whole as what its content says it is: a T4 file (:func:`is_t4_document`) or
    autotune's own export (:func:`autotune.interchange.share.results_of`).

    Raises:
        InvalidInputError: unreadable, not JSON, or invalid as either (naming the file and field).
    """
    doc = load_document(path)
    if is_t4_document(doc):
        return t4_of(str(path), doc, kernels)
    return results_of(str(path), doc, kernels)


def _key(check: Checker, raw: Any, where: str, kernels: dict[str, Any]) -> tuple[dict[str, Any], Any]:
    raw = check.obj(raw, where)
    dev = check.obj(check.get(raw, "device", where), f"{where}.device")
    device = {f: check.string(check.get(dev, f, f"{where}.device"), f"{where}.device.{f}", max_len=255)
              for f in ("name", "compute_capability", "driver_version", "cuda_version")}
    device["sm_count"] = check.integer(check.get(dev, "sm_count", f"{where}.device"), f"{where}.device.sm_count")
    device["total_memory"] = check.integer(check.get(dev, "total_memory", f"{where}.device"),
                                           f"{where}.device.total_memory", high=BIGINT_MAX)
    kern = check.obj(check.get(raw, "kernel", where), f"{where}.kernel")
    name = check.string(check.get(kern, "name", f"{where}.kernel"), f"{where}.kernel.name", max_len=255)
    if name not in kernels:
        raise check.fail(f"{where}.kernel.name", f"is not usable: unknown kernel {name!r}; allowed: the catalog's "
                                                 "kernels, or a kernel whose file is given with --kernel")
    hashes = {h: check.string(check.get(kern, h, f"{where}.kernel"), f"{where}.kernel.{h}", max_len=64, empty=True)
              for h in ("source_hash", "spec_hash")}
    dims = _dims(check, check.get(raw, "dims", where), f"{where}.dims")
    kernel = kernels[name]
    current = (hashes["source_hash"], hashes["spec_hash"]) == (kernel.source_hash, kernel.spec_hash)
    if current and tuple(n for n, _ in dims) != tuple(kernel.dims):
        raise check.fail(f"{where}.dims", f"does not fit kernel {name}: it has the dims {', '.join(kernel.dims)}")
    dtype = check.string(check.get(raw, "dtype", where), f"{where}.dtype", max_len=32)
    if dtype not in DTYPES:
        raise check.fail(f"{where}.dtype", f"is {dtype!r}; allowed: {', '.join(DTYPES)}")
    key = {"device": device, "kernel": name, **hashes, "dims": dims, "dtype": dtype,
           "nvcc_version": check.string(check.get(raw, "nvcc_version", where), f"{where}.nvcc_version", max_len=64),
           "compile_flags": check.string(check.get(raw, "compile_flags", where), f"{where}.compile_flags",
                                         max_len=1024, empty=True), "current": current}
    return key, kernel


def _measured(check: Checker, raw: Any, where: str) -> dict[str, Any]:
    items = raw if isinstance(raw, list) else None
    if items is None:
        raise check.fail(where, f"is {describe(raw)}; it must be a list")
    columns = {name: (column, unit) for column, name, unit in MEASUREMENTS}
    out: dict[str, Any] = {column: None for column, _, _ in MEASUREMENTS}
    for j, m in enumerate(items):
        at = f"{where}[{j}]"
        m = check.obj(m, at)
        name = check.string(check.get(m, "name", at), f"{at}.name", max_len=255)
        if name not in columns:
            continue  # another tool's figure: not a column of ours
        column, unit = columns[name]
        if unit == "ms" and m.get("unit", "ms") not in ("ms", ""):
            raise check.fail(f"{at}.unit", f"is {m.get('unit')!r}; autotune reads times in ms")
        value = check.get(m, "value", at)
        out[column] = (check.integer(value, f"{at}.value", low=0) if column in _INT_COLUMNS
                       else check.number(value, f"{at}.value", positive=column.endswith("_ms")))
    return out


def _absent(value: Any, default: Any) -> Any:
    """``default`` where an optional field is absent (``None``); any other value as it is, to be checked."""
    return default if value is None else value


def _trial(check: Checker, raw: Any, at: str, keys: list, kernels: list, fallback: datetime) -> T4Trial | None:
    raw = check.obj(raw, at)
    invalidity = check.get(raw, "invalidity", at)
    if invalidity not in (*_STATUS_OF, "constraints"):
        raise check.fail(f"{at}.invalidity", f"is {describe(invalidity)}; allowed: "
                                             f"{', '.join((*_STATUS_OF, 'constraints'))}")
    if invalidity == "constraints":
        return None
    ours = _absent(check.get(raw, "autotune", at, optional=True), {})  # (false, 0 or "" are not absent)
    ours = check.obj(ours, f"{at}.autotune")
    index = check.integer(_absent(check.get(ours, "key", f"{at}.autotune", optional=True), 0), f"{at}.autotune.key",
                          low=0, high=len(keys) - 1)
    status = _absent(ours.get("status"), _STATUS_OF[invalidity])
    if status not in TRIAL_STATUSES or INVALIDITY[status] != invalidity:
        raise check.fail(f"{at}.autotune.status", f"is {describe(status)}; with invalidity {invalidity!r} it must be "
                                                  f"one of {', '.join(s for s, v in INVALIDITY.items() if v == invalidity)}")
    reason = ours.get("reason") if status != "ok" else None
    reason = check.string(reason, f"{at}.autotune.reason", max_len=10_000) if reason is not None else (
        None if status == "ok" else f"T4 invalidity {invalidity!r}")
    key = keys[index]
    config = _config(check, check.get(raw, "configuration", at), f"{at}.configuration", key["kernel"],
                     kernels[index], current=key["current"])
    measured = _measured(check, _absent(check.get(raw, "measurements", at, optional=status != "ok"), []),
                         f"{at}.measurements")
    if status == "ok" and measured["median_ms"] is None:
        raise check.fail(f"{at}.measurements", "has no 'time' (the median, ms) for a correct result")
    if status != "ok":
        measured = {column: None for column in measured}
    times = check.obj(check.get(raw, "times", at), f"{at}.times")
    phases = {ph: check.number(times[f], f"{at}.times.{f}", positive=False)
              for ph, f in (("compile", "compilation_time"), ("verify", "validation")) if f in times} or None
    stamp = check.get(raw, "timestamp", at, optional=True)
    created = moment(check, stamp, f"{at}.timestamp") if stamp is not None else fallback
    return T4Trial(index, config, status, reason, measured, phases, created)


def read_t4(path: str | os.PathLike[str], kernels=()) -> T4File:
    """Read and validate a T4 file written by :func:`autotune.interchange.t4.export_t4`.

    Raises:
        InvalidInputError: unreadable, not JSON, another T4 version, no ``metadata.autotune``
            key list, or an invalid entry (the message names the entry and field).
    """
    return t4_of(str(path), load_document(path), kernels)


def t4_of(name: str, doc: Any, kernels=()) -> T4File:
    """The :class:`T4File` of ``doc`` (the parsed JSON of the file ``name``), validated as
    :func:`read_t4` says.

    Raises:
        InvalidInputError: as :func:`read_t4`.
    """
    check = Checker(name)
    doc = check.obj(doc, "the document")
    if doc.get("schema_version") != T4_VERSION:
        raise check.fail("schema_version", f"is {describe(doc.get('schema_version'))}; autotune reads T4 {T4_VERSION}")
    ours = (doc.get("metadata") or {}).get("autotune") if isinstance(doc.get("metadata"), dict) else None
    if not isinstance(ours, dict) or ours.get("format") != FORMAT:
        raise check.fail("metadata.autotune", "is missing: a T4 file of another tool does not say which GPU, kernel, "
                                              "dims and dtype it measured, so autotune cannot key its results")
    known = known_kernels(kernels)
    raw_keys = check.get(ours, "keys", "metadata.autotune")
    if not isinstance(raw_keys, list):
        raise check.fail("metadata.autotune.keys", f"is {describe(raw_keys)}; it must be a list")
    checked = [_key(check, k, f"metadata.autotune.keys[{i}]", known) for i, k in enumerate(raw_keys)]
    keys, kerns = [k for k, _ in checked], [k for _, k in checked]
    results = check.get(doc, "results", "")
    if not isinstance(results, list):
        raise check.fail("results", f"is {describe(results)}; it must be a list")
    if results and not keys:
        raise check.fail("metadata.autotune.keys", "is empty, but the file holds results")
    fallback = moment(check, check.get(ours, "exported_at", "metadata.autotune"), "metadata.autotune.exported_at")
    trials = [_trial(check, r, f"results[{i}]", keys, kerns, fallback) for i, r in enumerate(results)]
    flags = tuple(stale.stale_reason(_Probe(k, kern), kern, None) is not None for k, kern in checked)
    return T4File(name, tuple(keys), tuple(t for t in trials if t is not None), sum(t is None for t in trials), flags)


class _Probe:
    """What :func:`autotune.store.stale.stale_reason` reads of a key. Its macros are taken as the
    kernel's: every config of a current key was checked to be exactly that (``_config``)."""

    def __init__(self, key: dict[str, Any], kernel: Any) -> None:
        self.source_hash, self.spec_hash = key["source_hash"], key["spec_hash"]
        self.nvcc_version, self.compile_flags = key["nvcc_version"], key["compile_flags"]
        self.compute_capability = key["device"]["compute_capability"]
        self.config = Config.of(kernel.name, {name: 0 for name in kernel.tunables})


def import_t4(store: Store, loaded: T4File) -> ImportReport:
    """Write the trials of ``loaded`` (:func:`read_t4`) into ``store`` in one transaction (module
    docstring). ``ImportReport.stale`` counts imported trials of keys stale on this machine.

    The transaction is retried while another writer holds the database, as every write of the
    store's is (:meth:`~autotune.store.repository.Store.transaction`), so two imports at once
    take turns rather than one giving up.

    Raises:
        StoreError: the database cannot be written, or stays locked past the retries; nothing
            is written.
    """
    study = f"import:{Path(loaded.path).name}"[:1024]
    imported = skipped = stale_count = best = 0
    keys = [(index, key, [t for t in loaded.trials if t.key == index]) for index, key in enumerate(loaded.keys)]
    keys = [(index, key, mine) for index, key, mine in keys if mine]
    done = store.add_key_trials([(key, mine) for _, key, mine in keys], study_name=study)
    for (index, _, _), (fresh, left, became) in zip(keys, done):
        skipped += left
        best += became
        imported += fresh
        stale_count += fresh * loaded.stale[index]
    return ImportReport(imported=imported, skipped=skipped, stale=stale_count, best=best, searches=study)
