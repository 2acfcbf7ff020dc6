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
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import warnings
from collections.abc import Sequence

from autotune.errors import InvalidInputError
from autotune.kernel.problem import Problem

__all__ = ["PRESETS", "TuningWarning", "check_preset", "tune_first"]

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


def tune_first(problem: Problem, ordinal: int, db: str | None, preset: str, rung: str, config: str) -> bool:
    """Tune ``problem`` on GPU ``ordinal`` with ``preset``'s search in a child process, and say
    what happened (a :class:`TuningWarning`). ``rung`` and ``config``: what the lookup answered
    (launched where tuning fails). Returns whether a config was stored."""
    label = f"{problem.label} on GPU {ordinal}"
    if problem.ref is None:
        warnings.warn(f"autotune: {label} has no tuned config, and its kernel has no kernel file to search in a "
                      f"child process (autotune.tune_kernel writes one); launching the {rung} config {config}",
                      TuningWarning, stacklevel=4)
        return False
    started = time.monotonic()
    code, out, err = run_search(search_command(problem, ordinal, db, preset))
    took = time.monotonic() - started
    if code != 0:
        why = next((line for line in reversed(err.splitlines()) if line.strip()), f"exit code {code}")
        warnings.warn(f"autotune: tuning {label} on first sight failed after {took:.1f} s ({why}); launching the "
                      f"{rung} config {config}", TuningWarning, stacklevel=4)
        return False
    try:
        best = json.loads(out)["best"]
        key = ",".join(f"{k}={v}" for k, v in best["config"].items())  # JSON's config: an object
        chosen = f"{key} ({best['figure']:.0f} {best['unit']})" if best["unit"] != "ms" else f"{key} ({best['ms']:.4g} ms)"
    except (ValueError, KeyError, TypeError):
        chosen = "(its JSON was not read)"
    warnings.warn(f"autotune: {label} had no tuned config; tuned it on first sight ({preset}: "
                  f"{PRESETS[preset]['trials']} trials at most) in {took:.1f} s: {chosen}, stored in the results "
                  "database", TuningWarning, stacklevel=4)
    return True
