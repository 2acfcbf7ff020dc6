"""The process's recording state, one object: the active recording, the launches and methods
its hooks swap, and whether ``AUTOTUNE_RECORD`` and the exit hook were seen. A child forked while
a recording is active gets the state's lock anew and the recording made its own."""

from __future__ import annotations

import atexit
import os
import threading
import warnings
import weakref
from collections.abc import Callable
from typing import Any

__all__ = ["State", "STATE", "active", "hook_exit", "at_exit"]


class State:
    """What the recording's modules share in one process.

    Attributes:
        lock: held while the active recording or the hooked launches change.
        active: the recording active now (``Recording``), or ``None``.
        live: every ``PackedLaunch`` made (weakly): their ``go`` is swapped.
        methods: ``(class, method name, wrapper factory)`` of every launch method swapped.
        env_checked: ``AUTOTUNE_RECORD`` was read.
        exit_hooked: :func:`at_exit` is registered with ``atexit``.
    """

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.active: Any = None
        self.live: weakref.WeakSet = weakref.WeakSet()
        self.methods: list[tuple[type, str, Callable]] = []
        self.env_checked = False
        self.exit_hooked = False


STATE = State()


def active():
    """The recording active in this process, or ``None``."""
    return STATE.active


def hook_exit() -> None:
    """Have :func:`at_exit` run at exit (once per process)."""
    if not STATE.exit_hooked:
        STATE.exit_hooked = True
        atexit.register(at_exit)


def at_exit() -> None:
    """Stop the active recording, its last batch written; a failure is said, not raised."""
    recording = STATE.active
    if recording is not None:
        try:
            recording.stop()
        except Exception as exc:  # noqa: BLE001  (at exit: said, not raised)
            warnings.warn(f"recording {recording.name!r}: the last batch could not be written: {exc}",
                          RuntimeWarning, stacklevel=1)


def _after_fork_in_child() -> None:
    """``os.register_at_fork``'s hook in a child: the lock made anew (a thread of the parent may
    have held it), and the active recording's run made the child's own."""
    STATE.lock = threading.RLock()
    if STATE.active is not None:
        STATE.active._forked()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
