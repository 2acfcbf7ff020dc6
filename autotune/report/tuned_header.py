"""``autotune export --header``: the stored best configs of one kernel as a C/C++ header.

Reads the kernel's non-stale best configs (:mod:`autotune.store.stale`) and the trials each
device model's dispatch is learned from (:func:`autotune.dispatch.build_dispatch`, per
device name, compute capability and dtype) from the results database, and renders them with
:func:`autotune.report.header.render_header`; the file is written beside its final name and
renamed over it, so it is never half written.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import UTC, datetime

from autotune.base.files import write_atomically
from autotune.kernel.model import Kernel
from autotune.report.header import HeaderDispatch, HeaderRecord, render_header
from autotune.store import stale
from autotune.report.dispatch import stored_tables
from autotune.dispatch import build_dispatch

__all__ = ["HeaderReport", "export_header", "header_dispatches"]


@dataclass(frozen=True)
class HeaderReport:
    """What :func:`export_header` wrote: ``entries`` tuned configs; ``stale`` results left out
    (another kernel source or description, nvcc or flags), ``stale_note`` saying which."""

    entries: int
    stale: int
    stale_note: str


def export_header(store, path: str | os.PathLike[str], kernel: Kernel, *, device_name: str | None = None,
                  nvcc_version: str | None = None, database: str = "") -> HeaderReport:
    """Write the header of ``kernel``'s tuned configs (every device, shape and dtype stored,
    or devices whose name contains ``device_name``) to ``path``.

    Args:
        store: the :class:`~autotune.store.repository.Store` to read.
        nvcc_version: today's nvcc; results built with another are stale and left out.
        database: where the results came from, for the header's opening comment.

    Raises:
        InvalidInputError: ``path`` cannot be written, or the kernel's names are not C identifiers.
        StoreError: the database cannot be read.
    """
    from autotune import __version__

    judged = stale.partition(store.find_best(kernel=kernel.name, device_name=device_name), {kernel.name: kernel},
                             nvcc_version)
    left_out = judged.reasons
    records = [HeaderRecord(r.device_name, r.compute_capability, tuple(r.dims), r.dtype, r.config.as_dict(),
                            r.median_ms) for r in judged.current]
    provenance = [f"autotune {__version__}, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
                  f"kernel {kernel.name} (source {kernel.source_hash[:12]}, description {kernel.spec_hash[:8]})",
                  *([f"from {database}"] if database else [])]
    text = render_header(kernel.name, kernel.dims, kernel.tunables, kernel.default_config().as_dict(), records,
                         provenance=provenance, dispatches=header_dispatches(store, kernel, device_name=device_name,
                                                                             nvcc_version=nvcc_version))
    write_atomically(path, text, "header")
    return HeaderReport(len(records), len(left_out), stale.summary(left_out) if left_out else "")


def header_dispatches(store, kernel: Kernel, *, device_name: str | None = None,
                      nvcc_version: str | None = None) -> list[HeaderDispatch]:
    """The dispatch of each device (name and compute capability; of devices whose name contains
    ``device_name``) and dtype, learned from ``kernel``'s non-stale trials there
    (:func:`autotune.report.dispatch.stored_tables`).

    Raises:
        StoreError: the database cannot be read.
    """
    default = kernel.default_config()
    return [HeaderDispatch(device, cc, dtype, build_dispatch(tables, default, kernel.dims))
            for (device, cc, dtype), tables in stored_tables(store, kernel, device_name=device_name,
                                                             nvcc_version=nvcc_version).items()]
