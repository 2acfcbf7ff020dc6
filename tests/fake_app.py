"""A stand-in for examples/app/app.py without a GPU (fake PyTorch and driver), for the CPU test
of benchmarks/app_tuning.py: the same options, launches of the histogram example at two sizes
and of smem_vec at one shape per step, recorded into the workload.

    python tests/fake_app.py --steps N --record NAME --db URL [--check]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent))

import autotune  # noqa: E402

from fake_gpu_arrays import Tensor  # noqa: E402
from recording_child import install  # noqa: E402
from workload_fixtures import HISTOGRAM  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=1)
    parser.add_argument("--record")
    parser.add_argument("--db")
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    install()
    hist, vec = autotune.launcher(HISTOGRAM, db=args.db), autotune.launcher("smem_vec", db=args.db)
    bins = Tensor((256,), "uint32")
    with autotune.record(args.record, db=args.db, sample_every=2):
        for _ in range(args.steps + 1):
            for _ in range(6):
                hist(bins, Tensor((100000,), "uint8"))
            hist(bins, Tensor((1000,), "uint8"))
            vec(Tensor((64, 100)), Tensor((100, 64)))
    print(f"{args.steps} steps" + (", check: fake" if args.check else ""))


if __name__ == "__main__":
    main()
