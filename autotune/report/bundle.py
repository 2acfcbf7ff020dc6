"""``autotune export NAME --bundle DIR``: a workload's chosen configs as one deployment artifact.

The bundle is a folder: ``bundle.json`` (format :data:`autotune.runtime.bundle.FORMAT`, version
:data:`autotune.runtime.bundle.VERSION`) and one C/C++ header per kernel
(:func:`autotune.report.header.render_header`, ``<kernel>.h``). Per problem of the workload
(kernel, dims, dtype) it holds the config :func:`autotune.lookup` picks on the bundle's device
model from the database now (what ``autotune best`` shows for a tuned problem), its rung, and
the GPU time per call the workload's last tuning measured at the default and chosen configs,
and, where the store has one for a problem tuned exactly (rung ``exact``), its winner's
``certificate``: the final re-timing's 95 % CI of the winner against the runner-up, the rounds
and the winner's timed samples, and whether they were statistically tied (an optional field of
bundle format version 1: readers before it ignore it, bundles without it read as before);
the dispatch of each kernel and dtype where the store holds tuned shapes of it (``dispatches``,
:mod:`autotune.dispatch.codec`, also an optional field: the rung ``lookup`` climbs for a shape
nobody tuned, so the bundle and each header answer such a shape as ``lookup`` does);
and once, the provenance every config was chosen under: device model, driver and CUDA
versions, nvcc and compile flags, and each kernel's source and spec hashes.
:mod:`autotune.runtime.bundle` reads it back (``autotune.launcher(..., bundle=DIR)``,
``AUTOTUNE_BUNDLE``) without a database.

The device model is the one the workload's last tuning ran on (``device_name``: the last one
on a device whose name contains it), else the one it was recorded on. Nothing is written
until every file is made: they are written to a new folder beside ``DIR``, which then becomes
``DIR`` (or, where ``DIR`` is a bundle already, replaces its files, ``bundle.json`` last).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from autotune.base.files import write_atomically
from autotune.dispatch import fit_trials
from autotune.dispatch.codec import to_json
from autotune.errors import AutotuneError, InvalidInputError
from autotune.kernel.problem import Problem
from autotune.measure.device import DeviceInfo
from autotune.report.header import HeaderDispatch, HeaderRecord, render_header
from autotune.runtime.bundle import FILE, FORMAT, VERSION

__all__ = ["BundleReport", "export_bundle"]


@dataclass(frozen=True)
class BundleReport:
    """What :func:`export_bundle` wrote: the folder, its problems by rung, its headers, the
    device model, and the problems left out (their kernel cannot be loaded), with why."""

    path: Path
    device: DeviceInfo
    rungs: Counter = field(default_factory=Counter)
    headers: tuple[str, ...] = ()
    left_out: tuple[str, ...] = ()

    @property
    def entries(self) -> int:
        return sum(self.rungs.values())


def _folder_ok(directory: Path) -> None:
    """Refuse a target that is not a new folder, an empty one, or a bundle (nothing written).

    Raises:
        InvalidInputError: naming it and what is allowed.
    """
    if not directory.exists():
        if not directory.parent.is_dir():
            raise InvalidInputError(f"cannot write bundle {directory}: the folder {directory.parent} does not exist")
        return
    if not directory.is_dir():
        raise InvalidInputError(f"cannot write bundle {directory}: it is a file; give a new folder or a bundle's")
    names = sorted(p.name for p in directory.iterdir())
    if names and FILE not in names:
        raise InvalidInputError(f"cannot write bundle {directory}: the folder holds other files "
                                f"({', '.join(names[:3])}{', ...' if len(names) > 3 else ''}); give a new folder "
                                "or a bundle's")


def export_bundle(store, name: str, directory: str | os.PathLike[str], *, device_name: str | None = None
                  ) -> BundleReport:
    """Write workload ``name``'s bundle to the folder ``directory`` (module doc).

    Raises:
        MissingWorkload: no workload ``name``.
        InvalidInputError: ``directory`` is a file or a folder of other files; no tuning or
            recording on a device named ``device_name``.
        GPUUnavailableError: no nvcc (the configs' toolchain).
        StoreError: the database cannot be read.
    """
    from autotune import __version__
    from autotune.measure.toolchain import Toolchain
    from autotune.runtime.lookup import lookup
    from autotune.store.workload_records import merged, recorded_device
    from autotune.store.workloads import latest_tuning, workload_problems

    target = Path(directory)
    _folder_ok(target)
    problems = merged(workload_problems(store, name))
    tuning = latest_tuning(store, name, device_name)
    if tuning is not None:
        device = tuning.device
    else:
        mine = [p for p in problems if not device_name or device_name.lower() in p.device.name.lower()]
        if not mine:
            raise InvalidInputError(f"workload {name!r} was neither tuned nor recorded on a device named like "
                                    f"{device_name!r}")
        device = recorded_device(mine)
    measured = {r.ident: r for r in tuning.results} if tuning is not None else {}
    toolchain = Toolchain.of(device.arch)
    entries, records, kernels, left_out, rungs, shaped = [], {}, {}, [], Counter(), {}
    for p in problems:
        try:
            problem = Problem.of(p.kernel_ref or p.kernel, p.dims, p.dtype)
        except AutotuneError as exc:
            left_out.append(f"{p.label}: {exc}")
            continue
        k = problem.kernel
        chosen = lookup(problem, device=device, db=store.url)
        r = measured.get(p.ident)
        entries.append({"kernel": k.name, "kernel_ref": p.kernel_ref or k.name, "source_hash": k.source_hash,
                        "spec_hash": k.spec_hash,
                        "dims": dict(problem.dims), "dtype": problem.dtype.name, "config": chosen.config.as_dict(),
                        "rung": chosen.rung, "note": chosen.note, "median_ms": chosen.median_ms,
                        "default_ms": r.default_ms if r else None, "tuned_ms": r.tuned_ms if r else None,
                        "calls": p.calls})
        cert = _certificate(store, problem, device, chosen)
        if cert is not None:
            entries[-1]["certificate"] = cert
        rungs[chosen.rung] += 1
        kernels[k.name] = k
        shaped.setdefault((k.name, problem.dtype.name), problem)
        if chosen.rung != "default":
            records.setdefault(k.name, []).append(
                HeaderRecord(device.name, device.compute_capability, problem.dims, problem.dtype.name,
                             chosen.config.as_dict(), chosen.median_ms))
    created = f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC"
    doc = {"format": FORMAT, "version": VERSION, "workload": name, "created": created, "autotune": __version__,
           "device": {"name": device.name, "compute_capability": device.compute_capability,
                      "sm_count": device.sm_count, "total_memory": device.total_memory,
                      "driver_version": device.driver_version, "cuda_version": device.cuda_version},
           "toolchain": {"nvcc_version": toolchain.nvcc_version, "compile_flags": toolchain.compile_flags},
           "entries": entries}
    dispatches = _dispatches(store, shaped, device, toolchain)
    if dispatches:  # an optional field of version 1: readers before it ignore it
        doc["dispatches"] = [{"dtype": dtype, **to_json(d)} for (_, dtype), d in sorted(dispatches.items())]
    files = {FILE: json.dumps(doc, indent=1) + "\n"}
    for kname, k in sorted(kernels.items()):
        provenance = [f"autotune {__version__}, {created}, workload {name!r}",
                      f"kernel {k.name} (source {k.source_hash[:12]}, description {k.spec_hash[:8]})",
                      f"{device.name} sm_{device.compute_capability.replace('.', '')}, driver "
                      f"{device.driver_version}, nvcc {toolchain.nvcc_version}"]
        mine = [HeaderDispatch(device.name, device.compute_capability, dtype, d)
                for (kn, dtype), d in sorted(dispatches.items()) if kn == kname]
        files[f"{kname}.h"] = render_header(k.name, k.dims, k.tunables, k.default_config().as_dict(),
                                            records.get(kname, []), provenance=provenance, dispatches=mine)
    _write(target, files)
    return BundleReport(target, device, rungs, tuple(n for n in files if n != FILE), tuple(left_out))


def _dispatches(store, problems: dict[tuple[str, str], Problem], device, toolchain) -> dict:
    """``{(kernel, dtype): Dispatch}`` of each kernel and dtype of the workload on ``device``: the
    one ``lookup``'s dispatch rung fits from the same trials (:func:`autotune.dispatch.fit_trials`),
    where the store holds tuned shapes of it, so a shape the bundle does not hold gets there what
    ``lookup`` gives it here."""
    from autotune.store.key import TuningKey

    out = {}
    for (name, dtype), problem in problems.items():
        k = problem.kernel
        key = TuningKey.of(problem, device, toolchain)
        d = fit_trials(store.shape_trials(key), k.default_config(), [n for n, _ in key.dims], k.tunables)
        if d.shapes:
            out[(name, dtype)] = d
    return out


def _certificate(store, problem: Problem, device, chosen) -> dict | None:
    """The winner's certificate of the stored best ``chosen`` is (rung ``exact``: tuned for this
    very problem on this device model), as the store keeps it (the re-timing's CI of the winner
    against the runner-up, the rounds, whether they were tied:
    :func:`autotune.store.records.certificate`), with ``samples``, the timed samples of the
    winner's trial; ``None`` where the store has none (another rung, a best stored before schema
    0009, a best not re-timed)."""
    if chosen.rung != "exact":
        return None
    k = problem.kernel
    found = [b for b in store.find_best(kernel=k.name, dims=problem.dims, dtype=problem.dtype.name,
                                        source_hash=k.source_hash, spec_hash=k.spec_hash, device_name=device.name)
             if b.device_name == device.name and b.config.as_dict() == chosen.config.as_dict() and b.certificate]
    if not found:
        return None
    best = found[-1]
    return {**dict(best.certificate), "samples": best.samples}


def _write(target: Path, files: dict[str, str]) -> None:
    """Every file of ``files`` in the folder ``target``, or none (module doc)."""
    try:
        staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp"))
    except OSError as exc:
        raise InvalidInputError(f"cannot write bundle {target}: {exc.strerror or exc}") from None
    try:
        for name, text in files.items():
            write_atomically(staging / name, text, f"bundle file {name}")
        if not target.exists():
            os.rename(staging, target)
            return
        old = {p.name for p in target.iterdir()}
        for name in sorted(files, key=lambda n: n == FILE):  # bundle.json last
            os.replace(staging / name, target / name)
        for name in old - set(files):
            if name.endswith(".h"):
                (target / name).unlink(missing_ok=True)
    except OSError as exc:
        raise InvalidInputError(f"cannot write bundle {target}: {exc.strerror or exc}") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
