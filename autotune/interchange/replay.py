"""Replaying a search strategy against a recorded table, on the CPU: no GPU, no database.

The strategy (:mod:`autotune.search.strategies`: ``make_strategy(name, space, seed=, history=)``
with ``ask(k)`` / ``tell(config, ms)``) proposes configs; each is "measured" by looking up its
median time in the table (:mod:`autotune.interchange.table`), as if the GPU had measured it. This is
the surrogate method of Kernel Tuner's simulation mode (Willemsen et al., "Tuning the Tuner",
arXiv:2509.26300): the strategy sees the same values, in the same order of asks, as on the
GPU, minus the measurement noise of a fresh run.

Counting: every config proposed and found in the table counts as one config measured, failed
ones (``None``) included, as a failed compile or launch costs a GPU search its time too. A
config proposed that the table lacks (the table covers part of the space) is told as failed to
the strategy and not counted; :attr:`Replay.unrecorded` says how many there were.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from autotune.interchange.score import best_so_far, slowest
from autotune.interchange.table import table_configs

__all__ = ["Replay", "default_factory", "replay", "replay_seeds"]


@dataclass(frozen=True)
class Replay:
    """One replayed run.

    Attributes:
        measured: the config keys measured, in order (at most the budget).
        times: their median ms from the table (``None``: failed), in the same order.
        curve: best-so-far ms after each config measured (:func:`autotune.interchange.score.best_so_far`,
            the table's slowest valid time before any valid one), same length.
        unrecorded: configs the strategy proposed that the table lacks (told failed, not counted).
    """

    measured: tuple[str, ...]
    times: tuple[float | None, ...]
    curve: tuple[float, ...]
    unrecorded: int = 0


def default_factory(name: str, space, *, seed: int, history: Sequence):
    """The strategy ``name`` on ``space`` as the search loop makes it
    (:func:`autotune.search.strategies.make_strategy`): a replay's default ``factory``."""
    from autotune.search.strategies import make_strategy  # the search loop's registry

    return make_strategy(name, space, seed=seed, history=history)


def replay(strategy: str, space, table: Mapping[str, float | None], budget: int, *, seed: int = 0,
           batch: int = 1, history: Sequence = (), first: Sequence = (), factory: Callable | None = None,
           ahead: int = 0, pipelined: bool = False) -> Replay:
    """Run ``strategy`` (a registry name) on ``space`` (a
    :class:`~autotune.kernel.space.SearchSpace`) against ``table`` (config key -> median ms or
    ``None``) until ``budget`` configs are measured or the strategy has nothing left to ask.

    Args:
        batch: configs asked at once (``ask(batch)``), all told before the next ask.
        history: what is known before the run, as the registry takes it: ``(Config, ms | None)``
            of this problem, ``(Config, ms | None, distance, shape)`` of other shapes (a transfer
            strategy's prior); not counted as measured.
        first: configs measured before the strategy is asked (counted, and told to it), as
            ``autotune search`` measures the kernel's default first; those the table lacks are skipped.
        factory: ``factory(name, space, seed=, history=)`` building the strategy; default
            :func:`autotune.search.strategies.make_strategy`.
        ahead: whole batches asked beyond the one being measured, as the search loop's compile
            pool works ahead (:class:`autotune.search.tuner.Tuner` asks the next batch while the
            GPU measures one: ``ahead=1``); 0: each batch is asked once the last is told.
        pipelined: instead of whole batches, ask for the shortfall after each config told, so
            that ``(ahead + 1) * batch`` configs stay in flight and each new one is asked with
            every config measured so far told.

    Raises:
        InvalidInputError: a key of the table is not a valid config of the space.
        ValueError: ``budget`` or ``batch`` < 1, or the table has no valid config.
    """
    if budget < 1 or batch < 1:
        raise ValueError(f"budget {budget} and batch {batch} must both be >= 1")
    times = {config.key: table[key] for key, config in table_configs(table, space).items()}
    worst = slowest(times.values())
    s = (factory or default_factory)(strategy, space, seed=seed, history=tuple(history))
    measured: list[str] = []
    unrecorded = 0
    for config in first:
        if config.key in times and config.key not in measured and len(measured) < budget:
            measured.append(config.key)
            s.tell(config, times[config.key])

    def measure(config) -> None:
        nonlocal unrecorded
        if config.key not in times:
            unrecorded += 1
            s.tell(config, None)
            return
        if len(measured) < budget:  # a strategy that returns more than asked is cut here
            measured.append(config.key)
        s.tell(config, times[config.key])

    cap = (ahead + 1) * batch  # configs asked and not yet told, at most
    in_flight: list = []
    exhausted = False
    while len(measured) < budget:
        while not exhausted and (room := budget - len(measured) - len(in_flight)) > 0:
            if pipelined:
                k = min(cap - len(in_flight), room)
            else:
                k = min(batch, room) if len(in_flight) <= cap - batch else 0
            if k <= 0:
                break
            got = s.ask(k)
            exhausted = not got
            in_flight += got
        if not in_flight:
            break
        measure(in_flight.pop(0))
    ms = tuple(times[k] for k in measured)
    return Replay(tuple(measured), ms, tuple(best_so_far(ms, worst)), unrecorded)


def replay_seeds(strategy: str, space, table: Mapping[str, float | None], budget: int, seeds: Sequence[int],
                 **options) -> list[Replay]:
    """:func:`replay` once per seed (``options`` as there)."""
    return [replay(strategy, space, table, budget, seed=s, **options) for s in seeds]
