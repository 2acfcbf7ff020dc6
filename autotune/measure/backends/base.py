"""What a CUDA backend gives the measuring code: one interface, its contract written here.

A backend is the one door of :mod:`autotune.measure` to the CUDA driver: devices and their
primary contexts, device memory and copies, CUDA events, and modules loaded from a cubin with
their functions launched. The measuring code (the benchmark, the verification, the resets, the
bounds, the device comparison, the occupancy) calls only what this page lists, so any backend
that keeps the contract measures the same way. Two are registered
(:mod:`autotune.measure.backends`): NVIDIA's ``cuda.bindings`` (the ``cuda-bindings`` wheel,
the default) and PyCUDA. The tests run the measuring code on a fake one (``tests/fakes.py``).

The shape follows Kernel Tuner's backends (``kernel_tuner/backends/backend.py``: an abstract
base whose subclasses wrap PyCUDA, cuda-python, CuPy...), cut to what a config's measurement
needs. Names follow the CUDA driver API's (``memcpy_htod`` is ``cuMemcpyHtoD``).

Contract:

* Addresses are ints (a :class:`DeviceAllocation` is one); every method that takes a device
  address takes an int or an allocation.
* Every call runs in the context current on the calling thread (:meth:`Backend.primary_context`
  makes one current); ``..._async`` calls and launches go to the default stream, in order.
* A refused call raises :attr:`Backend.Error`, or its subclasses :attr:`Backend.LaunchError` (a
  launch failed: out of resources, a launch failure, a timeout) and :attr:`Backend.MemoryError`
  (an allocation failed); the message is ``"<call> failed: <the driver's text>"``, the format
  :func:`autotune.measure.sticky.sticky_reason` reads.
* Nothing touches CUDA before the first call of a method (import is free).
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    import numpy as np

__all__ = ["Backend", "DeviceProperties", "DeviceAllocation", "Event", "Module", "Function", "CudaError",
           "CudaLaunchError", "CudaMemoryError", "EVENT_BLOCKING_SYNC", "SIGNATURE_CODES"]

SIGNATURE_CODES = {"P": "Q", "i": "i", "I": "I", "q": "q", "Q": "Q", "f": "f", "d": "d"}
"""A kernel's argument signature (``"PPii"``: PyCUDA's letters, :attr:`autotune.kernel.model.Kernel.signature`)
letter by letter: ``P`` a pointer, ``i``/``I`` 32-bit and ``q``/``Q`` 64-bit integers, ``f``
float, ``d`` double; the value is each one's :mod:`struct` code."""


class CudaError(Exception):
    """A call the CUDA driver refused (``cuda.bindings``'s backend; PyCUDA raises its own
    ``pycuda.driver.Error``). ``code``: the ``CUresult`` number."""

    def __init__(self, message: str, code: int = 0) -> None:
        super().__init__(message)
        self.code = code


class CudaLaunchError(CudaError):
    """A launch failed: out of resources, an unspecified launch failure, a timeout."""


class CudaMemoryError(CudaError):
    """An allocation failed (``CUDA_ERROR_OUT_OF_MEMORY``)."""


class DeviceAllocation(int):
    """A device address (an int) with :meth:`free`, as PyCUDA's ``DeviceAllocation``."""

    _free: Callable[[int], None] | None = None

    def free(self) -> None:
        """Release the memory (once; later calls do nothing)."""
        release, self._free = self._free, None
        if release is not None:
            release(int(self))


@dataclass(frozen=True)
class DeviceProperties:
    """What a backend reads of one device (:func:`autotune.measure.device.query_device` makes a
    :class:`~autotune.measure.device.DeviceInfo` of it).

    Attributes:
        name: marketing name; ``major``, ``minor``: the compute capability.
        total_memory: bytes. ``pci_bus_id``: ``0000:1A:00.0``.
        sm_count, max_threads_per_block, max_shared_per_block (bytes, without the opt-in),
        max_shared_optin (bytes, with it), l2_bytes, max_threads_per_sm: the driver's attributes.
    """

    name: str
    major: int
    minor: int
    total_memory: int
    pci_bus_id: str
    sm_count: int
    max_threads_per_block: int
    max_shared_per_block: int
    max_shared_optin: int
    l2_bytes: int
    max_threads_per_sm: int


class Event(ABC):
    """A CUDA event (``cuEventCreate``), made with :data:`EVENT_BLOCKING_SYNC`: waiting for it
    sleeps in the driver instead of spinning on a core, so a measuring process waiting for its
    samples leaves that core to the nvcc runs compiling ahead (the events' times are the GPU's,
    either way)."""

    @abstractmethod
    def record(self) -> None:
        """Record it on the default stream."""

    @abstractmethod
    def synchronize(self) -> None:
        """Wait until the GPU has passed it."""

    @abstractmethod
    def time_since(self, start: Event) -> float:
        """Milliseconds from ``start`` to this event (both recorded and passed)."""


EVENT_BLOCKING_SYNC = 0x1
"""``CU_EVENT_BLOCKING_SYNC``: ``cuEventSynchronize`` on the event blocks the calling thread."""


class Function(ABC):
    """A kernel of a loaded module, prepared with its argument signature.

    Attributes:
        registers: registers per thread. ``static_shared``: static shared memory per block,
            bytes. ``local_bytes``: local memory per thread (spills), bytes.
        max_threads_per_block: the most threads per block this binary launches with.
    """

    registers: int
    static_shared: int
    local_bytes: int
    max_threads_per_block: int

    @abstractmethod
    def max_dynamic_shared(self) -> int:
        """Its ``MAX_DYNAMIC_SHARED_SIZE_BYTES`` (bytes of dynamic shared memory a launch may ask)."""

    @abstractmethod
    def set_max_dynamic_shared(self, nbytes: int) -> None:
        """Set it (the opt-in above 48 KiB, :mod:`autotune.measure.shared_memory`).

        Raises:
            CudaError: the driver refused the size (whatever the backend's own errors).
        """

    @abstractmethod
    def launcher(self, grid: Sequence[int], block: Sequence[int], args: Sequence, shared: int = 0) -> Callable[[], None]:
        """A call that launches this function on the default stream with ``args`` (one NumPy
        scalar per letter of the signature: ``np.uintp`` addresses, ``np.int32``... values),
        ``grid`` blocks of ``block`` threads and ``shared`` bytes of dynamic shared memory.
        Everything is made ready here, once: the call itself only launches (a benchmark calls
        it thousands of times between two events).

        Raises (the call):
            Backend.LaunchError, Backend.Error: the driver refused the launch.
        """

    def launch(self, grid: Sequence[int], block: Sequence[int], args: Sequence, shared: int = 0) -> None:
        """Launch once (:meth:`launcher`, called)."""
        self.launcher(grid, block, args, shared)()

    @abstractmethod
    def active_blocks_per_sm(self, threads: int, dynamic_shared: int = 0) -> int:
        """Blocks of ``threads`` threads resident on one SM at once, from the driver
        (``cuOccupancyMaxActiveBlocksPerMultiprocessor``).

        Raises:
            Backend.Error: the driver refused.
        """


class Module(ABC):
    """A module loaded from a cubin into the current context."""

    @abstractmethod
    def function(self, name: str, signature: str) -> Function:
        """Its kernel ``name``, prepared for arguments of ``signature`` (:data:`SIGNATURE_CODES`).

        Raises:
            Backend.Error: no such kernel.
        """


class Backend(ABC):
    """The CUDA driver as the measuring code uses it (the module doc gives the contract).

    Attributes:
        name: the registry's name (``cuda-bindings``, ``pycuda``).
        Error, LaunchError, MemoryError: the exceptions its calls raise (see the contract).
    """

    name: ClassVar[str]
    Error: type[Exception] = CudaError
    LaunchError: type[Exception] = CudaLaunchError
    MemoryError: type[Exception] = CudaMemoryError

    # -- the driver and its devices -------------------------------------------------------------

    @abstractmethod
    def init(self) -> None:
        """Load and initialise the driver (once; ``cuInit``).

        Raises:
            GPUUnavailableError: the binding is not installed, or the driver cannot be loaded
                or initialised (no GPU driver on this machine).
        """

    @abstractmethod
    def driver_version(self) -> int:
        """The CUDA version the driver supports, as ``cuDriverGetVersion`` gives it (``13000``)."""

    @abstractmethod
    def cuda_version(self) -> str:
        """The CUDA release the binding was built for, ``"13.0"`` (part of a result's device identity)."""

    @abstractmethod
    def device_count(self) -> int:
        """How many CUDA devices there are."""

    @abstractmethod
    def device_properties(self, ordinal: int) -> DeviceProperties:
        """Identity and limits of device ``ordinal``."""

    @abstractmethod
    def current_pci_bus_id(self) -> str | None:
        """The PCI bus id of the current context's device; ``None``: no context is current."""

    @abstractmethod
    def push_primary_context(self, ordinal: int) -> None:
        """Retain device ``ordinal``'s primary context and make it current."""

    @abstractmethod
    def pop_primary_context(self, ordinal: int) -> None:
        """Undo :meth:`push_primary_context`."""

    @contextlib.contextmanager
    def primary_context(self, ordinal: int) -> Iterator[None]:
        """Device ``ordinal``'s primary context, current for the ``with`` block (the context
        PyTorch and CuPy use)."""
        self.push_primary_context(ordinal)
        try:
            yield
        finally:
            self.pop_primary_context(ordinal)

    @abstractmethod
    def synchronize(self) -> None:
        """Wait for all work of the current context (``cuCtxSynchronize``); a launch's error
        surfaces here (:attr:`LaunchError`, or :attr:`Error` for a sticky one)."""

    # -- memory ---------------------------------------------------------------------------------

    @abstractmethod
    def mem_alloc(self, nbytes: int) -> DeviceAllocation:
        """``nbytes`` of device memory (:attr:`MemoryError` where there is no room)."""

    @abstractmethod
    def mem_get_info(self) -> tuple[int, int]:
        """``(free, total)`` bytes of the current device."""

    @abstractmethod
    def pagelocked_empty(self, count: int, dtype) -> np.ndarray:
        """A host array of ``count`` elements of ``dtype`` in page-locked memory (``cuMemHostAlloc``),
        released when the array is."""

    @abstractmethod
    def memset_d8(self, address: int, value: int, count: int) -> None:
        """Set ``count`` bytes to ``value`` (synchronous)."""

    @abstractmethod
    def memcpy_htod(self, address: int, host: np.ndarray) -> None:
        """Copy the C-contiguous ``host`` array to ``address`` (synchronous)."""

    @abstractmethod
    def memcpy_dtoh(self, host: np.ndarray, address: int) -> None:
        """Fill the C-contiguous ``host`` array from ``address`` (synchronous)."""

    @abstractmethod
    def memcpy_dtod(self, dst: int, src: int, nbytes: int) -> None:
        """Copy ``nbytes`` on the device (synchronous)."""

    @abstractmethod
    def memcpy_dtod_async(self, dst: int, src: int, nbytes: int) -> None:
        """Copy ``nbytes`` on the device, queued on the default stream."""

    @abstractmethod
    def memset_d8_async(self, address: int, value: int, count: int) -> None:
        """Set ``count`` bytes, queued."""

    @abstractmethod
    def memset_d16_async(self, address: int, value: int, count: int) -> None:
        """Set ``count`` 2-byte words, queued."""

    @abstractmethod
    def memset_d32_async(self, address: int, value: int, count: int) -> None:
        """Set ``count`` 4-byte words, queued."""

    @abstractmethod
    def memset_d2d32_async(self, address: int, pitch: int, value: int, width: int, height: int) -> None:
        """Set ``width`` 4-byte words at the start of each of ``height`` rows ``pitch`` bytes apart, queued."""

    # -- events and modules ---------------------------------------------------------------------

    @abstractmethod
    def event(self) -> Event:
        """A new CUDA event."""

    @abstractmethod
    def load_module(self, image: bytes) -> Module:
        """Load a cubin into the current context (``cuModuleLoadData``)."""
