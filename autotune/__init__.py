"""autotune: find the fastest launch config of a CUDA kernel per GPU, shape and dtype.

Public API (everything else is implementation)::

    import autotune
    cfg = autotune.lookup("smem_pad", (8192, 8192), "float32", device=0)
    at = autotune.transpose(a_gpu)      # pycuda GPUArray, tuned config of its device

``import autotune`` touches neither CUDA nor the database: PyCUDA is imported, and the
database opened, only when a function needs them.
"""

from __future__ import annotations

from autotune.kernel.config import Config
from autotune.kernel.dtypes import DTYPES
from autotune.errors import AutotuneError
from autotune.kernel.catalog import KERNELS
from autotune.runtime.launch import transpose
from autotune.runtime.lookup import LaunchConfig, clear_cache, lookup

__version__ = "0.1.0"

__all__ = [
    "Config",
    "LaunchConfig",
    "lookup",
    "clear_cache",
    "transpose",
    "KERNELS",
    "DTYPES",
    "AutotuneError",
    "__version__",
]
