"""Tuning on first sight, opt-in: ``autotune.launcher(kernel, tune="quick")``.

Triton's autotuner tunes a new shape on its first call; autotune's launcher does so only where
asked. With ``tune="quick"``, the first call of a shape that has no tuned config stored for the
exact key (:func:`autotune.lookup` answers from another rung) runs a short search of that problem
in a child process (``python -m autotune search ... --format json``, :data:`PRESETS`: a few dozen
trials, at most a minute), which stores every trial and the winner like any search; the lookup's
answers are then forgotten (:func:`autotune.clear_cache`) and the launch uses the stored winner.
A child process, because a search measures in a CUDA context of its own and a crash or a hang
of a config must not take the caller down; and because the runtime does not import the search
(docs/architecture.md).

It is never silent: each shape it tuned, or could not tune, is said once, by a
:class:`TuningWarning` (a ``UserWarning``: shown by default, ``warnings.filterwarnings`` silences
it), naming the problem, the time it took and the config chosen, or why it failed and what
config is launched instead. A shape with a stored config is launched at once, silently.

One search per shape on a host: the ranks of a job (or any processes) meeting one new shape take
a lock of that shape, database and GPU model (:func:`claimed`, an ``flock`` on a file in the
cubin cache's folder, released by the kernel when its holder dies); the first searches, the
others wait, then find its winner stored and launch it (each says so). Processes on several
hosts sharing one database do not share the lock: each host searches once.

``AUTOTUNE_TUNE`` (:data:`autotune.settings.TUNE`) switches it for the whole process, read at each
new shape: ``off`` (no launcher tunes, whatever its ``tune=``), or a preset's name (every launcher
without a bundle tunes with it, also one that asked nothing); unset, each launcher's ``tune=``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from autotune import settings
from autotune.base.files import lock_file
from autotune.errors import InvalidInputError
from autotune.kernel.problem import Problem

__all__ = ["PRESETS", "TuningWarning", "check_preset", "preset_now", "claimed", "tune_first"]

PRESETS: dict[str, dict[str, int]] = {"quick": {"trials": 24, "repeats": 20, "top-k": 3, "rounds": 3, "timeout": 60}}
"""Search options (``autotune search``'s flags) of each ``tune=`` preset: ``quick`` measures at
most 24 configs (20 samples each), starts none after 60 s, re-times the top 3 over 3 rounds."""


class TuningWarning(UserWarning):
    """What tuning on first sight did for a shape: tuned it (the config, the time), or why not."""


def check_preset(tune: str | None) -> str | None:
    """``tune`` if it is ``None`` or a preset's name.

    Raises:
        InvalidInputError: another value.
    """
    if tune is not None and (not isinstance(tune, str) or tune not in PRESETS):
        raise InvalidInputError(f"tune={tune!r} is not allowed; allowed: None (off), {', '.join(map(repr, PRESETS))}")
    return tune


def preset_now(tune: str | None) -> str | None:
    """The preset a launcher whose ``tune=`` is ``tune`` uses now: ``AUTOTUNE_TUNE``'s, where it
    is set (``off``: none), else ``tune``.

    Raises:
        InvalidInputError: ``AUTOTUNE_TUNE`` is neither ``off`` nor a preset's name.
    """
    value = settings.TUNE.get().strip()
    if not value:
        return tune
    if value == "off":
        return None
    if value not in PRESETS:
        raise InvalidInputError(f"AUTOTUNE_TUNE={value!r} is not allowed; allowed: off, {', '.join(PRESETS)} "
                                "(unset: each launcher's tune=)")
    return value


def lock_path(problem: Problem, device_name: str, db: str | None) -> Path:
    """The lock file of tuning ``problem`` on a ``device_name`` GPU into ``db`` (``None``: the
    default database): in the cubin cache's folder (``AUTOTUNE_CACHE_DIR``), named by a hash of
    the three."""
    from autotune.measure.cubin_cache import cache_dir

    what = "\0".join((db or settings.DB.get() or "(default)", device_name, repr(problem.ref)))
    return cache_dir() / "first-sight" / f"{hashlib.sha256(what.encode()).hexdigest()[:32]}.lock"


@contextlib.contextmanager
def claimed(problem: Problem, device_name: str, db: str | None) -> Iterator[None]:
    """Hold the lock of tuning ``problem`` (:func:`lock_path`) for the block: another process
    (or thread) asking for it waits until this block ends. Where the lock cannot be taken (a
    cache folder that cannot be written) the block runs unlocked: at worst two searches."""
    with lock_file(lock_path(problem, device_name, db)):
        yield


def search_command(problem: Problem, ordinal: int, db: str | None, preset: str) -> list[str]:
    """The ``autotune search`` command line that tunes ``problem`` on GPU ``ordinal``."""
    ref = problem.ref
    dims = ",".join(f"{k}={v}" for k, v in problem.dims)
    flags = [x for flag, value in PRESETS[preset].items() for x in (f"--{flag}", str(value))]
    return [sys.executable, "-m", "autotune", "search", "--kernel", str(ref.kernel), "--dims", dims,
            "--dtype", problem.dtype.name, "--device", str(ordinal), *flags, "--format", "json",
            *(["--db", db] if db else [])]


def run_search(command: Sequence[str]) -> tuple[int, str, str]:
    """Run the search (``autotune search``) as a child process: ``(exit code, stdout, stderr)``."""
    done = subprocess.run(list(command), capture_output=True, text=True, env=dict(os.environ))
    return done.returncode, done.stdout, done.stderr


def tune_first(problem: Problem, ordinal: int, db: str | None, preset: str, rung: str, config: str, *,
               device_name: str = "", stored: Callable[[], bool] = lambda: False) -> bool:
    """Tune ``problem`` on GPU ``ordinal`` with ``preset``'s search in a child process, and say
    what happened (a :class:`TuningWarning`). ``rung`` and ``config``: what the lookup answered
    (launched where tuning fails). The search runs under :func:`claimed` (of ``device_name``,
    the GPU's model): a process that waited there for another's search asks ``stored()``
    (whether the exact key has a config now) and, where it has, searches nothing. Returns
    whether a config was stored."""
    label = f"{problem.label} on GPU {ordinal}"
    if problem.ref is None:
        warnings.warn(f"autotune: {label} has no tuned config, and its kernel has no kernel file to search in a "
                      f"child process (autotune.tune_kernel writes one); launching the {rung} config {config}",
                      TuningWarning, stacklevel=4)
        return False
    waited = time.monotonic()
    with claimed(problem, device_name, db):
        if stored():
            warnings.warn(f"autotune: {label} had no tuned config; another process tuned it on first sight while "
                          f"this one waited {time.monotonic() - waited:.1f} s; launching its stored config",
                          TuningWarning, stacklevel=4)
            return True
        return _search(problem, ordinal, db, preset, rung, config, label)


def _search(problem: Problem, ordinal: int, db: str | None, preset: str, rung: str, config: str, label: str) -> bool:
    started = time.monotonic()
    code, out, err = run_search(search_command(problem, ordinal, db, preset))
    took = time.monotonic() - started
    if code != 0:
        why = next((line for line in reversed(err.splitlines()) if line.strip()), f"exit code {code}")
        warnings.warn(f"autotune: tuning {label} on first sight failed after {took:.1f} s ({why}); launching the "
                      f"{rung} config {config}", TuningWarning, stacklevel=5)
        return False
    try:
        best = json.loads(out)["best"]
        key = ",".join(f"{k}={v}" for k, v in best["config"].items())  # JSON's config: an object
        chosen = f"{key} ({best['figure']:.0f} {best['unit']})" if best["unit"] != "ms" else f"{key} ({best['ms']:.4g} ms)"
    except (ValueError, KeyError, TypeError):
        chosen = "(its JSON was not read)"
    warnings.warn(f"autotune: {label} had no tuned config; tuned it on first sight ({preset}: "
                  f"{PRESETS[preset]['trials']} trials at most) in {took:.1f} s: {chosen}, stored in the results "
                  "database", TuningWarning, stacklevel=5)
    return True
