"""Where the data shipped with autotune lives: kernel sources, search spaces, migrations, and
the examples the README and the tutorials use.

In a source checkout (or an editable install) they are the top-level ``kernels/``,
``configs/``, ``migrations/`` and ``examples/`` folders of the repository; a wheel carries the same folders
inside the package as ``autotune/_data/<name>`` (see ``force-include`` in pyproject.toml).
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["DATA_NAMES", "data_dir"]

#: The data folders :func:`data_dir` knows.
DATA_NAMES = frozenset({"kernels", "configs", "migrations", "examples"})

_PACKAGE = Path(__file__).resolve().parent


def _candidates(name: str) -> tuple[Path, Path]:
    """Installed location first (wheel), then the repository root (checkout)."""
    return (_PACKAGE / "_data" / name, _PACKAGE.parent / name)


def data_dir(name: str) -> Path:
    """The folder of shipped data ``name`` (``kernels``, ``configs``, ``migrations`` or ``examples``).

    Raises:
        ValueError: ``name`` is not one of :data:`DATA_NAMES`.
        FileNotFoundError: the folder is in neither location (a broken install).
    """
    if name not in DATA_NAMES:
        raise ValueError(f"unknown data folder {name!r}; allowed: {', '.join(sorted(DATA_NAMES))}")
    candidates = _candidates(name)
    for path in candidates:
        if path.is_dir():
            return path
    tried = " or ".join(str(p) for p in candidates)
    raise FileNotFoundError(
        f"autotune's {name!r} data folder is missing (looked in {tried}); reinstall autotune"
    )
