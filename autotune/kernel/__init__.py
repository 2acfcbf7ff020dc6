"""The kernel model: what a kernel is (source, problem, arguments, launch, space, check,
objective), its configs and search space, and the catalog of kernel files.

``resolve_kernel`` takes a catalog name or a path to a kernel file.
"""

from autotune.kernel.catalog import KERNELS, get_kernel, resolve_kernel
from autotune.kernel.model import Kernel

__all__ = ["KERNELS", "Kernel", "get_kernel", "resolve_kernel"]
