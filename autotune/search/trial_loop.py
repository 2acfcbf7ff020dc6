"""The trial loop of one search (:class:`TrialLoop`, the loop half of
:class:`autotune.search.tuner.Tuner`): each config chosen (the study read for what other
processes measured, the strategy asked a batch ahead), claimed as a trial, measured, stored and
told to the strategy, until ``trials`` configs are measured, the timeout, or the end of the space.
Of the configs proposed, the first whose build has ended is measured next: a slow nvcc run
holds up none proposed after it.

Where the measurement can be sent ahead (``Instruments.send``: the measuring child), the next
config is chosen, compiled and claimed while the GPU measures the one before; that one's trial
is stored (and measured at the companion shapes) before the next is sent, so the GPU waits only
for the answer's bookkeeping (autotune's row and Optuna's tell), and a search killed at any
moment loses at most the trial it was measuring. A config claimed but not yet sent is failed
with the one in flight when a signal or a lost database stops the search.
"""

from __future__ import annotations

import time
from collections import deque

from autotune.base import signals as stop
from autotune.kernel.config import Config
from autotune.search import objective
from autotune.search.outcome import TrialOutcome
from autotune.search.study import StoredStudy
from autotune.search.trials import Claim, claim, give_up, settle

__all__ = ["TrialLoop"]


class TrialLoop:
    """The loop of :class:`~autotune.search.tuner.Tuner` (module doc), on the tuner's state:
    its ``result``, ``options``, ``tools``, ``strategy``, ``store``, ``seen``, ``budget``,
    ``others`` (companion shapes), ``flight`` and ``on_trial``."""

    def _loop(self, study: StoredStudy) -> None:
        """Measure batches until ``trials`` configs are measured, the timeout, or the end of the space.

        Where the measurement can be sent ahead (``Instruments.send``: the measuring child), the
        next config is chosen, compiled and claimed while the GPU measures the one before, and
        that one's trial is stored (and measured at the companion shapes) before the next is
        sent: the GPU waits only for the answer's bookkeeping (the trial's write and Optuna's
        tell), not for the study's read, the strategy or the claim. Otherwise each config is
        chosen, claimed, measured and stored in turn."""
        result = self.result
        deadline = None if self.options.timeout is None else time.monotonic() + self.options.timeout
        pending: deque[Config] = deque(self._early[1] if self._early else ())
        deferred: set[Config] = set()  # in flight in another process's trial when their turn came
        ahead = self.tools.send is not None
        sent = None  # (claim, measuring): the config the GPU measures now (ahead only)
        claimed = None  # a claim not yet measured nor stored
        try:
            while True:
                step = self._next(study, pending, deferred, deadline, 1 if sent is not None else 0)
                claimed = step if isinstance(step, Claim) else None
                done = None
                if sent is not None:  # its answer, stored before the next config is sent
                    (first, measuring), sent = sent, None
                    done = settle(study, first, lambda c, m=measuring: m.result(), self.store, result.search_id,
                                  self.flight, built=first.built)
                    self._remember(done)  # the next config may be its twin (one binary): measured once
                    self._companions(done)
                if claimed is None:  # stop (step: the reason), or wait for the others ("wait")
                    if done is not None:
                        self._after(done)
                    if step == "wait":
                        continue
                    result.stopped = step
                    return
                built = claimed.built
                identity = getattr(built, "identity", None)  # looked up now: the trial just stored may be its twin
                same = self.binaries.get(identity) if identity else None
                if ahead and same is None and getattr(built, "failure", None) is None:
                    sent = (claimed, self.tools.send(claimed.config))
                    claimed = None
                    self.flight.clear()
                    self.flight.update(number=sent[0].number, config=sent[0].config, measuring=True)
                    if done is not None:
                        self._after(done)
                    continue
                if done is not None:
                    self._after(done)
                now, claimed = claimed, None  # settle fails its trial itself on an error
                outcome = settle(study, now, self.tools.measure, self.store, result.search_id, self.flight,
                                 built=built, same_as=same)
                self._companions(outcome)
                self._after(outcome)
        except BaseException as exc:
            if sent is not None:  # measuring: given up, its trial failed
                sent[1].cancel()
                give_up(study, sent[0], exc)
            if claimed is not None:
                give_up(study, claimed, exc)
            raise

    def _next(self, study: StoredStudy, pending: deque, deferred: set[Config], deadline: float | None,
              measuring: int):
        """The next config to measure, claimed (a :class:`~autotune.search.trials.Claim`, with
        what its build made of it), or why there is none: ``"trials"``,
        ``"timeout"``, ``"exhausted"``, or ``"wait"`` (only configs in flight elsewhere are left,
        and ``measuring`` configs of this search are still measured: read their answers first)."""
        result, options = self.result, self.options
        while True:
            if result.measured_count + measuring >= options.trials or (self.budget is not None
                                                                        and self.budget.left() <= 0):
                return "trials"
            if deadline is not None and time.monotonic() >= deadline:
                return "timeout"
            stop.check()
            started = time.perf_counter()
            busy = self._refresh(study)
            self._top_up(pending, measuring)
            self._spent(started)
            if not pending:
                if deferred and measuring:
                    return "wait"
                if not (deferred and self._await(study, deferred, pending, deadline)):
                    return "exhausted"
            config = self._pick(pending)
            if config in self.seen:  # another process measured it
                continue
            if config in busy:  # another process measures it now: measured there, or here if that one dies
                deferred.add(config)
                continue
            if self.budget is not None and not self.budget.take():  # the other workers took the rest
                return "trials"
            self._check_dead(study)
            claimed = claim(study, config, self._built(config))
            if claimed is None:  # another process claimed it an instant before (StoredStudy.start)
                deferred.add(config)
                if self.budget is not None:
                    self.budget.give_back()
                continue
            return claimed

    def _pick(self, pending: deque) -> Config:
        """Take the next config to measure from ``pending``: the first whose build has ended
        (``Instruments.ready``), so that a slow build holds up none of the configs proposed
        after it, while the cores build on; the first one where none has ended, where the
        builds are not known, and for the search's first config (the default, measured first).
        A strategy is told each config as it is measured, in any order."""
        ready = self.tools.ready
        if ready is not None and self.result.outcomes:
            for i, config in enumerate(pending):
                if ready(config):
                    del pending[i]
                    return config
        return pending.popleft()

    def _companions(self, outcome: TrialOutcome) -> None:
        """One compile, a trial at every other shape: an ``ok`` of a new binary is measured at
        each companion shape (before the next config is sent: one measuring child)."""
        if outcome.status == "ok" and outcome.same_as is None:
            for other in self.others:
                other.trial(outcome.config, self.flight)

    def _after(self, outcome: TrialOutcome) -> None:
        """A trial stored (and measured at the companion shapes): kept, told to the strategy,
        passed to ``on_trial``."""
        result = self.result
        config = outcome.config
        self.seen[config] = outcome
        self._remember(outcome)
        result.outcomes.append(outcome)
        score = objective.told(outcome.measurement, self.options.objective) if outcome.status == "ok" else None
        if outcome.same_as is not None:  # not measured: told the value, never re-timed nor the winner
            result.same_binary[config] = score
            if self.budget is not None:
                self.budget.give_back()
        elif isinstance(score, tuple):  # a Pareto search: (ms, J); the re-timing ranks by the time
            result.scores[config] = score
            result.measured[config] = score[0]
        elif score is not None:
            result.measured[config] = score
        started = time.perf_counter()
        self.strategy.tell(config, score)
        self._spent(started)
        if self.on_trial is not None:
            self.on_trial(outcome, result)

    def _await(self, study: StoredStudy, deferred: set[Config], pending: deque, deadline: float | None) -> bool:
        """Once nothing else is left: wait for the configs ``deferred`` (each in flight in
        another process's trial when its turn came) until each is measured there, or its trial
        is failed (that process died: its heartbeat stopped for ``GRACE_S``, or it never beat),
        then queue those for this search. A config is so never lost with a process that died
        measuring it, nor measured twice. Returns whether any was queued.

        Raises:
            KeyboardInterrupt: on SIGINT or SIGTERM while waiting.
        """
        from autotune.store.study_storage import HEARTBEAT_S

        while deferred:
            study.fail_stale()
            self._checked = time.monotonic()
            busy = self._refresh(study)
            deferred.difference_update(self.seen)
            free = [c for c in deferred if c not in busy]
            if free:
                deferred.difference_update(free)
                pending.extend(free)
                return True
            if not deferred or (deadline is not None and time.monotonic() >= deadline):
                return False
            stop.sleep(HEARTBEAT_S)
        return False

    def _spent(self, since: float) -> None:
        """Add the time since ``since`` (``time.perf_counter``) to the search's ``propose`` total."""
        spent = self.result.spent
        spent["propose"] = spent.get("propose", 0.0) + (time.perf_counter() - since) * 1e3

    def _top_up(self, pending: deque, measuring: int = 0) -> None:
        """Ask the strategy for batches until a whole batch waits behind the one measured now
        (at most the configs still to measure, less the ``measuring`` ones), and hand each to
        ``prefetch``."""
        room = self.options.trials - self.result.measured_count - measuring - len(pending)
        if self.budget is not None:
            room = min(room, self.budget.left() - len(pending))
        while len(pending) <= self.batch and room > 0:
            batch = self.strategy.ask(min(self.batch, room))
            if not batch:
                return
            pending.extend(batch)
            room -= len(batch)
            if self.tools.prefetch is not None:
                self.tools.prefetch(batch)

    def _refresh(self, study: StoredStudy) -> set[Config]:
        """Tell the strategy what other processes on the study (other GPUs' workers, searches
        on other hosts, a second ``resume`` of the same search) measured since the last read;
        returns the configs in flight in their trials (one read: :meth:`StoredStudy.refresh`;
        a RUNNING trial of a dead process counts until it is failed by heartbeat).
        Optuna's cached storage reads only the trials not finished at the last read."""
        measured, busy = study.refresh(self.result)
        for config, outcome in measured.items():
            if config not in self.seen:
                self.seen[config] = outcome
                self._remember(outcome)
                self.strategy.tell(config, self._told(config))
        return busy

    def _check_dead(self, study: StoredStudy) -> None:
        """Fail the trials of dead processes (heartbeat stopped, or none ever) once a heartbeat
        interval: such a trial is failed GRACE_S after its last beat, so checking every
        HEARTBEAT_S (not every trial: a read and a write lock each time) delays that by at
        most HEARTBEAT_S."""
        from autotune.store.study_storage import HEARTBEAT_S

        if time.monotonic() - self._checked >= HEARTBEAT_S:
            study.fail_stale()
            self._checked = time.monotonic()
