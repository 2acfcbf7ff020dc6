"""A program recording its launches, run by tests/runtime/recording/test_session.py in a subprocess (fake
PyTorch and a fake CUDA driver: tests/fake_gpu_arrays.py; no GPU).

    python tests/recording_child.py MODE DB_URL NAME LAUNCHES MARKS_DIR

It launches the histogram example at n = 1000 and smem_vec at 64x100 alternately, ``LAUNCHES``
times each. MODE:

* ``with``: inside ``autotune.record(NAME)``, flushing every 10 ms; after the launches it
  writes ``MARKS_DIR/launched`` and waits for a signal (SIGINT ends the ``with`` block);
* ``env``: recorded through ``AUTOTUNE_RECORD`` (set by the test), same waiting (SIGTERM);
* ``forever``: inside ``autotune.record``, flushing every 10 ms, launching until killed,
  writing ``MARKS_DIR/batches-N`` as batch N is written (SIGKILL);
* ``plain``: inside ``autotune.record``, the launches, then the block ends;
* ``fork``: inside ``autotune.record`` (no batch written before the block ends), the launches,
  then ``os.fork()``: the child launches ``LAUNCHES // 2`` times each and ends its block; the
  parent waits for it, launches ``LAUNCHES // 2`` times each more and ends its block.
"""

from __future__ import annotations

import faulthandler
import os
import signal
import sys
import time
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent))

import autotune  # noqa: E402
from autotune.measure.device import DeviceInfo  # noqa: E402

from fake_gpu_arrays import FakeLibcuda, Tensor, fake_torch  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DEVICE = DeviceInfo(name="NVIDIA H100 80GB HBM3", compute_capability="9.0", sm_count=132,
                    total_memory=85_000_000_000, driver_version="13.0", cuda_version="13.0")


def install() -> FakeLibcuda:
    """What tests/fake_gpu_arrays.install does, without pytest's monkeypatch."""
    from autotune.measure import compile as compile_module
    from autotune.measure import device as device_module
    from autotune.runtime import driver
    from autotune.runtime.recording import events as recording_events
    import autotune.runtime.streams as streams_module

    os.environ["AUTOTUNE_LAUNCH_API"] = "ctypes"  # the fake libcuda, also where cuda-bindings is installed
    fake = FakeLibcuda(autotune.load_kernel(ROOT / "examples/histogram/histogram.toml"))
    fake.cuLaunchKernel = types.MethodType(lambda self, f, gx, gy, gz, bx, by, bz, *rest: _launch(self, gx, gy, gz,
                                                                                                  bx, by, bz), fake)
    sys.modules["torch"] = fake_torch({0: 0x5000, 1: 0x5001})
    driver.libcuda = lambda: fake
    recording_events._host_ns = fake.host_ns  # a loaded machine drops no sample
    driver.current_context = lambda: fake.context
    driver.load_function = lambda cubin, name: (0xBA5, 0xF00)
    compile_module.build_cubin = lambda k, config, dtype, arch: (b"", {}, True)
    device_module.current_device = lambda: DEVICE
    streams_module._raw_torch_stream = None
    return fake


def _launch(fake, gx, gy, gz, bx, by, bz) -> int:
    fake.clock_ms += fake.launch_ms((gx.value, gy.value, gz.value), (bx.value, by.value, bz.value))
    return 0


def launches(n: int, db: str) -> None:
    hist = autotune.launcher(ROOT / "examples/histogram/histogram.toml", db=db)
    vec = autotune.launcher("smem_vec", db=db)
    bins, data = Tensor((256,), "uint32"), Tensor((1000,), "uint8")
    out, src = Tensor((64, 100)), Tensor((100, 64))
    for _ in range(n):
        hist(bins, data)
        vec(out, src)


def wait_for_signal(marks: Path) -> None:
    (marks / "launched").touch()
    while True:
        time.sleep(0.01)


def main(mode: str, db: str, name: str, n: str, marks: str) -> None:
    install()
    folder = Path(marks)
    if mode == "env":
        launches(int(n), db)
        wait_for_signal(folder)
    elif mode == "forever":
        with autotune.record(name, db=db, flush_s=0.01) as r:
            real = r.flush

            def flush(wait=False):
                done = real(wait)
                for n in range(1, r.batches + 1):  # one flush may write two batches (a retried one, then new)
                    (folder / f"batches-{n}").touch()
                return done

            r.flush = flush
            while True:
                launches(50, db)
    elif mode == "fork":
        child = False
        with autotune.record(name, db=db, flush_s=3600):
            launches(int(n), db)
            pid = os.fork()
            if pid == 0:
                child = True
                launches(int(n) // 2, db)
            else:
                _, status = os.waitpid(pid, 0)
                if status != 0:
                    raise SystemExit(f"the forked child ended with status {status}")
                launches(int(n) // 2, db)
        if child:
            os._exit(0)  # its block ended (its batch written): the parent's code is not the child's
    else:
        with autotune.record(name, db=db, flush_s=0.01):
            launches(int(n), db)
            if mode == "with":
                wait_for_signal(folder)


if __name__ == "__main__":
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # the test asks for the stacks of a child that hangs
    # Ctrl-C as in a terminal: a child inherits SIGINT ignored where its pytest worker ignores it (seen
    # in CI: the child slept on through the test's SIGINT), and Python then installs no handler
    signal.signal(signal.SIGINT, signal.default_int_handler)
    os.environ.setdefault("AUTOTUNE_COMPILE_WORKERS", "0")
    main(*sys.argv[1:])
