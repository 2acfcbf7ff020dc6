"""A deployment bundle, read without a database: ``autotune.launcher(kernel, bundle=DIR)`` or
``AUTOTUNE_BUNDLE=DIR``.

``autotune export NAME --bundle DIR`` writes a workload's chosen configs to ``DIR/bundle.json``
(and a C header per kernel beside it): per problem (kernel, dims, dtype) the config
:func:`autotune.lookup` picked when it was written, with its rung, and the provenance every
config was chosen under: the device model (name, compute capability, SMs, memory), its driver
and CUDA versions, nvcc and the compile flags, and each kernel's source and spec hashes. A
bundle is a file: every process that reads it picks the same config for the same problem.

Reading it (:func:`read_bundle`) checks it whole, and refuses with one line naming the file
and what is wrong: not found, not JSON (truncated, corrupt, or holding ``NaN`` or ``Infinity``,
which JSON does not allow), not a bundle, another format version, a malformed entry. A bundle
is input, not trusted code: its strings (the device's name, ``created``, nvcc's version...) are
kept inert, every character that is not printable (a terminal escape) written as its escape
(``\x1b``), so that printing them moves no cursor. Using it (:func:`bundle_config`) checks it
against where it runs:

* a kernel whose source or description differs from the one the bundle was made for: refused,
  always (its configs may mean something else now), naming the kernel and both hashes;
* then, once per kernel and bundle, every entry of that kernel: its config must set exactly
  the kernel's tunables, to values of the kernel's search space that meet its constraints, and
  give a launch (no division by zero, every grid and block size at least 1):
  :func:`config_fault`; one that does not is refused, naming the entry;
* another device model, driver or CUDA version, or another nvcc: refused, naming what
  differs, unless the user allows the ``same_arch`` rung (``allow_same_arch=True``,
  ``AUTOTUNE_BUNDLE_ALLOW=same_arch``): then a device of the same compute capability takes
  the bundle's configs at the ``same_arch`` rung (a note says what differs); another compute
  capability is refused even then.

A problem the bundle does not hold gets its kernel's dispatch where the bundle carries one
(rung ``dispatch``, the config ``lookup`` gives it from the database the bundle was made from),
else the kernel's default config (rung ``default``, the note naming the bundle): the bundle, not
a database, decides.
"""

from __future__ import annotations

import json
import math
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autotune import settings
from autotune.base import caches
from autotune.dispatch import Dispatch
from autotune.dispatch.codec import from_json
from autotune.errors import InvalidInputError
from autotune.kernel.config import Config
from autotune.kernel.dims import Dims, make_dims
from autotune.kernel.problem import ProblemFields, ProblemKey
from autotune.measure.device import DeviceInfo

if TYPE_CHECKING:
    from autotune.kernel.problem import Problem
    from autotune.measure.toolchain import Toolchain
    from autotune.runtime.lookup import LaunchConfig

__all__ = ["FORMAT", "VERSION", "FILE", "ENV", "ALLOW_ENV", "BundleError", "BundleEntry", "Bundle", "read_bundle",
           "bundle_config", "given_bundle", "allowed_same_arch", "check_kernel", "config_fault", "device_differences"]

FORMAT = "autotune-bundle"
"""The ``format`` field of every bundle."""
VERSION = 1
"""The bundle format this autotune writes and reads."""
FILE = "bundle.json"
"""The bundle's file in its folder."""
ENV = "AUTOTUNE_BUNDLE"
"""The environment variable naming the bundle (folder or file) every launch reads."""
ALLOW_ENV = "AUTOTUNE_BUNDLE_ALLOW"
"""``same_arch``: use a bundle of another device model, driver or nvcc of the same compute capability."""

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


def given_bundle(bundle: str | os.PathLike[str] | None) -> str | None:
    """The bundle a launch reads: ``bundle`` if given, else ``AUTOTUNE_BUNDLE`` (``None``: none)."""
    if bundle is not None:
        return str(bundle)
    return settings.BUNDLE.get() or None


def allowed_same_arch(allow: bool | None) -> bool:
    """``allow`` if given, else whether ``AUTOTUNE_BUNDLE_ALLOW`` is ``same_arch``.

    Raises:
        InvalidInputError: ``AUTOTUNE_BUNDLE_ALLOW`` is something else.
    """
    if allow is not None:
        return bool(allow)
    value = settings.BUNDLE_ALLOW.get()
    if value not in ("", "same_arch"):
        raise InvalidInputError(f"{ALLOW_ENV}={value!r} is not allowed; allowed: same_arch, or unset")
    return value == "same_arch"


def _differs(bundle: Bundle, device: DeviceInfo, toolchain: Toolchain) -> list[str]:
    made, here = bundle.device, device
    out = []
    if (made.name, made.sm_count, made.total_memory) != (here.name, here.sm_count, here.total_memory):
        out.append(f"GPU model ({made.name}, {made.sm_count} SMs there; {here.name}, {here.sm_count} SMs here)")
    if made.driver_version != here.driver_version or made.cuda_version != here.cuda_version:
        out.append(f"driver (CUDA {made.driver_version}/{made.cuda_version} there, "
                   f"{here.driver_version}/{here.cuda_version} here)")
    if bundle.nvcc_version != toolchain.nvcc_version or bundle.compile_flags != toolchain.compile_flags:
        out.append(f"nvcc ({bundle.nvcc_version} {bundle.compile_flags} there, "
                   f"{toolchain.nvcc_version} {toolchain.compile_flags} here)")
    return out


def config_fault(kernel, dims: Dims | Mapping[str, int], dtype: str, macros: Mapping[str, int]) -> str:
    """Why the config ``macros`` cannot be launched with ``kernel`` on ``dims`` and ``dtype``
    (``""``: it can): it must set exactly the kernel's tunables, to values of the kernel's search
    space that meet its constraints, and give a launch whose every grid and block size is at
    least 1 (no division by zero). What a bundle's reader checks of each entry, and its writer
    of each config (``autotune export NAME --bundle DIR``)."""
    from autotune.errors import AutotuneError
    from autotune.kernel.problem import Problem

    try:
        problem = Problem.of(kernel, dict(dims), dtype)
        config = Config.of(kernel.name, macros)
        kernel.check(config)
    except (AutotuneError, TypeError) as exc:
        return str(exc).splitlines()[0]
    broken = kernel.space().violations(config)
    if broken:
        return f"config {config.key} is not in {kernel.name}'s space ({'; '.join(broken)})"
    try:
        geometry = problem.geometry(config)
    except (ArithmeticError, ValueError) as exc:
        return f"config {config.key} gives no launch ({type(exc).__name__}: {exc})"
    if min(*geometry.grid, *geometry.block) < 1:
        return f"config {config.key} gives no launch (grid {geometry.grid}, block {geometry.block})"
    return ""


def _check_entries(bundle: Bundle, kernel) -> None:
    """Refuse ``bundle`` where an entry of ``kernel`` holds a config ``kernel`` cannot launch
    (:func:`config_fault`); each kernel is checked once per bundle read."""
    if kernel.name in bundle._checked:
        return
    for e in bundle.entries.values():
        if e.kernel != kernel.name:
            continue
        fault = config_fault(kernel, e.dims, e.dtype, e.macros)
        if fault:
            shape = "x".join(str(v) for _, v in e.dims)
            raise BundleError(f"bundle {bundle.path}: entry {e.kernel} {shape} {e.dtype} cannot be used: {fault}; "
                              "export the bundle again")
    for (name, dtype), d in bundle.dispatches.items():  # a dispatch's configs, at each of its tuned shapes
        if name != kernel.name:
            continue
        for config in d.configs:
            for shape in d.shapes:
                fault = config_fault(kernel, tuple(zip(d.dims, shape)), dtype, config.as_dict())
                if fault:
                    raise BundleError(f"bundle {bundle.path}: the dispatch of {name} {dtype} cannot be used: {fault}; "
                                      "export the bundle again")
    bundle._checked.add(kernel.name)


def check_kernel(bundle: Bundle, kernel) -> None:
    """Refuse ``bundle`` for ``kernel`` where it was made for another source or description
    of a kernel of that name, or where one of its entries of that kernel holds a config the
    kernel cannot launch (:func:`config_fault`; nothing to refuse where it holds none of it).

    Raises:
        BundleError: naming the kernel and both hashes, or the entry and what is wrong.
    """
    made = bundle.kernels().get(kernel.name)
    if made is None:
        return
    if made == (kernel.source_hash, kernel.spec_hash):
        _check_entries(bundle, kernel)
        return
    what = "source" if made[0] != kernel.source_hash else "description (spec)"
    there, here = (made[0], kernel.source_hash) if made[0] != kernel.source_hash else (made[1], kernel.spec_hash)
    raise BundleError(f"bundle {bundle.path} was made for another {what} of kernel {kernel.name} "
                      f"({there[:12]} there, {here[:12]} here); export the bundle again after tuning this one")


def device_differences(bundle: Bundle, device: DeviceInfo, toolchain: Toolchain, allow_same_arch: bool = False
                       ) -> str:
    """What differs between where ``bundle`` was made and ``device`` with ``toolchain``
    (``""``: nothing), where it may be used there.

    Raises:
        BundleError: another compute capability; another device model, driver or nvcc without
            ``allow_same_arch`` (one line naming the file and what differs).
    """
    differs = _differs(bundle, device, toolchain)
    if bundle.device.compute_capability != device.compute_capability:
        raise BundleError(f"bundle {bundle.path} was made for {bundle.device.name} (compute capability "
                          f"{bundle.device.compute_capability}); this GPU is {device.name} (compute capability "
                          f"{device.compute_capability}): its configs cannot be used here")
    if differs and not allow_same_arch:
        raise BundleError(f"bundle {bundle.path} was made for another {'; '.join(differs)}; export one on this "
                          f"machine, or allow it at the same_arch rung (allow_same_arch=True, {ALLOW_ENV}=same_arch)")
    return "; ".join(differs)


def bundle_config(bundle: Bundle, problem: Problem, device: DeviceInfo, toolchain: Toolchain,
                  allow_same_arch: bool = False) -> LaunchConfig:
    """The config ``bundle`` gives ``problem`` on ``device`` built with ``toolchain`` (module doc).

    Raises:
        BundleError: another kernel source or description; another device model, driver or
            nvcc without ``allow_same_arch``; another compute capability (one line naming the
            file and what differs).
    """
    from autotune.runtime.lookup import LaunchConfig

    k = problem.kernel
    check_kernel(bundle, k)
    differs = _differs(bundle, device, toolchain)
    device_differences(bundle, device, toolchain, allow_same_arch)
    e = bundle.entry(k.name, problem.dims, problem.dtype.name)
    d = bundle.dispatches.get((k.name, problem.dtype.name))
    if e is None and d is not None and d.shapes and d.dims == tuple(n for n, _ in problem.dims):
        index, near, uncertain = d.pick(tuple(v for _, v in problem.dims))
        where = f" (allowed: {'; '.join(differs)} differ)" if differs else ""
        ms = d.times[near][index] if d.times else None
        return LaunchConfig(d.configs[index], "tuned", rung="same_arch" if differs else "dispatch",
                            note=f"from bundle {bundle.path}, workload {bundle.workload!r}: dispatch of "
                                 f"{len(d.shapes)} tuned shapes on {bundle.device.name}"
                                 f"{', an uncertain region: its safe config' if uncertain else ''}{where}",
                            tuned_shape=d.shapes[near], tuned_device=bundle.device.name,
                            tuned_dims=tuple(zip(d.dims, d.shapes[near])), median_ms=ms)
    if e is None:
        return LaunchConfig(k.default_config(), "default", rung="default",
                            note=f"{problem.label} is not in bundle {bundle.path}; using the kernel's default")
    config = Config.of(k.name, e.macros)
    rung = "same_arch" if differs and e.rung != "default" else e.rung
    where = f" (allowed: {'; '.join(differs)} differ)" if differs else ""
    return LaunchConfig(config, "default" if e.rung == "default" else "tuned", rung=rung,
                        note=f"from bundle {bundle.path}, workload {bundle.workload!r}: {e.rung} on "
                             f"{bundle.device.name}{where}",
                        tuned_shape=tuple(v for _, v in e.dims), tuned_device=bundle.device.name,
                        tuned_dims=e.dims, median_ms=e.median_ms)
