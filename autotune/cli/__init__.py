"""The ``autotune`` command line: :func:`main`, the console script's entry point, and ``app``,
the Typer app of :mod:`autotune.cli.root` with every command registered (:mod:`autotune.cli.commands`).

This package's own import is light, and the app is imported when first used: each process a
command spawns (a measuring process, a GPU's worker) runs the console script again as its
main module (``multiprocessing``'s ``spawn``), and that script imports this package. Typer,
Rich and every command module would otherwise be imported again in each of them, before the
process could do its work.
"""

from __future__ import annotations

__all__ = ["app", "main"]


def main() -> None:
    """The ``autotune`` console script: runs the Typer app on ``sys.argv``."""
    from .commands import app

    app()


def __getattr__(name: str):
    if name == "app":  # `from autotune.cli import app`
        from .commands import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
