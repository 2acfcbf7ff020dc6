"""The whole ``autotune`` command line: the root Typer app (:mod:`autotune.cli.root`) with every
command module registered on it.

Each command module takes ``app`` from the root and registers its commands on it as it is
imported. This module imports them all, so that the root imports none of them: the command line
holds no import cycle (docs/architecture.md, "Rules").
"""

from __future__ import annotations

from . import bench, check, db, dispatch, info, report, results, search, share, workloads  # noqa: F401 (each registers)
from .root import app

__all__ = ["app"]
