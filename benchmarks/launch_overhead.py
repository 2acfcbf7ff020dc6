"""Host time per launch of ``autotune.launcher`` (issue 23), with PyTorch's own ops in the same run.

    python3 benchmarks/launch_overhead.py [--out DIR] [--n 4096] [--launches 2000]

For kernels of 1, 2, 4 and 6 float32 arrays of ``n`` elements (``out[i] = a0[i] + a1[i] + ...``,
kernel files written to a temporary folder; nothing tuned, so the lookup answers the default
config), launched back to back from PyTorch tensors, CuPy arrays and PyCUDA GPUArrays, it
prints the host µs per launch: wall-clock time of ``--launches`` calls in a loop (no
synchronisation inside), median of 7 loops, after a warm-up. Next to them, in the same run:

* PyTorch ops on tensors of the same size (``fill_``, ``neg(out=)``, ``addcmul(out=)``,
  ``torch.amax(dim=1)`` of a 64x64 tensor as in the issue);
* ``autotune.compiled`` (fixed dims; the issue measured 87 µs for a 2-array kernel);
* the floors: the same ``cuLaunchKernel`` through ctypes with every argument made once (what
  the launcher's hot path calls), PyCUDA's ``prepared_async_call``, and ``cuda.bindings``'
  ``cuLaunchKernel`` with the same packed ``void **`` (where installed);
* graph capture: host µs per launch inside ``torch.cuda.graph``, and the replayed graph's GPU µs
  per kernel;
* bound by the GPU: GPU µs per launch of the 2-array kernel launched back to back (CUDA
  events around the batch) against the host µs per launch, and the 64 MiB histogram
  (examples/histogram) in GB/s launched once and back to back with ``reset=True``.

Output: ``DIR/<date>_<gpu>_launch_overhead.txt`` (``--out``, default ``$OUT`` if set, else
benchmarks/results/) and stdout.
"""

from __future__ import annotations

import argparse
import ctypes
import datetime
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


def floors(f, tensors, launches: int) -> None:
    """The same launch through bare ctypes, PyCUDA's prepared_async_call and cuda.bindings."""
    p = f.prepared(*tensors)
    p.pack(p.buf, 0, *(t.data_ptr() for t in tensors))
    p.stream.value = torch.cuda.current_stream().cuda_stream
    say(f"  floor: bare ctypes cuLaunchKernel, arguments made once    {host_us(lambda: p.run(*p.call), launches):6.2f}")
    try:
        import pycuda.driver as cuda

        cuda.init()
        module = cuda.module_from_buffer(autotune_cubin(p))
        fn = module.get_function(p.launcher.kernel.function)
        fn.prepare(p.launcher.kernel.signature)
        import numpy as np

        args = [np.uintp(t.data_ptr()) for t in tensors] + [np.int64(tensors[0].numel())]
        grid, block = p.launcher.grid, p.launcher.block
        say(f"  PyCUDA prepared_async_call (own module)                   "
            f"{host_us(lambda: fn.prepared_async_call(grid, block, None, *args), launches):6.2f}")
    except Exception as exc:  # noqa: BLE001  (a floor that cannot run is said, not fatal)
        say(f"  PyCUDA prepared_async_call: not run ({type(exc).__name__}: {str(exc)[:80]})")
    try:
        from cuda.bindings import driver as cb

        function, argv = cb.CUfunction(p.launcher.function), ctypes.addressof(p.argv)
        stream = cb.CUstream(torch.cuda.current_stream().cuda_stream)
        (gx, gy, gz), (bx, by, bz), shared = p.launcher.grid, p.launcher.block, p.launcher.shared

        def bindings() -> None:
            cb.cuLaunchKernel(function, gx, gy, gz, bx, by, bz, shared, stream, argv, 0)
        err = cb.cuLaunchKernel(function, gx, gy, gz, bx, by, bz, shared, stream, argv, 0)[0]
        say(f"  cuda.bindings cuLaunchKernel, packed void** (err {int(err)})          {host_us(bindings, launches):6.2f}")
    except Exception as exc:  # noqa: BLE001
        say(f"  cuda.bindings: not run ({type(exc).__name__}: {str(exc)[:80]})")


def autotune_cubin(p) -> bytes:
    from autotune.measure.compile import build_cubin
    from autotune.measure.device import current_device

    launcher = p.launcher
    return build_cubin(launcher.kernel, launcher.chosen.config, launcher.dtype, current_device().arch)[0]


def per_arrays(folder: Path, n: int, launches: int) -> None:
    say(f"host us per launch, back to back, {launches} launches a loop, median of 7 loops; n = {n} float32")
    for arrays in (1, 2, 4, 6):
        path = kernel_file(folder, arrays)
        f = autotune.launcher(path, db=f"sqlite:///{folder / 'none.db'}")
        tensors = [torch.rand(n, device="cuda") for _ in range(arrays)]
        f(*tensors)
        torch.cuda.synchronize()
        want = sum(tensors[1:]) if arrays > 1 else torch.arange(n, device="cuda", dtype=torch.float32)
        assert torch.equal(tensors[0], want), f"add{arrays} is wrong"
        say(f"{arrays} array{'s' if arrays > 1 else ''}:")
        say(f"  autotune.launcher, PyTorch tensors                        {host_us(lambda: f(*tensors), launches):6.2f}")
        try:
            import cupy

            arrs = [cupy.asarray(t) for t in tensors]
            f(*arrs)
            say(f"  autotune.launcher, CuPy arrays                            {host_us(lambda: f(*arrs), launches):6.2f}")
        except ImportError:
            say("  CuPy: not installed")
        try:
            import pycuda.autoprimaryctx  # noqa: F401  (PyTorch's context: the primary one)
            import pycuda.gpuarray as gpuarray

            garrs = [gpuarray.to_gpu(t.cpu().numpy()) for t in tensors]
            f(*garrs)
            say(f"  autotune.launcher, PyCUDA GPUArrays                       {host_us(lambda: f(*garrs), launches):6.2f}")
        except ImportError:
            say("  PyCUDA: not installed")
        g = autotune.compiled(path, {"n": n}, "float32", db=f"sqlite:///{folder / 'none.db'}")
        say(f"  autotune.compiled (fixed dims), PyTorch tensors           {host_us(lambda: g(*tensors), launches // 10):6.2f}")
        if arrays == 2:
            floors(f, tensors, launches)
    x, y = torch.rand(n, device="cuda"), torch.empty(n, device="cuda")
    a, b, c = (torch.rand(n, device="cuda") for _ in range(3))
    m = torch.rand(64, 64, device="cuda")
    say("PyTorch ops on tensors of the same size, same run:")
    say(f"  y.fill_(1.0)                                              {host_us(lambda: y.fill_(1.0), launches):6.2f}")
    say(f"  torch.neg(x, out=y)                                       {host_us(lambda: torch.neg(x, out=y), launches):6.2f}")
    say(f"  torch.addcmul(a, b, c, out=y)                             "
        f"{host_us(lambda: torch.addcmul(a, b, c, out=y), launches):6.2f}")
    say(f"  torch.amax(m, dim=1) of 64x64 (allocates)                 {host_us(lambda: torch.amax(m, dim=1), launches):6.2f}")


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
    f = autotune.launcher(kernel_file(folder, 2), db=f"sqlite:///{folder / 'none.db'}")
    out, x = torch.empty(n, device="cuda"), torch.rand(n, device="cuda")
    host, gpu = host_us(lambda: f(out, x), launches), gpu_us(lambda: f(out, x), launches)
    alone = gpu_us(lambda: f(out, x), 1)
    say("bound by the GPU? 2-array kernel back to back:")
    say(f"  host us per launch {host:.2f}; GPU us per launch in the batch {gpu:.2f}; one launch alone "
        f"{alone:.2f} (events around it)")
    say(f"  -> {'GPU-bound: the GPU never waits for the host' if gpu >= host else 'host-bound'}")
    hist = autotune.launcher(ROOT / "examples/histogram/histogram.toml", db=f"sqlite:///{folder / 'none.db'}",
                             reset=True)
    nbytes = 64 << 20
    data = torch.randint(0, 256, (nbytes,), device="cuda", dtype=torch.uint8)
    bins = torch.zeros(256, device="cuda", dtype=torch.int32).view(torch.uint32) if hasattr(torch, "uint32") \
        else None
    if bins is None:
        say("  histogram: this torch has no uint32")
        return
    hist(bins, data)
    torch.cuda.synchronize()
    assert int(bins.view(torch.int32).sum()) == nbytes, "the histogram does not count every byte"
    one = gpu_us(lambda: hist(bins, data), 1)
    batch = gpu_us(lambda: hist(bins, data), 100)
    host = host_us(lambda: hist(bins, data), 200, loops=3)
    chosen = hist.prepared(bins, data).launcher.chosen
    say(f"  histogram of 64 MiB (reset=True, config {chosen.config.key}, {chosen.rung}): one launch "
        f"{nbytes / one / 1e3:.0f} GB/s ({one:.1f} us); back to back {nbytes / batch / 1e3:.0f} GB/s ({batch:.1f} us); "
        f"host {host:.2f} us per launch")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.environ.get("OUT") or str(ROOT / "benchmarks/results"))
    parser.add_argument("--n", type=int, default=4096)
    parser.add_argument("--launches", type=int, default=2000)
    options = parser.parse_args()
    name = torch.cuda.get_device_name(0)
    say(f"launch_overhead on {name}, torch {torch.__version__}, Python {sys.version.split()[0]}, "
        f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC")
    torch.zeros(1, device="cuda")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        per_arrays(folder, options.n, options.launches)
        graph_capture(folder, options.n, options.launches)
        gpu_bound(folder, options.n, options.launches)
    out = Path(options.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{datetime.date.today():%Y-%m-%d}_{name.replace(' ', '_')}_launch_overhead.txt"
    path.write_text("\n".join(LINES) + "\n")
    print(f"written: {path}")


if __name__ == "__main__":
    main()
