"""The vendor library's matrix product (cuBLAS, through CuPy or PyTorch) as the yardstick of
``autotune bench`` for the ``matmul`` kernels.

:func:`vendor_matmul` multiplies fresh random A and B of the bench's shape and dtype with
``cupy.matmul`` (tried first) or ``torch.matmul``, in the bench's CUDA context (both
libraries use the device's primary context, which :func:`autotune.measure.device.open_device` makes
current), checks the result with the kernels' own check
(:func:`autotune.kernel.references.product_tolerance`), and times it with the same CUDA-event machinery (same warm-up, samples and batches as
every kernel line). TF32 is off: PyTorch's ``torch.backends.cuda.matmul.allow_tf32`` is set
to False for the measurement (and restored), and CuPy is refused when ``CUPY_TF32`` asks for
TF32. Neither library installed (or one that fails) gives a line that says so, not an error.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from autotune.kernel.references import product_tolerance
from autotune.measure.timing import timing

__all__ = ["LIBRARIES", "VendorResult", "vendor_matmul"]

LIBRARIES = ("cupy", "torch")
"""Tried in this order."""


@dataclass(frozen=True)
class VendorResult:
    """What :func:`vendor_matmul` found: ``name`` of the line; ``median_ms`` and ``gflops``
    (GFLOP/s), or ``note`` saying why not."""

    name: str
    median_ms: float | None = None
    gflops: float | None = None
    note: str | None = None


def _cupy(a: np.ndarray, b: np.ndarray) -> tuple[Callable[[], None], Callable[[], np.ndarray]]:
    import cupy

    if os.environ.get("CUPY_TF32", "0") not in ("", "0"):
        raise RuntimeError("CUPY_TF32 is set, so CuPy would multiply float32 in TF32; unset it")
    da, db = cupy.asarray(a), cupy.asarray(b)
    dc = cupy.empty((a.shape[0], b.shape[1]), dtype=a.dtype)
    return (lambda: cupy.matmul(da, db, out=dc)), dc.get


@contextlib.contextmanager
def _torch_tf32_off() -> Iterator[None]:
    import torch

    before = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32 = before


def _torch(a: np.ndarray, b: np.ndarray) -> tuple[Callable[[], None], Callable[[], np.ndarray]]:
    import torch

    da, db = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
    dc = torch.empty((a.shape[0], b.shape[1]), dtype=da.dtype, device=da.device)
    return (lambda: torch.matmul(da, db, out=dc)), lambda: dc.cpu().numpy()


_NAMES = {"cupy": "cuBLAS via CuPy (cupy.matmul)", "torch": "cuBLAS via PyTorch (torch.matmul, TF32 off)"}
_SETUP = {"cupy": _cupy, "torch": _torch}


def vendor_matmul(bench, libraries: tuple[str, ...] = LIBRARIES) -> VendorResult:
    """Time the vendor library's product of ``bench``'s shape and dtype.

    Args:
        bench: a :class:`autotune.measure.benchmark.Benchmark` of a kernel with dims ``m, n, k``
            (its context current).
        libraries: names to try, in order (see :data:`LIBRARIES`).

    Returns:
        The first library that imports: its figures, or a ``note`` when it failed or gave a
        result outside the tolerance; a note naming them all when none imports.
    """
    dims, dt = bench.dim_values, bench.dtype
    m, n, k = dims["m"], dims["n"], dims["k"]
    missing = []
    for lib in libraries:
        try:
            __import__(lib)
        except ImportError:
            missing.append(lib)
            continue
        try:
            with _torch_tf32_off() if lib == "torch" else contextlib.nullcontext():
                a = bench.rng.uniform(-1.0, 1.0, size=(m, k)).astype(dt.numpy)
                b = bench.rng.uniform(-1.0, 1.0, size=(k, n)).astype(dt.numpy)
                launch, fetch = _SETUP[lib](a, b)
                launch()
                bench.drv.synchronize()
                failed = product_tolerance(fetch(), np.matmul(a.astype(np.float64), b.astype(np.float64)),
                                           name="C", dims=dims)
                if failed:
                    raise ArithmeticError(failed)
                t = timing(bench.drv, launch, bench.warmup, bench.repeats)
        except Exception as exc:  # noqa: BLE001  a failing library must not fail the bench: the line says why
            return VendorResult(_NAMES[lib], note=f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
        return VendorResult(_NAMES[lib], t.median_ms, 2.0 * m * n * k / (t.median_ms * 1e-3) / 1e9)
    which = f"{missing[0]} is not installed" if len(missing) == 1 else f"neither {' nor '.join(missing)} is installed"
    return VendorResult("cuBLAS (vendor library)", note=f"not measured: {which}")
