"""Per-GPU figures of one search in a SQLite results database (issue 37): how many configs each
GPU measured, over what span, at what rate, and where each GPU's time went per config.

    python benchmarks/multi_gpu_figures.py DB_FILE [LABEL]

Reads autotune's tables (one search row per GPU worker, the trials' phases) and Optuna's
(each trial's start and end), so it needs only the standard library. Prints, per GPU and for
the whole study:

- ``span``: from the first trial's start to the last trial's end (the study's: over all GPUs);
  ``configs/s``: configs measured / span (the sustained rate, as issue 37 counts it);
- ``start +s`` and ``end -s``: how long after the study's first trial a GPU's first began, and
  how long before the study's last ended its last (the start-up stagger and the tail);
- the compile waits of each GPU's first 10 configs (start-up) and of the others, and how many
  configs waited over 100 ms for nvcc;
- per config, ms: the phases the measuring child timed (``compile``: waiting for nvcc or
  reading the cubin, ``load``, ``verify``, ``time``) and ``store`` (autotune's row), and
  ``other``: the GPU's span per config minus those (the strategy's asks and tells, reading
  the study, Optuna's trial writes, the claim, the pipe to the measuring child).
"""

from __future__ import annotations

import datetime
import json
import sqlite3
import sys

PHASES = ("compile", "load", "verify", "time", "store")


def _time(text: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(text)


def figures(path: str) -> dict:
    """The figures of the search in the SQLite file at ``path`` (module doc), as a dict."""
    con = sqlite3.connect(path)
    rows = con.execute(
        "select s.gpu_ordinal, a.phases, o.datetime_start, o.datetime_complete from autotune_trials a "
        "join autotune_searches s on s.id = a.search_id "
        "join trials o on o.number = a.number and o.study_id = (select study_id from studies s2 "
        "where s2.study_name = s.study_name) "
        "where o.datetime_complete is not null").fetchall()
    if not rows:
        raise SystemExit(f"{path}: no measured trial")
    first = min(_time(r[2]) for r in rows)
    last = max(_time(r[3]) for r in rows)
    out = {"configs": len(rows), "span_s": (last - first).total_seconds(), "gpus": {}}
    out["configs_per_s"] = out["configs"] / out["span_s"]
    for gpu in sorted({r[0] for r in rows}):
        mine = sorted((r for r in rows if r[0] == gpu), key=lambda r: r[2])
        start, end = min(_time(r[2]) for r in mine), max(_time(r[3]) for r in mine)
        span = (end - start).total_seconds()
        phases = {p: sum((json.loads(r[1]) or {}).get(p, 0.0) for r in mine if r[1]) / len(mine) for p in PHASES}
        waits = [(json.loads(r[1]) or {}).get("compile", 0.0) if r[1] else 0.0 for r in mine]
        out["gpus"][gpu] = {
            "configs": len(mine), "span_s": span, "configs_per_s": len(mine) / span if span else 0.0,
            "start_after_s": (start - first).total_seconds(), "end_before_s": (last - end).total_seconds(),
            "ms_per_config": {**phases, "other": 1e3 * span / len(mine) - sum(phases.values())},
            # where the compile waits fell: the first configs (start-up) or all along
            "compile_first10_s": sum(waits[:10]) / 1e3, "compile_rest_s": sum(waits[10:]) / 1e3,
            "waited_over_100ms": sum(w > 100 for w in waits),
        }
    return out


def describe(f: dict, label: str = "") -> str:
    """The figures as text: one line for the study, a table of the GPUs."""
    lines = [f"{label + ': ' if label else ''}{f['configs']} configs measured in {f['span_s']:.1f} s "
             f"(first trial's start to last trial's end): {f['configs_per_s']:.2f} configs/s"]
    lines.append("per GPU; ms per config: the measuring child's phases, store (autotune's row), other (the rest)")
    lines.append(f"{'gpu':>3} {'configs':>7} {'span s':>7} {'cfg/s':>6} {'start +s':>8} {'end -s':>7} |"
                 + "".join(f"{p:>8}" for p in (*PHASES, "other")))
    for gpu, g in f["gpus"].items():
        ms = g["ms_per_config"]
        lines.append(f"{gpu:>3} {g['configs']:>7} {g['span_s']:>7.1f} {g['configs_per_s']:>6.2f} "
                     f"{g['start_after_s']:>8.1f} {g['end_before_s']:>7.1f} |"
                     + "".join(f"{ms[p]:>8.1f}" for p in (*PHASES, "other")))
    for gpu, g in f["gpus"].items():
        lines.append(f"GPU {gpu} compile waits: {g['compile_first10_s']:.1f} s in its first 10 configs, "
                     f"{g['compile_rest_s']:.1f} s in the other {g['configs'] - 10}; "
                     f"{g['waited_over_100ms']} configs waited over 100 ms")
    return "\n".join(lines)


if __name__ == "__main__":
    result = figures(sys.argv[1])
    print(describe(result, sys.argv[2] if len(sys.argv) > 2 else ""))
    print("JSON " + json.dumps(result))
