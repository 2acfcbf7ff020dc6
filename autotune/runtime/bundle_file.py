"""A deployment bundle's file, ``DIR/bundle.json``: its JSON format, both ways, and reading it.

This module owns the format: :func:`encode` writes a :class:`Bundle` as the file's text (what
``autotune export NAME --bundle DIR`` writes: ``autotune.report.bundle``), :func:`decode` reads
that text back into the same value, checked whole, and :func:`owned_files` says which files of
a bundle's folder are autotune's. Per problem (kernel, dims, dtype) a bundle holds the config
:func:`autotune.lookup` picked when it was written, with its rung, and the provenance every
config was chosen under: the device model (name, compute capability, SMs, memory), its driver
and CUDA versions, nvcc and the compile flags, and each kernel's source and spec hashes; each
kernel's dispatch for a shape nobody tuned is :mod:`autotune.dispatch.codec`'s.

Reading it (:func:`read_bundle`, :func:`decode`) checks it whole, and refuses with one line
naming the file and what is wrong: not found, not JSON (truncated, corrupt, or holding ``NaN``
or ``Infinity``, which JSON does not allow), not a bundle, another format version, a malformed
field (named: ``device.sm_count``, ``entry 2 ... (config ...)``, ``dispatch 1 ...``). A bundle
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
from autotune.dispatch.codec import from_json, to_json
from autotune.errors import InvalidInputError
from autotune.kernel.dims import Dims, make_dims
from autotune.kernel.problem import ProblemFields, ProblemKey
from autotune.measure.device import DeviceInfo

__all__ = ["FORMAT", "VERSION", "FILE", "BundleError", "BundleEntry", "Bundle", "encode", "decode", "owned_files",
           "read_bundle"]

FORMAT = "autotune-bundle"
"""The ``format`` field of every bundle."""
VERSION = 1
"""The bundle format this autotune writes and reads."""
FILE = "bundle.json"
"""The bundle's file in its folder."""

_DEVICE = ("name", "compute_capability", "sm_count", "total_memory", "driver_version", "cuda_version")
_DEVICE_TYPES = (str, str, int, int, str, str)
_FIGURES = ("median_ms", "default_ms", "tuned_ms")
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
    bundles written before it have none); ``note``, what ``lookup`` said of the config when it
    was written, and ``calls``, the launches of the problem the workload recorded (``None``: not
    said)."""

    problem_key: ProblemKey
    macros: dict[str, int]
    rung: str
    median_ms: float | None = None
    default_ms: float | None = None
    tuned_ms: float | None = None
    certificate: Mapping[str, Any] | None = field(default=None, compare=False, hash=False)
    note: str = ""
    calls: int | None = None


@dataclass(frozen=True)
class Bundle:
    """A bundle read and checked (module doc): where it is, the workload, the device model
    and toolchain it was made for, and its entries by ``(kernel, dims, dtype)``; ``autotune``,
    the version that wrote it, and ``files``, the headers it wrote beside its ``bundle.json``
    (``None``: a bundle written before it listed them)."""

    path: Path
    workload: str
    device: DeviceInfo
    nvcc_version: str
    compile_flags: str
    created: str
    entries: dict[tuple, BundleEntry] = field(default_factory=dict)
    dispatches: dict[tuple[str, str], Dispatch] = field(default_factory=dict)
    autotune: str = ""
    files: tuple[str, ...] | None = None
    _checked: set[str] = field(default_factory=set, compare=False, repr=False)  # kernels whose entries passed

    def entry(self, kernel: str, dims: Dims, dtype: str) -> BundleEntry | None:
        return self.entries.get((kernel, dims, dtype))

    def kernels(self) -> dict[str, tuple[str, str]]:
        """Each kernel's ``(source_hash, spec_hash)`` in the bundle."""
        return {e.kernel: (e.source_hash, e.spec_hash) for e in self.entries.values()}


def encode(bundle: Bundle) -> str:
    """The text of ``bundle``'s ``bundle.json`` (its ``path`` is not written): JSON, one
    space an indent, a number that is not finite (a figure never measured well) as ``null``,
    for JSON has none, and :func:`decode` refuses one."""
    doc: dict[str, Any] = {
        "format": FORMAT, "version": VERSION, "workload": bundle.workload, "created": bundle.created,
        "autotune": bundle.autotune, "device": {n: getattr(bundle.device, n) for n in _DEVICE},
        "toolchain": {"nvcc_version": bundle.nvcc_version, "compile_flags": bundle.compile_flags}}
    if bundle.files is not None:
        doc["files"] = list(bundle.files)
    doc["entries"] = [_entry_json(e) for e in bundle.entries.values()]
    if bundle.dispatches:  # an optional field of version 1: readers before it ignore it
        doc["dispatches"] = [{"dtype": dtype, **to_json(d)} for (_, dtype), d in bundle.dispatches.items()]
    return json.dumps(_finite(doc), indent=1, allow_nan=False) + "\n"


def _entry_json(e: BundleEntry) -> dict[str, Any]:
    out = {"kernel": e.kernel, "kernel_ref": e.kernel_ref, "source_hash": e.source_hash, "spec_hash": e.spec_hash,
           "dims": dict(e.dims), "dtype": e.dtype, "config": dict(e.macros), "rung": e.rung, "note": e.note,
           "median_ms": e.median_ms, "default_ms": e.default_ms, "tuned_ms": e.tuned_ms, "calls": e.calls}
    if e.certificate is not None:
        out["certificate"] = dict(e.certificate)
    return out


def _finite(value):
    """``value`` (a JSON document) with every number that is not finite as ``None``."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def owned_files(text: str) -> frozenset[str] | None:
    """The files of a bundle's folder that are autotune's, by its ``bundle.json``'s ``text``:
    that file and the headers it lists (``files``; a bundle written before it listed them: a
    header per kernel of its entries), plain ``.h`` names only; ``None``: the text is not a
    bundle autotune wrote (not JSON, or no ``"format": "autotune-bundle"``). Of any version,
    malformed or not: a bundle is known as ours before it is read."""
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        return None
    listed = doc.get("files")
    if not isinstance(listed, list):
        entries = doc.get("entries")
        listed = [f"{e.get('kernel')}.h" for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []
    return frozenset({FILE} | {n for n in listed if isinstance(n, str) and n.endswith(".h") and n == Path(n).name})


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
    from autotune.base.files import read_text

    try:
        text = read_text(file, "bundle")
    except InvalidInputError as exc:  # not a regular file, too large, not UTF-8: naming the file
        raise BundleError(str(exc)) from None
    return decode(text, file)


def decode(text: str, file: str | os.PathLike[str]) -> Bundle:
    """The bundle :func:`encode` wrote as ``text``, checked whole; ``file``: where it was read
    (the bundle's ``path``, and the name every error gives).

    Raises:
        BundleError: not JSON, not an autotune bundle, another format version, a field missing,
            of the wrong type or out of range: one line naming ``file`` and the field.
    """
    file = Path(file)

    def bad(what: str) -> BundleError:
        return BundleError(f"bundle {file}: {what}")

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
        device = _object(doc, "device")
        name, cc, sms, memory, driver, cuda = (_typed(device, n, t, "device.") for n, t in zip(_DEVICE, _DEVICE_TYPES))
        info = DeviceInfo(_inert(name), _inert(cc), sms, memory, _inert(driver), _inert(cuda))
        toolchain = _object(doc, "toolchain")
        nvcc, flags = (_inert(_typed(toolchain, n, str, "toolchain.")) for n in ("nvcc_version", "compile_flags"))
        workload, created, version = (_inert(_typed(doc, n, str, default="")) for n in ("workload", "created",
                                                                                        "autotune"))
        files = doc.get("files")
        if files is not None and not (isinstance(files, list) and all(isinstance(n, str) for n in files)):
            raise TypeError("files must be a list of file names")
        listed = doc["entries"]
        if not isinstance(listed, list):
            raise TypeError("entries must be a list of objects")
        dispatched = doc.get("dispatches", [])
        if not isinstance(dispatched, list):
            raise TypeError("dispatches must be a list of objects")
    except (KeyError, TypeError, ValueError) as exc:
        raise bad(f"is malformed ({_what(exc)})") from None
    entries = {}
    for i, e in enumerate(listed):
        try:
            entry = _entry(e)
        except (KeyError, TypeError, ValueError, InvalidInputError) as exc:
            raise bad(f"entry {i + 1} is malformed ({_what(exc)})") from None
        entries[entry.ident] = entry
    dispatches = {}
    for i, e in enumerate(dispatched):
        try:
            if not isinstance(e, dict):
                raise TypeError("not an object")
            d = from_json(e)
            dtype = _inert(_typed(e, "dtype", str))
        except (KeyError, TypeError, ValueError, AttributeError, InvalidInputError) as exc:
            raise bad(f"dispatch {i + 1} is malformed ({_what(exc)})") from None
        dispatches[(d.kernel, dtype)] = d
    return Bundle(file, workload, info, nvcc, flags, created, entries, dispatches, version,
                  None if files is None else tuple(_inert(n) for n in files))


_KINDS = {str: "a string", int: "an integer", dict: "an object"}


def _typed(obj: Mapping[str, Any], name: str, kind: type, where: str = "", **default: Any) -> Any:
    """``obj[name]``, of type ``kind`` (an integer: not a bool); ``default`` (given by keyword):
    what a missing field reads as.

    Raises:
        KeyError: missing (naming ``where + name``); TypeError: of another type (naming it).
    """
    if name not in obj:
        if "default" in default:
            return default["default"]
        raise KeyError(where + name)
    value = obj[name]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise TypeError(f"{where}{name} must be {_KINDS[kind]}, not {_shown(value)}")
    return value


def _object(obj: Mapping[str, Any], name: str) -> dict:
    return _typed(obj, name, dict)


def _shown(value: Any) -> str:
    text = json.dumps(value)
    return _inert(text if len(text) <= 40 else text[:37] + "...")


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
    figures = {k: e.get(k) for k in _FIGURES}
    for k, v in figures.items():
        if not (v is None or isinstance(v, (int, float)) and not isinstance(v, bool)):
            raise TypeError(f"{k} must be a number or null, not {_shown(v)}")
    calls = e.get("calls")
    if calls is not None and (type(calls) is not int or calls < 0):
        raise TypeError(f"calls must be a count (an integer >= 0) or null, not {_shown(calls)}")
    cert = e.get("certificate")
    if cert is not None and not (isinstance(cert, dict) and isinstance(cert.get("winner"), dict)
                                 and isinstance(cert.get("tied"), bool)):
        raise TypeError("certificate must be an object with winner and tied")
    kernel, source_hash, spec_hash, dtype = (_inert(_typed(e, n, str)) for n in ("kernel", "source_hash",
                                                                                  "spec_hash", "dtype"))
    ref, note = (_inert(_typed(e, n, str, default="")) for n in ("kernel_ref", "note"))
    problem = ProblemKey(kernel, source_hash, spec_hash, pairs, dtype, ref)
    return BundleEntry(problem, dict(macros), rung, **figures, certificate=dict(cert) if cert is not None else None,
                       note=note, calls=calls)
