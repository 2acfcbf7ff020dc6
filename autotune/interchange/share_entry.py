"""Checking one entry of a results file (:mod:`autotune.interchange.share`): every field, with a
message naming the file, the entry and the field; version-1 entries (rows, cols, depth) are
converted to named dims by the 0.1 rule."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, overload

from autotune.errors import InvalidInputError
from autotune.kernel.config import Config
from autotune.kernel.dtypes import DTYPES
from autotune.kernel.space import MAX_MACRO_VALUE
from autotune.kernel.dims import MAX_DIM
from autotune.kernel.problem import ProblemKey
from autotune.measure.device import DeviceInfo
from autotune.store.key import Dims, TuningKey, dims_key, parse_dims_key
from autotune.store.records import ImportedResult

__all__ = ["Checker", "Legacy", "check_entry", "moment"]

INT_MAX = 2**31 - 1  # Integer columns
BIGINT_MAX = 2**63 - 1  # BigInteger columns
_MACRO_NAME = re.compile(r"[A-Z_][A-Z0-9_]*\Z")
_DIM_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


@dataclass(frozen=True)
class Legacy:
    """What version-1 files need: the spec hash of each catalog kernel's 0.1 description, and the
    0.1 kernels whose rows, cols, depth were M, N, K."""

    spec_hashes: Mapping[str, str]
    matmul: tuple[str, ...]

    def dims(self, kernel: str, rows: int, cols: int, depth: int) -> Dims:
        """The 0.1 rule: ``m, n, k`` for the 0.1 matrix products, else ``rows, cols``."""
        return (("m", rows), ("n", cols), ("k", depth)) if kernel in self.matmul else (("rows", rows), ("cols", cols))


class Checker:
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
            raise self.fail(where, f"is {describe(value)}; it must be an object")
        return value

    def string(self, value: Any, where: str, *, max_len: int, empty: bool = False) -> str:
        if not isinstance(value, str):
            raise self.fail(where, f"is {describe(value)}; it must be a string")
        if not empty and not value.strip():
            raise self.fail(where, "is empty")
        if len(value) > max_len:
            raise self.fail(where, f"is {len(value)} characters long; at most {max_len} are allowed")
        return value

    @overload
    def integer(self, value: Any, where: str, *, low: int = 1, high: int = INT_MAX, null: Literal[False] = False
                ) -> int: ...

    @overload
    def integer(self, value: Any, where: str, *, low: int = 1, high: int = INT_MAX, null: bool) -> int | None: ...

    def integer(self, value: Any, where: str, *, low: int = 1, high: int = INT_MAX, null: bool = False) -> int | None:
        if value is None and null:
            return None
        if not isinstance(value, int) or isinstance(value, bool):
            raise self.fail(where, f"is {describe(value)}; it must be an integer {low}..{high}")
        if not low <= value <= high:
            raise self.fail(where, f"is {value}; it must be an integer {low}..{high}")
        return value

    def number(self, value: Any, where: str, *, positive: bool = True, null: bool = False) -> float | None:
        if value is None and null:
            return None
        what = "a positive number" if positive else "a number >= 0"
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
            raise self.fail(where, f"is {describe(value)}; it must be {what}")
        if value < 0 or (positive and value == 0):
            raise self.fail(where, f"is {value!r}; it must be {what}")
        return float(value)


def describe(value: Any) -> str:
    """``a string "x"``, ``an integer 3``, ``null``, ... for messages."""
    if value is None:
        return "null"
    kind = {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "a list",
            dict: "an object"}.get(type(value), type(value).__name__)
    text = json.dumps(value) if isinstance(value, (bool, int, float, str)) else ""
    return f"{kind} {text[:40]}".strip() if text and not isinstance(value, bool) else kind


def moment(check: Checker, value: Any, where: str) -> datetime:
    """An ISO-8601 time with a zone, as aware UTC."""
    check.string(value, where, max_len=64)
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise check.fail(where, f"is {value!r}; it must be an ISO-8601 time") from None
    if parsed.tzinfo is None:
        raise check.fail(where, f"is {value!r}, without a time zone; give UTC, e.g. {value}Z")
    try:
        return parsed.astimezone(UTC)
    except OverflowError:  # 9999-12-31T23:59:59-23:59 is in year 10000 in UTC
        raise check.fail(where, f"is {value!r}, out of range once in UTC; give a time of years 1..9999 "
                                "in UTC") from None


def check_entry(check: Checker, item: Any, at: str, version: int, kernels: Mapping[str, Any],
                legacy: Legacy) -> tuple[ImportedResult, Any]:
    """One validated entry of a file of schema ``version`` and the current kernel of its name.

    ``kernels``: the kernels this machine knows by name (the catalog and kernel files given);
    an entry of another name is refused. An entry whose source and spec hashes are the
    kernel's must fit it exactly (dims names, macros); one of another source or description
    (tuned before the kernel changed) must only name macros the kernel knows.
    """
    item = check.obj(item, at)

    where = f"{at}.device"
    raw = check.obj(check.get(item, "device", at), where)
    device = DeviceInfo(
        name=check.string(check.get(raw, "name", where), f"{where}.name", max_len=255),
        compute_capability=check.string(check.get(raw, "compute_capability", where),
                                        f"{where}.compute_capability", max_len=16),
        sm_count=check.integer(check.get(raw, "sm_count", where), f"{where}.sm_count"),
        total_memory=check.integer(check.get(raw, "total_memory", where), f"{where}.total_memory",
                                   high=BIGINT_MAX),
        driver_version=check.string(check.get(raw, "driver_version", where), f"{where}.driver_version",
                                    max_len=32),
        cuda_version=check.string(check.get(raw, "cuda_version", where), f"{where}.cuda_version", max_len=32),
    )
    gpu_uuid = check.string(check.get(raw, "uuid", where), f"{where}.uuid", max_len=64, empty=True)

    where = f"{at}.kernel"
    raw = check.obj(check.get(item, "kernel", at), where)
    name = check.string(check.get(raw, "name", where), f"{where}.name", max_len=255)
    source = check.string(check.get(raw, "source_hash", where), f"{where}.source_hash", max_len=64)
    if name not in kernels:
        raise check.fail(f"{where}.name", f"is not usable: unknown kernel {name!r}; allowed: the catalog's "
                                          "kernels, or a kernel whose file is given with --kernel")
    kernel = kernels[name]
    if version == 1:
        spec = legacy.spec_hashes.get(name, "")
        dims = _v1_dims(check, item, at, name, legacy)
    else:
        spec = check.string(check.get(raw, "spec_hash", where), f"{where}.spec_hash", max_len=64, empty=True)
        dims = _dims(check, check.get(item, "dims", at), f"{at}.dims")
    current = (source, spec) == (kernel.source_hash, kernel.spec_hash)
    if current and tuple(n for n, _ in dims) != tuple(kernel.dims):
        raise check.fail(f"{at}.dims", f"is {dims_key(dims)!r}; kernel {name} has the dims {', '.join(kernel.dims)}")
    dtype = check.string(check.get(item, "dtype", at), f"{at}.dtype", max_len=32)
    if dtype not in DTYPES:
        raise check.fail(f"{at}.dtype", f"is {dtype!r}; allowed: {', '.join(DTYPES)}")
    nvcc = check.string(check.get(item, "nvcc_version", at), f"{at}.nvcc_version", max_len=64)
    flags = check.string(check.get(item, "compile_flags", at), f"{at}.compile_flags", max_len=1024, empty=True)
    config = _config(check, check.get(item, "config", at), f"{at}.config", name, kernel, current=current)
    m = _measurement(check, check.obj(check.get(item, "measurement", at), f"{at}.measurement"),
                     f"{at}.measurement", version, v1_product=name in legacy.matmul)

    def optional_number(field: str, positive: bool = True) -> float | None:
        return check.number(check.get(item, field, at, optional=True), f"{at}.{field}", positive=positive, null=True)

    l2_mode = check.get(item, "l2_mode", at, optional=True)
    if l2_mode is not None:
        check.string(l2_mode, f"{at}.l2_mode", max_len=16)
    tie_group = _tie_group(check, check.get(item, "tie_group", at, optional=True), f"{at}.tie_group")
    key = TuningKey(device, ProblemKey(name, source, spec, dims, dtype), nvcc, flags)
    result = ImportedResult(
        key=key, gpu_uuid=gpu_uuid, config=config, measurement=m,
        memcpy_gbps=optional_number("memcpy_gbps"), copy_gbps=optional_number("copy_gbps"), l2_mode=l2_mode,
        pooled_median_ms=optional_number("pooled_median_ms"), spread=optional_number("spread", False),
        rounds=check.integer(check.get(item, "rounds", at, optional=True), f"{at}.rounds", null=True),
        tie_group=None if tie_group is None else tuple(tie_group),
        tuned_at=moment(check, check.get(item, "tuned_at", at), f"{at}.tuned_at"),
        certificate=_certificate(check, check.get(item, "certificate", at, optional=True), f"{at}.certificate"),
    )
    return result, kernel


def _certificate(check: Checker, value: Any, where: str) -> dict[str, Any] | None:
    """The final re-timing's certificate (``autotune best`` shows it): an object with a
    ``winner`` object, or ``None``."""
    if value is None:
        return None
    cert = check.obj(value, where)
    check.obj(check.get(cert, "winner", where), f"{where}.winner")
    return cert


def _v1_dims(check: Checker, item: dict, at: str, name: str, legacy: Legacy) -> Dims:
    rows = check.integer(check.get(item, "rows", at), f"{at}.rows", high=MAX_DIM)
    cols = check.integer(check.get(item, "cols", at), f"{at}.cols", high=MAX_DIM)
    depth = check.integer(check.get(item, "depth", at, optional=True), f"{at}.depth", low=0, high=MAX_DIM,
                          null=True) or 0
    product = name in legacy.matmul
    if (depth > 0) != product:
        want = "K >= 1 of the product" if product else "0 (a transpose has no K)"
        raise check.fail(f"{at}.depth", f"is {depth}; kernel {name} needs {want}")
    return legacy.dims(name, rows, cols, depth)


def _dims(check: Checker, value: Any, where: str) -> Dims:
    text = check.string(value, where, max_len=1024)
    try:
        dims = parse_dims_key(text)
        if (any(not _DIM_NAME.match(name) or value < 1 for name, value in dims)
                or len({name for name, _ in dims}) != len(dims)):
            raise ValueError(text)
    except ValueError:
        raise check.fail(where, f"is {text!r}; it must be NAME=VALUE pairs joined by commas, e.g. "
                                "'rows=8192,cols=8192' (integers >= 1, each name once)") from None
    for name, value_ in dims:
        if value_ > MAX_DIM:
            raise check.fail(where, f"has {name}={value_}; values are integers 1..{MAX_DIM}")
    return dims


def _measurement(check: Checker, raw: dict, where: str, version: int, *, v1_product: bool) -> dict[str, Any]:
    """The trial's measured columns. Version 1: GB/s required, % of memcpy too except for the 0.1
    products; version 2: both optional (a kernel may have no bytes objective)."""
    m: dict[str, Any] = {}
    for field in ("median_ms", "min_ms", "max_ms"):
        m[field] = check.number(check.get(raw, field, where), f"{where}.{field}")
    v2 = version >= 2
    m["gbps"] = check.number(check.get(raw, "gbps", where, optional=v2), f"{where}.gbps", null=v2)
    m["pct_memcpy"] = check.number(check.get(raw, "pct_memcpy", where, optional=v2), f"{where}.pct_memcpy",
                                   null=v2 or v1_product)
    for field in ("gflops", "pct_copy"):
        m[field] = check.number(check.get(raw, field, where, optional=True), f"{where}.{field}", null=True)
    m["registers"] = check.integer(check.get(raw, "registers", where), f"{where}.registers", low=0)
    m["shared_bytes"] = check.integer(check.get(raw, "shared_bytes", where), f"{where}.shared_bytes", low=0)
    m["launches"] = check.integer(check.get(raw, "launches", where, optional=True), f"{where}.launches", null=True)
    m["samples"] = check.integer(check.get(raw, "samples", where, optional=True), f"{where}.samples", null=True)
    for field in ("ci_low_ms", "ci_high_ms", "energy_j"):  # certified timing and energy (schema 0009): optional
        m[field] = check.number(check.get(raw, field, where, optional=True), f"{where}.{field}", null=True)
    if not m["min_ms"] <= m["median_ms"] <= m["max_ms"]:
        raise check.fail(where, f"has min_ms {m['min_ms']!r}, median_ms {m['median_ms']!r}, max_ms "
                                f"{m['max_ms']!r}; they must be in that order")
    return m


def _config(check: Checker, value: Any, where: str, name: str, kernel, *, current: bool) -> Config:
    """The entry's config. For the kernel's current source and description its macros must be
    exactly the kernel's tunables; for another (tuned before the kernel changed) each macro must
    still be one the kernel knows (tunable or fixed)."""
    raw = check.obj(value, where)
    if not raw:
        raise check.fail(where, "is empty")
    for macro, v in raw.items():
        if not _MACRO_NAME.match(macro):
            raise check.fail(where, f"has the macro name {macro!r}; names are upper-case identifiers")
        if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v <= MAX_MACRO_VALUE:
            raise check.fail(f"{where}.{macro}", f"is {describe(v)}; it must be an integer 0..{MAX_MACRO_VALUE}")
    config = Config.of(name, raw)
    if current:
        try:
            kernel.check(config)
        except InvalidInputError as exc:
            raise check.fail(where, f"does not fit kernel {name}: {exc}") from None
    else:
        known = set(kernel.tunables) | set(kernel.fixed)
        unknown = sorted(set(raw) - known)
        if unknown:
            raise check.fail(where, f"sets {', '.join(unknown)}, not a macro of kernel {name} "
                                    f"(it knows {', '.join(sorted(known))})")
    return config


def _tie_group(check: Checker, value: Any, where: str) -> list[dict[str, Any]] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise check.fail(where, f"is {describe(value)}; it must be a list or null")
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
