"""Moving tuned results between machines: ``autotune export`` and ``autotune import``.

The file is JSON::

    {"format": "autotune-results", "schema_version": 1, "exported_at": "2026-11-22T10:00:00.000000Z",
     "autotune_version": "0.1.0", "results": [ {...}, ... ]}

with one entry per stored best (:meth:`autotune.store.repository.Store.find_best`), carrying its whole
key and provenance (device model, and the UUID of the GPU that measured it, kernel name and
source hash, shape (``rows``, ``cols``, and ``depth``: K of a matrix product, 0 for a
transpose), dtype,
nvcc version, compile flags), the config, the measurement, the search's memcpy and copy
bounds, the re-timing figures and when it was tuned (see :func:`entry`). ``depth`` and the
measurement's ``gflops`` came with the matrix products; a file without them (written before)
reads as ``depth`` 0 and no GFLOP/s, so the schema version stayed 1. A matrix product has no
memcpy figure: its ``pct_memcpy`` is null.

An import reads and validates the whole file before it writes anything, then records every
entry in one transaction: as a finished search of sampler ``import`` with one ``ok`` trial,
which becomes the key's best when there is none or it is faster (like
:meth:`~autotune.store.repository.Store.record_trial`). An entry whose key (device model, kernel
source, toolchain, shape, dtype) already has an ``ok`` trial of the same config is skipped
as a duplicate. Results of other devices or older kernel sources are imported as they are:
:func:`autotune.lookup` uses only those of the exact current key.
"""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import select

from autotune.kernel.dims import MAX_DIM
from autotune.kernel.config import Config
from autotune.kernel.dtypes import DTYPES
from autotune.errors import InvalidInputError
from autotune.kernel.catalog import KERNELS, get_kernel
from autotune.store.models import Best, Device, Kernel, Search, Trial
from autotune.kernel.space import MAX_MACRO_VALUE
from autotune.store.repository import BestRecord, Store

__all__ = ["FORMAT", "SCHEMA_VERSION", "ImportReport", "ResultsFile", "export_results", "read_results",
           "import_results", "entry"]

FORMAT = "autotune-results"
"""The ``format`` name of an export file."""
SCHEMA_VERSION = 1
"""The version of the file layout this autotune writes and reads."""

SAMPLER = "import"
"""``sampler`` of the search rows an import creates."""

_INT_MAX = 2**31 - 1  # Integer columns
_BIGINT_MAX = 2**63 - 1  # BigInteger columns
_MACRO_NAME = re.compile(r"[A-Z_][A-Z0-9_]*\Z")

DEVICE_FIELDS = ("name", "compute_capability", "sm_count", "total_memory", "driver_version", "cuda_version",
                 "uuid")
MEASUREMENT_FIELDS = ("median_ms", "min_ms", "max_ms", "gbps", "gflops", "pct_memcpy", "pct_copy", "registers",
                      "shared_bytes", "launches")


@dataclass(frozen=True)
class ImportReport:
    """What an import did.

    Attributes:
        imported: entries recorded.
        skipped: entries skipped because the same result (key and config) was already stored.
        stale: of the imported entries, those for a kernel source that differs from the
            current one (or a kernel no longer in the catalog under that name): kept, but
            :func:`autotune.lookup` does not use them.
        best: of the imported entries, those that became their key's best.
    """

    imported: int
    skipped: int
    stale: int
    best: int = 0


@dataclass(frozen=True)
class ResultsFile:
    """A results file read and validated by :func:`read_results` (entries as in the file,
    with ``tuned_at`` parsed to an aware UTC datetime)."""

    path: str
    exported_at: datetime
    autotune_version: str
    results: tuple[dict[str, Any], ...]


# ---------------------------------------------------------------------------------------------
# export


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def entry(record: BestRecord, *, total_memory: int, tie_group: list[dict[str, Any]] | None,
          launches: int | None, l2_mode: str | None) -> dict[str, Any]:
    """The JSON entry of one stored best (the figures :class:`BestRecord` lacks are passed in)."""
    return {
        "device": {
            "name": record.device_name, "compute_capability": record.compute_capability,
            "sm_count": record.sm_count, "total_memory": total_memory, "driver_version": record.driver_version,
            "cuda_version": record.cuda_version, "uuid": record.device_uuid,
        },
        "kernel": {"name": record.kernel, "source_hash": record.source_hash},
        "rows": record.rows, "cols": record.cols, "depth": record.depth, "dtype": record.dtype,
        "nvcc_version": record.nvcc_version, "compile_flags": record.compile_flags,
        "config": record.config.as_dict(),
        "measurement": {
            "median_ms": record.median_ms, "min_ms": record.min_ms, "max_ms": record.max_ms,
            "gbps": record.gbps, "gflops": record.gflops, "pct_memcpy": record.pct_memcpy, "pct_copy": record.pct_copy,
            "registers": record.registers, "shared_bytes": record.shared_bytes, "launches": launches,
        },
        "memcpy_gbps": record.memcpy_gbps, "copy_gbps": record.copy_gbps, "l2_mode": l2_mode,
        "pooled_median_ms": record.pooled_median_ms, "spread": record.spread, "rounds": record.rounds,
        "tie_group": tie_group,
        "tuned_at": _iso(record.updated_at),
    }


def export_results(store: Store, path: str | os.PathLike[str], *, kernel: str | None = None,
                   device_name: str | None = None) -> int:
    """Write every stored best (of ``kernel``, and of devices whose name contains
    ``device_name``, case-insensitive) to the JSON file ``path``; returns how many.

    The file is written to a temporary file beside ``path`` and renamed over it, so ``path``
    is either the old file or the whole new one, never half written.

    Raises:
        InvalidInputError: unknown kernel, or ``path`` cannot be written.
        StoreError: the database cannot be read.
    """
    from autotune import __version__

    if kernel is not None:
        get_kernel(kernel)  # refuses an unknown name, like `autotune best`
    records = store.find_best(kernel=kernel, device_name=device_name)
    results = []
    with store.session() as session:
        for record in records:
            search = session.get(Search, record.search_id)
            trial = session.get(Trial, record.trial_id)
            best = session.scalars(select(Best).where(Best.trial_id == record.trial_id).limit(1)).one_or_none()
            tie_group = best.tie_group if best is not None else None
            if tie_group is None and record.tie_group:
                tie_group = [{"config": key} for key in record.tie_group]
            results.append(entry(record, total_memory=search.device.total_memory, tie_group=tie_group,
                                 launches=trial.launches if trial is not None else None,
                                 l2_mode=search.l2_mode))
    document = {"format": FORMAT, "schema_version": SCHEMA_VERSION, "exported_at": _iso(datetime.now(UTC)),
                "autotune_version": __version__, "results": results}
    try:
        text = json.dumps(document, indent=1, allow_nan=False) + "\n"
    except ValueError as exc:  # a NaN or infinity in the database
        raise InvalidInputError(f"cannot export: the database holds a value JSON cannot carry ({exc})") from None
    _write_atomically(Path(path), text)
    return len(results)


def _write_atomically(path: Path, text: str) -> None:
    folder = path.parent
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise InvalidInputError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise InvalidInputError(f"cannot write {path}: {exc.strerror or exc}") from None
        raise


# ---------------------------------------------------------------------------------------------
# reading and validating


class _Checker:
    """Field checks of one file; every failure names the file and the field's path."""

    def __init__(self, path: str) -> None:
        self.path = path

    def fail(self, where: str, problem: str) -> InvalidInputError:
        return InvalidInputError(f"{self.path}: {where} {problem}; nothing was imported")

    def get(self, obj: dict, key: str, where: str, *, optional: bool = False) -> Any:
        if key not in obj:
            if optional:
                return None
            raise self.fail(f"{where}.{key}" if where else key, "is missing")
        return obj[key]

    def obj(self, value: Any, where: str) -> dict:
        if not isinstance(value, dict):
            raise self.fail(where, f"is {_describe(value)}; it must be an object")
        return value

    def string(self, value: Any, where: str, *, max_len: int, empty: bool = False) -> str:
        if not isinstance(value, str):
            raise self.fail(where, f"is {_describe(value)}; it must be a string")
        if not empty and not value.strip():
            raise self.fail(where, "is empty")
        if len(value) > max_len:
            raise self.fail(where, f"is {len(value)} characters long; at most {max_len} are allowed")
        return value

    def integer(self, value: Any, where: str, *, low: int = 1, high: int = _INT_MAX, null: bool = False) -> int | None:
        if value is None and null:
            return None
        if not isinstance(value, int) or isinstance(value, bool):
            raise self.fail(where, f"is {_describe(value)}; it must be an integer {low}..{high}")
        if not low <= value <= high:
            raise self.fail(where, f"is {value}; it must be an integer {low}..{high}")
        return value

    def number(self, value: Any, where: str, *, positive: bool = True, null: bool = False) -> float | None:
        if value is None and null:
            return None
        what = "a positive number" if positive else "a number >= 0"
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
            raise self.fail(where, f"is {_describe(value)}; it must be {what}")
        if value < 0 or (positive and value == 0):
            raise self.fail(where, f"is {value!r}; it must be {what}")
        return float(value)


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    kind = {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "a list",
            dict: "an object"}.get(type(value), type(value).__name__)
    text = json.dumps(value) if isinstance(value, (bool, int, float, str)) else ""
    return f"{kind} {text[:40]}".strip() if text and not isinstance(value, bool) else kind


def _parse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def read_results(path: str | os.PathLike[str]) -> ResultsFile:
    """Read and validate a results file written by :func:`export_results`.

    Every entry is checked (types, positive figures, known kernel and dtype, macros that fit
    the kernel) before anything is returned.

    Raises:
        InvalidInputError: the file is missing, not JSON, not a results file, of another
            schema version, or an entry is invalid (the message names the entry index and
            field).
    """
    name = str(path)
    check = _Checker(name)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InvalidInputError(f"cannot read {name}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"cannot read {name}: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        document = json.loads(text, parse_constant=_parse_constant)
    except (ValueError, RecursionError) as exc:
        raise InvalidInputError(f"{name} is not valid JSON: {exc}") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        found = document.get("format") if isinstance(document, dict) else None
        raise InvalidInputError(
            f"{name} is not an autotune results file (format is {found!r}, expected {FORMAT!r})")
    version = document.get("schema_version")
    if version != SCHEMA_VERSION or isinstance(version, bool):
        shown = "no schema version" if version is None else f"schema version {json.dumps(version)}"
        raise InvalidInputError(f"{name} has {shown}; this autotune reads version {SCHEMA_VERSION}")
    exported_at = _moment(check, check.get(document, "exported_at", ""), "exported_at")
    autotune_version = check.string(check.get(document, "autotune_version", ""), "autotune_version",
                                    max_len=64)
    results = check.get(document, "results", "")
    if not isinstance(results, list):
        raise check.fail("results", f"is {_describe(results)}; it must be a list")
    hashes = {kernel.name: kernel.source_hash for kernel in KERNELS.values()}
    entries = tuple(_entry(check, item, f"results[{i}]", hashes) for i, item in enumerate(results))
    return ResultsFile(name, exported_at, autotune_version, entries)


def _moment(check: _Checker, value: Any, where: str) -> datetime:
    check.string(value, where, max_len=64)
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise check.fail(where, f"is {value!r}; it must be an ISO-8601 time") from None
    if moment.tzinfo is None:
        raise check.fail(where, f"is {value!r}, without a time zone; give UTC, e.g. {value}Z")
    return moment.astimezone(UTC)


def _entry(check: _Checker, item: Any, at: str, hashes: dict[str, str]) -> dict[str, Any]:
    """One validated entry (a new dict, ``tuned_at`` a datetime, ``config`` a :class:`Config`)."""
    item = check.obj(item, at)

    where = f"{at}.device"
    raw = check.obj(check.get(item, "device", at), where)
    device = {
        "name": check.string(check.get(raw, "name", where), f"{where}.name", max_len=255),
        "compute_capability": check.string(check.get(raw, "compute_capability", where),
                                           f"{where}.compute_capability", max_len=16),
        "sm_count": check.integer(check.get(raw, "sm_count", where), f"{where}.sm_count"),
        "total_memory": check.integer(check.get(raw, "total_memory", where), f"{where}.total_memory",
                                      high=_BIGINT_MAX),
        "driver_version": check.string(check.get(raw, "driver_version", where), f"{where}.driver_version",
                                       max_len=32),
        "cuda_version": check.string(check.get(raw, "cuda_version", where), f"{where}.cuda_version", max_len=32),
    }
    gpu_uuid = check.string(check.get(raw, "uuid", where), f"{where}.uuid", max_len=64, empty=True)

    where = f"{at}.kernel"
    raw = check.obj(check.get(item, "kernel", at), where)
    kernel_name = check.string(check.get(raw, "name", where), f"{where}.name", max_len=255)
    digest = check.string(check.get(raw, "source_hash", where), f"{where}.source_hash", max_len=64)
    try:
        kernel = get_kernel(kernel_name)
    except InvalidInputError as exc:
        raise check.fail(f"{where}.name", f"is not usable: {exc}") from None

    rows = check.integer(check.get(item, "rows", at), f"{at}.rows", high=MAX_DIM)
    cols = check.integer(check.get(item, "cols", at), f"{at}.cols", high=MAX_DIM)
    depth = check.integer(check.get(item, "depth", at, optional=True), f"{at}.depth", low=0, high=MAX_DIM,
                          null=True) or 0
    if (depth > 0) != (kernel.op == "matmul"):
        want = "K >= 1 of the product" if kernel.op == "matmul" else "0 (a transpose has no K)"
        raise check.fail(f"{at}.depth", f"is {depth}; kernel {kernel_name} needs {want}")
    dtype = check.string(check.get(item, "dtype", at), f"{at}.dtype", max_len=32)
    if dtype not in DTYPES:
        raise check.fail(f"{at}.dtype", f"is {dtype!r}; allowed: {', '.join(DTYPES)}")
    nvcc = check.string(check.get(item, "nvcc_version", at), f"{at}.nvcc_version", max_len=64)
    flags = check.string(check.get(item, "compile_flags", at), f"{at}.compile_flags", max_len=1024, empty=True)

    config = _config(check, check.get(item, "config", at), f"{at}.config", kernel_name, kernel,
                     current=hashes.get(kernel_name) == digest)

    where = f"{at}.measurement"
    raw = check.obj(check.get(item, "measurement", at), where)
    m: dict[str, Any] = {}
    for field in ("median_ms", "min_ms", "max_ms", "gbps"):
        m[field] = check.number(check.get(raw, field, where), f"{where}.{field}")
    m["pct_memcpy"] = check.number(check.get(raw, "pct_memcpy", where), f"{where}.pct_memcpy",
                                   null=kernel.op == "matmul")
    m["gflops"] = check.number(check.get(raw, "gflops", where, optional=True), f"{where}.gflops", null=True)
    m["pct_copy"] = check.number(check.get(raw, "pct_copy", where, optional=True), f"{where}.pct_copy", null=True)
    m["registers"] = check.integer(check.get(raw, "registers", where), f"{where}.registers", low=0)
    m["shared_bytes"] = check.integer(check.get(raw, "shared_bytes", where), f"{where}.shared_bytes", low=0)
    m["launches"] = check.integer(check.get(raw, "launches", where, optional=True), f"{where}.launches", null=True)
    if not m["min_ms"] <= m["median_ms"] <= m["max_ms"]:
        raise check.fail(where, f"has min_ms {m['min_ms']!r}, median_ms {m['median_ms']!r}, max_ms "
                                f"{m['max_ms']!r}; they must be in that order")

    def optional_number(field: str, positive: bool = True) -> float | None:
        return check.number(check.get(item, field, at, optional=True), f"{at}.{field}", positive=positive, null=True)

    l2_mode = check.get(item, "l2_mode", at, optional=True)
    if l2_mode is not None:
        check.string(l2_mode, f"{at}.l2_mode", max_len=16)
    return {
        "device": device, "gpu_uuid": gpu_uuid, "kernel": kernel_name, "source_hash": digest, "current": hashes.get(kernel_name) == digest,
        "rows": rows, "cols": cols, "depth": depth, "dtype": dtype, "nvcc_version": nvcc, "compile_flags": flags,
        "config": config, "measurement": m,
        "memcpy_gbps": optional_number("memcpy_gbps"), "copy_gbps": optional_number("copy_gbps"),
        "l2_mode": l2_mode,
        "pooled_median_ms": optional_number("pooled_median_ms"), "spread": optional_number("spread", False),
        "rounds": check.integer(check.get(item, "rounds", at, optional=True), f"{at}.rounds", null=True),
        "tie_group": _tie_group(check, check.get(item, "tie_group", at, optional=True), f"{at}.tie_group"),
        "tuned_at": _moment(check, check.get(item, "tuned_at", at), f"{at}.tuned_at"),
    }


def _config(check: _Checker, value: Any, where: str, name: str, kernel, *, current: bool) -> Config:
    """The entry's config. For the current source of a catalog kernel its macros must be
    exactly the kernel's tunables; for another source (tuned before the kernel changed) each
    macro must still be one the kernel knows (tunable or fixed)."""
    raw = check.obj(value, where)
    if not raw:
        raise check.fail(where, "is empty")
    for macro, v in raw.items():
        if not _MACRO_NAME.match(macro):
            raise check.fail(where, f"has the macro name {macro!r}; names are upper-case identifiers")
        if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v <= MAX_MACRO_VALUE:
            raise check.fail(f"{where}.{macro}", f"is {_describe(v)}; it must be an integer 0..{MAX_MACRO_VALUE}")
    config = Config.of(name, raw)
    if current:
        try:
            kernel.check(config)
        except InvalidInputError as exc:
            raise check.fail(where, f"does not fit kernel {name}: {exc}") from None
    else:
        known = set(kernel.defaults) | set(kernel.fixed)
        unknown = sorted(set(raw) - known)
        if unknown:
            raise check.fail(where, f"sets {', '.join(unknown)}, not a macro of kernel {name} "
                                    f"(it knows {', '.join(sorted(known))})")
    return config


def _tie_group(check: _Checker, value: Any, where: str) -> list[dict[str, Any]] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise check.fail(where, f"is {_describe(value)}; it must be a list or null")
    group = []
    for j, member in enumerate(value):
        at = f"{where}[{j}]"
        member = check.obj(member, at)
        item = {"config": check.string(check.get(member, "config", at), f"{at}.config", max_len=1024)}
        for field, positive in (("pooled_median_ms", True), ("spread", False)):
            if field in member:
                item[field] = check.number(member[field], f"{at}.{field}", positive=positive, null=True)
        group.append(item)
    return group


# ---------------------------------------------------------------------------------------------
# import


def import_results(store: Store, path: str | os.PathLike[str] | ResultsFile) -> ImportReport:
    """Import a results file (``path``, or a :class:`ResultsFile` already read by
    :func:`read_results`) into ``store``, in one transaction.

    Each entry not already stored (same key incl. device identity and source hash, same
    config) becomes a finished search (sampler ``import``, study ``import:<file name>``,
    started and finished at the entry's ``tuned_at``) with one ``ok`` trial, and the key's
    best when there is none or it is faster, carrying its re-timing figures.

    Raises:
        InvalidInputError: the file is invalid (see :func:`read_results`); nothing is written.
        StoreError: the database cannot be read or written; nothing is written.
    """
    loaded = path if isinstance(path, ResultsFile) else read_results(path)
    study = f"import:{Path(loaded.path).name}"[:1024]
    imported = skipped = stale = became_best = 0
    with store.session() as session:
        devices: dict[tuple, Device] = {}
        kernels: dict[tuple, Kernel] = {}
        for item in loaded.results:
            identity = item["device"]
            device = devices.get(tuple(identity.values()))
            if device is None:
                device = session.scalars(select(Device).filter_by(**identity)).one_or_none() or Device(**identity)
                session.add(device)
                devices[tuple(identity.values())] = device
            kernel_key = (item["kernel"], item["source_hash"])
            kernel = kernels.get(kernel_key)
            if kernel is None:
                kernel = session.scalars(select(Kernel).filter_by(name=item["kernel"], source_hash=item["source_hash"])
                                         ).one_or_none() or Kernel(name=item["kernel"], source_hash=item["source_hash"])
                session.add(kernel)
                kernels[kernel_key] = kernel
            session.flush()
            shape = {"rows": item["rows"], "cols": item["cols"], "depth": item["depth"], "dtype": item["dtype"],
                     "nvcc_version": item["nvcc_version"], "compile_flags": item["compile_flags"]}
            config: Config = item["config"]
            duplicate = session.scalars(
                select(Trial.id).join(Search, Trial.search_id == Search.id)
                .where(Search.device_id == device.id, Search.kernel_id == kernel.id,
                       *(getattr(Search, k) == v for k, v in shape.items()),
                       Trial.status == "ok", Trial.config_key == config.key).limit(1)).first()
            if duplicate is not None:
                skipped += 1
                continue
            tuned_at: datetime = item["tuned_at"]
            search = Search(device=device, kernel=kernel, **shape, study_name=study, sampler=SAMPLER, seed=None,
                            memcpy_gbps=item["memcpy_gbps"], copy_gbps=item["copy_gbps"], l2_mode=item["l2_mode"],
                            started_at=tuned_at, finished_at=tuned_at, status="finished",
                            gpu_uuid=item["gpu_uuid"])
            trial = Trial(search=search, number=0, config_key=config.key, macros=config.as_dict(), status="ok",
                          reason=None, created_at=tuned_at, **item["measurement"])
            session.add_all([search, trial])
            session.flush()
            retiming = {"pooled_median_ms": item["pooled_median_ms"], "spread": item["spread"],
                        "rounds": item["rounds"], "tie_group": item["tie_group"]}
            best = session.scalars(select(Best).filter_by(device_id=device.id, kernel_id=kernel.id, **shape)
                                   ).one_or_none()
            if best is None:
                session.add(Best(device_id=device.id, kernel_id=kernel.id, **shape, trial=trial,
                                 updated_at=tuned_at, **retiming))
                became_best += 1
            elif trial.gbps > best.trial.gbps:
                best.trial = trial
                best.updated_at = tuned_at
                for field, value in retiming.items():
                    setattr(best, field, value)
                became_best += 1
            session.flush()
            imported += 1
            stale += not item["current"]
    return ImportReport(imported=imported, skipped=skipped, stale=stale, best=became_best)
