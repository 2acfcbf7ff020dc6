"""What the first round of a workload's tuning leaves of its budget, spent in further rounds
(autotune/workload/schedule.py, issue 47): on one GPU and on two, every budget counted in fake
seconds (each fake job says how many it took: nothing here depends on the machine's speed),
and with the fake GPU benchmark (tests/fakes.py ``FakeAnyBench``): a tuning whose every space
is measured whole stops early, one whose first round ended early resumes its searches, and
one stopped in a further round resumes without losing or counting twice what it measured."""

from __future__ import annotations

import heapq
import json
import os
import subprocess
import sys
from dataclasses import fields, replace
from pathlib import Path

import pytest

from autotune.search.options import SearchOptions
from autotune.store.workload_records import ProblemResult
from autotune.workload.job import JobResult
from autotune.workload.schedule import MIN_ROUND_S, Scheduler, handed_out

from workload_fixtures import fake_gpu, record_app

SEEDED = SearchOptions(seed=0, trials=100_000)
CONFIG_S = 0.5
"""Fake seconds of one config: what a search takes past its deadline (its last config)."""


def _scheduler(monkeypatch, device_info, db_url, budget_s: float, calls=(30, 10, 5)) -> Scheduler:
    from autotune.workload.plan import make_plan
    from autotune.workload.tune import _result_of

    record_app(monkeypatch, device_info, db_url, calls=calls)
    rows = make_plan("app", budget_s=budget_s, db=db_url).rows
    return Scheduler(rows, {r.recorded.ident: _result_of(r) for r in rows}, budget_s, SEEDED, db_url)


def _fake_job(job, ordinal: int, early: float = 0.4, whole=()) -> JobResult:
    """A job in fake seconds: the first round ends early (``early`` of its share: its search
    converged); a further round takes its whole share and one config past it. 10 trials a job;
    problems of ``whole`` measure their space whole."""
    took = job.budget_s * early if job.round == 1 else job.budget_s + CONFIG_S
    row = {f.name: getattr(job.result, f.name) for f in fields(ProblemResult)}
    return JobResult(**{**row, "status": "tuned", "gpu_ordinal": ordinal, "budget_s": job.granted_s,
                        "spent_s": job.result.spent_s + took, "trials": job.result.trials + 10,
                        "strategy": job.strategy, "default_ms": 2.0, "tuned_ms": 1.0},
                     whole=job.result.label in whole)


def _spent(scheduler: Scheduler) -> float:
    return sum(r.spent_s for r in scheduler.results.values())


def test_the_problems_a_small_budget_cannot_search_are_paid_for_out_of_it(monkeypatch, device_info, db_url):
    """A budget that searches only a few of the problems still measures the others (default
    against stored config), and their seconds come out of it: before, the searches' shares took
    the whole budget and each measured-only problem passed it (a 90 s tuning of 21 problems spent
    111 s on an H200)."""
    from autotune.workload.schedule import MEASURE_ONLY_S

    measure_s = 1.5  # what a measured-only job takes here: the first is reserved at MEASURE_ONLY_S, then this
    s = _scheduler(monkeypatch, device_info, db_url, budget_s=20.0)
    n, searched, measured = len(s.todo), 0, 0
    while (job := s.next()) is not None:
        if job.budget_s > 0:
            result = replace(_fake_job(job, 0, early=1.0), spent_s=job.result.spent_s + job.budget_s + CONFIG_S)
            searched += 1
        else:
            result = replace(_fake_job(job, 0), spent_s=job.result.spent_s + measure_s)
            measured += 1
        s.done(job, result)
    assert n >= 3 and searched >= 1 and measured >= 2  # the premise: most problems are only measured
    assert s.measure_only_s() == measure_s < MEASURE_ONLY_S
    assert _spent(s) <= s.budget_s + searched * CONFIG_S  # each search past its share by its last config, no more


def test_what_the_first_round_leaves_is_spent_by_further_rounds_on_one_gpu(monkeypatch, device_info, db_url):
    s = _scheduler(monkeypatch, device_info, db_url, budget_s=100.0)
    first, jobs = 0.0, []
    while (job := s.next()) is not None:
        assert job.budget_s <= s.budget_s - _spent(s) + 1e-9  # never handed more than is left
        result = _fake_job(job, 0)
        stored = handed_out(job, 0)  # the row a killed tuning leaves: its earlier rounds kept
        assert (stored.status, stored.trials, stored.spent_s) == ("running", job.result.trials, job.result.spent_s)
        assert stored.budget_s == pytest.approx(job.granted_s)
        first += (result.spent_s - job.result.spent_s) if job.round == 1 else 0.0
        jobs.append(job)
        s.done(job, result)
    total = _spent(s)
    assert s.budget_s - first > 25  # the first round alone left a quarter of the budget and more
    assert s.budget_s - MIN_ROUND_S <= total <= s.budget_s + CONFIG_S  # spent, exceeded by one config at most
    further = [j for j in jobs if j.round > 1]
    assert further and [r.round for r in s.rounds] == [j.round for j in further]
    assert sum(r.spent_s for r in s.rounds) == pytest.approx(total - first)
    assert sum(r.trials for r in s.rounds) == 10 * len(further)
    for r in s.results.values():  # each row: what every round gave it and took
        mine = [j for j in jobs if j.result.label == r.label]
        assert r.budget_s == pytest.approx(sum(j.budget_s for j in mine)) and r.trials == 10 * len(mine)
    # the first further round goes where the expected gain per second is largest: here the
    # problem with the largest expected saving, every first round having ended at 0.4 of its share
    assert further[0].result.label == max(s.rows.values(), key=lambda row: row.saving_ms).label


def test_two_gpus_spend_the_budget_each_on_its_own_problem(monkeypatch, device_info, db_url):
    """Two fake GPUs, each job ending at its fake time: the GPU that is free first takes the next."""
    s = _scheduler(monkeypatch, device_info, db_url, budget_s=200.0)
    clock, ends, seq = 0.0, [], 0
    for ordinal in (0, 1):
        job = s.next()
        heapq.heappush(ends, (_fake_job(job, ordinal).spent_s - job.result.spent_s, seq, ordinal, job))
        seq += 1
    busy = 0
    while ends:
        clock, _, ordinal, job = heapq.heappop(ends)
        s.done(job, _fake_job(job, ordinal))
        flying = [j for *_, j in ends]
        assert all(j.result.label != job.result.label for j in flying)
        nxt = s.next()
        if nxt is None:
            continue
        assert nxt.result.label not in {j.result.label for j in flying}  # one problem on one GPU at a time
        assert _spent(s) + sum(j.budget_s for j in flying) + nxt.budget_s <= s.budget_s + 2 * CONFIG_S
        busy += len(flying) == 1 and nxt.round > 1  # both GPUs on further rounds
        took = _fake_job(nxt, ordinal).spent_s - nxt.result.spent_s
        heapq.heappush(ends, (clock + took, seq, ordinal, nxt))
        seq += 1
    assert s.budget_s - MIN_ROUND_S <= _spent(s) <= s.budget_s + 2 * CONFIG_S  # one config past it per GPU
    assert busy and len({r.label for r in s.rounds}) >= 2  # both GPUs at once on further rounds, of two problems


def test_no_further_round_where_every_space_was_measured_whole_or_the_trial_cap_reached(monkeypatch, device_info,
                                                                                          db_url):
    s = _scheduler(monkeypatch, device_info, db_url, budget_s=300.0)
    labels = [row.label for row in s.rows.values()]
    while (job := s.next()) is not None:
        s.done(job, _fake_job(job, 0, whole=labels))
    assert not s.rounds and _spent(s) < s.budget_s - 50  # it stopped early: nothing left to measure

    s = _scheduler(monkeypatch, device_info, db_url.replace("autotune.db", "cap.db"), budget_s=300.0)
    s.options = s.options.replace(trials=10)  # --max-trials 10: each first round measures them
    while (job := s.next()) is not None:
        s.done(job, _fake_job(job, 0))
    assert not s.rounds


def test_a_tuning_spends_its_leftover_in_further_rounds_and_stores_them(monkeypatch, device_info, db_url):
    """tune_workload on one fake GPU whose jobs take fake seconds: the rows stored are every
    round's, the outcome and the CLI's report say what the further rounds spent."""
    from autotune.store.opening import open_reader
    from autotune.store.workloads import latest_tuning
    from autotune.workload.tune import tune_workload

    record_app(monkeypatch, device_info, db_url)
    fake_gpu(monkeypatch, device_info)
    ran = []

    def fake(job, ordinal, *rest, **kw):
        ran.append(job)
        return _fake_job(job, ordinal)

    monkeypatch.setattr("autotune.workload.tune.run_job", fake)
    events = []
    outcome = tune_workload("app", budget_s=120, db=db_url, options=SEEDED,
                            on_progress=lambda p: events.append((p.event, p.round)))
    spent = sum(r.spent_s for r in outcome.tuning.results)
    assert 120 - MIN_ROUND_S <= spent <= 120 + CONFIG_S
    assert outcome.rounds and len(outcome.rounds) == sum(j.round > 1 for j in ran)
    assert ("start", 2) in events and ("done", 2) in events
    reader = open_reader(db_url)
    stored = latest_tuning(reader, "app")
    reader.close()
    assert stored.status == "finished" and sum(r.spent_s for r in stored.results) == pytest.approx(spent)
    assert sum(r.budget_s for r in stored.results) == pytest.approx(sum(j.budget_s for j in ran))


def test_the_report_says_what_the_further_rounds_spent(monkeypatch, device_info, db_url, capsys):
    from autotune.cli.output import Format
    from autotune.cli.workloads import print_outcome
    from autotune.workload.tune import tune_workload

    record_app(monkeypatch, device_info, db_url)
    fake_gpu(monkeypatch, device_info)
    monkeypatch.setattr("autotune.workload.tune.run_job", lambda job, ordinal, *a, **k: _fake_job(job, ordinal))
    outcome = tune_workload("app", budget_s=120, db=db_url, options=SEEDED)
    capsys.readouterr()
    print_outcome(outcome, Format.json, False)
    doc = json.loads(capsys.readouterr().out)
    assert doc["further_rounds"] == len(outcome.rounds) > 0
    assert doc["further_rounds_s"] == pytest.approx(sum(r.spent_s for r in outcome.rounds))
    print_outcome(outcome, Format.table, False)
    text = capsys.readouterr().out
    assert f"in {len(outcome.rounds)} further rounds" in text


def test_a_search_ended_early_is_resumed_by_a_further_round_until_its_space_is_measured_whole(monkeypatch,
                                                                                             device_info, db_url):
    """The fake GPU: each first round's search ends after 3 configs (as an early stop would);
    the further rounds resume those studies, measure only configs not measured yet, and end
    once every space is measured whole, far under the budget."""
    from autotune.workload import job as job_module
    from autotune.workload.tune import tune_workload

    record_app(monkeypatch, device_info, db_url, calls=(30, 0, 5))
    benches = fake_gpu(monkeypatch, device_info)
    real = job_module.run_job

    def early_stop(job, ordinal, *rest, **kw):
        if job.round == 1:
            job = replace(job, options=job.options.replace(trials=3))
        return real(job, ordinal, *rest, **kw)

    monkeypatch.setattr("autotune.workload.tune.run_job", early_stop)
    outcome = tune_workload("app", budget_s=3600, db=db_url, options=SEEDED)
    results = {r.label: r for r in outcome.tuning.results}
    assert {r.status for r in results.values()} == {"tuned"}
    assert outcome.rounds and {r.round for r in outcome.rounds} == {2}  # one further round each: then whole
    spaces = {"histogram256 100000 uint8": 64, "smem_vec 100x64 float32": 32}
    for label, size in spaces.items():
        mine = [c for b in benches if f"{b.problem.kernel.name}" == label.split()[0] and not b.companion
                for kind, c in b.calls if kind == "measure"]
        assert len(mine) == len(set(mine)) <= size  # no config measured twice
        assert results[label].trials == len(mine)
    assert sum(r.spent_s for r in results.values()) < 3600


def test_a_tuning_stopped_in_a_further_round_resumes_counting_each_round_once(monkeypatch, device_info, db_url):
    from autotune.store.opening import open_reader
    from autotune.store.workloads import latest_tuning
    from autotune.workload.tune import tune_workload

    record_app(monkeypatch, device_info, db_url)
    fake_gpu(monkeypatch, device_info)
    ran = []

    def cut_in_round_two(job, ordinal, *rest, **kw):
        ran.append(job)
        result = _fake_job(job, ordinal)
        if job.round == 2 and len([j for j in ran if j.round == 2]) == 1:  # a signal: 3 fake seconds measured
            return replace(result, status="interrupted", spent_s=job.result.spent_s + 3.0,
                           trials=job.result.trials + 2, reason="stopped by a signal")
        return result

    monkeypatch.setattr("autotune.workload.tune.run_job", cut_in_round_two)
    with pytest.raises(KeyboardInterrupt):
        tune_workload("app", budget_s=120, db=db_url, options=SEEDED)
    reader = open_reader(db_url)
    first = latest_tuning(reader, "app")
    reader.close()
    cut = next(r for r in first.results if r.status == "interrupted")
    before = sum(r.spent_s for r in first.results)
    assert cut.trials == 12 and before == pytest.approx(sum(_fake_job(j, 0).spent_s - j.result.spent_s
                                                            for j in ran[:-1]) + 3.0)
    done = len(ran)
    outcome = tune_workload("app", budget_s=120, db=db_url, options=SEEDED)
    assert outcome.resumed and outcome.tuning.status == "finished"
    again = ran[done:]
    assert again[0].result.label == cut.label and again[0].result.spent_s == pytest.approx(cut.spent_s)
    total = sum(r.spent_s for r in outcome.tuning.results)
    took = sum(_fake_job(j, 0).spent_s - j.result.spent_s for j in again)
    assert total == pytest.approx(before + took)  # nothing counted twice, nothing lost
    assert 120 - MIN_ROUND_S <= total <= 120 + CONFIG_S


def test_a_tuning_on_two_fake_gpus_whose_spaces_are_measured_whole_stops_early(monkeypatch, device_info, tmp_path):
    """``autotune tune --device all`` on two fake GPUs (tests/workers.py, the pool's worker
    processes measuring on FakeAnyBench): every search measures its space whole, no further
    round is run, most of the budget is left."""
    db = f"sqlite:///{tmp_path / 'two.db'}"
    record_app(monkeypatch, device_info, db)
    workers = Path(__file__).resolve().parents[1] / "workers.py"
    env = {**os.environ, "AUTOTUNE_FAKE_GPUS": ",".join([device_info.name] * 2), "AUTOTUNE_FAKE_BENCH": "any",
           "AUTOTUNE_DB": db}
    proc = subprocess.run([sys.executable, str(workers), "cli", "0", "tune", "app", "--budget", "1h", "--device",
                           "all", "--seed", "0", "--db", db, "--format", "json"],
                          env=env, capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(proc.stdout[proc.stdout.index("{"):])
    assert doc["status"] == "finished" and doc["gpus"] == 2
    assert doc["further_rounds"] == 0 and doc["spent_s"] < 3600 / 2
    assert {row["status"] for row in doc["records"]} == {"tuned"}


def test_a_further_round_that_fails_keeps_the_result_before_it_and_ends_its_rounds(monkeypatch, device_info, db_url):
    s = _scheduler(monkeypatch, device_info, db_url, budget_s=100.0)
    failed = []
    while (job := s.next()) is not None:
        result = _fake_job(job, 0)
        if job.round > 1:  # its measuring process crashed, say
            result = replace(result, status="failed", reason="the GPU 0 worker died (exit code -9)", tuned_ms=None)
            failed.append(job)
        kept = s.done(job, result)
        if job.round > 1:
            assert kept.status == "tuned" and kept.tuned_ms == job.result.tuned_ms == 1.0
            assert kept.spent_s == result.spent_s and kept.trials == result.trials  # every round counted
            assert kept.reason.startswith(f"its round {job.round} failed (the GPU 0 worker died")
    assert failed and len({j.result.label for j in failed}) == len(failed)  # one failed round each, then none


def test_a_gpu_with_nothing_to_do_waits_for_what_the_others_leave(monkeypatch, device_info, db_url):
    """The pool on two fake GPUs (worker processes, tests/workers.py's benchmark): GPU 1 is
    offered nothing while GPU 0's job runs; it waits, and takes a job once GPU 0's is done
    (what a first round leaves becomes a further round), instead of ending its worker."""
    import workers
    from autotune.measure import benchmark
    from autotune.workload.job import Job
    from autotune.workload.pool import run_pool
    from autotune.workload.plan import make_plan
    from autotune.workload.tune import _result_of

    record_app(monkeypatch, device_info, db_url)
    rows = make_plan("app", budget_s=60, db=db_url).rows
    monkeypatch.setenv("AUTOTUNE_FAKE_GPUS", ",".join([device_info.name] * 2))
    monkeypatch.setenv("AUTOTUNE_FAKE_BENCH", "any")
    monkeypatch.setattr(benchmark, "open_benchmark", workers.fake_open_benchmark)
    jobs = [Job(i, r.problem.ref, 0.0, None, SEEDED, db_url, _result_of(r)) for i, r in enumerate(rows)]  # measure only

    class Gated:
        """Hands out job 0, then nothing until it is done, then the rest."""

        def __init__(self):
            self.given, self.finished, self.refused = 0, [], []
            self.left = len(jobs)

        def next(self):
            if self.given == 1 and not self.finished or self.given == len(jobs):
                self.refused.append(self.given)
                return None
            self.given += 1
            return jobs[self.given - 1]

        def done(self, job, result):
            self.finished.append(job.index)
            return result

    gated, saved = Gated(), []
    run_pool(gated, [0, 1], saved.append, None)
    ran = {r.label: r.gpu_ordinal for r in saved if r.status != "running"}
    assert gated.refused[0] == 1 and gated.finished[0] == 0  # GPU 1 was refused while job 0 ran
    assert len(ran) == len(jobs) and set(ran.values()) == {0, 1}  # ...and then took a job: it had waited


def test_a_resumed_tuning_knows_a_space_measured_whole_from_its_trials(monkeypatch, device_info, db_url):
    """Resumed after its first round, the tuning has no search's word that a space was measured
    whole: trials as many as the space's valid configs say it, and no further round is given."""
    s = _scheduler(monkeypatch, device_info, db_url, budget_s=300.0)
    for ident, row in s.rows.items():
        size = row.problem.kernel.space().count(10_000)
        s.results[ident] = replace(s.results[ident], status="tuned", trials=size, spent_s=20.0)
    s.todo = []  # every problem done by the earlier run
    assert s.next() is None
    ident = next(iter(s.rows))
    s.results[ident] = replace(s.results[ident], trials=s.results[ident].trials - 1)  # one config left
    job = s.next()
    assert job is not None and job.round == 2 and job.result.label == s.rows[ident].label


def test_a_further_round_that_measured_nothing_is_the_problem_s_last(monkeypatch, device_info, db_url):
    """However little such a round costs, the rounds end: one that measured no config closes its problem."""
    s = _scheduler(monkeypatch, device_info, db_url, budget_s=1000.0)
    further = []
    while (job := s.next()) is not None:
        result = _fake_job(job, 0)
        if job.round > 1:
            further.append(job.result.label)
            result = replace(result, trials=job.result.trials, spent_s=job.result.spent_s + 0.01)
        s.done(job, result)
    assert sorted(further) == sorted(row.label for row in s.rows.values())  # one each, then none
