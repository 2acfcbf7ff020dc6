"""Replaying a strategy in the seconds that pace a search: each config charged its recorded
compile and measurement, on the CPU (issue 47, target 5).

:mod:`autotune.interchange.replay` counts configs. A search is paced by host work, not by
configs: an nvcc run of a matmul config takes 2 CPU seconds, its measurement a few
milliseconds. This module replays the same strategies on the same recorded table
(:mod:`autotune.interchange.table`), but charges each config what its compile and its
measurement took, as recorded beside the table in a costs file (:func:`read_costs`, written by
``benchmarks/record_tables.sh`` with ``COSTS=1``), and gives each run its best-so-far against
simulated wall seconds. **It is a simulation from recorded costs, not the search run on a GPU.**

Two ways of running are simulated:

- :func:`loop_replay`, ``autotune search`` as its loop runs
  (:mod:`autotune.search.trial_loop`, :mod:`autotune.measure.pipeline`): the strategy asked
  in batches (``batch``, 16 on the GPU machine) while ``ahead`` whole batches wait behind the
  config being measured (the loop asks when at most ``ahead * batch`` configs are pending); each
  batch handed to a pool of ``workers`` compile workers in order (first in, first out, each
  build taking its config's recorded nvcc CPU seconds of wall: those seconds were measured
  with as many builds at once as cores); one GPU that measures one config at a time, the next
  one sent as the one before ends; of the configs proposed, the first whose build has ended
  when it is chosen (the kernel's default first, and the one after it, as the loop does before
  any result is in), else the first proposed, waited for. The next config is chosen as the
  previous one is sent (the loop claims it while the GPU measures), and the strategy is told
  each config after the one after it was sent. Each config's measurement costs its recorded
  ``verify_ms + time_ms``, and ``overhead_ms`` on the loop's path before the next is sent (the
  trial's row written: the ``store`` phase); each config asked costs the loop ``propose_ms``
  (ask and tell) before its build is handed to the pool.
- :func:`serial_wall`, Kernel Tuner's way: one config at a time, compiled and then measured,
  nothing overlapped (Kernel Tuner compiles in its own process, one config at a time): each
  config adds its nvcc seconds, its ``verify_ms + time_ms`` and ``overhead_ms``. This is Kernel
  Tuner 1.5's own account of simulated time (``kernel_tuner.runners.simulation``: the
  ``compile_time + verification_time + benchmark_time`` of each config the first time it is
  evaluated, added up), given the order of configs a run evaluated; the strategy's own time
  is not charged.

Not simulated, for either: the start-up (the measuring process, the database), the final
re-timing, the compile deadline, configs measured once for two with one binary, and the
measurement noise of a fresh run. The costs are one run's: a second recording would differ
by its nvcc's and its GPU's noise.

A config of the table without a recorded cost (a field empty, or the config absent from the
costs file) is charged the median of that field over the configs that have it; a failed
config (no median in the table) without a verify or time figure is charged none (it failed
before the GPU timed it). :attr:`Charges.filled` counts the configs charged a median.
"""

from __future__ import annotations

import csv
import heapq
import io
import math
import os
import re
import statistics
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from autotune.base.files import read_text
from autotune.errors import InvalidInputError
from autotune.interchange.replay import default_factory
from autotune.interchange.score import best_so_far, slowest
from autotune.interchange.table import params_of, table_configs

__all__ = ["COLUMNS", "OVERHEAD_MS", "ConfigCost", "Costs", "Charges", "WallReplay", "read_costs", "charges",
           "loop_replay", "serial_wall", "seconds_to"]

COLUMNS = ("config", "nvcc_cpu_s", "verify_ms", "time_ms", "median_ms")
"""The costs file's header (after its ``#`` comments, one naming the compile workers)."""

OVERHEAD_MS = 5.0
"""Default fixed ms a config costs on the GPU's path besides its measurement: the trial's row
written before the next config is sent (the ``store`` phase, 4-5 ms a config in
``benchmarks/search_floor.sh`` on an H200 with 16 cores, 2026-11-28,
``benchmarks/results/2026-11-28_NVIDIA_H200_search_floor_ready_first.txt``)."""


@dataclass(frozen=True)
class ConfigCost:
    """One config's recorded costs (``None``: not recorded): the CPU seconds of its nvcc run,
    and its trial's verify and time phases, ms."""

    nvcc_s: float | None
    verify_ms: float | None
    time_ms: float | None


@dataclass(frozen=True)
class Costs:
    """A costs file: ``workers``, the compile workers it was recorded with (``None``: no
    comment names them), and each config key's :class:`ConfigCost`."""

    workers: int | None
    configs: dict[str, ConfigCost]


def read_costs(path: str | os.PathLike[str]) -> Costs:
    """Read a costs file: lines of comments (``#``), one of them ``# N compile workers; ...``,
    then a CSV of :data:`COLUMNS` (an empty field: not recorded).

    Raises:
        InvalidInputError: a missing file, another header, a bad key, a figure that is not a
            number >= 0, a config twice (the message names the line).
    """
    text = read_text(path, "costs file")
    workers, offset, rest = None, 0, text
    while rest.startswith("#"):  # comments: what recorded it, and the compile workers
        comment, _, rest = rest.partition("\n")
        found = re.match(r"#\s*(\d+) compile workers", comment)
        if found and int(found[1]) > 0:
            workers = int(found[1])
        offset += 1
    try:
        rows = list(csv.reader(io.StringIO(rest, newline="")))
    except csv.Error as exc:
        raise InvalidInputError(f"{path} is not a costs file: {exc}") from None
    if not rows or tuple(c.strip() for c in rows[0]) != COLUMNS:
        raise InvalidInputError(f"{path} is not a costs file: its header must be '{','.join(COLUMNS)}'")
    configs: dict[str, ConfigCost] = {}
    for line, row in enumerate(rows[1:], start=2 + offset):
        if not row:
            continue
        if len(row) != len(COLUMNS):
            raise InvalidInputError(f"{path}:{line} has {len(row)} fields; a row is {','.join(COLUMNS)}")
        key = row[0]
        params_of(key)
        figures = []
        for name, field in zip(COLUMNS[1:4], row[1:4]):
            field = field.strip()
            try:
                value = float(field) if field else None
            except ValueError:
                value = math.nan
            if value is not None and not (math.isfinite(value) and value >= 0):
                raise InvalidInputError(f"{path}:{line}: {name} is {field!r}; it must be a number >= 0 or empty "
                                        "(not recorded)")
            figures.append(value)
        if key in configs:
            raise InvalidInputError(f"{path}:{line}: config {key} appears twice")
        configs[key] = ConfigCost(*figures)
    return Costs(workers, configs)


@dataclass(frozen=True)
class Charges:
    """What each config of a table is charged, seconds: ``compile_s`` (its nvcc run, one
    worker's wall) and ``gpu_s`` (its verify and time phases); ``filled``: the configs charged a
    median for a figure not recorded (module doc)."""

    compile_s: dict[str, float]
    gpu_s: dict[str, float]
    filled: int


def charges(table: Mapping[str, float | None], costs: Costs) -> Charges:
    """The :class:`Charges` of every config of ``table`` (config key -> median ms, ``None``:
    failed) from ``costs``.

    Raises:
        InvalidInputError: no config of ``costs`` has an nvcc figure, or none a verify or time
            figure (nothing to charge the others).
    """
    def median(values, what):
        got = [v for v in values if v is not None]
        if not got:
            raise InvalidInputError(f"no config of the costs file has a {what} figure")
        return statistics.median(got)

    recorded = costs.configs.values()
    nvcc = median((c.nvcc_s for c in recorded), "nvcc_cpu_s")
    verify = median((c.verify_ms for c in recorded), "verify_ms")
    timed = median((c.time_ms for c in recorded), "time_ms")
    compile_s, gpu_s, filled = {}, {}, 0
    nothing = ConfigCost(None, None, None)
    for key, ms in table.items():
        c = costs.configs.get(key, nothing)
        failed = ms is None
        missing = c.nvcc_s is None or (not failed and (c.verify_ms is None or c.time_ms is None))
        filled += missing
        compile_s[key] = nvcc if c.nvcc_s is None else c.nvcc_s
        v = c.verify_ms if c.verify_ms is not None else 0.0 if failed else verify
        t = c.time_ms if c.time_ms is not None else 0.0 if failed else timed
        gpu_s[key] = (v + t) / 1e3
    return Charges(compile_s, gpu_s, filled)


@dataclass(frozen=True)
class WallReplay:
    """One replayed run in simulated wall seconds.

    Attributes:
        measured: the config keys measured, in order (at most the budget).
        times: their median ms from the table (``None``: failed).
        curve: best-so-far ms after each (:func:`autotune.interchange.score.best_so_far`).
        seconds: the simulated wall, s, at which each one's result was known (nondecreasing).
        unrecorded: configs proposed that the table lacks (told failed, not counted, not charged).
        gpu_s: the seconds the GPU measured, of the last of ``seconds``.
    """

    measured: tuple[str, ...]
    times: tuple[float | None, ...]
    curve: tuple[float, ...]
    seconds: tuple[float, ...]
    unrecorded: int = 0
    gpu_s: float = 0.0


def seconds_to(run: WallReplay, target: float) -> float | None:
    """The simulated seconds at which ``run``'s best reached ``target`` ms or less (``None``: never)."""
    return next((s for s, v in zip(run.seconds, run.curve) if v <= target), None)


def serial_wall(keys: Sequence[str], table: Mapping[str, float | None], charged: Charges, *,
                overhead_ms: float = OVERHEAD_MS) -> WallReplay:
    """Kernel Tuner's way (module doc): ``keys`` (configs of ``table``, in the order a run
    evaluated them, each once) compiled and measured one at a time, nothing overlapped.

    Raises:
        InvalidInputError: a key is not in ``table``.
        ValueError: ``table`` has no valid config.
    """
    missing = [k for k in keys if k not in table]
    if missing:
        raise InvalidInputError(f"config {missing[0]} is not in the table ({len(missing)} such)")
    worst = slowest(table.values())
    wall, seconds, gpu = 0.0, [], 0.0
    for key in keys:
        wall += charged.compile_s[key] + charged.gpu_s[key] + overhead_ms / 1e3
        gpu += charged.gpu_s[key]
        seconds.append(wall)
    times = tuple(table[k] for k in keys)
    return WallReplay(tuple(keys), times, tuple(best_so_far(times, worst)), tuple(seconds), 0, gpu)


def loop_replay(strategy: str, space, table: Mapping[str, float | None], charged: Charges, budget: int, *,
                workers: int, seed: int = 0, batch: int = 16, ahead: int = 1, first: Sequence = (),
                history: Sequence = (), overhead_ms: float = OVERHEAD_MS, propose_ms: float = 0.0,
                ready_first: bool = True, factory: Callable | None = None) -> WallReplay:
    """``autotune search`` as its loop runs (module doc), simulated: ``strategy`` (a registry
    name, built by ``factory(name, space, seed=, history=)``, default
    :func:`autotune.search.strategies.make_strategy`) on ``space`` against ``table``, each
    config charged as ``charged`` says, until ``budget`` configs are measured or the strategy
    has nothing left to ask.

    Args:
        workers: compile workers (the costs file's; the CPU count on the GPU machine).
        batch: configs asked at once (the loop's ``batch_size``, 16 there).
        ahead: whole batches pending behind the config measured before the next ask (the loop: 1).
        first: configs queued before the strategy's own (``enqueue(first=True)``), as the loop
            queues the kernel's default.
        overhead_ms: fixed ms per config on the GPU's path (default :data:`OVERHEAD_MS`).
        propose_ms: ms of the loop per config asked (ask and tell), before the batch is handed
            to the compile pool.
        ready_first: measure the first proposed config whose build has ended (the loop);
            ``False``: always the first proposed.

    Raises:
        InvalidInputError: a key of the table is not a valid config of the space.
        ValueError: ``budget``, ``batch`` or ``workers`` < 1, ``ahead`` < 0, or the table has
            no valid config.
    """
    if budget < 1 or batch < 1 or workers < 1 or ahead < 0:
        raise ValueError(f"budget {budget}, batch {batch} and workers {workers} must be >= 1, ahead {ahead} >= 0")
    configs = {config: key for key, config in table_configs(table, space).items()}
    worst = slowest(table.values())
    s = (factory or default_factory)(strategy, space, seed=seed, history=tuple(history))
    if first:
        s.enqueue([c for c in first if c in configs], first=True)
    pool = [0.0] * workers  # when each compile worker is next free (a heap)
    built: dict = {}  # config -> when its build ends
    pending: deque = deque()
    loop = 0.0  # the loop's clock
    measured: list[str] = []
    seconds: list[float] = []
    sent = None  # (config, when the GPU ends it)
    gpu = 0.0
    unrecorded = 0
    exhausted = False

    def settle(config, ends: float) -> None:
        nonlocal loop
        loop = max(loop, ends) + overhead_ms / 1e3
        measured.append(configs[config])
        seconds.append(loop)

    while True:
        busy = 1 if sent is not None else 0
        room = budget - len(measured) - busy - len(pending)
        if len(measured) + busy >= budget:
            room = 0
        while not exhausted and room > 0 and len(pending) <= ahead * batch:
            got = s.ask(min(batch, room))
            if not got:
                exhausted = True
                break
            loop += propose_ms * len(got) / 1e3
            for config in got:
                if config not in configs:  # the table covers part of the space
                    unrecorded += 1
                    s.tell(config, None)
                    continue
                start = heapq.heappop(pool)
                built[config] = max(start, loop) + charged.compile_s[configs[config]]
                heapq.heappush(pool, built[config])
                pending.append(config)
                room -= 1
        if not pending or len(measured) + busy >= budget:
            if sent is not None:
                settle(*sent)
                s.tell(sent[0], table[configs[sent[0]]])
            break
        index = 0
        if ready_first and measured:  # the loop's outcomes: the first result is in
            index = next((i for i, c in enumerate(pending) if built[c] <= loop), 0)
        config = pending[index]
        del pending[index]
        loop = max(loop, built[config])  # its build waited for
        before, sent = sent, None
        if before is not None:
            settle(*before)
        sent = (config, loop + charged.gpu_s[configs[config]])
        gpu += charged.gpu_s[configs[config]]
        if before is not None:
            s.tell(before[0], table[configs[before[0]]])
    times = tuple(table[k] for k in measured)
    return WallReplay(tuple(measured), times, tuple(best_so_far(times, worst)), tuple(seconds), unrecorded, gpu)
