"""Transpose against its peers on one GPU, in one run: memcpy, PyTorch, CuPy, the classic
padded 32x8 shared-memory kernel, and ``autotune.transpose``; then the host cost of a call,
of ``import autotune`` and of the first call of a process.

For each dtype and shape, every method moves the same ``(..., rows, cols)`` input into a
contiguous ``(..., cols, rows)`` output (memcpy: a same-size device-to-device copy, the
bound), timed with CUDA events on the default stream. The launches of a batch are queued
behind a GPU sleep (``torch.cuda._sleep``) 1.5 times as long as Python took to queue the same
batch, so the events time the GPU's back-to-back work, not Python's launch overhead; each
figure is the median over BATCHES batches of the mean time per launch. Effective bandwidth
GB/s = 2 * elements * itemsize / time (read + write). Inputs are random bytes (any bit
pattern), every output is checked bit for bit against PyTorch's ``x.mT.contiguous()`` once
before timing. For a 1-row or 1-column input PyTorch's ``x.mT`` is already contiguous, so
its column times ``x.mT.clone(memory_format=torch.contiguous_format)`` (a copy) instead.

Ours is ``autotune.transpose`` without ``kernel=``: the kernel chosen for the shape (the op
best stored in ``--db``, else ``smem_vec`` for 16-byte rows and ``smem_vec_realign`` otherwise,
``smem_vec`` for batches) with the config ``autotune.lookup`` gives from ``--db`` (the table
says which kernel and which rung served it: ``default`` where the database holds nothing for
the shape); dtypes outside the catalog are moved as words of their size with the
canonical dtype's config; a 1-row or 1-column input is a ``cuMemcpyDtoDAsync``. The classic
kernel is ``smem_pad`` at its default config (TILE_DIM=32, BLOCK_ROWS=8, IPAD=1). Each ``--kernel NAME``
adds a column ``autotune.transpose(x, kernel=NAME)`` (the kernel forced, its config from ``--db``
as ``lookup`` gives it): ``n/a`` for an item size it does not take (``smem_bytes``: 1 and 2
bytes) and for batches when it takes no batch stride.

Host time per call: the mean over 200 calls (median of 15 runs) of Python's time for one
call, the GPU kept busy so nothing waits on it. ``import autotune`` and the first call
(``autotune.transpose`` of a 64x64 float32 tensor, torch already imported and the tensor
made, the on-disk cubin cache warm) are timed in fresh processes, median of 5.

    python3 benchmarks/transpose_vs_peers.py --db sqlite:///tuned.db [--dtypes ...] [--sizes ...] [--only host] \
        [--kernel smem_bytes --kernel smem_vec_realign]
"""

from __future__ import annotations

import argparse
import datetime
import os
import statistics
import subprocess
import sys
import tempfile
import time

BATCHES = 7
CALLS, CALL_RUNS = 200, 15
WORK_PER_BATCH_S = 0.01
SHAPES = [(8192, 8192), (5000, 7001), (3, 4093, 4099), (64, 512, 512),
          (1, 1 << 22), (1 << 22, 1)]
EXTRA_SHAPES = [(8192, 8192), (5000, 7001), (1, 1 << 22)]
DTYPES = ["int8", "float16", "float32", "float64", "complex128"]  # one per element size: every shape
EXTRA_DTYPES = ["bool", "float8_e4m3fn", "bfloat16", "complex64"]  # moved as words: EXTRA_SHAPES
METHODS = ("memcpy (device to device)", "torch x.mT.contiguous()", "cupy ascontiguousarray(x.mT)",
           "classic smem_pad 32x8", "autotune.transpose", "torch strided copy")
STRIDED = METHODS[5]
"""PyTorch's strided copy of the same shape, a second reference (a copy, not a transpose): ``x`` copied
into the rows of a ``(..., rows, cols + 1)`` tensor, so that every destination row starts one
element further along than the last; what the same bytes cost PyTorch when only the row pitch is odd."""
CASE_SETS = {
    # rows not 16-byte aligned on either side (and 5000x7001, aligned on one side, for comparison)
    "odd": [("float32", (12345, 6789)), ("float32", (4093, 4099)), ("float32", (5000, 7001)),
            ("float64", (12345, 6789)), ("complex64", (2047, 8191)), ("bfloat16", (4099, 2053)),
            ("float16", (3001, 7919)), ("float16", (37, 513, 771)), ("uint8", (10007, 10009)),
            ("int8", (3001, 7919))],
    # one side < 64 elements, >= 1 MiB
    "skinny": [("int8", (7, 1000003)), ("int8", (1000003, 7)), ("float32", (65536, 33)), ("float32", (33, 65536)),
               ("float32", (65536, 32)), ("float16", (33, 65536)), ("float16", (200003, 5)), ("float64", (9, 200003)),
               ("bfloat16", (63, 100000)), ("uint8", (48, 1 << 20))],
    # batches of small, odd and skinny matrices
    "batched": [("float32", (64, 512, 512)), ("float32", (37, 513, 771)), ("float16", (256, 127, 129)),
                ("int8", (64, 7, 16411)), ("float32", (16, 4096, 33)), ("float32", (1000, 33, 65))],
    # small matrices, single and in batches (L2-resident but for the last, 172 MB)
    "small": [("float32", (1000, 33, 65)), ("float32", (4096, 16, 16)), ("float32", (100, 100)),
              ("float32", (150, 150)), ("float64", (2000, 20, 30)), ("float64", (1000, 33, 65)),
              ("float16", (1000, 33, 65)), ("int8", (1000, 33, 65)), ("float32", (20000, 33, 65))],
}
"""``--cases NAME``: (dtype, shape) lists of issue 24's classes, beside the default every-dtype table."""


def gpu_timer(torch):
    """``per_launch_ms(fn, launches)``: GPU time per call of ``fn`` (ms, the median over BATCHES batches),
    with the batch queued behind a GPU sleep that outlasts the time Python takes to queue it (measured,
    times 1.5). Also used by benchmarks/warm_l2_transpose.py."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    torch.cuda._sleep(10**8)
    end.record()
    end.synchronize()
    cycles_per_ms = 10**8 / start.elapsed_time(end)

    def per_launch_ms(fn, launches: int) -> float:
        t = time.perf_counter()
        for _ in range(launches):
            fn()
        queue_ms = (time.perf_counter() - t) * 1e3
        torch.cuda.synchronize()
        times = []
        for _ in range(BATCHES):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda._sleep(int(1.5 * queue_ms * cycles_per_ms) + 10**6)  # GPU busy while Python queues
            start.record()
            for _ in range(launches):
                fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / launches)
        return statistics.median(times)

    return per_launch_ms


def _launches(ms_estimate: float) -> int:
    return int(min(200, max(10, WORK_PER_BATCH_S * 1e3 / max(ms_estimate, 1e-3))))


def _random(torch, shape, dtype):
    """A CUDA tensor of ``dtype`` whose bytes are random."""
    dt = getattr(torch, dtype)
    size = torch.empty((), dtype=dt).element_size()
    raw = torch.randint(0, 256, (*shape[:-1], shape[-1] * size), dtype=torch.uint8, device="cuda")
    return (raw & 1).bool() if dtype == "bool" else raw.view(dt)


def _bytes(torch, t):
    flat = t.contiguous().reshape(-1)
    return flat.view(torch.uint8) if t.dtype != torch.bool else flat.to(torch.uint8)


def _forced(autotune, x, y, db, name):
    """``autotune.transpose(x, kernel=name)``, or ``None`` where the kernel cannot move ``x``: an item
    size it takes no dtype of, a batch when it takes no batch stride, a shape over its ``[problem] max``."""
    from autotune.kernel.catalog import resolve_kernel
    from autotune.kernel.dtypes import get_dtype
    from autotune.runtime.transpose.choice import takes_views

    k = resolve_kernel(name)  # a catalog name or a kernel file
    if (x.element_size() not in {get_dtype(d).itemsize for d in k.dtypes} or (x.dim() > 2 and not takes_views(k))
            or x.shape[-2] > k.largest("rows") or x.shape[-1] > k.largest("cols")):
        return None
    return lambda: autotune.transpose(x, kernel=name, out=y, db=db)


def _methods(torch, cupy, autotune, x, y, db_tuned, db_classic, kernels=()):
    nbytes = x.numel() * x.element_size()
    strided = torch.empty((*x.shape[:-1], x.shape[-1] + 1), dtype=x.dtype, device=x.device)[..., :-1]
    cupy_t = None  # CuPy has no bfloat16 or float8 (it would see raw words, which torch cannot read back)
    if x.dtype not in (torch.bfloat16, torch.float8_e4m3fn, torch.float8_e5m2):
        xc = cupy.from_dlpack(x)
        cupy_t = lambda: cupy.ascontiguousarray(xc.swapaxes(-1, -2))  # noqa: E731
        if min(x.shape[-2:]) == 1:  # as for torch below: already contiguous, so it would copy nothing
            cupy_t = lambda: xc.swapaxes(-1, -2).copy(order="C")  # noqa: E731
    return {
        METHODS[0]: lambda: cupy.cuda.runtime.memcpyAsync(y.data_ptr(), x.data_ptr(), nbytes, 3, 0) and None,
        # a 1-row or 1-column x.mT is already contiguous: .contiguous() would copy nothing
        METHODS[1]: (lambda: x.mT.contiguous()) if min(x.shape[-2:]) > 1 else (
            lambda: x.mT.clone(memory_format=torch.contiguous_format)),
        METHODS[2]: cupy_t,
        METHODS[3]: lambda: autotune.transpose(x, kernel="smem_pad", out=y, db=db_classic),
        METHODS[4]: lambda: autotune.transpose(x, out=y, db=db_tuned),
        STRIDED: lambda: _none(strided.copy_(x)),
        **{_column(name): _forced(autotune, x, y, db_tuned, name) for name in kernels},
    }


def _none(_) -> None:
    """A method's result that is not checked (a copy, not a transpose)."""


def _column(kernel: str) -> str:
    return f"autotune.transpose(kernel={kernel})"


def _check(name, fn, torch, ref) -> None:
    got = fn()
    torch.cuda.synchronize()
    if got is not None and not torch.equal(_bytes(torch, torch.as_tensor(got, device="cuda")), _bytes(torch, ref)):
        raise SystemExit(f"{name} gave a wrong transpose")


def run(cases, db_tuned, kernels=()) -> None:
    import cupy
    import torch

    import autotune
    from autotune.runtime.transpose.op import transpose_plan

    db_classic = f"sqlite:///{tempfile.mkdtemp()}/empty.db"
    per_launch_ms = gpu_timer(torch)
    for dtype, shape in cases:
        x = _random(torch, shape, dtype)
        ref = x.mT.contiguous()
        y = torch.empty_like(ref)
        methods = _methods(torch, cupy, autotune, x, y, db_tuned, db_classic, kernels)
        nbytes = 2 * x.numel() * x.element_size()
        copy = shape[-1] == 1 or shape[-2] == 1
        chosen = "cuMemcpyDtoDAsync" if copy else _rung(transpose_plan(x, db=db_tuned).launcher)
        line = {"dtype": dtype, "shape": "x".join(map(str, shape)), "how": chosen}
        for name, fn in methods.items():
            if fn is None:
                line[name] = None
                continue
            if name not in (METHODS[0], STRIDED):  # copies, not transposes
                _check(name, fn, torch, ref)
            first = per_launch_ms(fn, 10)
            ms = per_launch_ms(fn, _launches(first))
            line[name] = (ms, nbytes / ms / 1e6)
        print(_format_line(line, [*METHODS, *map(_column, kernels)]), flush=True)
        del x, y, ref, methods
        torch.cuda.empty_cache()


def _rung(launcher) -> str:
    return f"{launcher.kernel.name} {launcher.chosen.rung} {launcher.chosen.config.key}"


def _format_line(line, names=METHODS) -> str:
    memcpy = line[METHODS[0]][1]
    torch_gbps = line[METHODS[1]][1]
    cells = []
    for name in names:
        if line[name] is None:
            cells.append("n/a")
            continue
        ms, gbps = line[name]
        cells.append(f"{gbps:7.0f} {100 * gbps / memcpy:5.1f}% {gbps / torch_gbps:5.2f}x")
    return f"| {line['dtype']:13} | {line['shape']:>13} | " + " | ".join(cells) + f" | {line['how']} |"


def header(kernels=()) -> str:
    """The table's header: the METHODS columns, then one per forced kernel."""
    forced = "".join(f" {_column(k)} |" for k in kernels)
    return ("| dtype | shape | memcpy GB/s %memcpy x torch | torch x.mT.contiguous() | cupy | classic smem_pad 32x8 | "
            f"autotune.transpose | torch strided copy |{forced} how (kernel, lookup rung, config) |\n|---|---|---|---|---|---|---|---|"
            + "---|" * len(kernels) + "---|")


HEADER = header()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--db", required=True, help="database with the tuned smem_vec results (may not exist: defaults)")
    p.add_argument("--dtypes", default=None, help="comma-separated torch dtype names (default: every size)")
    p.add_argument("--sizes", default=None, help="comma-separated shapes, e.g. 8192x8192,3x4093x4099")
    p.add_argument("--only", choices=("table", "host"), default=None)
    p.add_argument("--cases", choices=sorted(CASE_SETS), action="append", default=[],
                   help="issue 24's shapes of a class instead of the every-dtype table (repeatable)")
    p.add_argument("--kernel", action="append", default=[],
                   help="a catalog transpose to add as a column, forced with kernel= (repeatable)")
    args = p.parse_args()
    import torch

    props = torch.cuda.get_device_properties(0)
    print(f"# transpose vs peers on {props.name}, {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC; "
          f"torch {torch.__version__}; each cell: GB/s, % of memcpy, ratio to torch; median of {BATCHES} batches")
    if args.only != "host":
        shapes = [tuple(int(v) for v in s.split("x")) for s in args.sizes.split(",")] if args.sizes else None
        if args.cases:
            cases = [c for name in args.cases for c in CASE_SETS[name]]
        elif args.dtypes:
            cases = [(d, s) for d in args.dtypes.split(",") for s in shapes or SHAPES]
        else:
            cases = [(d, s) for d in DTYPES for s in shapes or SHAPES]
            cases += [(d, s) for d in EXTRA_DTYPES for s in shapes or EXTRA_SHAPES]
        print(header(args.kernel))
        run(cases, args.db, args.kernel)
    if args.only != "table":
        print(_host_cost(args.db))
        print(_process_costs(args.db))


def _host_cost(db: str) -> str:
    """Host time per call (µs) of autotune.transpose and of torch's transpose."""
    import torch

    import autotune

    cells = []
    for shape in ((64, 64), (8, 64, 64), (1024, 1024)):
        x = torch.zeros(shape, device="cuda")
        y = torch.empty(x.mT.shape, device="cuda")
        calls = {"autotune.transpose(x)": lambda: autotune.transpose(x, db=db),
                 "autotune.transpose(x, out=y)": lambda: autotune.transpose(x, out=y, db=db),
                 "torch x.mT.contiguous()": lambda: x.mT.contiguous(),
                 "torch.empty alone": lambda: torch.empty(x.mT.shape, device="cuda")}
        line = []
        for name, fn in calls.items():
            fn()
            torch.cuda.synchronize()
            runs = []
            for _ in range(CALL_RUNS):  # GPU work ahead (a sleep) so that no call waits on the GPU; few
                torch.cuda._sleep(10**8)  # calls per run, so that the launch queue never fills and blocks
                t = time.perf_counter()
                for _ in range(CALLS):
                    fn()
                runs.append((time.perf_counter() - t) / CALLS * 1e6)
                torch.cuda.synchronize()
            line.append(f"{name}: {statistics.median(runs):.1f} µs")
        cells.append(f"- {'x'.join(map(str, shape))} float32: " + "; ".join(line))
    return f"\nhost time per call (mean of {CALLS} calls, median of {CALL_RUNS} runs):\n" + "\n".join(cells)


_FIRST_CALL = """
import sys, time
import torch
x = torch.zeros((64, 64), device="cuda"); torch.cuda.synchronize()
t = time.perf_counter()
import autotune
y = autotune.transpose(x, db=sys.argv[1]); torch.cuda.synchronize()
print(time.perf_counter() - t)
"""
_PYCACHE = tempfile.mkdtemp(prefix="pycache-")
_IMPORT = "import time; t = time.perf_counter(); import autotune; print(time.perf_counter() - t)"


def _seconds(code: str, *args: str, runs: int = 5) -> float:
    """Median of 5 fresh processes; bytecode is cached (as an installed package has it: the GPU
    machine's site folder is installed with --no-compile), in a folder of this run."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = _PYCACHE
    return statistics.median(float(subprocess.run([sys.executable, "-c", code, *args], check=True, text=True,
                                                  capture_output=True, env=env).stdout.split()[-1])
                             for _ in range(runs))


def _process_costs(db: str) -> str:
    """``import autotune`` and the first call of a process, each in fresh processes."""
    made = f"sqlite:///{tempfile.mkdtemp()}/made.db"
    subprocess.run([sys.executable, "-m", "autotune", "db", "upgrade", "--db", made], check=True, capture_output=True)
    _seconds(_IMPORT, runs=1)  # bytecode written
    lines = [f"\nimport autotune (fresh process, median of 5): {_seconds(_IMPORT) * 1e3:.1f} ms"]
    for what, url in (("--db", db), ("an existing, empty results database", made)):
        _seconds(_FIRST_CALL, url, runs=1)  # the cubin cache (and bytecode) is warm after this
        lines.append(f"first autotune.transpose of a process (import autotune included, warm cubin cache, {what}): "
                     f"{_seconds(_FIRST_CALL, url) * 1e3:.0f} ms")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
