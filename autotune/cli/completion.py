"""``autotune --install-completion``: Typer's installer of shell completion, refused in one line
where it cannot write.

Typer (``typer._completion_shared``) installs completion by rewriting the shell's start-up file
(``~/.bashrc``, ``~/.zshrc``) and writing a script beside it (``~/.bash_completions/``,
``~/.zfunc/``, ``~/.config/fish/completions/``). Where the home folder is read-only, or one of
those paths is a folder, a device or a file where a folder is needed, it raises ``OSError``
part way (``~/.bashrc`` already rewritten). :func:`guard` wraps its option's callback: every
path it will write is checked first, so a refusal changes nothing, and whatever still fails
(a full disk) is one ``error:`` line, exit 2, like every other refusal of the CLI.
"""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import typer

__all__ = ["SHELLS", "targets", "guard"]

SHELLS = ("bash", "zsh", "fish", "powershell", "pwsh")
"""The shells Typer installs completion for."""


def targets(shell: str, prog_name: str, home: Path) -> list[Path]:
    """The files Typer writes to install ``shell``'s completion of ``prog_name`` (PowerShell's
    profile is asked of PowerShell itself: none listed)."""
    return {"bash": [home / ".bashrc", home / ".bash_completions" / f"{prog_name}.sh"],
            "zsh": [home / ".zshrc", home / ".zfunc" / f"_{prog_name}"],
            "fish": [home / ".config" / "fish" / "completions" / f"{prog_name}.fish"]}.get(shell, [])


def _unwritable(path: Path) -> str | None:
    """Why ``path`` cannot be written as a regular file (creating its missing folders), or ``None``."""
    try:
        info = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        info = None
    except OSError as exc:
        return f"{path}: {exc.strerror or exc}"
    if info is not None:
        if not stat.S_ISREG(info.st_mode):
            return f"{path} is not a regular file"
        return None if os.access(path, os.W_OK) else f"{path} is not writable"
    folder = path.parent
    while True:  # the nearest folder that exists must be one, and writable
        try:
            info = os.stat(folder)
        except (FileNotFoundError, NotADirectoryError):
            folder = folder.parent
            continue
        except OSError as exc:
            return f"{folder}: {exc.strerror or exc}"
        if not stat.S_ISDIR(info.st_mode):
            return f"{folder} is not a folder"
        return None if os.access(folder, os.W_OK | os.X_OK) else f"the folder {folder} is not writable"


def _shell(value) -> str | None:
    if isinstance(value, str):
        return value.lower()
    if os.getenv("_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION"):
        return None
    try:
        import shellingham

        return shellingham.detect_shell()[0]
    except Exception:  # shellingham.ShellDetectionFailure, or no shellingham: Typer's own detection fails too
        return None


def _refuse(text: str) -> typer.Exit:
    from ._common import EXIT_ERROR, err

    err.print(f"error: cannot install shell completion: {text}", markup=False, soft_wrap=True)
    return typer.Exit(EXIT_ERROR)


def guard(install):
    """``install`` (Typer's ``--install-completion`` callback) that first checks the shell and
    every path it will write, refusing in one ``error:`` line (exit 2) with nothing written."""
    if getattr(install, "guarded", False):
        return install

    def callback(ctx, param, value):
        if not value or ctx.resilient_parsing:
            return install(ctx, param, value)
        shell = _shell(value)
        if shell not in SHELLS:
            found = "the shell could not be detected" if shell is None else f"shell {shell!r} is not supported"
            raise _refuse(f"{found}; allowed: {', '.join(SHELLS)} (give it: --install-completion SHELL where "
                          "the option takes one, or run from that shell)")
        prog_name = ctx.find_root().info_name or "autotune"
        for path in targets(shell, prog_name, Path.home()):
            why = _unwritable(path)
            if why is not None:
                raise _refuse(f"{why}; nothing was changed (print the script with --show-completion instead)")
        try:
            return install(ctx, param, value)
        except (OSError, UnicodeError, subprocess.SubprocessError) as exc:
            where = getattr(exc, "filename", None)
            raise _refuse(f"{where + ': ' if where else ''}{getattr(exc, 'strerror', None) or exc}") from None

    callback.guarded = True
    return callback
