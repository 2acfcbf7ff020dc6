"""``autotune tune-shapes``: tune shapes picked so that a kernel's dispatch covers a range of dims.

:func:`tune_shapes` tunes ``count`` shapes of a declared range (``{dim: (low, high)}``), one
after the other, each picked by :func:`autotune.dispatch.next_shapes` from what the
store holds when it is picked: the farthest point of the range (in log space) from every shape
tuned on this device model, until three shapes are tuned; from then on each tuned shape's
distance counts ``1 + its held-out regret`` times (:func:`autotune.dispatch.leave_one_out`),
so the next shape goes where the dispatch is far from its evidence and did worst.

Each search reuses the ones before it: the ``transfer`` strategy (unless another is given)
measures the best configs of the nearest tuned shapes first and warm-starts its model with
their trials, and the configs of the dispatch learned so far are measured first
(``SearchOptions.queue``), so that every config the dispatch may pick is measured at every
shape (its held-out regret is then known, not guessed); and every config it measures is
measured at the range's shapes tuned before it too, in the same measuring process (``also``:
one compile, a trial at each shape, :mod:`autotune.search.companions`).

Then the dense matrix (:func:`complete_matrix`): the winner and the runner-up of every tuned
shape of the key (this run's and those tuned before), each timed at every tuned shape where it
was not measured, through the same search path (a resumed search of the shape whose queue is
those configs and whose trials are their number), so every timing is a stored trial: the
matrix survives and grows with each run, and the dispatch compares configs on shapes where
they were all measured instead of guessing the missing ones as the worst.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autotune.errors import InvalidInputError
from autotune.kernel.problem import Problem
from autotune.search.options import SearchOptions
from autotune.search.outcome import SearchResult
from autotune.dispatch import (build_dispatch, leave_one_out, next_shapes, regret_weights, tables_from_trials,
                               winners)

if TYPE_CHECKING:
    from autotune.kernel.model import Kernel

__all__ = ["Planned", "tune_shapes", "complete_matrix", "matrix_configs", "WEIGHTED_FROM", "MATRIX_TOP"]

WEIGHTED_FROM = 3
"""Tuned shapes from which the held-out regrets weigh where the next shape goes."""
MATRIX_TOP = 2
"""The configs of each tuned shape timed at every other: its winner and its runner-up."""


@dataclass(frozen=True)
class Planned:
    """A shape about to be tuned: the ``index``-th of ``count``, ``shape`` its dims' values,
    ``why`` one line (``"farthest from the 2 tuned shapes"``, ``"... weighted by held-out regret"``)."""

    index: int
    count: int
    shape: tuple[int, ...]
    why: str


def tune_shapes(kernel: str | Path | Kernel, ranges: Mapping[str, tuple[int, int]], count: int,
                dtype: Any = "float32", *, device: int = 0, multiple: int = 1, options: SearchOptions | None = None,
                db: str | None = None, on_plan: Callable[[Planned], None] | None = None,
                tune: Callable[..., SearchResult] | None = None,
                device_info=None, matrix: bool = True) -> list[SearchResult]:
    """Tune ``count`` shapes of ``ranges`` (module doc); returns each search's result, in order,
    then those of the dense matrix's searches (:func:`complete_matrix`).

    Args:
        kernel: a catalog name, a kernel file's path, or a Kernel.
        ranges: ``{dim: (low, high)}`` over every dim of the kernel, ``1 <= low <= high``.
        count: shapes to tune, >= 1.
        dtype: the problems' dtype.
        device: the CUDA ordinal to tune on.
        multiple: every dim a multiple of this (where the range holds one).
        options: the searches' options (default: 100 trials, the ``transfer`` strategy; ``resume``
            is always on, so a run that was cut off goes on where it stopped).
        db: the results database's URL (``None``: ``$AUTOTUNE_DB``, else the default): read for
            the shapes tuned, given to every search.
        on_plan: called with each shape before it is tuned.
        tune: the search (default :func:`autotune.tune`; tests inject a fake), called as
            ``tune(kernel, dims, dtype, device=, options=, db=, also=)``.
        device_info: the device's :class:`~autotune.measure.device.DeviceInfo` (default: queried).
        matrix: then time each tuned shape's winner and runner-up at every tuned shape
            (:func:`complete_matrix`); ``on_plan`` is told of each such search too.

    Raises:
        InvalidInputError: a range over other dims than the kernel's, a bad range, count or
            multiple; as :func:`autotune.tune`.
        GPUUnavailableError, StoreError: as :func:`autotune.tune`.
    """
    from autotune.kernel.arguments import check_db_arg
    from autotune.measure.toolchain import Toolchain
    from autotune.store.key import TuningKey

    check_db_arg(db)
    if tune is None:
        from autotune.search.tune import tune
    options = options if options is not None else SearchOptions(strategy="transfer")
    options = options.replace(resume=True)
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise InvalidInputError(f"count {count!r} is not allowed; give 1 or more shapes")
    if not isinstance(multiple, int) or isinstance(multiple, bool) or multiple < 1:
        raise InvalidInputError(f"multiple {multiple!r} is not allowed; give an integer >= 1")
    low = Problem.of(kernel, {name: lo for name, (lo, _) in ranges.items()}, dtype)  # checks the dims' names
    Problem.of(low.kernel, {name: hi for name, (_, hi) in ranges.items()}, dtype)  # and the range's top
    k, names = low.kernel, low.kernel.dims
    spans = [ranges[name] for name in names]
    if device_info is None:
        from autotune.measure.device import query_device

        device_info = query_device(device)
    key = TuningKey.of(low, device_info, Toolchain.of(device_info.arch))
    tunables = set(k.tunables)
    results = []
    for i in range(count):
        tables = _tables(key, db, tunables)
        tuned = [t.shape for t in tables]
        weights = (regret_weights(leave_one_out(tables, k.default_config(), names))
                   if len(tables) >= WEIGHTED_FROM else {})
        picked = next_shapes(spans, tuned, 1, weights=weights, multiple=multiple)
        if not picked:
            break
        shape = picked[0]
        why = (f"farthest from the {len(tuned)} tuned shape{'s' if len(tuned) != 1 else ''}"
               + (", weighted by their held-out regret" if weights else "") if tuned else "the middle of the range")
        if on_plan is not None:
            on_plan(Planned(i, count, shape, why))
        queue = build_dispatch(tables, k.default_config(), names).configs[1:] if tables else ()
        also = [dict(zip(names, t)) for t in tuned if all(lo <= v <= hi for v, (lo, hi) in zip(t, spans))]
        results.append(tune(k, dict(zip(names, shape)), low.dtype, device=device,
                            options=options.replace(queue=tuple(queue)), db=db, also=also))
    if matrix:
        results += complete_matrix(k, key, low.dtype, device=device, options=options, db=db, tune=tune,
                                   on_plan=on_plan)
    return results


def _tables(key, db: str | None, tunables: set[str]):
    """The shape tables of ``key``'s trials in database ``db`` whose configs set ``tunables``."""
    from autotune.store.opening import open_results

    store = open_results(db, "lookup")
    try:
        trials = [t for t in store.shape_trials(key) if {n for n, _ in t.config.macros} == tunables]
    finally:
        store.close()
    return tables_from_trials(trials)


def matrix_configs(tables, top: int = MATRIX_TOP) -> list:
    """The distinct configs of the dense matrix: the ``top`` fastest measured at each tuned shape
    (its winner and runner-up), in the tables' order (:func:`autotune.dispatch.winners`)."""
    return winners(tables, top)


def complete_matrix(kernel: Kernel, key, dtype: Any, *, device: int = 0, options: SearchOptions,
                    db: str | None = None, tune: Callable[..., SearchResult],
                    on_plan: Callable[[Planned], None] | None = None,
                    top: int = MATRIX_TOP) -> list[SearchResult]:
    """Time every tuned shape's winner and runner-up (:func:`matrix_configs`) at every tuned shape
    of ``key``'s kernel, dtype, device model and toolchain where it was neither measured nor failed:
    per shape, one resumed search whose queue is those configs and whose trials are their number
    (re-timing at most 3 of its best), so each timing is a stored trial. Returns those searches'
    results, in the tables' order (none where the matrix is dense already). ``db``: the results
    database's URL, read and given to each search, as :func:`tune_shapes`'s.

    Raises:
        as :func:`autotune.tune`.
    """
    tables = _tables(key, db, set(kernel.tunables))
    configs = matrix_configs(tables, top)
    names = kernel.dims
    out = []
    todo = [(t, [c for c in configs if t.ms(c) is None]) for t in tables]
    todo = [(t, missing) for t, missing in todo if missing]
    for i, (t, missing) in enumerate(todo):
        if on_plan is not None:
            on_plan(Planned(i, len(todo), t.shape, f"the dense matrix: {len(missing)} of the {len(configs)} "
                                                   "winners and runners-up not measured here"))
        out.append(tune(kernel, dict(zip(names, t.shape)), dtype, device=device,
                        options=options.replace(queue=tuple(missing), trials=len(missing), resume=True,
                                                top_k=min(options.top_k, 3)), db=db))
    return out

