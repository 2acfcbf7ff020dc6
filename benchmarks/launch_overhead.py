"""Host time per launch of ``autotune.launcher`` (issue 23), with PyTorch's own ops in the same run.

    python3 benchmarks/launch_overhead.py [--out DIR] [--n 4096] [--launches 2000]

For kernels of 1, 2, 4 and 6 float32 arrays of ``n`` elements (``out[i] = a0[i] + a1[i] + ...``,
kernel files written to a temporary folder; nothing tuned, so the lookup answers the default
config), launched back to back from PyTorch tensors, CuPy arrays and PyCUDA GPUArrays, it
prints the host µs per launch: wall-clock time of ``--launches`` calls in a loop (no
synchronisation inside); the loops of every line are interleaved over 7 rounds (the starting
line rotating) and the median and min over the rounds printed. In the same rounds:

* the launcher's call through ``cuda.bindings`` (the default where it imports) and through ctypes
  (``AUTOTUNE_LAUNCH_API=ctypes``);
* PyTorch ops on tensors of the same size (``fill_``, ``neg(out=)``, ``addcmul(out=)``,
  ``torch.amax(dim=1)`` of a 64x64 tensor as in the issue);
* ``autotune.compiled`` (fixed dims; the issue measured 87 µs for a 2-array kernel);
* the floors: the same ``cuLaunchKernel`` with every argument made once, through ctypes and
  through ``cuda.bindings``, and PyCUDA's ``prepared_async_call`` (2 arrays);

then recording (issue 34: ``autotune.record``): the 2-array launcher's host µs per launch with no
recording ever started, while a recording is active (one call in 64 timed with CUDA events,
the default; and every call timed), and after it stopped (the original launch path put back),
the loops alternated over 7 rounds; then graph capture (host µs per launch inside
``torch.cuda.graph``, and the replayed graph's GPU µs per kernel), and bound by the GPU: the 2-array kernel back to back at growing sizes (host µs
against GPU µs per launch in the batch), and the 64 MiB histogram (examples/histogram) in GB/s
launched alone and back to back, with and without ``reset``.

Output: ``DIR/<date>_<gpu>_launch_overhead.txt`` (``--out``, default ``$OUT`` if set, else
benchmarks/results/) and stdout.
"""

from __future__ import annotations

import argparse
import ctypes
import datetime
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

import autotune  # noqa: E402

LINES: list[str] = []


def say(line: str = "") -> None:
    print(line, flush=True)
    LINES.append(line)


def kernel_file(folder: Path, arrays: int) -> Path:
    """A kernel of ``arrays`` float32 arrays of ``n``: ``out = a0 + a1 + ...`` (``out = i`` alone)."""
    ins = [f"a{i}" for i in range(arrays - 1)]
    params = ", ".join(["float *out", *(f"const float *{a}" for a in ins), "long long n"])
    value = " + ".join(f"{a}[i]" for a in ins) or "(float)i"
    (folder / f"add{arrays}.cu").write_text(
        f'extern "C" __global__ void add{arrays}({params})\n{{\n'
        f"    const long long i = (long long)blockIdx.x * BLOCK + threadIdx.x;\n"
        f"    if (i < n) out[i] = {value};\n}}\n")
    (folder / "ref.py").write_text("import numpy as np\n\ndef add(out, n, **a):\n"
                                   "    return sum(a.values()) if a else np.arange(n, dtype=np.float32)\n")
    args = "".join(f'\n[[args]]\nname = "{a}"\narray = ["n"]\nrole = "in"\n' for a in ins)
    (folder / f"add{arrays}.toml").write_text(
        f'name = "add{arrays}"\nsource = "add{arrays}.cu"\nfunction = "add{arrays}"\n'
        f'[problem]\ndims = ["n"]\ndtypes = ["float32"]\n'
        f'[[args]]\nname = "out"\narray = ["n"]\nrole = "out"\n{args}'
        f'\n[[args]]\nname = "n"\nscalar = "int64"\nvalue = "n"\n'
        f'[launch]\nblock = ["BLOCK", 1, 1]\ngrid = ["cdiv(n, BLOCK)", 1, 1]\n'
        f'[space]\nparams = {{ BLOCK = [128, 256] }}\ndefault = {{ BLOCK = 256 }}\n'
        f'[check]\nreference = "ref.py:add"\n[objective]\nbytes = "{arrays} * n * itemsize"\n')
    return folder / f"add{arrays}.toml"


def host_us(fn, launches: int, loops: int = 7) -> float:
    """Median over ``loops`` of the wall-clock µs per call of ``launches`` calls of ``fn``."""
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    per = []
    for _ in range(loops):
        start = time.perf_counter()
        for _ in range(launches):
            fn()
        per.append((time.perf_counter() - start) / launches * 1e6)
        torch.cuda.synchronize()
    return statistics.median(per)


def interleaved(cases: list[tuple[str, object, int]], rounds: int = 7) -> dict[str, tuple[float, float]]:
    """Host µs per call of each case, its loops interleaved over ``rounds`` rounds (each round runs
    every case once, the starting case rotating): ``{label: (median, min)}`` over the rounds.
    Interleaving spreads the machine's drifts (clocks, neighbours) over every case alike."""
    for _, fn, _ in cases:
        for _ in range(50):
            fn()
    torch.cuda.synchronize()
    per: dict[str, list[float]] = {label: [] for label, _, _ in cases}
    for r in range(rounds):
        for label, fn, launches in cases[r % len(cases):] + cases[:r % len(cases)]:
            start = time.perf_counter()
            for _ in range(launches):
                fn()
            per[label].append((time.perf_counter() - start) / launches * 1e6)
            torch.cuda.synchronize()
    return {label: (statistics.median(v), min(v)) for label, v in per.items()}


def gpu_us(fn, launches: int, samples: int = 7) -> float:
    """Median over ``samples`` of the GPU µs per call of ``launches`` calls between CUDA events."""
    fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(samples):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(launches):
            fn()
        end.record()
        end.synchronize()
        out.append(start.elapsed_time(end) * 1e3 / launches)
    return statistics.median(out)


def with_api(api: str, make):
    """``make()`` with ``AUTOTUNE_LAUNCH_API=api`` while its launches are prepared."""
    old = os.environ.get("AUTOTUNE_LAUNCH_API")
    os.environ["AUTOTUNE_LAUNCH_API"] = api
    try:
        return make()
    finally:
        if old is None:
            del os.environ["AUTOTUNE_LAUNCH_API"]
        else:
            os.environ["AUTOTUNE_LAUNCH_API"] = old


def floors(f, tensors) -> list[tuple[str, object]]:
    """The same launch through bare ctypes (every argument made once), PyCUDA's
    prepared_async_call and cuda.bindings (the packed void **): what the driver call costs."""
    p = f.prepared(*tensors)
    p.pack(p.buf, 0, *(t.data_ptr() for t in tensors))
    p.stream.value = torch.cuda.current_stream().cuda_stream
    out = [("floor: bare ctypes cuLaunchKernel, every argument made once", lambda: p.run(*p.call))]
    try:
        from cuda.bindings import driver as cb

        function, argv = cb.CUfunction(p.launcher.function), ctypes.addressof(p.argv)
        stream = cb.CUstream(torch.cuda.current_stream().cuda_stream)
        geometry = (function, *p.launcher.grid, *p.launcher.block, p.launcher.shared)
        run = cb.cuLaunchKernel
        assert int(run(*geometry, stream, argv, 0)[0]) == 0
        out.append(("floor: bare cuda.bindings cuLaunchKernel, packed void**", lambda: run(*geometry, stream, argv, 0)))
    except ImportError:
        say("  cuda.bindings: not installed")
    if len(tensors) == 2:
        try:
            import numpy as np
            import pycuda.driver as cuda

            module = cuda.module_from_buffer(autotune_cubin(p))
            fn = module.get_function(p.launcher.kernel.function)
            fn.prepare(p.launcher.kernel.signature)
            args = [np.uintp(t.data_ptr()) for t in tensors] + [np.int64(tensors[0].numel())]
            grid, block = p.launcher.grid, p.launcher.block
            out.append(("PyCUDA prepared_async_call (its own module)",
                        lambda: fn.prepared_async_call(grid, block, None, *args)))
        except Exception as exc:  # noqa: BLE001  (a floor that cannot run is said, not fatal)
            say(f"  PyCUDA prepared_async_call: not run ({type(exc).__name__}: {str(exc)[:80]})")
    return out


def autotune_cubin(p) -> bytes:
    from autotune.measure.compile import build_cubin
    from autotune.measure.device import current_device

    launcher = p.launcher
    return build_cubin(launcher.kernel, launcher.chosen.config, launcher.dtype, current_device().arch)[0]


def per_arrays(folder: Path, n: int, launches: int) -> None:
    db = f"sqlite:///{folder / 'none.db'}"
    cases: list[tuple[str, str, object, int]] = []  # (group, label, fn, launches)
    for arrays in (1, 2, 4, 6):
        group = f"{arrays} array{'s' if arrays > 1 else ''}"
        path = kernel_file(folder, arrays)
        tensors = [torch.rand(n, device="cuda") for _ in range(arrays)]
        f = autotune.launcher(path, db=db)
        f(*tensors)
        torch.cuda.synchronize()
        want = sum(tensors[1:]) if arrays > 1 else torch.arange(n, device="cuda", dtype=torch.float32)
        assert torch.equal(tensors[0], want), f"add{arrays} is wrong"
        api = f.prepared(*tensors).api
        cases.append((group, f"autotune.launcher, PyTorch tensors ({api})", lambda f=f, t=tensors: f(*t), launches))
        if api != "ctypes":
            fc = with_api("ctypes", lambda: autotune.launcher(path, db=db))
            with_api("ctypes", lambda: fc(*tensors))
            cases.append((group, "autotune.launcher, PyTorch tensors (ctypes)", lambda f=fc, t=tensors: f(*t),
                          launches))
        try:
            import cupy

            arrs = [cupy.asarray(t) for t in tensors]
            f(*arrs)
            cases.append((group, f"autotune.launcher, CuPy arrays ({api})", lambda f=f, a=arrs: f(*a), launches))
        except ImportError:
            say(f"{group}: CuPy not installed")
        try:
            import pycuda.autoprimaryctx  # noqa: F401  (PyTorch's context: the primary one)
            import pycuda.gpuarray as gpuarray

            garrs = [gpuarray.to_gpu(t.cpu().numpy()) for t in tensors]
            f(*garrs)
            cases.append((group, f"autotune.launcher, PyCUDA GPUArrays ({api})", lambda f=f, a=garrs: f(*a),
                          launches))
        except ImportError:
            say(f"{group}: PyCUDA not installed")
        g = autotune.compiled(path, {"n": n}, "float32", db=db)
        cases.append((group, "autotune.compiled (fixed dims), PyTorch tensors", lambda g=g, t=tensors: g(*t),
                      max(1, launches // 10)))
        for label, fn in floors(f, tensors):
            cases.append((group, label, fn, launches))
    x, y = torch.rand(n, device="cuda"), torch.empty(n, device="cuda")
    a, b, c = (torch.rand(n, device="cuda") for _ in range(3))
    m = torch.rand(64, 64, device="cuda")
    ops = "PyTorch ops on tensors of the same size"
    cases += [(ops, "y.fill_(1.0)", lambda: y.fill_(1.0), launches),
              (ops, "torch.neg(x, out=y)", lambda: torch.neg(x, out=y), launches),
              (ops, "torch.addcmul(a, b, c, out=y)", lambda: torch.addcmul(a, b, c, out=y), launches),
              (ops, "torch.amax(m, dim=1) of 64x64 (allocates)", lambda: torch.amax(m, dim=1), launches)]
    results = interleaved([(f"{group}: {label}", fn, k) for group, label, fn, k in cases])
    say(f"host us per launch, back to back: {launches} launches a loop, the loops of every line interleaved over 7 "
        f"rounds; median (min) over the rounds; n = {n} float32")
    last = None
    for group, label, _, _ in cases:
        if group != last:
            say(f"{group}:")
            last = group
        median, low = results[f"{group}: {label}"]
        say(f"  {label:<62s} {median:7.2f} ({low:.2f})")


def recording_cost(folder: Path, n: int, launches: int, rounds: int = 7) -> None:
    """Host µs per launch of the 2-array launcher (PyTorch tensors): first ``rounds`` loops with
    no recording ever started in this process, then ``rounds`` rounds of three loops in turn
    (the starting one rotating): a recording timing one call in 64 (the default), one timing
    every call, and none (after recordings stopped: the original path put back). A recording is
    started just before its loop and stopped just after (its start, stop and last batch are not
    timed). Median (min) over the loops, and the difference of the medians from the first line.
    A loop is shorter than the driver's queue of pending launches (``--record-launches``, 500):
    the H100 run of 2026-11-27 14:00 UTC, with 2000 launches of a kernel that takes about 10 µs
    of GPU time a launch, filled the queue and read the GPU's pace (its lines moved by up to
    3.5 µs, "off again" too, which runs the original launch path)."""
    db = f"sqlite:///{folder / 'recording.db'}"
    f = autotune.launcher(kernel_file(folder, 2), db=f"sqlite:///{folder / 'none.db'}")
    out, x = torch.empty(n, device="cuda"), torch.rand(n, device="cuda")
    for _ in range(50):
        f(out, x)
    torch.cuda.synchronize()

    def loop() -> float:
        start = time.perf_counter()
        for _ in range(launches):
            f(out, x)
        took = (time.perf_counter() - start) / launches * 1e6
        torch.cuda.synchronize()
        return took

    never = "off: no recording started yet in this process"
    cases = [("on: autotune.record, 1 call in 64 timed (the default)", 64),
             ("on: autotune.record, every call timed (sample_every=1)", 1),
             ("off again: after recordings stopped", None)]
    for _ in range(rounds):  # warm-up, not kept: the first loops of a process read slower (the
        loop()               # 14:00 UTC H100 run: "off" 2.35-3.12 µs over the lines after it)
    per: dict[str, list[float]] = {never: [loop() for _ in range(rounds)], **{label: [] for label, _ in cases}}
    for r in range(rounds):
        for label, every in cases[r % len(cases):] + cases[:r % len(cases)]:
            recording = autotune.record("launch_overhead", db=db, sample_every=every, flush_s=3600) if every else None
            if recording is not None:
                recording.start()
            per[label].append(loop())
            if recording is not None:
                recording.stop()
    assert out.equal(x), "the recorded launches computed something else"
    say(f"recording (autotune.record), 2 arrays, PyTorch tensors, {launches} launches a loop, {rounds} loops each; "
        "host us per launch, median (min), and the median's difference from the first line:")
    base = statistics.median(per[never])
    for label, v in per.items():
        say(f"  {label:<62s} {statistics.median(v):7.2f} ({min(v):.2f})  {statistics.median(v) - base:+.2f}")
    off = per[cases[-1][0]]
    say(f"  paired with the same round's \"off again\" loop (the original launch path), {rounds} rounds: "
        "us per launch, mean +- standard error (median)")
    for label, _ in cases[:-1]:
        d = [a - b for a, b in zip(per[label], off)]
        se = statistics.stdev(d) / math.sqrt(len(d))
        say(f"    {label:<60s} {statistics.fmean(d):+6.2f} +- {se:.2f} ({statistics.median(d):+.2f})")
    from autotune.store.opening import open_store
    from autotune.store.workloads import workload_problems

    store = open_store(db)
    (p,) = workload_problems(store, "launch_overhead")
    store.close()
    say(f"  recorded: {p.calls} calls, {p.sampled} of them timed, {p.ms_per_call * 1e3:.2f} us of GPU time per "
        "timed call")


def graph_capture(folder: Path, n: int, launches: int) -> None:
    f = autotune.launcher(kernel_file(folder, 2), db=f"sqlite:///{folder / 'none.db'}")
    out, x = torch.empty(n, device="cuda"), torch.rand(n, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        f(out, x)  # the first sight of the shape: outside the capture
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    count = min(launches, 1000)
    with torch.cuda.graph(g):
        start = time.perf_counter()
        for _ in range(count):
            f(out, x)
        captured = (time.perf_counter() - start) / count * 1e6
    out.zero_()
    g.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, x), "the captured launches did not run"
    say(f"graph capture (torch.cuda.graph), 2 arrays, {count} launches captured:")
    say(f"  host us per launch while capturing                        {captured:6.2f}")
    say(f"  GPU us per kernel of the replayed graph                   {gpu_us(g.replay, 1) / count:6.2f}")


def gpu_bound(folder: Path, n: int, launches: int) -> None:
    db = f"sqlite:///{folder / 'none.db'}"
    f = autotune.launcher(kernel_file(folder, 2), db=db)
    say("bound by the GPU? the 2-array kernel back to back, by size: host us per launch against GPU us per launch "
        "in the batch (CUDA events around 200 launches) and GPU us of one launch alone (events around it)")
    for size in (n, 1 << 18, 1 << 20, 1 << 22):
        out, x = torch.empty(size, device="cuda"), torch.rand(size, device="cuda")
        host, gpu = host_us(lambda: f(out, x), 200), gpu_us(lambda: f(out, x), 200)
        alone = gpu_us(lambda: f(out, x), 1)
        say(f"  n = {size:>8}: host {host:6.2f}, GPU in the batch {gpu:7.2f}, alone {alone:7.2f} -> "
            f"{'GPU-bound' if gpu > 1.05 * host else 'host-bound'}")
    hist = autotune.launcher(ROOT / "examples/histogram/histogram.toml", db=db)
    nbytes = 64 << 20
    data = torch.randint(0, 256, (nbytes,), device="cuda", dtype=torch.uint8)
    bins = torch.zeros(256, device="cuda", dtype=torch.int32).view(torch.uint32)
    hist(bins, data, reset=True)
    torch.cuda.synchronize()
    assert int(bins.view(torch.int32).sum()) == nbytes, "the histogram does not count every byte"
    chosen = hist.prepared(bins, data).launcher.chosen
    say(f"histogram of 64 MiB (examples/histogram, config {chosen.config.key}, rung {chosen.rung}), GB/s of the "
        "input bytes:")
    for reset in (True, False):
        one = gpu_us(lambda: hist(bins, data, reset=reset), 1)
        batch = gpu_us(lambda: hist(bins, data, reset=reset), 100)
        host = host_us(lambda: hist(bins, data, reset=reset), 100, loops=3)
        say(f"  reset={reset!s:5}: one launch alone {nbytes / one / 1e3:5.0f} GB/s ({one:6.1f} us); back to back "
            f"{nbytes / batch / 1e3:5.0f} GB/s ({batch:6.1f} us); host {host:5.2f} us per launch")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.environ.get("OUT") or str(ROOT / "benchmarks/results"))
    parser.add_argument("--n", type=int, default=4096)
    parser.add_argument("--launches", type=int, default=2000)
    parser.add_argument("--record-launches", type=int, default=500,
                        help="launches a loop of the recording's lines (default 500: under the driver's queue of "
                             "pending launches, so a loop never waits for the GPU)")
    parser.add_argument("--record-rounds", type=int, default=41)
    parser.add_argument("--only", choices=["recording"], help="run only the recording's lines")
    options = parser.parse_args()
    name = torch.cuda.get_device_name(0)
    say(f"launch_overhead on {name}, torch {torch.__version__}, Python {sys.version.split()[0]}, "
        f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC")
    torch.zeros(1, device="cuda")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if options.only != "recording":
            per_arrays(folder, options.n, options.launches)
        recording_cost(folder, options.n, options.record_launches, options.record_rounds)
        if options.only != "recording":
            graph_capture(folder, options.n, options.launches)
            gpu_bound(folder, options.n, options.launches)
    out = Path(options.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{datetime.date.today():%Y-%m-%d}_{name.replace(' ', '_')}_launch_overhead.txt"
    path.write_text("\n".join(LINES) + "\n")
    print(f"written: {path}")


if __name__ == "__main__":
    main()
