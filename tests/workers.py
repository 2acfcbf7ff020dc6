"""Searches run in subprocesses by the concurrency and crash tests (fake timer, no GPU).

    python tests/workers.py DB_URL KERNEL ROWS DTYPE SAMPLER N_TRIALS SEED RESUME DELAY_S OUT_JSON
    python tests/workers.py cli DELAY_S autotune-arguments...
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent))

from autotune import store as store_module  # noqa: E402
from autotune.device import DeviceInfo  # noqa: E402
from autotune.key import tuning_key  # noqa: E402
from autotune.space import load_space  # noqa: E402
from autotune.store import Store  # noqa: E402
from autotune.tuner import search  # noqa: E402
from fakes import FakeTimer, fake_retime  # noqa: E402

DEVICE = DeviceInfo("NVIDIA H100 80GB HBM3", "9.0", 132, 85_000_000_000, "13.0", "13.0")


def _short_heartbeat() -> None:
    """``AUTOTUNE_TEST_GRACE_S=G``: heartbeat every second and a dead trial failed after G s
    (instead of the store's defaults), so crash tests need not wait long."""
    grace = os.environ.get("AUTOTUNE_TEST_GRACE_S")
    if grace:
        store_module.HEARTBEAT_S, store_module.GRACE_S = 1, int(grace)


def main(db, kernel, rows, dtype, sampler, n_trials, seed, resume, delay, out) -> None:
    _short_heartbeat()
    timer = FakeTimer()

    def slow(config):
        time.sleep(float(delay))
        return timer(config)

    key = tuning_key(kernel, DEVICE, int(rows), int(rows), dtype)
    reported = []

    def on_trial(outcome, result):
        if outcome.status not in ("duplicate", "constraint"):
            reported.append({"search_id": result.search_id, "number": outcome.number,
                             "config": outcome.config.key, "status": outcome.status})
            Path(out).write_text(json.dumps(reported))

    search(key, load_space(kernel), slow, Store(db), n_trials=int(n_trials), seed=int(seed), sampler=sampler,
           resume=resume == "1", on_trial=on_trial)
    Path(out).write_text(json.dumps(reported))




def cli(delay: str, *args: str) -> None:
    """Run the real CLI with the fake timer in place of the GPU benchmark (SIGINT test)."""
    import contextlib

    from autotune import benchmark
    from autotune.cli import app

    class Bench:
        device, memcpy_gbps, copy_gbps, l2_mode = DEVICE, 3000.0, 2900.0, "single"

        def __init__(self):
            self.timer = FakeTimer()
            self.retime = fake_retime()

        def measure(self, config):
            time.sleep(float(delay))
            return self.timer(config)

    @contextlib.contextmanager
    def open_benchmark(*a, **k):
        yield Bench()

    benchmark.open_benchmark = open_benchmark
    app(list(args), prog_name="autotune")


if __name__ == "__main__":
    if sys.argv[1] == "cli":
        cli(*sys.argv[2:])
    else:
        main(*sys.argv[1:])
