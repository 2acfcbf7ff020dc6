"""What a search of a new shape can know before it starts: the trials of the kernel's other
shapes on the same device model (the ``transfer`` strategy's history), with the lookup
ladder's shape distance (:func:`autotune.kernel.dims.shape_distance`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from autotune.search.strategies.base import Known
from autotune.store.key import TuningKey

if TYPE_CHECKING:
    from autotune.store.repository import Store

__all__ = ["other_shapes"]


def other_shapes(store: Store, key: TuningKey) -> list[Known]:
    """Every ok trial stored for another shape of ``key``'s kernel that has a stored best,
    with the same identity otherwise (device model, kernel source and spec, dtype, nvcc,
    flags: :meth:`~autotune.store.repository.Store.key_trials` of the key at those dims), as
    :class:`~autotune.search.strategies.base.Known` with the shapes' distance; nearest first.
    Reads the stored bests once, then each such shape's trials once."""
    from autotune.kernel.dims import shape_distance

    names = [n for n, _ in key.dims]
    out: list[Known] = []
    for r in store.find_best(kernel=key.kernel, dtype=key.dtype, source_hash=key.source_hash,
                             spec_hash=key.spec_hash):
        if r.dims == key.dims or [n for n, _ in r.dims] != names or r.device_name != key.device.name:
            continue
        distance = shape_distance(r.dims, key.dims)
        out += [Known(t.config, t.median_ms, distance, r.dims) for t in store.key_trials(key.at(r.dims))
                if t.status == "ok"]
    return sorted(out, key=lambda k: k.distance)
