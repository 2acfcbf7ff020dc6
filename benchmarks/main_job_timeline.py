#!/usr/bin/env python3
"""Where the wall time of one `autotune` command goes: a timeline of the main thread.

Runs the command in this process (``autotune.cli.main``) while a thread samples the main
thread's stack every ``--every`` ms, then prints the segments in which its innermost autotune
frames (``--depth`` of them) stayed the same, with their start and end in seconds since this
script started (before autotune is imported), and every nvcc run (any thread) with its start,
its duration and what it built. The measuring child is not sampled: the parent's segment that
waits on it (``isolation``) shows its time.

    python benchmarks/main_job_timeline.py [--every 20] [--depth 2] [--min 0.05] [--out FILE] -- \\
        search --kernel smem_pad --device 0 --size 8192
"""

from __future__ import annotations

import time

T0 = time.perf_counter()

import argparse  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
# as the `autotune` console script does, at the top of the module: each measuring process the
# command spawns runs this script again as its main module and so imports this too
from autotune.cli import main as cli_main  # noqa: E402


def label(frame, depth: int) -> str:
    names = []
    while frame is not None and len(names) < depth:
        path = frame.f_code.co_filename
        if "/autotune/" in path and "/benchmarks/" not in path:
            names.append(f"{path.rsplit('/autotune/', 1)[1]}:{frame.f_code.co_name}")
        frame = frame.f_back
    return " < ".join(names) or "(outside autotune: imports, interpreter)"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--every", type=float, default=20.0, help="ms between samples")
    ap.add_argument("--depth", type=int, default=2)
    ap.add_argument("--min", type=float, default=0.05, help="shortest segment shown, s")
    ap.add_argument("--out")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    argv = [x for x in a.command if x != "--"]
    main_thread, samples, done = threading.main_thread(), [], threading.Event()
    builds: list[tuple[float, float, str]] = []
    real_popen = subprocess.Popen

    class TimedPopen(real_popen):  # every nvcc run: subprocess.run's and the compile pool's own Popen
        def __init__(self, cmd, *args, **kwargs):
            self._started = time.perf_counter()
            super().__init__(cmd, *args, **kwargs)
            self._nvcc = isinstance(cmd, (list, tuple)) and bool(cmd) and "nvcc" in str(cmd[0])
            self._cmd = cmd

        def wait(self, timeout=None):
            code = super().wait(timeout)
            if self._nvcc:
                self._nvcc = False  # counted once
                cmd = self._cmd
                what = next((str(c) for c in cmd if str(c).endswith((".cu", ".cubin"))), " ".join(map(str, cmd[-2:])))
                builds.append((self._started - T0, time.perf_counter() - self._started, Path(what).name))
            return code
    subprocess.Popen = TimedPopen

    def sample() -> None:
        while not done.wait(a.every / 1e3):
            frame = sys._current_frames().get(main_thread.ident)
            samples.append((time.perf_counter() - T0, label(frame, a.depth)))
    threading.Thread(target=sample, daemon=True).start()
    start = time.perf_counter() - T0
    from autotune.cli import app  # noqa: F401  (the command line itself, imported by cli_main's call)

    imported = time.perf_counter() - T0
    sys.argv = ["autotune", *argv]
    code = 0
    try:
        cli_main()
    except SystemExit as exc:
        code = exc.code or 0
    done.set()
    end = time.perf_counter() - T0
    lines = [f"# timeline of: autotune {' '.join(argv)}  (exit {code})",
             f"script start {start:.2f} s, autotune.cli imported {imported:.2f} s, command ended {end:.2f} s"]
    segments: list[list] = []
    for t, name in samples:
        if segments and segments[-1][2] == name:
            segments[-1][1] = t
        else:
            segments.append([t, t, name])
    lines.append("main thread, segments of at least %.2f s (start .. end s: innermost autotune frames):" % a.min)
    lines += [f"  {s:6.2f} .. {e:6.2f}  {e - s:5.2f}  {name}" for s, e, name in segments if e - s >= a.min]
    lines.append(f"nvcc runs: {len(builds)}, {sum(d for _, d, _ in builds):.2f} s in all")
    lines += [f"  {s:6.2f} +{d:5.2f}  {what}" for s, d, what in sorted(builds)[:40]]
    text = "\n".join(lines)
    print(text, file=sys.stderr)
    if a.out:
        Path(a.out).write_text(text + "\n")
    sys.exit(code)


if __name__ == "__main__":
    main()
