"""The ``autotune`` command line (Typer + Rich).

Commands are thin: they parse options, call the library, and print. Every library error
(bad input, no GPU / PyCUDA / nvcc, unusable database, nothing tuned) is one ``error:`` line
and exit code 2; Ctrl-C exits 130 after saying what was kept.
"""

from __future__ import annotations

import typer

# rich_markup_mode=None: usage errors print as one plain "Error: ..." line, not a box.
app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                  rich_markup_mode=None,
                  help="Autotune CUDA kernels per GPU, shape and dtype; look tuned configs up.")

from . import bench, check, db, report, results, search, share  # noqa: E402  (each module registers its commands on app)

__all__ = ["app", "main"]


def main() -> None:
    """Console-script entry point."""
    app()
