"""Recording a program's launches: ``with autotune.record("NAME"):`` or ``AUTOTUNE_RECORD=NAME``.

While a recording is active, every launch made through `launcher`
(`KernelLauncher`'s prepared launches), `compiled` (`Launcher.__call__`)
and `transpose` is counted per problem (the device model, the kernel
with its source and spec hashes, the dims, the dtype), and some calls are timed on
the GPU with two CUDA events recorded on the launch's stream around them: the 2nd, 4th, 8th,
... call (every power of two) and one call in :data:`SAMPLE_EVERY` (the 2nd, then every N-th
after it). The first call of a launch may load its module lazily, so it is never timed; the
early calls of a program often run on a GPU whose clocks are still low, so the later powers
of two give a problem called a few dozen times samples from later in the run too. A batch's
GPU time of a problem is the median of its samples times their number, so one stalled
sample does not set the problem's time. The events are read back by a background thread (the
flusher), never on the launch path; it writes what was counted to the results database every
:data:`FLUSH_S` seconds as one batch, one transaction (``autotune.store.workloads``), so a
recording cut short (Ctrl-C, SIGTERM, SIGKILL, a crash) leaves whole batches only. The last
batch is written when the recording stops: at the end of the ``with`` block, at exit
(``atexit``: also after a ``KeyboardInterrupt``), and on SIGTERM (the last batch is written,
then the signal's previous action runs).

Cost on the launch path:

* **off** (no recording): none. Nothing is checked per launch: a recording that starts
  replaces the launch methods by counting ones, and stopping puts the originals back (`hooks`).
* **on**: one Python call and an integer increment per launch; a sampled launch also records
  two events (``cuEventRecord``, about 2 µs each, one launch in :data:`SAMPLE_EVERY`).
  ``benchmarks/launch_overhead.py`` measures both.

At most :data:`MAX_IN_FLIGHT` samples are in flight at once, and a sample whose host side took
longer than :data:`MAX_HOST_US` is dropped (`events`). Launches captured in a CUDA graph are
counted but not timed. One recording is active per process at a time.

A child forked while a recording is active (``os.fork``, ``multiprocessing``'s fork) records its
own launches under a run id of its own, its batches numbered from 1: what the parent counted
before the fork is the parent's to write. A child that ends with ``os._exit``
(``multiprocessing``) keeps the batches its flusher wrote, not its last one.

The package's modules: `session` (`record`, `Recording`: start, stop, the batches), `state` (the
process's one state object: the active recording, the hooked launches), `hooks` (the methods
swapped while a recording is active, the counting on the launch path), `counts` (the slots
counted and the batch made of them), `events` (the CUDA event pool, on `runtime/driver.py`),
`flusher` (the background thread; SIGTERM through `base/signals.py`) and `environment`
(``AUTOTUNE_RECORD``).
"""

from __future__ import annotations

from autotune.runtime.recording.environment import ENV as ENV
from autotune.runtime.recording.environment import from_environment as from_environment
from autotune.runtime.recording.events import MAX_HOST_US as MAX_HOST_US
from autotune.runtime.recording.events import MAX_IN_FLIGHT as MAX_IN_FLIGHT
from autotune.runtime.recording.flusher import READ_S as READ_S
from autotune.runtime.recording.hooks import launcher_call as launcher_call
from autotune.runtime.recording.hooks import register_method as register_method
from autotune.runtime.recording.hooks import track as track
from autotune.runtime.recording.hooks import transpose_call as transpose_call
from autotune.runtime.recording.session import FLUSH_S as FLUSH_S
from autotune.runtime.recording.session import SAMPLE_EVERY as SAMPLE_EVERY
from autotune.runtime.recording.session import Recording as Recording
from autotune.runtime.recording.session import record as record
from autotune.runtime.recording.state import active as active

__all__ = ["Recording", "record", "active", "track", "register_method", "from_environment", "SAMPLE_EVERY",
           "FLUSH_S", "READ_S", "MAX_IN_FLIGHT", "MAX_HOST_US", "ENV", "launcher_call", "transpose_call"]
