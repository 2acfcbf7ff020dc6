"""Moving tuned results between machines: ``autotune export`` and ``autotune import``.

The file is JSON::

    {"format": "autotune-results", "schema_version": 2, "exported_at": "2026-11-23T10:00:00.000000Z",
     "autotune_version": "0.1.0", "results": [ {...}, ... ]}

with one entry per stored best (:meth:`autotune.store.repository.Store.find_best`), carrying its
whole key and provenance: device model and the UUID of the GPU that measured it, kernel name,
source hash and spec hash, ``dims`` (the text form ``"rows=8192,cols=8192"``, the kernel's
declared order), dtype, nvcc version, compile flags; the config, the measurement (``gbps`` and
``gflops`` null where the kernel has no such objective), the search's memcpy and copy bounds,
the re-timing figures and when it was tuned (see :func:`entry`).

Version 1 (autotune 0.1) files still import: their ``rows``, ``cols`` and ``depth`` become named
dims by the 0.1 rule (matmul_naive, matmul_tiled, matmul_reg: ``m, n, k``; the others ``rows,
cols``), and their kernels get the spec hash of their 0.1 description (:data:`SPEC_HASHES_0_1`).

Export writes the results that are current by :mod:`autotune.store.stale` (those of kernels this
machine does not know are written unchecked); ``include_stale`` writes the stale ones too.

An import reads and validates the whole file before it writes anything, then records every
entry in one transaction through :meth:`~autotune.store.repository.Store.add_imported`: a finished
search of sampler ``import`` with one ``ok`` trial, which becomes the key's best when there is
none or it is faster. An entry whose key already has an ``ok`` trial of the same config is
skipped as a duplicate. Results of other devices or older kernels are imported as they are:
:func:`autotune.lookup` uses only current ones.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


from autotune.base.files import read_text, write_atomically
from autotune.errors import InvalidInputError, NotTunedError, nothing_tuned
from autotune.kernel.catalog import KERNELS
from autotune.store import queries, stale
from autotune.store.key import Dims
from autotune.store.records import BestRecord, ImportedResult
from autotune.store.repository import Store
from autotune.interchange.share_entry import Checker, Legacy, check_entry, describe, moment

__all__ = ["FORMAT", "SCHEMA_VERSION", "SPEC_HASHES_0_1", "MATMUL_0_1", "ImportReport", "ExportReport",
           "ResultsFile", "export_results", "read_results", "results_of", "load_document", "import_results", "entry"]

FORMAT = "autotune-results"
"""The ``format`` name of an export file."""
SCHEMA_VERSION = 2
"""The version of the file layout this autotune writes; it reads 1 and 2."""
READABLE = (1, 2)

SAMPLER = "import"
"""``sampler`` of the search rows an import creates."""

# A literal copy of migrations/versions/0006_named_dims_and_spec_hash.py's table (a migration
# imports no live code); tests/store/test_schema_migrations.py checks both are equal and equal to the catalog.
SPEC_HASHES_0_1 = {
    "copy_row": "63f5973173acba02fafb68ebfa01f4b2ed9c77a5e0a136138b25316cb0ad262f",
    "copy_col": "8d61b1cb96fa894cf804e36bb5bc8470819e560f7aa4204b23edca3c1c75dbf6",
    "naive_row": "126be7790a37738c80cb718c94dcaa018c8b4bf6c16c1f5f6782b942d1747ea0",
    "naive_col": "6a38295c3a3f9b612aa1d9ce1ef7271dbad83a7b96bf3116dcdd7ae84c09e19f",
    "unroll_row": "3b2c799a83ce1ff2994ed27a31f2b4315b81d6ea21ccc6459236ac6ab2873f9d",
    "unroll_col": "0771aa065c877cd91035d34b00f0f819bbb6de0c6f0f657b8f152260402f8d42",
    "diagonal_row": "a0b86018beb1d4819a309ce6fcaf18ce9297b11f92b71236f53fc1e691b301e5",
    "diagonal_col": "4a5aab626b0520644083d1093b0ecaae1d0321da50ab05ca8a295e21803700ef",
    "smem": "80e121e6a615bebf86b5b281dd69d936c0961d79b5abd9bcd656b8390b0a1cfa",
    "smem_pad": "b51d6dc09efa2551f925c7df3eb261c1250ebf88617b6aa0997902845debc9ac",
    "smem_unroll_pad": "4f4992827f4975f92e7f295cb732408d1d1c8a3e0c52eca1e4697d95f6580a8e",
    "smem_vec": "29cdf285fb637631b710e234a5de22bef5895ff15dd70e386113d70a8da95ec9",
    "matmul_naive": "474a73bf3ce84f92723ec83068773353443259a23b65c25ca9334864e3126805",
    "matmul_tiled": "a7156bf3ad2b6ba9bab2f275036ef96865b9097b57805dcb422738bb1e975f05",
    "matmul_reg": "e1eaf6785d6024cad1ad958d2d5ba96317a8100e45ea5b3c04d0885189b0a330",
}
"""Spec hash of each catalog kernel's 0.1 description: the spec hash of version-1 entries."""
MATMUL_0_1 = ("matmul_naive", "matmul_tiled", "matmul_reg")
"""The 0.1 kernels whose ``rows, cols, depth`` were ``M, N, K``."""


@dataclass(frozen=True)
class ImportReport:
    """What an import did.

    Attributes:
        imported: entries recorded.
        skipped: entries skipped because the same result (key and config) was already stored.
        stale: of the imported entries, those stale for this machine's kernels
            (:func:`autotune.store.stale.stale_reason`; nvcc is not compared): kept, but
            :func:`autotune.lookup` does not use them.
        best: of the imported entries, those that became their key's best.
        searches: the study name of the searches it recorded, ``import:<file name>``
            (:func:`autotune.store.study_labels.make_import_studies` makes their Optuna studies).
    """

    imported: int
    skipped: int
    stale: int
    best: int = 0
    searches: str = ""


@dataclass(frozen=True)
class ExportReport:
    """What an export wrote: ``exported`` entries (``unchecked`` of them of kernels this machine
    does not know, so their staleness could not be judged) and ``stale`` ones left out (each
    reason counted in ``stale_note``, e.g. ``"2 stale results (2 kernel source changed)"``;
    ``reasons``: each one's)."""

    exported: int
    stale: int = 0
    unchecked: int = 0
    stale_note: str = ""
    reasons: tuple[str, ...] = ()
    """Why each stale result left out is stale (:func:`autotune.store.stale.left_out` says them)."""


@dataclass(frozen=True)
class ResultsFile:
    """A results file read and validated by :func:`read_results`: one :class:`ImportedResult` per
    entry, in file order, and ``stale[i]``, whether entry ``i`` is stale for this machine's kernel."""

    path: str
    schema_version: int
    exported_at: datetime
    autotune_version: str
    results: tuple[ImportedResult, ...]
    stale: tuple[bool, ...] = ()


# ---------------------------------------------------------------------------------------------
# export


def _iso(at: datetime) -> str:
    return at.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def entry(record: BestRecord, *, total_memory: int, tie_group: list[dict[str, Any]] | None,
          launches: int | None, l2_mode: str | None) -> dict[str, Any]:
    """The JSON entry of one stored best (the figures :class:`BestRecord` lacks are passed in)."""
    return {
        "device": {
            "name": record.device_name, "compute_capability": record.compute_capability,
            "sm_count": record.sm_count, "total_memory": total_memory, "driver_version": record.driver_version,
            "cuda_version": record.cuda_version, "uuid": record.device_uuid,
        },
        "kernel": {"name": record.kernel, "source_hash": record.source_hash, "spec_hash": record.spec_hash},
        "dims": record.dims_key, "dtype": record.dtype,
        "nvcc_version": record.nvcc_version, "compile_flags": record.compile_flags,
        "config": record.config.as_dict(),
        "measurement": {
            "median_ms": record.median_ms, "min_ms": record.min_ms, "max_ms": record.max_ms,
            "gbps": record.gbps, "gflops": record.gflops, "pct_memcpy": record.pct_memcpy, "pct_copy": record.pct_copy,
            "registers": record.registers, "shared_bytes": record.shared_bytes, "launches": launches,
            "samples": record.samples, "ci_low_ms": record.ci_low_ms, "ci_high_ms": record.ci_high_ms,
            "energy_j": record.energy_j,
        },
        "memcpy_gbps": record.memcpy_gbps, "copy_gbps": record.copy_gbps, "l2_mode": l2_mode,
        "pooled_median_ms": record.pooled_median_ms, "spread": record.spread, "rounds": record.rounds,
        "tie_group": tie_group, "certificate": record.certificate,
        "tuned_at": _iso(record.updated_at),
    }


def known_kernels(extra: Iterable[Any] = ()) -> dict[str, Any]:
    """The kernels this machine knows by name: the catalog's, and ``extra`` (kernels loaded from
    their files, which win over a catalog kernel of the same name)."""
    return {**KERNELS, **{k.name: k for k in extra}}


def export_results(store: Store, path: str | os.PathLike[str], *, kernel: Any = None,
                   dims: Mapping[str, int] | Dims | str | list | None = None, device_name: str | None = None,
                   include_stale: bool = False, nvcc_version: str | None = None,
                   empty: bool = True) -> ExportReport:
    """Write the stored bests (of ``kernel``: a catalog name or a Kernel object; of exactly
    ``dims``, or of any of a list of dims; of devices whose name contains ``device_name``,
    case-insensitive) to the JSON file ``path``. Stale ones (:mod:`autotune.store.stale`, against
    ``nvcc_version`` where given) are left out unless ``include_stale``.

    The file is written to a temporary file beside ``path`` and renamed over it, so ``path``
    is either the old file or the whole new one, never half written. ``empty`` false: where
    nothing is chosen, nothing is written and :class:`NotTunedError` is raised (the command line).

    Raises:
        InvalidInputError: unknown kernel, or ``path`` cannot be written.
        NotTunedError: nothing to write, and ``empty`` is false.
        StoreError: the database cannot be read.
    """
    from autotune import __version__
    from autotune.kernel.catalog import get_kernel

    k = get_kernel(kernel) if isinstance(kernel, str) else kernel  # refuses an unknown name
    kernels = known_kernels([k] if k is not None and not isinstance(kernel, str) else [])
    records = [r for one in (dims if isinstance(dims, list) else [dims])
               for r in store.find_best(kernel=None if k is None else k.name, dims=one, device_name=device_name)]
    judged = stale.partition(records, kernels, nvcc_version)
    chosen = [v.record for v in judged.verdicts if include_stale or v.reason is None]
    reasons, unchecked = judged.reasons, len(judged.unknown)
    if not chosen and not empty:
        if not records and kernel is None and dims in (None, [None]) and device_name is None:
            raise NotTunedError(f"{nothing_tuned()}; nothing written")
        left = f" ({stale.summary(reasons)}: --include-stale writes them)" if reasons else ""
        raise NotTunedError(f"{nothing_tuned('those filters', 'autotune list')}{left}; nothing written")
    results = []
    for record, details in zip(chosen, queries.export_details(store, chosen)):
        tie_group = details.tie_group
        if tie_group is None and record.tie_group:
            tie_group = [{"config": key} for key in record.tie_group]
        results.append(entry(record, total_memory=details.total_memory, tie_group=tie_group,
                             launches=details.launches, l2_mode=details.l2_mode))
    document = {"format": FORMAT, "schema_version": SCHEMA_VERSION, "exported_at": _iso(datetime.now(UTC)),
                "autotune_version": __version__, "results": results}
    try:
        text = json.dumps(document, indent=1, allow_nan=False) + "\n"
    except ValueError as exc:  # a NaN or infinity in the database
        raise InvalidInputError(f"cannot export: the database holds a value JSON cannot carry ({exc})") from None
    write_atomically(path, text, "results file")
    left = () if include_stale else tuple(reasons)
    return ExportReport(len(results), len(left), unchecked, stale.summary(left), left)


# ---------------------------------------------------------------------------------------------
# reading and validating


def _parse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def load_document(path: str | os.PathLike[str]) -> Any:
    """The JSON document of the file ``path`` to import, read once through the one reader of
    users' files (:func:`autotune.base.files.read_text`: a regular file of at most 16 MiB, UTF-8;
    a folder, device, FIFO or larger file is refused before it is read). ``NaN`` and
    ``Infinity`` are refused: they are not JSON.

    Raises:
        InvalidInputError: unreadable, too large, not UTF-8, or not JSON (naming the file).
    """
    text = read_text(path, "")
    try:
        return json.loads(text, parse_constant=_parse_constant)
    except (ValueError, RecursionError) as exc:
        raise InvalidInputError(f"{path} is not valid JSON: {str(exc)[:200]}; nothing was imported") from None


def read_results(path: str | os.PathLike[str], kernels: Iterable[Any] = ()) -> ResultsFile:
    """Read and validate a results file written by :func:`export_results` (schema version 1 or 2).

    Every entry is checked (types, positive figures, a known kernel, dims and macros that fit
    it, dtype) before anything is returned. ``kernels``: Kernel objects besides the catalog's
    (users' kernels loaded from their files) whose entries may be imported.

    Raises:
        InvalidInputError: the file is missing, not JSON, not a results file, of a schema
            version this autotune does not read, or an entry is invalid (the message names the
            entry index and field).
    """
    return results_of(str(path), load_document(path), kernels)


def results_of(name: str, document: Any, kernels: Iterable[Any] = ()) -> ResultsFile:
    """The :class:`ResultsFile` of ``document`` (the parsed JSON of the file ``name``), validated
    as :func:`read_results` says.

    Raises:
        InvalidInputError: as :func:`read_results`.
    """
    check = Checker(name)
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        found = document.get("format") if isinstance(document, dict) else None
        raise InvalidInputError(
            f"{name} is not an autotune results file (format is {_short(found)}, expected {FORMAT!r}) nor a "
            "T4 file; nothing was imported")
    version = document.get("schema_version")
    if version not in READABLE or isinstance(version, bool):
        shown = "no schema version" if version is None else f"schema version {json.dumps(version)[:40]}"
        raise InvalidInputError(f"{name} has {shown}; this autotune reads versions "
                                f"{', '.join(map(str, READABLE))}; nothing was imported")
    exported_at = moment(check, check.get(document, "exported_at", ""), "exported_at")
    autotune_version = check.string(check.get(document, "autotune_version", ""), "autotune_version",
                                    max_len=64)
    results = check.get(document, "results", "")
    if not isinstance(results, list):
        raise check.fail("results", f"is {describe(results)}; it must be a list")
    known, legacy = known_kernels(kernels), Legacy(SPEC_HASHES_0_1, MATMUL_0_1)
    checked = [check_entry(check, item, f"results[{i}]", version, known, legacy) for i, item in enumerate(results)]
    flags = tuple(stale.stale_reason(r, k, None) is not None for r, k in checked)
    return ResultsFile(name, version, exported_at, autotune_version, tuple(r for r, _ in checked), flags)


# ---------------------------------------------------------------------------------------------
# import


def import_results(store: Store, path: str | os.PathLike[str] | ResultsFile,
                   kernels: Iterable[Any] = ()) -> ImportReport:
    """Import a results file (``path``, or a :class:`ResultsFile` already read by
    :func:`read_results`; ``kernels`` as there) into ``store``, in one transaction.

    Each entry not already stored (same key incl. device identity and hashes, same config)
    becomes a finished search (sampler ``import``, study ``import:<file name>``, started and
    finished at the entry's ``tuned_at``) with one ``ok`` trial, and the key's best when there
    is none or it is faster, carrying its re-timing figures.

    Raises:
        InvalidInputError: the file is invalid (see :func:`read_results`); nothing is written.
        StoreError: the database cannot be read or written; nothing is written.
    """
    loaded = path if isinstance(path, ResultsFile) else read_results(path, kernels)
    study = f"import:{Path(loaded.path).name}"[:1024]
    outcomes = store.add_imported(loaded.results, study_name=study, sampler=SAMPLER)
    stale_count = sum(flag for flag, outcome in zip(loaded.stale, outcomes) if outcome != "duplicate")
    skipped = sum(outcome == "duplicate" for outcome in outcomes)
    best = sum(outcome == "best" for outcome in outcomes)
    return ImportReport(imported=len(outcomes) - skipped, skipped=skipped, stale=stale_count, best=best,
                        searches=study)
