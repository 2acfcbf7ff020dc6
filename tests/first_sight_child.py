"""A rank meeting a new shape with ``tune="quick"``, run by tests/runtime/test_first_sight.py in
several processes at once (no GPU, no search: the child process's search is played by a fake).

    python tests/first_sight_child.py MARKS_DIR

It writes ``MARKS_DIR/arrived-PID``, then calls ``first_sight.tune_first`` for smem_pad 64x64
float32 on an H100. Its fake search writes ``MARKS_DIR/searching-PID``, waits for
``MARKS_DIR/release``, then writes ``MARKS_DIR/stored`` (the winner stored); ``stored()`` is
whether that file exists. It prints ``searched`` or ``read`` (found stored after waiting) and
the TuningWarning it gave.
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from autotune.kernel.problem import Problem  # noqa: E402
from autotune.runtime import first_sight  # noqa: E402

marks = Path(sys.argv[1])
searched = []


def run_search(command):
    searched.append(command)
    (marks / f"searching-{os.getpid()}").touch()
    deadline = time.monotonic() + 120
    while not (marks / "release").exists():  # the test's word, not a time
        if time.monotonic() > deadline:
            return 1, "", "error: never released"
        time.sleep(0.01)
    (marks / "stored").touch()
    return 0, '{"best": {"config": {"TILE_DIM": 32}, "ms": 0.003, "figure": 2800.0, "unit": "GB/s"}}', ""


first_sight.run_search = run_search
problem = Problem.of("smem_pad", {"rows": 64, "cols": 64}, "float32")
(marks / f"arrived-{os.getpid()}").touch()
with warnings.catch_warnings(record=True) as said:
    warnings.simplefilter("always")
    done = first_sight.tune_first(problem, 0, "sqlite:///unused.db", "quick", "default", "BLOCK_ROWS=8",
                                  device_name="NVIDIA H100 80GB HBM3", stored=(marks / "stored").exists)
print("searched" if searched else "read", done)
for w in said:
    print(w.message)
