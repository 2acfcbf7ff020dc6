"""A deployment bundle's file, ``DIR/bundle.json``: its format, and reading it, checked whole.

``autotune export NAME --bundle DIR`` writes it (``autotune.report.bundle``): per problem
(kernel, dims, dtype) the config :func:`autotune.lookup` picked when it was written, with its
rung, and the provenance every config was chosen under: the device model (name, compute
capability, SMs, memory), its driver and CUDA versions, nvcc and the compile flags, and each
kernel's source and spec hashes.

Reading it (:func:`read_bundle`) checks it whole, and refuses with one line naming the file
and what is wrong: not found, not JSON (truncated, corrupt, or holding ``NaN`` or ``Infinity``,
which JSON does not allow), not a bundle, another format version, a malformed entry. A bundle
is input, not trusted code: its strings (the device's name, ``created``, nvcc's version...) are
kept inert, every character that is not printable (a terminal escape) written as its escape
(``\x1b``), so that printing them moves no cursor. Whether it may be used where it runs is
``autotune.runtime.bundle``'s.
"""

from __future__ import annotations

import json
import math
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autotune.base import caches
from autotune.dispatch import Dispatch
from autotune.dispatch.codec import from_json
from autotune.errors import InvalidInputError
from autotune.kernel.dims import Dims, make_dims
from autotune.kernel.problem import ProblemFields, ProblemKey
from autotune.measure.device import DeviceInfo

__all__ = ["FORMAT", "VERSION", "FILE", "BundleError", "BundleEntry", "Bundle", "read_bundle"]

FORMAT = "autotune-bundle"
"""The ``format`` field of every bundle."""
VERSION = 1
"""The bundle format this autotune writes and reads."""
FILE = "bundle.json"
"""The bundle's file in its folder."""

_DEVICE = ("name", "compute_capability", "sm_count", "total_memory", "driver_version", "cuda_version")
_lock = threading.Lock()
_read: dict[tuple, Bundle] = {}


class BundleError(InvalidInputError):
    """A bundle that cannot be read or used here: one line naming the file and what is wrong."""


@dataclass(frozen=True)
class BundleEntry(ProblemFields):
    """One problem's config in a bundle: the problem (``problem_key``: the kernel's name and
    hashes, dims, dtype and where the kernel was found, each read through it), the config's
    macros, the rung it was chosen at, and the figures it was exported with (ms); ``certificate``:
    the winner's certificate where the bundle holds one (the store's
    ``autotune_best.certificate``: ``level``, ``tied``, ``tie_group``, ``winner`` and
    ``runner_up`` with their pooled ms, 95 % CI and rounds, the paired ratio and its CI; plus
    ``samples``, the winner trial's timed samples), else ``None`` (an optional field of version 1:
    bundles written before it have none)."""

    problem_key: ProblemKey
    macros: dict[str, int]
    rung: str
    median_ms: float | None = None
    default_ms: float | None = None
    tuned_ms: float | None = None
    certificate: Mapping[str, Any] | None = field(default=None, compare=False, hash=False)


@dataclass(frozen=True)
class Bundle:
    """A bundle read and checked (module doc): where it is, the workload, the device model
    and toolchain it was made for, and its entries by ``(kernel, dims, dtype)``."""

    path: Path
    workload: str
    device: DeviceInfo
    nvcc_version: str
    compile_flags: str
    created: str
    entries: dict[tuple, BundleEntry] = field(default_factory=dict)
    dispatches: dict[tuple[str, str], Dispatch] = field(default_factory=dict)
    _checked: set[str] = field(default_factory=set, compare=False, repr=False)  # kernels whose entries passed

    def entry(self, kernel: str, dims: Dims, dtype: str) -> BundleEntry | None:
        return self.entries.get((kernel, dims, dtype))

    def kernels(self) -> dict[str, tuple[str, str]]:
        """Each kernel's ``(source_hash, spec_hash)`` in the bundle."""
        return {e.kernel: (e.source_hash, e.spec_hash) for e in self.entries.values()}


def _file(path: str | os.PathLike[str]) -> Path:
    p = Path(path).expanduser()
    return p / FILE if p.is_dir() or not p.suffix else p


def read_bundle(path: str | os.PathLike[str]) -> Bundle:
    """The bundle at ``path`` (its folder or its ``bundle.json``), read and checked once per
    process while the file is unchanged.

    Raises:
        BundleError: not found, unreadable, not JSON (truncated or corrupt), not an autotune
            bundle, another format version, a malformed field (one line naming the file).
    """
    file = _file(path)
    try:
        st = file.stat()
    except OSError as exc:
        raise BundleError(f"bundle {file}: {exc.strerror or 'cannot be read'}; give the folder "
                          "`autotune export NAME --bundle DIR` wrote") from None
    key = (str(file.absolute()), st.st_mtime_ns, st.st_size)
    with _lock:
        found = _read.get(key)
    if found is None:
        found = _parse(file)
        with _lock:
            _read[key] = found
    return found


def _clear() -> None:
    with _lock:
        _read.clear()


caches.register("bundles", _clear)


def _parse(file: Path) -> Bundle:
    def bad(what: str) -> BundleError:
        return BundleError(f"bundle {file}: {what}")

    from autotune.base.files import read_text

    try:
        text = read_text(file, "bundle")
    except InvalidInputError as exc:  # not a regular file, too large, not UTF-8: naming the file
        raise BundleError(str(exc)) from None
    try:
        doc = json.loads(text, parse_constant=_not_finite, parse_float=_finite_float)
    except _NotFinite as exc:
        raise bad(f"is not valid JSON (it holds {exc}, which JSON does not allow: every number must be finite)"
                  ) from None
    except json.JSONDecodeError as exc:
        raise bad(f"is not valid JSON (truncated or corrupt: {exc.msg} at line {exc.lineno} column {exc.colno})"
                  ) from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise bad(f"is not an autotune bundle (no \"format\": \"{FORMAT}\")")
    if doc.get("version") != VERSION:
        raise bad(f"is of bundle format version {doc.get('version')!r}; this autotune reads version {VERSION} "
                  "(export the bundle again with this autotune)")
    try:
        device = doc["device"]
        info = DeviceInfo(*(device[n] for n in _DEVICE))
        if not all(isinstance(getattr(info, n), t) for n, t in zip(_DEVICE, (str, str, int, int, str, str))):
            raise TypeError("device fields of the wrong type")
        info = DeviceInfo(_inert(info.name), _inert(info.compute_capability), info.sm_count, info.total_memory,
                          _inert(info.driver_version), _inert(info.cuda_version))
        toolchain = doc["toolchain"]
        nvcc, flags = _inert(toolchain["nvcc_version"]), _inert(toolchain["compile_flags"])
        entries = {}
        for i, e in enumerate(doc["entries"]):
            try:
                entry = _entry(e)
            except (KeyError, TypeError, ValueError, InvalidInputError) as exc:
                raise bad(f"entry {i + 1} is malformed ({_what(exc)})") from None
            entries[entry.ident] = entry
        dispatches = {}
        for i, e in enumerate(doc.get("dispatches", ())):
            try:
                d = from_json(e)
            except (KeyError, TypeError, ValueError, AttributeError, InvalidInputError) as exc:
                raise bad(f"dispatch {i + 1} is malformed ({_what(exc)})") from None
            dispatches[(d.kernel, str(e["dtype"]))] = d
        return Bundle(file, _inert(doc.get("workload", "")), info, nvcc, flags, _inert(doc.get("created", "")), entries,
                      dispatches)
    except BundleError:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        raise bad(f"is malformed ({_what(exc)})") from None


class _NotFinite(ValueError):
    """``NaN``, ``Infinity`` or ``-Infinity`` (or a number too large for a float) in a bundle's JSON."""


def _not_finite(name: str):
    raise _NotFinite(name)


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NotFinite(text)
    return value


def _inert(value: Any) -> str:
    """``str(value)`` with every character that is not printable (a terminal escape, a bell, a
    newline) written as its escape (``\x1b``): a bundle's text, printed, moves no cursor."""
    text = str(value)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def _what(exc: BaseException) -> str:
    return f"missing field {exc}" if isinstance(exc, KeyError) else str(exc).splitlines()[0]


def _entry(e: Any) -> BundleEntry:
    if not isinstance(e, dict):
        raise TypeError("not an object")
    dims = e["dims"]
    if not isinstance(dims, dict) or not dims:
        raise TypeError("dims must be an object of name: value")
    pairs = make_dims(list(dims), dims, "entry")
    macros = e["config"]
    if not isinstance(macros, dict) or not all(isinstance(k, str) and type(v) is int for k, v in macros.items()):
        raise TypeError("config must be an object of macro: integer")
    rung = e.get("rung", "exact")
    from autotune.runtime.lookup import RUNGS, SHAPE_RUNGS

    allowed = (*RUNGS, *(r for r in SHAPE_RUNGS if r not in RUNGS))
    if rung not in allowed:
        raise ValueError(f"rung {rung!r}; allowed: {', '.join(allowed)}")
    figures = {k: e.get(k) for k in ("median_ms", "default_ms", "tuned_ms")}
    if not all(v is None or isinstance(v, (int, float)) for v in figures.values()):
        raise TypeError("median_ms, default_ms and tuned_ms must be numbers")
    cert = e.get("certificate")
    if cert is not None and not (isinstance(cert, dict) and isinstance(cert.get("winner"), dict)
                                 and isinstance(cert.get("tied"), bool)):
        raise TypeError("certificate must be an object with winner and tied")
    problem = ProblemKey(_inert(e["kernel"]), _inert(e["source_hash"]), _inert(e["spec_hash"]), pairs,
                         _inert(e["dtype"]), _inert(e.get("kernel_ref", "")))
    return BundleEntry(problem, dict(macros), rung, **figures, certificate=dict(cert) if cert is not None else None)
