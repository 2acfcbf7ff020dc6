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

__version__ = "0.4.0"

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

__all__ = [  # a literal list, so that type checkers read it (mypy --strict: no implicit re-export)
    "AutotuneError",
    "Config",
    "DTYPES",
    "KERNELS",
    "Kernel",
    "KernelTuning",
    "LaunchConfig",
    "Problem",
    "STRATEGIES",
    "SearchOptions",
    "__version__",
    "clear_cache",
    "compiled",
    "kernel_from_dict",
    "launcher",
    "load_kernel",
    "lookup",
    "record",
    "resolve_kernel",
    "transpose",
    "tune",
    "tune_kernel",
]
"""The public names; ``tests/test_public_api.py`` checks they are the lazy names and ``__version__``."""

if TYPE_CHECKING:  # what type checkers and editors read; at run time __getattr__ imports each name
    from autotune.base.caches import clear_cache as clear_cache
    from autotune.errors import AutotuneError as AutotuneError
    from autotune.kernel.catalog import KERNELS as KERNELS, resolve_kernel as resolve_kernel
    from autotune.kernel.config import Config as Config
    from autotune.kernel.dtypes import DTYPES as DTYPES
    from autotune.kernel.loader import kernel_from_dict as kernel_from_dict, load_kernel as load_kernel
    from autotune.kernel.model import Kernel as Kernel
    from autotune.kernel.problem import Problem as Problem
    from autotune.runtime.compiled import compiled as compiled
    from autotune.runtime.launcher import launcher as launcher
    from autotune.runtime.lookup import LaunchConfig as LaunchConfig, lookup as lookup
    from autotune.runtime.recording import record as record
    from autotune.runtime.transpose.op import transpose as transpose
    from autotune.search.options import SearchOptions as SearchOptions
    from autotune.search.strategies import STRATEGIES as STRATEGIES
    from autotune.search.tune import tune as tune
    from autotune.search.tune_kernel import KernelTuning as KernelTuning, tune_kernel as tune_kernel


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
