"""``AUTOTUNE_RECORD=NAME``: a program you do not edit, recorded from its first cold launch
to its exit."""

from __future__ import annotations

from autotune import settings
from autotune.errors import InvalidInputError, StoreError
from autotune.runtime.recording.session import Recording
from autotune.runtime.recording.state import STATE

__all__ = ["ENV", "from_environment", "forget"]

ENV = "AUTOTUNE_RECORD"
"""The environment variable that records a program you do not edit: its value is the name."""


def from_environment() -> None:
    """Start the process's recording named by ``AUTOTUNE_RECORD``, once (the first cold
    launch calls this); it stops at exit. Unset or empty: nothing.

    Raises:
        InvalidInputError: a name that is not allowed (``AUTOTUNE_RECORD=...`` named).
        StoreError: the database (``AUTOTUNE_DB``, else the default) cannot be opened for
            writing (``AUTOTUNE_RECORD=...`` named): said at the first launch, not at exit.
    """
    if STATE.env_checked:
        return
    with STATE.lock:
        if STATE.env_checked:
            return
        STATE.env_checked = True
        name = settings.RECORD.get()
        if not name or STATE.active is not None:
            return
        try:
            recording = Recording(name)
        except InvalidInputError as exc:
            raise InvalidInputError(f"{ENV}={name!r}: {exc}") from None
        except StoreError as exc:
            raise StoreError(f"{ENV}={name!r}: {exc}") from exc.__cause__
        recording.start()


def forget() -> None:
    """Read ``AUTOTUNE_RECORD`` again at the next cold launch (tests)."""
    STATE.env_checked = False
