"""Standalone harness of kernels/matmul_warp.cu on a GPU: build, check, time, compare with cuBLAS.

Needs CuPy and nvcc on the GPU machine, not autotune. Every config is compiled to a cubin with
``nvcc -cubin -O3 -arch=sm_XY`` (several at once; cubins already in the cubin folder are reused),
loaded with ``cupy.RawModule`` and launched as the kernel file says: grid (cdiv(M, BM) *
cdiv(N, BN)), block (32 * (BM / WM) * (BN / WN)), arguments (C, A, B, M, N, K).

Check (every config, before it is timed): fresh uniform(-1, 1) inputs at several small shapes
that cut every tile (and a vector-aligned edge shape, and 1 x 1 x 1), the output poisoned with NaN
and guarded by 4096 elements each side; every element must be finite, the guards untouched, and
the relative Frobenius error against the float64 product (cuBLAS DGEMM of the upcast inputs) at
most 8 * sqrt(K) * u (u = 2^-24 for float32, 2^-53 for float64). The timed product itself is
checked the same way.

Time: CUDA events around each launch, warm-up launches first, the median of the repeats (ms);
GFLOP/s = 2 M N K / time. cuBLAS is ``cupy.matmul`` with CUPY_TF32=0 (set before CuPy is
imported; its error is printed too: TF32 would show ~1e-4 rather than ~1e-6). The final rounds
time the best configs and cuBLAS in turn (round-robin, R rounds) and report the median of the
rounds' medians.

Stages (all in one call, results as JSON lines in OUT/results.jsonl and a table on stdout):
  A  the configs of --configs (a JSON list of macro dicts) at --shape, float32
  B  the --knob-top best of A with every value of the knob macros (VEC, A_SMEM, STAGES/ASYNC,
     GROUP_M, MINB) that the space's constraints allow
  F  the --final-top best of A and B, round-robin with cuBLAS at each --final-shape
  D  float64: the configs of --configs64 at --shape, then the best --final-top against cuBLAS

    python3 benchmarks/matmul_harness.py --source kernels/matmul_warp.cu --toml kernels/matmul_warp.toml \
        --configs stageA.json --cubins DIR --out OUT
"""
from __future__ import annotations

import os

os.environ["CUPY_TF32"] = "0"  # before CuPy: no TF32 in cuBLAS

import argparse  # noqa: E402
import concurrent.futures as cf  # noqa: E402
import datetime  # noqa: E402
import itertools  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import tomllib  # noqa: E402
from pathlib import Path  # noqa: E402

import cupy as cp  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from matmul_warp_build import ORDER, build, name_of  # noqa: E402

NPTYPE = {"float32": np.float32, "float64": np.float64}
UNIT = {"float32": 2.0 ** -24, "float64": 2.0 ** -53}
CHECK_SHAPES = [(1, 1, 1), (37, 45, 19), (129, 257, 67), (300, 211, 1003), (260, 388, 132), (512, 256, 100),
                (511, 1025, 130)]
GUARD = 4096


def label(cfg: dict) -> str:
    return " ".join(f"{k}={cfg[k]}" for k in ORDER)


class Space:
    """The [space] of the kernel file: constraints checked with Python on the macros."""

    def __init__(self, toml: Path):
        sp = tomllib.loads(toml.read_text())["space"]
        self.params, self.constraints, self.default = sp["params"], sp["constraints"], sp["default"]

    def valid(self, cfg: dict) -> bool:
        try:
            return all(eval(c, {"__builtins__": {}}, dict(cfg)) for c in self.constraints)  # trusted file
        except ZeroDivisionError:
            return False


class Kernel:
    def __init__(self, cubin: Path, cfg: dict, dtype: str):
        self.cfg, self.dtype = cfg, dtype
        self.fn = cp.RawModule(path=str(cubin)).get_function("matmul_warp")
        self.threads = 32 * (cfg["BM"] // cfg["WM"]) * (cfg["BN"] // cfg["WN"])

    def __call__(self, C, A, B, M, N, K):
        grid = (-(-M // self.cfg["BM"])) * (-(-N // self.cfg["BN"]))
        self.fn((grid,), (self.threads,), (C, A, B, np.int32(M), np.int32(N), np.int32(K)))


def rel_err(C, ref) -> float:
    return float(cp.linalg.norm(C.astype(cp.float64) - ref) / cp.linalg.norm(ref))


def check(run, dtype: str, shapes, rng) -> str | None:
    """None if ``run(C, A, B, M, N, K)`` is right at every shape, else why not."""
    t = NPTYPE[dtype]
    for M, N, K in shapes:
        A = rng.uniform(-1, 1, (M, K), dtype=t)
        B = rng.uniform(-1, 1, (K, N), dtype=t)
        buf = cp.full(M * N + 2 * GUARD, 7.0, dtype=t)
        buf[GUARD:GUARD + M * N] = cp.nan
        C = buf[GUARD:GUARD + M * N].reshape(M, N)
        run(C, A, B, M, N, K)
        cp.cuda.runtime.deviceSynchronize()
        if not bool(cp.isfinite(C).all()):
            return f"{M}x{N}x{K}: {int((~cp.isfinite(C)).sum())} non-finite elements"
        if bool((buf[:GUARD] != 7).any() | (buf[GUARD + M * N:] != 7).any()):
            return f"{M}x{N}x{K}: a guard was written"
        ref = A.astype(cp.float64) @ B.astype(cp.float64)
        err, tol = rel_err(C, ref), 8 * math.sqrt(K) * UNIT[dtype]
        if not err <= tol:
            return f"{M}x{N}x{K}: error {err:.3g} > {tol:.3g}"
    return None


def time_ms(fn, reps: int, warmup: int = 2) -> float:
    for _ in range(warmup):
        fn()
    ev = [(cp.cuda.Event(), cp.cuda.Event()) for _ in range(reps)]
    for a, b in ev:
        a.record()
        fn()
        b.record()
    ev[-1][1].synchronize()
    return statistics.median(cp.cuda.get_elapsed_time(a, b) for a, b in ev)


class Problem:
    """Inputs, reference and output of one shape and dtype, drawn once (the timing buffers)."""

    def __init__(self, shape, dtype, rng):
        self.M, self.N, self.K = shape
        self.dtype = dtype
        t = NPTYPE[dtype]
        self.A = rng.uniform(-1, 1, (self.M, self.K), dtype=t)
        self.B = rng.uniform(-1, 1, (self.K, self.N), dtype=t)
        self.C = cp.empty((self.M, self.N), dtype=t)
        self.ref = self.A.astype(cp.float64) @ self.B.astype(cp.float64)
        self.tol = 8 * math.sqrt(self.K) * UNIT[dtype]
        self.flop = 2.0 * self.M * self.N * self.K

    def run(self, fn) -> str | None:
        self.C.fill(cp.nan)
        fn(self.C, self.A, self.B, self.M, self.N, self.K)
        cp.cuda.runtime.deviceSynchronize()
        if not bool(cp.isfinite(self.C).all()):
            return "non-finite output"
        err = rel_err(self.C, self.ref)
        return None if err <= self.tol else f"error {err:.3g} > {self.tol:.3g}"

    def launcher(self, fn):
        return lambda: fn(self.C, self.A, self.B, self.M, self.N, self.K)

    def cublas(self):
        return lambda: cp.matmul(self.A, self.B, out=self.C)


class Harness:
    def __init__(self, args):
        self.a = args
        self.space = Space(args.toml)
        self.rng = cp.random.RandomState(args.seed)
        self.results = []
        self.log = open(args.out / "results.jsonl", "a")
        cc = cp.cuda.Device().compute_capability
        self.arch = f"sm_{cc}"

    def record(self, **kw):
        self.results.append(kw)
        self.log.write(json.dumps(kw) + "\n")
        self.log.flush()

    def evaluate(self, stage, cfgs, dtype, prob: Problem, reps) -> list[dict]:
        """Build, check and time ``cfgs``; returns the passing results, fastest first."""
        t0 = time.time()
        info = build(cfgs, dtype, self.a.source, self.a.cubins, self.arch, self.a.jobs)
        tb = time.time() - t0
        out = []
        for cfg in cfgs:
            name = name_of(cfg, dtype)
            inf = info[name]
            rec = dict(stage=stage, name=name, dtype=dtype, shape=[prob.M, prob.N, prob.K], config=cfg, **inf)
            if "error" in inf:
                self.record(**rec, status="compile_error")
                continue
            try:
                k = Kernel(self.a.cubins / f"{name}.cubin", cfg, dtype)
                why = check(k, dtype, CHECK_SHAPES, self.rng) or prob.run(k)
                if why:
                    self.record(**rec, status="wrong", why=why)
                    print(f"WRONG {name}: {why}", flush=True)
                    continue
                ms = time_ms(prob.launcher(k), reps)
            except Exception as exc:  # a launch failure (too many resources...) fails the config only
                self.record(**rec, status="launch_error", why=str(exc)[:200])
                print(f"LAUNCH ERROR {name}: {str(exc)[:200]}", flush=True)
                if "ILLEGAL" in str(exc).upper() or "MISALIGNED" in str(exc).upper():
                    raise  # the context is lost: stop here
                continue
            rec.update(status="ok", ms=ms, gflops=prob.flop / ms / 1e6)
            self.record(**rec)
            out.append(rec)
        out.sort(key=lambda r: r["ms"])
        print(f"stage {stage} {dtype} {prob.M}x{prob.N}x{prob.K}: {len(cfgs)} configs, {len(out)} ok, "
              f"build {tb:.0f} s, all {time.time() - t0:.0f} s", flush=True)
        for r in out[:8]:
            print(f"  {r['gflops']:9.0f} GFLOP/s {r['ms']:.3f} ms  regs {r['registers']:3d} spill {r['spill']}  "
                  f"{label(r['config'])}", flush=True)
        return out

    def knobs(self, cfg) -> list[dict]:
        """Every knob combination of ``cfg`` the space allows."""
        pipes = [(1, 0), (2, 0), (1, 1), (2, 1), (3, 1), (4, 1)]
        out = []
        for vec, asm, (st, asy), g, mb in itertools.product([0, 1], [0, 1, 2], pipes, [1, 8], [1, 2]):
            c = dict(cfg, VEC=vec, A_SMEM=asm, STAGES=st, ASYNC=asy, GROUP_M=g, MINB=mb)
            if self.space.valid(c):
                out.append(c)
        return out

    def final(self, dtype, cands, shapes, rounds, reps):
        """Round-robin timing of ``cands`` (results) and cuBLAS at each shape."""
        table = []
        for shape in shapes:
            prob = Problem(shape, dtype, self.rng)
            kerns = []
            for r in cands:
                k = Kernel(self.a.cubins / f"{r['name']}.cubin", r["config"], dtype)
                why = prob.run(k)
                if why:
                    print(f"WRONG at {shape}: {r['name']}: {why}")
                    continue
                kerns.append((r, k))
            prob.C.fill(cp.nan)
            prob.cublas()()
            cublas_err = rel_err(prob.C, prob.ref)
            times = {"cublas": []} | {r["name"]: [] for r, _ in kerns}
            for _ in range(rounds):
                times["cublas"].append(time_ms(prob.cublas(), reps))
                for r, k in kerns:
                    times[r["name"]].append(time_ms(prob.launcher(k), reps))
            cb = statistics.median(times["cublas"])
            print(f"\nfinal {dtype} {shape[0]}x{shape[1]}x{shape[2]}: {rounds} rounds x {reps} launches, "
                  f"median of round medians; cuBLAS rel. error {cublas_err:.2e} (tol {prob.tol:.2e})")
            print(f"  {'cuBLAS (cupy.matmul, CUPY_TF32=0)':60s} {cb:8.3f} ms {prob.flop / cb / 1e6:9.0f} GFLOP/s  100.0%")
            self.record(stage="final", name="cublas", dtype=dtype, shape=list(shape), ms=cb,
                        gflops=prob.flop / cb / 1e6, rounds=times["cublas"], error=cublas_err)
            rows = []
            for r, _ in kerns:
                ms = statistics.median(times[r["name"]])
                rows.append((ms, r))
                self.record(stage="final", name=r["name"], dtype=dtype, shape=list(shape), config=r["config"], ms=ms,
                            gflops=prob.flop / ms / 1e6, pct_cublas=100 * cb / ms, rounds=times[r["name"]],
                            spread=(max(times[r["name"]]) - min(times[r["name"]])) / ms)
            for ms, r in sorted(rows, key=lambda x: x[0]):
                print(f"  {label(r['config']):60s} {ms:8.3f} ms {prob.flop / ms / 1e6:9.0f} GFLOP/s {100 * cb / ms:6.1f}%")
            table.append((shape, cb, sorted(rows, key=lambda x: x[0])))
            del prob
            cp.get_default_memory_pool().free_all_blocks()
        return table


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", type=Path, required=True)
    ap.add_argument("--toml", type=Path, required=True)
    ap.add_argument("--configs", type=Path, help="stage A: JSON list of float32 configs")
    ap.add_argument("--extra", type=Path, help="JSON list of float32 configs to add to stage B")
    ap.add_argument("--configs64", type=Path, help="stage D: JSON list of float64 configs")
    ap.add_argument("--cubins", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--shape", default="4096,4096,4096")
    ap.add_argument("--final-shape", action="append", default=[])
    ap.add_argument("--knob-top", type=int, default=4)
    ap.add_argument("--final-top", type=int, default=6)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--final-reps", type=int, default=20)
    ap.add_argument("--jobs", type=int, default=16)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--check-only", action="store_true", help="only build and check --configs (small shapes)")
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    shape = tuple(int(x) for x in a.shape.split(","))
    finals = [tuple(int(x) for x in s.split(",")) for s in a.final_shape] or [shape]
    dev = cp.cuda.runtime.getDeviceProperties(0)
    print(f"# {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}  device: {dev['name'].decode()}  "
          f"SMs: {dev['multiProcessorCount']}  max SM clock: {dev['clockRate'] / 1e3:.0f} MHz  "
          f"driver: {cp.cuda.runtime.driverGetVersion()}  runtime: {cp.cuda.runtime.runtimeGetVersion()}  "
          f"CuPy {cp.__version__}  CUPY_TF32={os.environ['CUPY_TF32']}", flush=True)
    h = Harness(a)
    if a.check_only:
        for dtype in ("float32", "float64"):
            cfgs = [c for c in json.loads(a.configs.read_text()) if h.space.valid(c)]
            info = build(cfgs, dtype, a.source, a.cubins, h.arch, a.jobs)
            for c in cfgs:
                name = name_of(c, dtype)
                if "error" in info[name]:
                    print(f"{name}: {info[name]['error']}")
                    continue
                why = check(Kernel(a.cubins / f"{name}.cubin", c, dtype), dtype, CHECK_SHAPES, h.rng)
                print(f"{name}: {why or 'ok'}", flush=True)
        return
    best = []
    if a.configs:
        prob = Problem(shape, "float32", h.rng)
        cfgs = [c for c in json.loads(a.configs.read_text()) if h.space.valid(c)]
        resA = h.evaluate("A", cfgs, "float32", prob, a.reps)
        seen, cfgsB = {r["name"] for r in resA}, []
        for r in resA[:a.knob_top]:
            cfgsB += [c for c in h.knobs(r["config"]) if name_of(c, "float32") not in seen]
            seen |= {name_of(c, "float32") for c in cfgsB}
        if a.extra:
            cfgsB += [c for c in json.loads(a.extra.read_text())
                      if h.space.valid(c) and name_of(c, "float32") not in seen]
        resB = h.evaluate("B", cfgsB, "float32", prob, a.reps) if cfgsB else []
        best = sorted(resA + resB, key=lambda r: r["ms"])
        del prob
        cp.get_default_memory_pool().free_all_blocks()
        h.final("float32", best[:a.final_top], finals, a.rounds, a.final_reps)
    if a.configs64:
        prob = Problem(shape, "float64", h.rng)
        cfgs = [c for c in json.loads(a.configs64.read_text()) if h.space.valid(c)]
        res = h.evaluate("D", cfgs, "float64", prob, max(3, a.reps // 2))
        del prob
        cp.get_default_memory_pool().free_all_blocks()
        table = h.final("float64", res[:max(2, a.final_top // 2)], [shape], a.rounds, a.final_reps // 2)
        peak = dev["multiProcessorCount"] * 64 * 2 * dev["clockRate"] * 1e3 / 1e9  # 64 FP64 lanes per SM
        print(f"FP64 SIMT peak at the max SM clock ({dev['clockRate'] / 1e3:.0f} MHz): {peak:.0f} GFLOP/s")
        for shp, cb, rows in table:
            for ms, r in rows:
                g = 2.0 * shp[0] * shp[1] * shp[2] / ms / 1e6
                print(f"  {label(r['config']):60s} {g:9.0f} GFLOP/s = {100 * g / peak:5.1f}% of FP64 SIMT peak")


if __name__ == "__main__":
    sys.exit(main())
