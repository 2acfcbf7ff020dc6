"""The ``autotune`` command line's Typer app (Typer + Rich) and its root options. Each command
module registers its commands on ``app``; :mod:`autotune.cli.commands` imports them all.

Commands are thin: they parse options, call the library, and print. Every library error
(bad input, no GPU / CUDA backend / nvcc, unusable database, nothing tuned) is one ``error:`` line
and exit code 2; Ctrl-C exits 130 after saying what was kept.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer
from typer.core import TyperGroup

ORDER = ("search", "sweep", "tune-shapes", "workloads", "plan", "tune", "best", "list", "trials", "dispatch", "kernels",
         "check", "bench", "report", "export", "bundle", "import", "info", "examples", "db")
"""``autotune --help`` lists the commands in the order of the work: tune (one problem, its
shapes, or a recorded workload), read the results,
know the kernels, measure and plot, move results, then the installation and its database."""


class _InWorkOrder(TyperGroup):
    """The commands in the order of the work; help rendered by Rich (panels of options, as wide
    as the terminal), usage errors one plain ``Error: ...`` line (not a box)."""

    def list_commands(self, ctx) -> list[str]:
        names = super().list_commands(ctx)
        return sorted(names, key=lambda name: ORDER.index(name) if name in ORDER else len(ORDER))

    def get_params(self, ctx):
        from .completion import guard

        params = super().get_params(ctx)
        for param in params:  # Typer adds it after the group is made: guarded where it is read
            if param.name == "install_completion" and param.callback is not None:
                param.callback = guard(param.callback)
        return params

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, windows_expand_args=True,
             **extra):
        from typer.core import _main

        return _main(self, args=args, prog_name=prog_name, complete_var=complete_var, standalone_mode=standalone_mode,
                     windows_expand_args=windows_expand_args, rich_markup_mode=None,  # errors plain; help stays Rich
                     **extra)


# rich_markup_mode="rich": help in panels (each option's rich_help_panel), as wide as the terminal
app = typer.Typer(cls=_InWorkOrder, no_args_is_help=True, add_completion=True, pretty_exceptions_enable=False,
                  rich_markup_mode="rich",
                  help="Autotune CUDA kernels per GPU, shape and dtype; look tuned configs up.\n\n"
                       "\b\nStart with:\n"
                       "  autotune kernels\n"
                       "  autotune search --kernel smem_pad --size 4096 --trials 100\n"
                       "  autotune best --size 4096\n"
                       "  autotune info")


def _version(value: bool) -> None:
    if value:
        from autotune import __version__

        typer.echo(f"autotune {__version__}")
        raise typer.Exit()


def _backends(incomplete: str) -> list[str]:
    from autotune.measure import backends

    return [name for name in backends.names() if name.startswith(incomplete)]


def _backend(value: Optional[str]) -> Optional[str]:
    if value is not None:
        from autotune import settings
        from autotune.measure import backends

        if value not in backends.names():
            raise typer.BadParameter(f"{value!r} is not a backend; allowed: {', '.join(backends.names())}")
        settings.BACKEND.set(value)  # the measuring processes inherit it
    return value


@app.callback()
def _root(version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                                help="Print autotune's version and exit.")] = False,
          backend: Annotated[Optional[str], typer.Option(
              "--backend", metavar="NAME", callback=_backend, autocompletion=_backends,
              help="The CUDA backend that measures: cuda-bindings (the default where installed) or pycuda "
                   "(sets $AUTOTUNE_BACKEND).")] = None) -> None:
    from ._common import fit_consoles

    fit_consoles()


__all__ = ["app"]
