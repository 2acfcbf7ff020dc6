"""The one packer of a kernel's arguments for ``cuLaunchKernel``.

``cuLaunchKernel`` reads a ``void **``: one address per kernel parameter, each pointing at the
parameter's bytes. Every launch path of the package (the measuring backends, the launcher's
prepared launches, ``autotune.compiled``'s ``Launcher`` and the transpose op's prepared launch)
packs them the same way: each argument at its own alignment (its size: 4 or 8 bytes) in one
8-byte aligned buffer, and the address array pointing into it. The buffer outlives every launch
that reads it as long as the :class:`PackedArguments` does.

A launch path that refills some arguments per call either writes them with ``struct`` at
:attr:`PackedArguments.offsets` (several pointers at once: the prepared launches) or through
:meth:`PackedArguments.view`, a ctypes scalar that aliases the argument's bytes (one
``.value =`` per argument: the transpose op).
"""

from __future__ import annotations

import ctypes
import struct
from collections.abc import Hashable, Sequence

__all__ = ["PackedArguments", "SCALAR_FORMATS", "POINTER", "kernel_layout"]

SCALAR_FORMATS = {"int32": "i", "uint32": "I", "int64": "q", "uint64": "Q", "float32": "f", "float64": "d"}
"""``struct`` format of each scalar C type of a kernel file."""
POINTER = "Q"
"""``struct`` format of a device pointer (8 bytes)."""
_CTYPES = {"i": ctypes.c_int32, "I": ctypes.c_uint32, "q": ctypes.c_int64, "Q": ctypes.c_uint64,
           "f": ctypes.c_float, "d": ctypes.c_double}


def kernel_layout(args: Sequence) -> list[tuple[str, str]]:
    """``(name, struct format)`` of a kernel's arguments (``Kernel.args``) in its parameter order:
    :data:`POINTER` for an array, the scalar's format otherwise (a :class:`PackedArguments` layout)."""
    from autotune.kernel.model import Array

    return [(a.name, POINTER if isinstance(a, Array) else SCALAR_FORMATS[a.ctype]) for a in args]


class PackedArguments:
    """A kernel's arguments packed for ``cuLaunchKernel`` (module doc).

    Args:
        layout: ``(name, struct format)`` of every argument, in the order their bytes are laid
            out in the buffer (each at its own alignment); a format is one of
            :data:`SCALAR_FORMATS`' values (``"Q"`` for a pointer).
        order: the arguments' names in the kernel's parameter order, the order of :attr:`argv`
            (default: ``layout``'s order).

    Attributes:
        buffer: the 8-byte aligned buffer (``ctypes.c_uint64`` array).
        argv: the ``void *`` array of the arguments' addresses, in ``order``.
        offsets: each argument's byte offset in the buffer, by name.

    Raises:
        KeyError: a format that is not a scalar's, or a name of ``order`` not in ``layout``.
    """

    __slots__ = ("buffer", "argv", "offsets", "formats")

    def __init__(self, layout: Sequence[tuple[Hashable, str]], order: Sequence[Hashable] | None = None) -> None:
        self.offsets: dict = {}
        self.formats = dict(layout)
        end = 0
        for name, fmt in layout:
            size = ctypes.sizeof(_CTYPES[fmt])
            end = -(-end // size) * size
            self.offsets[name], end = end, end + size
        self.buffer = (ctypes.c_uint64 * max(1, -(-end // 8)))()
        base = ctypes.addressof(self.buffer)
        names = [name for name, _ in layout] if order is None else list(order)
        self.argv = (ctypes.c_void_p * max(1, len(names)))(*[base + self.offsets[n] for n in names])

    def put(self, name: Hashable, value) -> None:
        """Write argument ``name``'s value (an int for a pointer or an integer, a number for a
        float) into the buffer."""
        fmt = self.formats[name]
        struct.pack_into(fmt, self.buffer, self.offsets[name], int(value) if fmt in "iIqQ" else float(value))

    def view(self, name: Hashable):
        """A ctypes scalar of argument ``name``'s type that aliases its bytes in the buffer:
        setting its ``.value`` writes the argument (it keeps the buffer alive)."""
        return _CTYPES[self.formats[name]].from_buffer(self.buffer, self.offsets[name])
