"""A small PyTorch application whose GPU kernels are autotune's: the workload of the tutorial
"Tune an application" (docs/app-tutorial.md).

Every step it transposes matrices of three dtypes (``autotune.transpose``), multiplies
matrices (``matmul_warp`` of the catalog), and runs the reduction, softmax and histogram
examples (``examples/*/``), each through ``autotune.launcher``, at the shapes of
``workload.py`` (20 and more, some odd). ::

    AUTOTUNE_RECORD=app python examples/app/app.py            # record the launches (or --record app)
    autotune plan app && autotune tune app --budget 10m
    autotune export app --bundle deploy/app
    AUTOTUNE_BUNDLE=deploy/app python examples/app/app.py     # run on the tuned configs, no database

``--check`` compares every result with PyTorch's own op once (TF32 off for the matrix
products). It prints the launches made and the GPU time of its steps (CUDA events around
each step).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE.parent
sys.path.insert(0, str(HERE))

import autotune  # noqa: E402
from workload import HISTOGRAMS, MATMULS, REDUCTIONS, SOFTMAXES, TRANSPOSES  # noqa: E402

DTYPES = {"float32": torch.float32, "float16": torch.float16, "float64": torch.float64, "int8": torch.int8}


def make(shape, dtype: str):
    """A tensor of random values of ``dtype`` on the GPU."""
    if dtype == "int8":
        return torch.randint(-128, 128, shape, dtype=torch.int8, device="cuda")
    return torch.rand(shape, dtype=DTYPES[dtype], device="cuda")


class App:
    """The application's tensors and launchers, made once; :meth:`step` runs one step."""

    def __init__(self, bundle: str | None = None, db: str | None = None) -> None:
        where = {"bundle": bundle} if bundle else {"db": db}
        self.matmul = autotune.launcher("matmul_warp", **where)
        self.reduce = autotune.launcher(EXAMPLES / "reduction/reduce.toml", **where)
        self.softmax = autotune.launcher(EXAMPLES / "softmax/softmax.toml", **where)
        self.histogram = autotune.launcher(EXAMPLES / "histogram/histogram.toml", reset=True, **where)
        self.db = db
        self.transposes = [(make((r, c), dt), n) for dt, r, c, n in TRANSPOSES]
        self.matmuls = [(torch.empty(m, n_, device="cuda"), make((m, k), "float32"), make((k, n_), "float32"), n)
                        for m, n_, k, n in MATMULS]
        self.reductions = [(torch.empty(1, dtype=DTYPES[dt], device="cuda"), make((size,), dt),
                            torch.zeros(4096, dtype=DTYPES[dt], device="cuda"),
                            torch.zeros(1, dtype=torch.int32, device="cuda").view(torch.uint32), n)
                           for dt, size, n in REDUCTIONS]
        self.softmaxes = [(torch.empty(r, c, dtype=DTYPES[dt], device="cuda"), make((r, c), dt), n)
                          for dt, r, c, n in SOFTMAXES]
        self.histograms = [(torch.zeros(256, dtype=torch.int32, device="cuda").view(torch.uint32),
                            torch.randint(0, 256, (size,), dtype=torch.uint8, device="cuda"), n)
                           for size, n in HISTOGRAMS]

    def step(self) -> int:
        """One step: every op at every shape, as many times as ``workload.py`` says; the
        launches made."""
        launches = 0
        for x, n in self.transposes:
            for _ in range(n):
                autotune.transpose(x, db=self.db)
            launches += n
        for c, a, b, n in self.matmuls:
            for _ in range(n):
                self.matmul(c, a, b)
            launches += n
        for out, x, partials, counter, n in self.reductions:
            for _ in range(n):
                self.reduce(out, x, partials, counter)
            launches += n
        for y, x, n in self.softmaxes:
            for _ in range(n):
                self.softmax(y, x)
            launches += n
        for bins, data, n in self.histograms:
            for _ in range(n):
                self.histogram(bins, data)
            launches += n
        return launches

    def check(self) -> None:
        """Each op's result against PyTorch's (raises AssertionError naming the first that differs)."""
        torch.backends.cuda.matmul.allow_tf32 = False
        for x, _ in self.transposes:
            assert torch.equal(autotune.transpose(x, db=self.db), x.mT), f"transpose {tuple(x.shape)} {x.dtype}"
        for c, a, b, _ in self.matmuls:
            self.matmul(c, a, b)
            assert torch.allclose(c, a @ b, rtol=1e-4, atol=1e-3), f"matmul_warp {tuple(c.shape)}x{a.shape[1]}"
        for out, x, partials, counter, _ in self.reductions:
            self.reduce(out, x, partials, counter)
            want = x.double().sum()
            assert abs(float(out[0]) - float(want)) <= 1e-4 * abs(float(want)) + 1e-2, f"reduce_sum {x.numel()}"
        for y, x, _ in self.softmaxes:
            self.softmax(y, x)
            assert torch.allclose(y, torch.softmax(x, dim=1), rtol=1e-4, atol=1e-6), f"softmax {tuple(x.shape)}"
        for bins, data, _ in self.histograms:
            self.histogram(bins, data)
            want = torch.bincount(data.int(), minlength=256)
            assert torch.equal(bins.view(torch.int32).long(), want), f"histogram {data.numel()}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5, help="steps to run (default 5)")
    parser.add_argument("--record", metavar="NAME", help="record the launches as workload NAME "
                                                         "(as AUTOTUNE_RECORD=NAME does)")
    parser.add_argument("--bundle", metavar="DIR", help="take every config from this bundle (as AUTOTUNE_BUNDLE)")
    parser.add_argument("--db", metavar="URL", help="results database (default AUTOTUNE_DB or the user's)")
    parser.add_argument("--check", action="store_true", help="compare every op with PyTorch's once")
    args = parser.parse_args(argv)
    if args.bundle:  # autotune.transpose reads the environment's bundle
        import os

        os.environ["AUTOTUNE_BUNDLE"] = args.bundle
    app = App(args.bundle, args.db)
    recording = autotune.record(args.record, db=args.db) if args.record else contextlib.nullcontext()
    with recording:
        app.step()  # first sight of every shape: configs looked up, built, loaded
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        started = time.perf_counter()
        start.record()
        launches = sum(app.step() for _ in range(args.steps))
        end.record()
        end.synchronize()
        wall = time.perf_counter() - started
    if args.check:
        app.check()
        print("check: every op agrees with PyTorch")
    print(f"{args.steps} steps, {launches} launches, GPU time {start.elapsed_time(end):.2f} ms, wall {wall:.2f} s")


if __name__ == "__main__":
    main()
