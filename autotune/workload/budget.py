"""How a tuning budget is split between a workload's problems, and how a budget is written.

The rule (a heuristic of this project): a problem is worth tuning by the GPU time
tuning is expected to save over the recorded calls,

    saving = recorded GPU time x expected gain          (autotune.workload.gain)

Every problem worth tuning (``saving > 0``) gets a floor of :data:`FLOOR_S` seconds (less
where the budget cannot give every one that much: then the largest savings get the floor
first and the rest nothing), and what is left of the budget is shared in proportion to the
savings. While a tuning runs the rule is applied again each time a problem starts, to what
is left of the budget and the problems not started yet: a problem that ends before its share
(a small space measured whole) leaves its seconds to the next ones.

A budget is GPU time: seconds of search summed over every GPU (``--budget 10m`` on two GPUs
takes about five minutes of wall time).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from autotune.errors import InvalidInputError

__all__ = ["FLOOR_S", "MAX_BUDGET_S", "parse_budget", "allocate", "format_seconds"]

FLOOR_S = 15.0
"""Seconds every problem worth tuning gets at least (where the budget allows): time to start
its measuring process and measure a few batches of configs."""
MAX_BUDGET_S = 7 * 24 * 3600.0
"""The largest budget taken: a week."""

_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}
_BUDGET = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*(s|m|min|h|)\s*\Z")


def parse_budget(text: str | float | int) -> float:
    """Seconds of ``text``: ``600``, ``90s``, ``10m``, ``1.5h`` (a number of seconds as is).

    Raises:
        InvalidInputError: not a positive duration up to :data:`MAX_BUDGET_S` (naming it).
    """
    allowed = "give a duration such as 600, 90s, 10m or 1.5h"
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        seconds = float(text)
    else:
        match = _BUDGET.match(str(text)) if isinstance(text, str) else None
        if match is None:
            raise InvalidInputError(f"budget {text!r} is not allowed; {allowed}")
        seconds = float(match.group(1)) * _UNITS[match.group(2)]
    if not math.isfinite(seconds) or seconds <= 0 or seconds > MAX_BUDGET_S:
        raise InvalidInputError(f"budget {text!r} is not allowed; {allowed}, more than 0 and at most a week")
    return seconds


def allocate(savings: Sequence[float], budget_s: float, floor_s: float = FLOOR_S) -> list[float]:
    """Seconds for each problem of ``savings`` (expected GPU time saved, any unit; 0: not
    worth tuning, gets 0) out of ``budget_s`` (module doc). The shares sum to ``budget_s``
    where any problem is worth tuning (up to rounding).

    Raises:
        ValueError: a negative saving or budget.
    """
    if budget_s < 0 or any(s < 0 or not math.isfinite(s) for s in savings):
        raise ValueError(f"savings {list(savings)} and budget {budget_s} must be finite and >= 0")
    worth = [i for i, s in enumerate(savings) if s > 0]
    out = [0.0] * len(savings)
    if not worth or budget_s <= 0:
        return out
    by_saving = sorted(worth, key=lambda i: (-savings[i], i))
    if budget_s < floor_s * len(worth):
        taken = by_saving[:max(1, int(budget_s // floor_s))]
        for i in taken:
            out[i] = budget_s / len(taken)
        return out
    left = budget_s - floor_s * len(worth)
    total = sum(savings[i] for i in worth)
    for i in worth:
        out[i] = floor_s + left * savings[i] / total
    return out


def format_seconds(seconds: float) -> str:
    """``45s``, ``2m30s``, ``1h05m``: every budget and time spent as printed (the form
    ``--budget`` takes)."""
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"
