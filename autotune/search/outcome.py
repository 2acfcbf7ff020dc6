"""What a search produced: one :class:`TrialOutcome` per Optuna trial and the
:class:`SearchResult` of the run (:class:`autotune.search.tuner.Tuner` fills them)."""

from __future__ import annotations

from dataclasses import dataclass, field

from autotune.kernel.config import Config
from autotune.measure import phases
from autotune.measure.measurement import Decision, Measurement, Retiming
from autotune.store.key import TuningKey

__all__ = ["SAME_BINARY", "TrialOutcome", "SearchResult"]

SAME_BINARY = "same binary as trial"
"""How the reason of a trial begins whose config built the same cubin, launched the same way, as
an earlier trial's (e.g. a macro the kernel ignores at this dtype): measured once, its figures
recorded for both; never re-timed nor the winner apart from the config measured."""


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

    ``cubin``: the identity of the binary measured (its cubin's digest with the launch geometry:
    ``autotune.measure.pipeline.Built``), where the compile pool built it. ``same_as``: the
    number of the trial whose config has the same identity, measured before: this one was not
    measured again, its ``measurement`` is that trial's and its ``reason`` says so (``SAME_BINARY``).
    """

    number: int
    config: Config
    status: str
    measurement: Measurement | None = None
    reason: str | None = None
    phases: dict[str, float] | None = None
    cubin: str | None = None
    same_as: int | None = None


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
            config was proposed in the grid's order (``autotune.search.on_gpu.whole_space``).
        spent: milliseconds the search spent outside its trials: ``propose`` (the strategy's
            asks and tells, and reading what other processes measured).
        companions: the results of the other shapes measured alongside
            (`autotune.search.companions`), in the order given.
        same_binary: configs of the study that built the same binary, launched alike, as a
            config measured before (``SAME_BINARY``), with the value the strategy was told
            (that config's); never in ``measured``, so never re-timed nor the winner: the
            config measured stands for both.
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
    same_binary: dict[Config, object] = field(default_factory=dict)

    @property
    def measured_count(self) -> int:
        """Configs this run measured (ok or failed): one per outcome, but those of the same
        binary as a config measured before (``same_as``), which cost no measurement."""
        return sum(o.same_as is None for o in self.outcomes)

    @property
    def compile_deadline_cuts(self) -> int:
        """Configs of this run whose compile was stopped at the compile deadline (not measured;
        a later run of the study may try them again)."""
        from autotune.measure.compile import COMPILE_DEADLINE

        return sum(o.status == "timeout" and (o.reason or "").startswith(COMPILE_DEADLINE) for o in self.outcomes)

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
