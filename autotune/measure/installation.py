"""What this installation measures with: autotune's and its libraries' versions, the CUDA
backends (cuda-bindings, PyCUDA) and the one chosen, NVML, the CUDA driver and runtime, nvcc,
and the GPUs (``autotune info``).

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

    ``None`` marks what is missing; ``notes`` say why (no CUDA backend installed, no nvcc on
    PATH, a driver that cannot be initialised). ``backend``: the backend the measuring code
    uses (:mod:`autotune.measure.backends`); ``cuda_bindings``, ``pycuda``, ``nvidia_ml_py``:
    the installed versions of each. ``cuda_runtime``: the CUDA release the backend was built for.
    """

    autotune: str
    python: str
    libraries: dict[str, str | None]
    pycuda: str | None = None
    cuda_bindings: str | None = None
    nvidia_ml_py: str | None = None
    backend: str | None = None
    cuda_driver: str | None = None
    cuda_runtime: str | None = None
    nvcc: str | None = None
    gpus: list[GPU] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


def describe() -> Installation:
    """Probe the installation: library metadata, then nvcc, then the chosen backend and the CUDA
    driver (initialised only here), then every device. Never raises for a missing piece."""
    from autotune import __version__
    from autotune.measure import backends
    from autotune.measure.device import _version, cuda_driver, nvcc_version, query_device

    notes: list[str] = []
    libraries = {name: _dist_version(name) for name in LIBRARIES}
    try:
        nvcc = nvcc_version()
    except (AutotuneError, OSError) as exc:
        nvcc = None
        notes.append(str(exc))
    pycuda, bindings, nvml = _dist_version("pycuda"), _dist_version("cuda-bindings"), _dist_version("nvidia-ml-py")
    driver = runtime = backend = None
    gpus: list[GPU] = []
    if nvml is None:
        notes.append("nvidia-ml-py is not installed: clocks and GPU UUIDs read unknown (the cuda extra has it)")
    try:
        backend = backends.get().name
    except AutotuneError as exc:
        notes.append(f"{exc}; search, sweep and bench need a CUDA backend; check, best, list, report and export "
                     "do not")
    if backend is not None:
        try:
            drv = cuda_driver()
            driver = _version(drv.driver_version())
            runtime = drv.cuda_version()
            for ordinal in range(drv.device_count()):
                d = query_device(ordinal)
                gpus.append(GPU(ordinal, d.name, d.compute_capability, round(d.total_memory / 2**30, 1), d.uuid))
        except AutotuneError as exc:
            notes.append(str(exc))
        if driver is not None and not gpus:
            notes.append("no CUDA device is present")
    return Installation(autotune=__version__, python=platform.python_version(), libraries=libraries,
                        pycuda=pycuda, cuda_bindings=bindings, nvidia_ml_py=nvml, backend=backend, cuda_driver=driver,
                        cuda_runtime=runtime, nvcc=nvcc, gpus=gpus, notes=notes)


def _dist_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None
