"""One process of a job picking its configs, run 8 at once by tests/runtime/test_bundle.py (fake
PyTorch and driver, no GPU):

    python tests/bundle_child.py DB_URL BUNDLE_DIR OUT_JSON

For each problem of the recorded test workload (tests/workload_fixtures.py) it prepares the
launch through ``autotune.launcher`` twice, reading the database (``db=``) and reading the bundle
(``bundle=``, with ``AUTOTUNE_DB`` naming no file: nothing is read from a database), and writes
``{mode: {problem: [config, rung]}}`` to OUT_JSON.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent))

import autotune  # noqa: E402

from fake_gpu_arrays import Tensor  # noqa: E402
from recording_child import install  # noqa: E402
from workload_fixtures import HISTOGRAM  # noqa: E402

PROBLEMS = {"histogram256 100000 uint8": (HISTOGRAM, (Tensor((256,), "uint32"), Tensor((100000,), "uint8"))),
            "histogram256 1000 uint8": (HISTOGRAM, (Tensor((256,), "uint32"), Tensor((1000,), "uint8"))),
            "smem_vec 100x64 float32": ("smem_vec", (Tensor((64, 100)), Tensor((100, 64))))}


def main(db: str, bundle: str, out: str) -> None:
    install()
    picked = {"db": {}, "bundle": {}}
    for label, (kernel, arrays) in PROBLEMS.items():
        chosen = autotune.launcher(kernel, db=db).prepared(*arrays).launcher.chosen
        picked["db"][label] = [chosen.config.key, chosen.rung]
    os.environ["AUTOTUNE_DB"] = f"sqlite:///{Path(out).parent / 'no-such.db'}"
    for label, (kernel, arrays) in PROBLEMS.items():
        chosen = autotune.launcher(kernel, bundle=bundle).prepared(*arrays).launcher.chosen
        picked["bundle"][label] = [chosen.config.key, chosen.rung]
    assert not (Path(out).parent / "no-such.db").exists()
    Path(out).write_text(json.dumps(picked))


if __name__ == "__main__":
    main(*sys.argv[1:])
