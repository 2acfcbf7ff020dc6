"""Search over an operation: the kernel is a parameter, over every catalog kernel computing it.

``autotune search --op transpose`` (and :func:`tune_op`) searches every catalog kernel whose
kernel file computes the operation (:func:`autotune.kernel.ops.op_kernels`: dims ``rows, cols`` and the check
reference ``autotune.kernel.references:transpose``; the copies check against ``copy`` and are
not candidates). Each kernel keeps its own Optuna study and stored best (the key of
:func:`autotune.tune`: GPU model, kernel and its hashes, dims, dtype, toolchain), so an op
search needs no new table: the best (kernel, config) of an op for a key is the fastest of
the kernels' stored bests of that key (:func:`op_standings`, by each best's re-timed pooled
median), which survives restarts like any stored result.

The kernels share one budget of ``trials`` (configs measured) by successive halving (the
scheme of Jamieson and Talwalkar, "Non-stochastic best arm identification and hyperparameter
optimization", AISTATS 2016): the budget is cut into ``ceil(log2 n) + 1`` equal rounds; in each
round the kernels still in the race split the round's share evenly (the default config is
always a kernel's first trial), then the slower half (by stored best) leaves. So every kernel
is measured at least at its default, and most of the budget goes to the fastest few.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from autotune.errors import InvalidInputError
from autotune.kernel.dtypes import get_dtype

from autotune.kernel.ops import op_kernels

__all__ = ["halving_plan", "split_budget", "Standing", "OpResult", "op_standings", "tune_op"]

def halving_plan(kernels: int, trials: int) -> list[int]:
    """The budget of each successive-halving round: ``ceil(log2 kernels) + 1`` rounds (one when
    there is one kernel) sharing ``trials`` evenly, the first rounds taking the remainder.
    Every kernel gets at least one config (its default) in the first round, so a budget below
    the kernel count is raised to it; a later round too small to give each kernel still
    racing one config is dropped, its share going to the rounds before.

    Raises:
        InvalidInputError: ``trials`` < 1.
    """
    if trials < 1:
        raise InvalidInputError(f"--trials {trials} is not allowed; give 1 or more")
    rounds = math.ceil(math.log2(kernels)) + 1 if kernels > 1 else 1
    plan, racing, left = [], kernels, max(trials, kernels)
    for r in range(rounds):
        share = max(racing, -(-left // (rounds - r)))  # ceil: the first rounds take the remainder
        if r > 0 and share > left:
            plan[-1] += left
            break
        plan.append(share)
        left -= share
        racing = math.ceil(racing / 2)
    return plan


def split_budget(budget: int, names: list[str]) -> dict[str, int]:
    """``budget`` configs split evenly over ``names`` (the first ones take the remainder), at least 1 each."""
    each, extra = divmod(budget, len(names))
    return {n: max(1, each + (1 if i < extra else 0)) for i, n in enumerate(names)}


@dataclass
class Standing:
    """One kernel of an op search: its key, its stored best for that key (``None``: no config
    passed verification) and the configs measured for it by this op search."""

    kernel: str
    key: object
    best: object = None
    measured: int = 0

    @property
    def time_ms(self) -> float:
        """The stored best's ranking time, ms (``inf`` without a best)."""
        return self.best.time_ms if self.best is not None else math.inf


@dataclass
class OpResult:
    """An op search's outcome: ``standings`` fastest first (every kernel searched);
    ``rounds``: the kernels raced in each round, with the configs given to each."""

    op: str
    dtype: str
    standings: list[Standing]
    rounds: list[dict[str, int]] = field(default_factory=list)

    @property
    def best(self) -> Standing | None:
        """The fastest kernel with a stored best, or ``None`` when none passed verification."""
        first = self.standings[0] if self.standings else None
        return first if first is not None and first.best is not None else None


def op_standings(store, keys: Mapping[str, object]) -> list[Standing]:
    """Each kernel's stored best for its key (``{kernel: TuningKey}``), fastest first (pooled
    re-timed median, else the trial's median); kernels without a best last, by name."""
    standings = [Standing(name, key, store.best(key)) for name, key in keys.items()]
    return sorted(standings, key=lambda s: (s.time_ms, s.kernel))


def tune_op(op: str, dims, dtype="float32", *, device: int = 0, options=None, db: str | None = None,
            tune_kernel: Callable | None = None, on_kernel: Callable[[int, Standing], None] | None = None,
            **fields) -> OpResult:
    """Search every catalog kernel computing ``op`` for ``dims`` and ``dtype``, sharing
    ``options.trials`` by successive halving (module doc); every trial and each kernel's best
    are stored.

    Args:
        op: an operation of :data:`autotune.kernel.ops.OPS` (``"transpose"``).
        dims: its dims (``{"rows": R, "cols": C}`` or ``(R, C)``).
        device: one CUDA ordinal.
        options: the :class:`~autotune.search.options.SearchOptions` of every kernel's search
            (``trials``: the op's whole budget; ``seed`` seeds every kernel's strategy and
            inputs; ``resume``: continue existing studies in the first round, later rounds
            always continue those of the first); ``fields``: the same as keywords.
        db: the results database's URL (``None``: ``$AUTOTUNE_DB``, else the default), given
            to every kernel's search and read for the kernels' standings.
        tune_kernel: ``tune_kernel(kernel, dims, dtype, device=, options=, db=)`` returning a
            :class:`~autotune.search.outcome.SearchResult` (default :func:`autotune.search.tune.tune`;
            tests pass one on a fake device).
        on_kernel: called with the round number (1, 2, ...) and a kernel's standing after each search.

    Returns:
        The :class:`OpResult`.

    Raises:
        InvalidInputError: unknown op, a dtype none of its kernels takes, bad dims or options,
            a study that exists in the first round without ``resume``; ``objective="time,energy"``
            (the rounds rank kernels by one number).
        GPUUnavailableError, StoreError, AutotuneError, KeyboardInterrupt: as :func:`autotune.tune`.
    """
    from autotune.kernel.arguments import check_db_arg
    from autotune.search.options import SearchOptions
    from autotune.store.opening import open_store

    check_db_arg(db)
    if fields or options is None:
        options = SearchOptions.of(options, **fields)
    if options.pareto:  # successive halving ranks kernels by one number: their fastest time
        raise InvalidInputError(f"objective {options.objective} is not allowed with an op search (--op): its "
                                "rounds rank kernels by time; search each kernel with --kernel instead")
    if tune_kernel is None:
        from autotune.search.tune import tune as tune_kernel
    dt = get_dtype(dtype)
    kernels = {k.name: k for k in op_kernels(op, dt)}
    plan = halving_plan(len(kernels), options.trials)
    racing, keys, measured, rounds = list(kernels), {}, dict.fromkeys(kernels, 0), []
    store = None
    for number, budget in enumerate(plan, 1):
        shares = split_budget(budget, racing)
        rounds.append(shares)
        for name, share in shares.items():
            mine = options.replace(trials=share, resume=options.resume or number > 1 or name in keys)
            result = tune_kernel(kernels[name], dims, dt.name, device=device, options=mine, db=db)
            keys[name] = result.key
            measured[name] += result.measured_count
            store = store or open_store(db)
            if on_kernel:
                on_kernel(number, Standing(name, result.key, store.best(result.key), measured[name]))
        ranked = [s.kernel for s in op_standings(store, {n: keys[n] for n in racing})]
        racing = ranked[:math.ceil(len(ranked) / 2)]
    standings = op_standings(store, keys)
    for s in standings:
        s.measured = measured[s.kernel]
    return OpResult(op, dt.name, standings, rounds)
