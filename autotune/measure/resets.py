"""What runs before every launch a benchmark verifies or times: resets, and inout restores.

* An array with ``reset`` (``out``, ``inout`` or ``scratch``; :mod:`autotune.kernel.resets`) is
  set to its value by the driver's async memsets before every launch, as Triton's
  ``reset_to_zero``: a histogram, a split-K product or a kernel with a completion counter starts
  every launch from the same state, not from what the previous launch left.
* An ``inout`` array without ``reset`` gets its input values back before every launch, copied
  device to device from a pristine copy uploaded once, as Triton's ``restore_value``: every
  timed launch reads the same input.

These run on the launch's stream, inside the timed batch: **the time of a launch includes its
resets and restores** (a memset of the reset arrays, a device-to-device copy of the inouts),
for every config and every timing alike (verification, search, re-timing), as Triton's
autotuner times its ``pre_hook``. A ``scratch`` array without ``reset`` is filled once (its
``init``) before the check and before each timing run, and keeps what the launches leave.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from autotune.kernel.resets import fill_ops
from autotune.measure.buffers import ArgSet

__all__ = ["Prelude"]


class Prelude:
    """The resets and restores of one problem's arrays (see module doc).

    Args:
        drv: the CUDA backend (:mod:`autotune.measure.backends`, or a fake).
        layout: each array argument with its shape and element type
            (:func:`~autotune.measure.buffers.array_layout`).
        values: the host values of the inputs, inouts and scratch arrays, by array index (the
            restores' source, uploaded on first use).
    """

    def __init__(self, drv, layout, values: Mapping[int, np.ndarray]) -> None:
        self.drv, self.values = drv, values
        self.fills = {i: fill_ops(a.reset, dt.numpy, int(np.prod(shape)) * dt.itemsize)
                      for i, (a, shape, dt) in enumerate(layout) if a.reset is not None}
        self.restored = [i for i, (a, _, _) in enumerate(layout) if a.role == "inout" and a.reset is None]
        self._pristine: dict[int, object] = {}

    @property
    def empty(self) -> bool:
        """Nothing to do before a launch."""
        return not self.fills and not self.restored

    def for_set(self, args: ArgSet) -> Callable[[], None]:
        """The function to call before each launch on ``args``: queues the memsets and copies
        on the default stream (where the benchmark launches)."""
        drv, ops = self.drv, []
        for i, fills in self.fills.items():
            for f in fills:
                at = args.pointers[i] + f.offset
                if f.kind == "d2d32":
                    ops.append((drv.memset_d2d32_async, (at, f.pitch, f.word, 1, f.count)))
                else:
                    ops.append((getattr(drv, f"memset_{f.kind}_async"), (at, f.word, f.count)))
        for i in self.restored:
            if args.nbytes[i]:
                ops.append((drv.memcpy_dtod_async, (args.pointers[i], self._source(i), args.nbytes[i])))

        def before() -> None:
            for op, operands in ops:
                op(*operands)
        return before

    def _source(self, i: int) -> int:
        if i not in self._pristine:
            host = np.ascontiguousarray(self.values[i])
            buf = self.drv.mem_alloc(max(host.nbytes, 1))
            self.drv.memcpy_htod(buf, host)
            self._pristine[i] = buf
        return int(self._pristine[i])

    def free(self) -> None:
        """Release the pristine copies."""
        for buf in self._pristine.values():
            buf.free()
        self._pristine.clear()
