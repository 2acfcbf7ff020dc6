"""Exceptions raised by autotune.

Every error a user can cause derives from :class:`AutotuneError`; the CLI maps each class to
an exit code (see :mod:`autotune.cli`). Failures of a single trial (a config that does not
compile, exceeds the device's limits, or computes a wrong result) are not errors of the
search: they are :class:`TrialFailed` and are recorded as data.
"""

from __future__ import annotations

__all__ = [
    "AutotuneError",
    "InvalidInputError",
    "SearchSpaceError",
    "KernelFileError",
    "GPUUnavailableError",
    "StoreError",
    "NotTunedError",
    "TrialFailed",
    "FIRST_SEARCH",
    "nothing_tuned",
    "no_driver",
]


class AutotuneError(Exception):
    """Base class of the errors autotune raises on purpose."""


class InvalidInputError(AutotuneError, ValueError):
    """A value given by the user (shape, dtype, kernel name, option) is not allowed."""


class SearchSpaceError(InvalidInputError):
    """A search-space file is malformed or inconsistent with its kernel."""


class KernelFileError(InvalidInputError):
    """A kernel file is malformed: the message names the file, the field and what is allowed."""


class GPUUnavailableError(AutotuneError):
    """No CUDA device or driver, or no CUDA backend installed (``pip install 'cuda-autotune[cuda]'``)."""


class StoreError(AutotuneError):
    """The results database cannot be opened, migrated, read or written."""


class NotTunedError(AutotuneError, LookupError):
    """Nothing is stored for the requested (device, kernel, shape, dtype) key.

    Every reading command says it in one wording, ``nothing_tuned``, and exits 2."""


FIRST_SEARCH = "autotune search --kernel smem_pad --size 2048"
"""The command :func:`nothing_tuned` suggests where nothing says which problem is wanted."""


def nothing_tuned(what: str | None = None, run: str = FIRST_SEARCH) -> str:
    """The one wording of an empty answer: ``nothing is tuned yet; run: RUN`` (nothing asked
    for in particular: a database with nothing stored, or none yet), or ``nothing is tuned for
    WHAT; run: RUN``."""
    return f"nothing is tuned {'yet' if what is None else 'for ' + what}; run: {run}"


def no_driver(detail: object) -> GPUUnavailableError:
    """The one wording of a machine without the CUDA driver, whichever layer found it (the
    ``cuda-bindings`` backend, PyCUDA's, the ctypes calls of the runtime and of
    :mod:`autotune.measure.occupancy`): ``detail`` is what the loader said."""
    return GPUUnavailableError(f"the CUDA driver (libcuda.so.1) cannot be loaded: {detail}; autotune needs an "
                               "NVIDIA GPU and its driver for this (check, best, list, export and report do not)")


class TrialFailed(Exception):
    """One config could not be measured; the tuner records it as a failed trial.

    Attributes:
        status: one of ``compile_error``, ``resources``, ``launch_error``, ``wrong_result``,
            ``crash`` (the config left the CUDA context unusable), ``timeout`` (killed at the
            per-trial time limit).
        reason: one line a person can read (compiler message, limit exceeded, first mismatch).
        phases: milliseconds per phase spent before it failed (:mod:`autotune.measure.phases`;
            ``None``: not recorded), set by whoever timed them.
    """

    STATUSES = ("compile_error", "resources", "launch_error", "wrong_result", "crash", "timeout")

    def __init__(self, status: str, reason: str) -> None:
        if status not in self.STATUSES:
            raise ValueError(f"unknown trial status {status!r}; allowed: {', '.join(self.STATUSES)}")
        super().__init__(f"{status}: {reason}")
        self.status = status
        self.reason = reason
        self.phases: dict[str, float] | None = None
