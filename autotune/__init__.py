"""autotune: find the fastest launch config of a CUDA kernel per GPU, problem and dtype.

Public API (everything else is implementation)::

    import autotune
    kernel = autotune.load_kernel("examples/reduction/reduce.toml")   # or a catalog name
    result = autotune.tune(kernel, {"n": 1 << 20}, "float32", device=0, trials=50)
    cfg = autotune.lookup(kernel, {"n": 1 << 20}, "float32", device=0)
    f = autotune.compiled(kernel, {"n": 1 << 20}, "float32")   # then f(out, x, ...) on torch/CuPy arrays
    g = autotune.launcher(kernel)                               # any shape: g(out, x, ...), dims from the shapes
    h = autotune.launcher(kernel, tune="quick")                 # a new shape is tuned first (a short search)
    autotune.tune_kernel("scale", "scale.cu", {"y": y, "x": x, "n": np.int32(n)}, block=["B", 1, 1],
                         grid=["cdiv(n, B)", 1, 1], space={"B": [128, 256]}, answer={"y": 2 * x})
    xt = autotune.transpose(x)                                  # a tuned catalog transpose
    with autotune.record("app"): ...                            # count every launch: a workload to tune

``import autotune`` touches neither CUDA nor the database, and imports neither PyCUDA,
SQLAlchemy nor Optuna: each name below is imported when first used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

__version__ = "0.3.0"

_NAMES = {
    "Config": "autotune.kernel.config", "DTYPES": "autotune.kernel.dtypes", "AutotuneError": "autotune.errors",
    "Kernel": "autotune.kernel.model", "KERNELS": "autotune.kernel.catalog", "load_kernel": "autotune.kernel.loader",
    "kernel_from_dict": "autotune.kernel.loader", "resolve_kernel": "autotune.kernel.catalog",
    "LaunchConfig": "autotune.runtime.lookup", "lookup": "autotune.runtime.lookup",
    "clear_cache": "autotune.base.caches", "compiled": "autotune.runtime.compiled",
    "transpose": "autotune.runtime.transpose.op", "tune": "autotune.search.tune",
    "launcher": "autotune.runtime.launcher",
    "SearchOptions": "autotune.search.options", "STRATEGIES": "autotune.search.strategies",
    "Problem": "autotune.kernel.problem", "record": "autotune.runtime.recording",
    "tune_kernel": "autotune.search.tune_kernel", "KernelTuning": "autotune.search.tune_kernel",
}

__all__ = [*_NAMES, "__version__"]

if TYPE_CHECKING:  # what type checkers and editors read; at run time __getattr__ imports each name
    from autotune.base.caches import clear_cache
    from autotune.errors import AutotuneError
    from autotune.kernel.catalog import KERNELS, resolve_kernel
    from autotune.kernel.config import Config
    from autotune.kernel.dtypes import DTYPES
    from autotune.kernel.loader import kernel_from_dict, load_kernel
    from autotune.kernel.model import Kernel
    from autotune.kernel.problem import Problem
    from autotune.runtime.compiled import compiled
    from autotune.runtime.launcher import launcher
    from autotune.runtime.lookup import LaunchConfig, lookup
    from autotune.runtime.recording import record
    from autotune.runtime.transpose.op import transpose
    from autotune.search.options import SearchOptions
    from autotune.search.strategies import STRATEGIES
    from autotune.search.tune import tune
    from autotune.search.tune_kernel import KernelTuning, tune_kernel


if not TYPE_CHECKING:  # hidden from checkers, which would otherwise accept any name as an attribute
    def __getattr__(name: str) -> object:
        if name in _NAMES:
            value = getattr(importlib.import_module(_NAMES[name]), name)
            globals()[name] = value
            return value
        raise AttributeError(f"module 'autotune' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The module's own names and every public one, imported or not (``dir(autotune)``, completion)."""
    return sorted({*globals(), *__all__})
