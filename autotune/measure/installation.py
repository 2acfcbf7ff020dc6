"""What this installation measures with: autotune's and its libraries' versions, PyCUDA, the
CUDA driver and runtime, nvcc, and the GPUs (``autotune info``).

Every probe is made when :func:`describe` is called, never at import, and a missing piece is
reported as missing (with why), never raised: the point is to say what is there.
"""

from __future__ import annotations

import platform
from dataclasses import asdict, dataclass, field
from importlib import metadata

from autotune.errors import AutotuneError

__all__ = ["GPU", "Installation", "describe"]

LIBRARIES = ("optuna", "sqlalchemy", "alembic", "typer", "rich", "matplotlib", "numpy")
"""Libraries whose versions matter to a bug report (read from their metadata, not imported)."""


@dataclass(frozen=True)
class GPU:
    """One CUDA device: ordinal, marketing name, compute capability (``"9.0"``), memory in GiB."""

    ordinal: int
    name: str
    compute_capability: str
    memory_gib: float
    uuid: str = ""


@dataclass(frozen=True)
class Installation:
    """Versions of what autotune uses, and the GPUs it sees.

    ``None`` marks what is missing; ``notes`` say why (PyCUDA not installed, no nvcc on PATH,
    a driver that cannot be initialised).
    """

    autotune: str
    python: str
    libraries: dict[str, str | None]
    pycuda: str | None = None
    cuda_driver: str | None = None
    cuda_runtime: str | None = None
    nvcc: str | None = None
    gpus: list[GPU] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


def describe() -> Installation:
    """Probe the installation: library metadata, then nvcc, then PyCUDA and the CUDA driver
    (initialised only here), then every device. Never raises for a missing piece."""
    from autotune import __version__
    from autotune.measure.device import _version, cuda_driver, nvcc_version, query_device

    notes: list[str] = []
    libraries = {name: _dist_version(name) for name in LIBRARIES}
    try:
        nvcc = nvcc_version()
    except (AutotuneError, OSError) as exc:
        nvcc = None
        notes.append(str(exc))
    pycuda = _dist_version("pycuda")
    driver = runtime = None
    gpus: list[GPU] = []
    if pycuda is None:
        notes.append("PyCUDA is not installed: search, sweep and bench need it (the cuda extra); "
                     "check, best, list, report and export do not")
    else:
        try:
            drv = cuda_driver()
            driver = _version(drv.get_driver_version())
            runtime = ".".join(str(p) for p in drv.get_version()[:2])
            for ordinal in range(drv.Device.count()):
                d = query_device(ordinal)
                gpus.append(GPU(ordinal, d.name, d.compute_capability, round(d.total_memory / 2**30, 1), d.uuid))
        except AutotuneError as exc:
            notes.append(str(exc))
        if driver is not None and not gpus:
            notes.append("no CUDA device is present")
    return Installation(autotune=__version__, python=platform.python_version(), libraries=libraries,
                        pycuda=pycuda, cuda_driver=driver, cuda_runtime=runtime, nvcc=nvcc, gpus=gpus, notes=notes)


def _dist_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None
