"""``autotune export NAME --bundle DIR``: a workload's chosen configs as one deployment artifact.

The bundle is a folder: ``bundle.json`` (format :data:`autotune.runtime.bundle.FORMAT`, version
:data:`autotune.runtime.bundle.VERSION`, a :class:`~autotune.runtime.bundle_file.Bundle` written by
the format's one codec, :func:`autotune.runtime.bundle_file.encode`) and one C/C++ header per kernel
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
on a device whose name contains it), else the one it was recorded on. Each recorded problem is
turned back into a kernel by the plan's rule
(:meth:`autotune.kernel.problem.ProblemKey.resolve`): a problem whose kernel cannot be
loaded is left out (and said), one whose kernel changed since it was recorded (source or
description) is refused, and so is a config that its kernel's space would not take (the reader's
check, :func:`autotune.runtime.bundle.config_fault`).

The folder ``DIR`` is autotune's (:func:`autotune.base.folders.check_folder`): it may be new
(missing parent folders are made, as ``mkdir -p`` would), empty, or a bundle autotune wrote (its
``bundle.json`` has ``"format": "autotune-bundle"``); any other folder is refused and left as it
was. In a bundle, autotune's files are ``bundle.json`` and the headers it lists (``files``, an
optional field of version 1; for a bundle written before it, the headers of its kernels); every
other file is the user's and is kept, byte for byte (a sub-folder, or a file of the user's where
the bundle would write one, is refused). The bundle is written whole or not at all, beside
``DIR`` then swapped into its place (:func:`autotune.base.folders.replace_folder`).
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from autotune.base.files import is_stdout, read_text
from autotune.base.folders import check_folder, refused, replace_folder
from autotune.dispatch import fit_trials
from autotune.errors import InvalidInputError
from autotune.kernel.problem import Problem, ProblemKey
from autotune.measure.device import DeviceInfo
from autotune.report.header import HeaderDispatch, HeaderRecord, render_header
from autotune.runtime.bundle import config_fault
from autotune.runtime.bundle_file import FILE, FORMAT, Bundle, BundleEntry, encode, owned_files

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


def _ours(directory: Path) -> set[str]:
    """``bundle.json`` and the headers of the bundle in ``directory`` (module doc,
    :func:`autotune.runtime.bundle_file.owned_files`): what of a bundle's folder is autotune's.

    Raises:
        InvalidInputError: its ``bundle.json`` is not one autotune wrote.
    """
    try:
        ours = owned_files(read_text(directory / FILE, "bundle"))
    except InvalidInputError:
        ours = None
    if ours is None:
        raise refused(directory, "bundle", f"its {FILE} is not one autotune wrote (no \"format\": \"{FORMAT}\"); "
                                           "give a new folder, an empty one or a bundle's")
    return set(ours)


def export_bundle(store, name: str, directory: str | os.PathLike[str], *, device_name: str | None = None
                  ) -> BundleReport:
    """Write workload ``name``'s bundle to the folder ``directory`` (module doc).

    Raises:
        MissingWorkload: no workload ``name``.
        InvalidInputError: ``directory`` is ``-``, a file, a folder of other files or one whose
            ``bundle.json`` is not autotune's, or holds a file of the user's where the bundle
            would write one; a problem's kernel changed since it was recorded, or its chosen
            config is outside its kernel's space; no tuning or recording on a device named
            ``device_name``; the folder cannot be written (nothing changed then).
        GPUUnavailableError: no nvcc (the configs' toolchain).
        StoreError: the database cannot be read.
    """
    from autotune import __version__
    from autotune.measure.toolchain import Toolchain
    from autotune.runtime.lookup import lookup
    from autotune.store.workload_records import merged, recorded_device
    from autotune.store.workloads import latest_tuning, workload_problems

    if is_stdout(directory):
        raise InvalidInputError(f"--bundle {os.fspath(directory)} is not allowed: a bundle is a folder ({FILE} and a "
                                "header per kernel), not standard output; give a folder, e.g. deploy/app")
    target = Path(directory)
    problems = merged(workload_problems(store, name))  # the workload first: a typo in NAME is said as such
    folder = check_folder(target, "bundle", FILE, _ours)
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
    resolved = [(p, p.problem_key.resolve()) for p in problems]
    changed = [(p, found.changed) for p, found in resolved if found.problem is not None and found.changed]
    if changed:
        (p, what), more = changed[0], len(changed) - 1
        raise InvalidInputError(f"cannot bundle workload {name!r}: {p.label}{f' (and {more} more)' if more else ''}: "
                                f"its kernel changed since it was recorded ({what}); record the workload again with "
                                "this kernel and tune it, then export the bundle")
    entries, records, kernels, left_out, rungs, shaped = {}, {}, {}, [], Counter(), {}
    for p, found in resolved:
        if found.problem is None:
            left_out.append(f"{p.label}: {found.why}")
            continue
        problem = found.problem
        k = problem.kernel
        chosen = lookup(problem, device=device, db=store.url)
        fault = config_fault(k, problem.dims, problem.dtype.name, chosen.config.as_dict())
        if fault:
            raise InvalidInputError(f"cannot bundle workload {name!r}: {p.label}: {fault}; its kernel's space "
                                    "would refuse it where the bundle is read")
        r = measured.get(p.ident)
        stored = ProblemKey(k.name, k.source_hash, k.spec_hash, problem.dims, problem.dtype.name,
                            p.kernel_ref or k.name)
        entry = BundleEntry(stored, chosen.config.as_dict(), chosen.rung, chosen.median_ms,
                            r.default_ms if r else None, r.tuned_ms if r else None,
                            _certificate(store, problem, device, chosen), note=chosen.note, calls=p.calls)
        entries[entry.ident] = entry
        rungs[chosen.rung] += 1
        kernels[k.name] = k
        shaped.setdefault((k.name, problem.dtype.name), problem)
        if chosen.rung != "default":
            records.setdefault(k.name, []).append(
                HeaderRecord(device.name, device.compute_capability, problem.dims, problem.dtype.name,
                             chosen.config.as_dict(), chosen.median_ms))
    created = f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC"
    dispatches = _dispatches(store, shaped, device, toolchain)
    bundle = Bundle(target / FILE, name, device, toolchain.nvcc_version, toolchain.compile_flags, created, entries,
                    {key: dispatches[key] for key in sorted(dispatches)}, __version__,
                    tuple(f"{kname}.h" for kname in sorted(kernels)))
    files = {FILE: encode(bundle)}
    for kname, k in sorted(kernels.items()):
        provenance = [f"autotune {__version__}, {created}, workload {name!r}",
                      f"kernel {k.name} (source {k.source_hash[:12]}, description {k.spec_hash[:8]})",
                      f"{device.name} sm_{device.compute_capability.replace('.', '')}, driver "
                      f"{device.driver_version}, nvcc {toolchain.nvcc_version}"]
        mine = [HeaderDispatch(device.name, device.compute_capability, dtype, d)
                for (kn, dtype), d in sorted(dispatches.items()) if kn == kname]
        files[f"{kname}.h"] = render_header(k.name, k.dims, k.tunables, k.default_config().as_dict(),
                                            records.get(kname, []), provenance=provenance, dispatches=mine)
    replace_folder(target, files, folder, "bundle")
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
