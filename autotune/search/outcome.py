"""What a search produced: one :class:`TrialOutcome` per Optuna trial and the
:class:`SearchResult` of the run (:class:`autotune.search.tuner.Tuner` fills them)."""

from __future__ import annotations

from dataclasses import dataclass, field

from autotune.kernel.config import Config
from autotune.measure import phases
from autotune.measure.measurement import Decision, Measurement, Retiming
from autotune.store.key import TuningKey

__all__ = ["TrialOutcome", "SearchResult"]


@dataclass(frozen=True)
class TrialOutcome:
    """What happened to one config this search measured (one trial of the key's study).

    ``status`` is ``ok`` or a ``TrialFailed`` status (``autotune.errors``): a strategy proposes only valid, new
    configs, so nothing else becomes a trial (studies written before strategies also hold
    ``constraint`` and ``duplicate`` trials, which a resumed search skips).
    ``phases``: milliseconds per phase of a measured trial (``autotune.measure.phases``),
    ``store`` being the whole database write. An ``ok`` trial whose timing stopped early,
    being clearly slower than the best so far, has that note as its ``reason``
    (``autotune.measure.timing.EarlyStop``): measured and slower, never a failure.
    """

    number: int
    config: Config
    status: str
    measurement: Measurement | None = None
    reason: str | None = None
    phases: dict[str, float] | None = None


@dataclass
class SearchResult:
    """Outcome of a search (filled by ``autotune.search.tuner.Tuner``), what
    `tune` returns.

    Attributes:
        key: the tuning key searched (kernel, device, dims, dtype, toolchain).
        search_id: the search's row in the database (``autotune_searches``).
        stopped: why the loop ended: ``trials`` (``n_trials`` configs measured), ``timeout``,
            ``exhausted`` (every valid config measured) or ``interrupted``.
        outcomes: the trials of this run, in order.
        measured: every config measured in the study so far (this run and earlier ones)
            with its median time per launch, ms.
        scores: a Pareto search's (``time,energy``) configs measured in the study with every
            value, ``(ms, J per launch)``; empty for a single objective.
        decision: the re-timing's winner, fastest and tie group (``None``: not re-timed).
        retimings: every config of that re-timing.
        clock_warning: set when the GPU clocks moved during the search.
        reports: one ``WorkerReport`` (``autotune.search.workers``) per GPU of a search over several.
        whole_space: the strategy was not asked: the trials covered the space, so every valid
            config was measured in the grid's order (``autotune.search.on_gpu.whole_space``).
        spent: milliseconds the search spent outside its trials: ``propose`` (the strategy's
            asks and tells, and reading what other processes measured).
        companions: the results of the other shapes measured alongside
            (`autotune.search.companions`), in the order given.
    """

    key: TuningKey
    search_id: int
    stopped: str = "trials"
    outcomes: list[TrialOutcome] = field(default_factory=list)
    measured: dict[Config, float] = field(default_factory=dict)
    scores: dict[Config, tuple[float, ...]] = field(default_factory=dict)
    decision: Decision | None = None
    retimings: list[Retiming] = field(default_factory=list)
    clock_warning: str | None = None
    reports: list = field(default_factory=list)
    whole_space: bool = False
    spent: dict[str, float] = field(default_factory=dict)
    companions: list[SearchResult] = field(default_factory=list)

    @property
    def measured_count(self) -> int:
        """Configs this run measured (ok or failed): one per outcome."""
        return len(self.outcomes)

    @property
    def early_stopped(self) -> int:
        """Configs of this run measured ``ok`` whose timing stopped early (clearly slower than the best)."""
        return sum(o.status == "ok" and getattr(o.measurement, "early_stop", None) is not None
                   for o in self.outcomes)

    @property
    def phase_totals(self) -> dict[str, float]:
        """Milliseconds per phase summed over this run's trials (``autotune.measure.phases.totals``),
        then ``spent`` outside them."""
        return {**phases.totals(o.phases for o in self.outcomes), **self.spent}

    @property
    def best(self) -> tuple[Config, float] | None:
        """The fastest measured config of the study and its median ms, or ``None``."""
        return min(self.measured.items(), key=lambda kv: (kv[1], kv[0]), default=None)

    def top(self, n: int = 10) -> list[tuple[Config, float]]:
        """The ``n`` fastest measured configs of the study, fastest first (ties: config order)."""
        return sorted(self.measured.items(), key=lambda kv: (kv[1], kv[0]))[:n]
