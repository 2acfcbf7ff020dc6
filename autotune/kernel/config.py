"""The kernel configuration: a frozen, hashable set of macro values, usable as a cache key.

Modelled on Triton's ``triton.Config``: a config names the kernel and fixes every tunable
macro (TILE_DIM, BLOCK_ROWS, IPAD, ...). Two equal configs compile to the same binary for a
given dtype, device and toolchain, so a config (with those) is the key of every cache and of
every stored result.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["Config"]


@dataclass(frozen=True, order=True)
class Config:
    """A kernel and the integer value of each of its tunable macros.

    Attributes:
        kernel: catalog name of the kernel (``smem_pad``).
        macros: ``(name, value)`` pairs sorted by name; values are validated ints.
    """

    kernel: str
    macros: tuple[tuple[str, int], ...]

    @classmethod
    def of(cls, kernel: str, macros: Mapping[str, int]) -> Config:
        """Build a config from a mapping; the pairs are sorted so equal configs hash equal.

        Raises:
            TypeError: a macro value is not an ``int`` (bools are rejected too).
        """
        for name, value in macros.items():
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"macro {name}={value!r} is not an int")
        return cls(kernel, tuple(sorted(macros.items())))

    def as_dict(self) -> dict[str, int]:
        """The macros as a plain dict."""
        return dict(self.macros)

    def __getitem__(self, name: str) -> int:
        return self.as_dict()[name]

    @property
    def key(self) -> str:
        """Canonical text form, e.g. ``BLOCK_ROWS=8,IPAD=1,TILE_DIM=32`` (stored in the DB)."""
        return ",".join(f"{k}={v}" for k, v in self.macros)

    def __str__(self) -> str:
        return f"{self.kernel}[{self.key}]"
