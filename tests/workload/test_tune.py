"""A recorded workload planned and tuned without a GPU (autotune/workload/): the budget rule,
the expected gain, the plan's rows, a tuning on the fake GPU benchmark of any kernel
(tests/fakes.py FakeAnyBench) with its measured totals, a failing problem as a row, an
interrupted tuning resumed, and the default kept where it re-times faster."""

from __future__ import annotations

import pytest

from autotune.errors import InvalidInputError
from autotune.workload.budget import FLOOR_S, allocate, format_seconds, parse_budget

from autotune.search.options import SearchOptions
from autotune.search.strategies import DEFAULT_STRATEGY

from workload_fixtures import fake_gpu, record_app

SEEDED = SearchOptions(seed=0)
"""Every tuning of these tests: its strategies' proposals the same from run to run."""


@pytest.mark.parametrize("text, seconds", [("600", 600.0), ("90s", 90.0), ("10m", 600.0), ("1.5h", 5400.0),
                                           (" 2 min ", 120.0), (30, 30.0)])
def test_a_budget_is_a_duration(text, seconds):
    assert parse_budget(text) == seconds


@pytest.mark.parametrize("text", ["", "0", "-5m", "ten minutes", "10d", "inf", "8 days", True])
def test_a_bad_budget_is_one_error(text):
    with pytest.raises(InvalidInputError, match="budget .* is not allowed; give a duration such as 600, 90s"):
        parse_budget(text if text != "8 days" else "200h")


def test_the_budget_rule_floor_then_shares_of_the_saving():
    # three worth tuning, one not: each a floor, the rest by saving
    shares = allocate([6.0, 3.0, 0.0, 1.0], 100.0, floor_s=10.0)
    assert shares[2] == 0.0 and sum(shares) == pytest.approx(100.0)
    assert shares == pytest.approx([10 + 70 * 0.6, 10 + 70 * 0.3, 0.0, 10 + 70 * 0.1])
    # less than a floor each: the largest savings get it first, the rest nothing
    assert allocate([1.0, 5.0, 3.0], 25.0, floor_s=10.0) == [0.0, 12.5, 12.5]
    assert allocate([1.0, 5.0], 4.0, floor_s=10.0) == [0.0, 4.0]
    assert allocate([0.0, 0.0], 100.0) == [0.0, 0.0] and allocate([1.0], 0.0) == [0.0]
    assert FLOOR_S > 0 and format_seconds(45) == "45s" and format_seconds(150) == "2m30s"


def test_the_plan_ranks_problems_by_expected_saving(monkeypatch, device_info, db_url):
    from autotune.workload.plan import make_plan

    record_app(monkeypatch, device_info, db_url)
    plan = make_plan("app", budget_s=60, db=db_url)
    labels = [r.label for r in plan.rows]
    assert labels == ["histogram256 100000 uint8", "histogram256 1000 uint8", "smem_vec 100x64 float32"]
    big = plan.rows[0]
    assert big.recorded.calls == 30 and big.chosen.rung == "default" and big.strategy == DEFAULT_STRATEGY
    assert big.share == pytest.approx(big.recorded.gpu_ms / plan.gpu_ms) and big.share > 0.9
    assert big.gain == pytest.approx(0.15) and big.gain_why == "assumed: no shape tuned here"
    assert big.saving_ms == pytest.approx(big.recorded.gpu_ms * 0.15)
    assert sum(r.budget_s for r in plan.rows) == pytest.approx(60) and all(r.budget_s >= FLOOR_S for r in plan.rows)
    assert plan.rows[0].budget_s > plan.rows[1].budget_s > 0


def test_a_missing_workload_is_one_error_naming_the_recorded_ones(monkeypatch, device_info, db_url, tmp_path):
    from autotune.store.workloads import MissingWorkload
    from autotune.workload.plan import make_plan
    from autotune.workload.tune import tune_workload

    with pytest.raises(MissingWorkload, match="workload 'app' does not exist; .* holds no recording"):
        make_plan("app", budget_s=60, db=db_url)
    record_app(monkeypatch, device_info, db_url)
    with pytest.raises(MissingWorkload, match="workload 'ap' does not exist; recorded: app"):
        make_plan("ap", budget_s=60, db=db_url)
    never = f"sqlite:///{tmp_path / 'never.db'}"
    fake_gpu(monkeypatch, device_info)
    with pytest.raises(MissingWorkload):
        tune_workload("app", budget_s=60, db=never)
    assert not (tmp_path / "never.db").exists()


def test_tuning_measures_the_workload_at_the_default_and_tuned_configs(monkeypatch, device_info, db_url):
    from autotune.store.opening import open_reader
    from autotune.store.workloads import latest_tuning
    from autotune.workload.plan import make_plan
    from autotune.workload.tune import tune_workload

    record_app(monkeypatch, device_info, db_url)
    benches = fake_gpu(monkeypatch, device_info)
    events = []
    outcome = tune_workload("app", budget_s=3600, db=db_url, max_trials=6, options=SEEDED,
                            on_progress=lambda p: events.append((p.event, p.result.label, p.budget_s > 0)))
    results = {r.label: r for r in outcome.tuning.results}
    assert [e for e in events if e[0] == "start"] == [("start", "histogram256 100000 uint8", True),
                                                      ("start", "histogram256 1000 uint8", True),
                                                      ("start", "smem_vec 100x64 float32", True)]
    for r in results.values():
        bench = next(b for b in benches if b.problem.kernel.name == r.kernel and b.problem.dims == r.dims)
        default = bench.problem.kernel.default_config()
        assert r.status == "tuned" and r.trials == 6 and r.strategy == DEFAULT_STRATEGY
        assert r.default_ms == pytest.approx(bench.ms(default))  # measured by the final re-timing, not estimated
        assert r.tuned_ms == pytest.approx(min(bench.ms(c) for c in measured_at(benches, bench.problem)))
        assert r.tuned_ms <= r.default_ms and ("retime", f"{default.key},{r.config_key}") in bench.calls \
            or r.config_key == default.key
    default, tuned = outcome.totals()
    calls = {"histogram256 100000 uint8": 30, "histogram256 1000 uint8": 10, "smem_vec 100x64 float32": 5}
    assert default == pytest.approx(sum(results[k].default_ms * n for k, n in calls.items()))
    assert tuned == pytest.approx(sum(results[k].tuned_ms * n for k, n in calls.items())) and tuned < default
    assert outcome.tuning.status == "finished" and not outcome.resumed
    store = open_reader(db_url)
    stored = latest_tuning(store, "app")
    store.close()
    assert stored.status == "finished" and {r.label: r.tuned_ms for r in stored.results} == \
        {k: r.tuned_ms for k, r in results.items()}
    after = make_plan("app", budget_s=60, db=db_url)  # the runtime now picks the tuned configs
    assert {r.chosen.rung for r in after.rows} == {"exact"} and all(r.budget_s == 0 for r in after.rows)
    assert {r.label: r.chosen.config.key for r in after.rows} == {k: r.config_key for k, r in results.items()}


def measured_at(benches, problem):
    """Every config measured at ``problem``'s shape: by its own search, and by the searches of
    its kernel's other shapes, which measure each config at the shapes still to tune."""
    shapes = [b for b in benches if b.problem == problem]
    shapes += [o for b in benches for o in b._others.values() if o.problem == problem]
    return set().union(*(bench_configs(b) for b in shapes))


def test_each_compile_is_measured_at_every_shape_of_its_kernel_still_to_tune(monkeypatch, device_info, db_url):
    """The workload's histogram runs at two shapes: the first one's search measures each of its
    configs at the second shape too (a trial of that shape's study); the second's search then
    resumes that study, measures only new configs, and its result counts only its own trials."""
    from autotune.workload.tune import tune_workload

    record_app(monkeypatch, device_info, db_url)
    benches = fake_gpu(monkeypatch, device_info)
    outcome = tune_workload("app", budget_s=3600, db=db_url, max_trials=6, options=SEEDED)
    first = next(b for b in benches if b.problem.dims == (("n", 100000),))
    second = next(b for b in benches if b.problem.dims == (("n", 1000),))
    (companion,) = first._others.values()
    assert companion.problem == second.problem and not second._others  # nothing left to tune after it
    alongside, own = bench_configs(companion), bench_configs(second)
    assert alongside == bench_configs(first) and len(alongside) == 6 and len(own) == 6 and not alongside & own
    results = {r.label: r for r in outcome.tuning.results}
    assert results["histogram256 1000 uint8"].trials == 6
    vec = next(b for b in benches if b.problem.kernel.name == "smem_vec")
    assert not vec._others  # one shape of its kernel


def bench_configs(bench):
    return {bench_config for kind, keys in bench.calls if kind == "measure"
            for bench_config in [next(c for c in bench.problem.kernel.space().configs() if c.key == keys)]}


def test_a_failing_problem_is_a_row_with_its_reason_and_the_rest_go_on(monkeypatch, device_info, db_url):
    from autotune.kernel.catalog import KERNELS
    from autotune.workload.tune import tune_workload

    record_app(monkeypatch, device_info, db_url)
    space = KERNELS["smem_vec"].space()
    failures = {c.key: "wrong_result" for c in space.configs()}  # every config of smem_vec computes wrong
    fake_gpu(monkeypatch, device_info, failures)
    outcome = tune_workload("app", budget_s=60, db=db_url, max_trials=4, options=SEEDED)
    results = {r.label: r for r in outcome.tuning.results}
    vec = results["smem_vec 100x64 float32"]
    assert vec.status == "failed" and vec.reason.startswith("no config ran: 4 of 4 trials wrong_result (first: planted failure of")
    assert [results[k].status for k in ("histogram256 100000 uint8", "histogram256 1000 uint8")] == ["tuned"] * 2
    assert outcome.tuning.status == "finished"


def test_an_interrupted_tuning_keeps_what_was_measured_and_resumes(monkeypatch, device_info, db_url):
    from autotune.store.opening import open_reader
    from autotune.store.workloads import latest_tuning
    from autotune.workload import job as job_module
    from autotune.workload.tune import tune_workload

    record_app(monkeypatch, device_info, db_url)
    fake_gpu(monkeypatch, device_info)
    real, ran, once = job_module.run_job, [], []

    def second_interrupted(job, ordinal, *rest, **kw):
        ran.append(job.result.label)
        if len(ran) == 2 and not once:
            once.append(True)
            return type(job.result)(**{**job.result.__dict__, "status": "interrupted", "spent_s": 3.0,
                                       "reason": "stopped by a signal"})
        return real(job, ordinal, *rest, **kw)

    monkeypatch.setattr("autotune.workload.tune.run_job", second_interrupted)
    with pytest.raises(KeyboardInterrupt):
        tune_workload("app", budget_s=60, db=db_url, max_trials=3, options=SEEDED)
    store = open_reader(db_url)
    first = latest_tuning(store, "app")
    store.close()
    assert first.status == "interrupted"
    assert [(r.label, r.status) for r in first.results] == [("histogram256 100000 uint8", "tuned"),
                                                            ("histogram256 1000 uint8", "interrupted"),
                                                            ("smem_vec 100x64 float32", "pending")]
    ran.clear()
    outcome = tune_workload("app", budget_s=60, db=db_url, max_trials=3, options=SEEDED)
    assert outcome.resumed and outcome.tuning.id == first.id and outcome.tuning.status == "finished"
    assert sorted(ran) == ["histogram256 1000 uint8", "smem_vec 100x64 float32"]  # the tuned one is not searched again
    spent = {r.label: r.spent_s for r in outcome.tuning.results}
    assert spent["histogram256 1000 uint8"] >= 3.0  # its first run's seconds count
    statuses = {r.label: r.status for r in outcome.tuning.results}
    # the interrupted problem's search goes on, even where the plan, re-made at the resume, would
    # expect no gain from it (its tuned neighbour's best was the default)
    assert statuses == {"histogram256 1000 uint8": "tuned", "histogram256 100000 uint8": "tuned",
                        "smem_vec 100x64 float32": "tuned"}


def test_the_default_is_kept_where_it_re_times_faster_than_the_winner(monkeypatch, device_info, db_url):
    from autotune.runtime.lookup import lookup
    from autotune.workload.tune import tune_workload

    from fakes import FakeAnyBench

    record_app(monkeypatch, device_info, db_url, calls=(3, 0, 0))
    fake_gpu(monkeypatch, device_info)
    real_retime = FakeAnyBench.retime

    def retime(self, configs, rounds):  # the final re-timing finds the default 10 % faster than the winner
        out = real_retime(self, configs, rounds)
        default = self.problem.kernel.default_config()
        if len(configs) == 2 and configs[0] == default:
            from autotune.measure.measurement import Retiming

            fast = self.ms(configs[1]) * 0.9
            out[0] = Retiming(default, (fast,) * rounds, fast)
        return out

    monkeypatch.setattr(FakeAnyBench, "retime", retime)
    from autotune.search.options import SearchOptions

    outcome = tune_workload("app", budget_s=30, db=db_url, max_trials=12, options=SearchOptions(seed=0))
    (r,) = outcome.tuning.results
    k = r.kernel
    assert r.status == "tuned" and r.reason.startswith("the default re-timed 11.1% faster than the search's winner")
    assert r.tuned_ms == r.default_ms
    from autotune.kernel.loader import load_kernel
    from workload_fixtures import HISTOGRAM

    kernel = load_kernel(HISTOGRAM)
    assert k == kernel.name
    chosen = lookup(kernel, r.dims, "uint8", device=device_info, db=db_url)
    assert chosen.rung == "exact" and chosen.config == kernel.default_config() and r.config_key == chosen.config.key


def _stored_trials(db_url, dims: str) -> int:
    """Trials stored in the database by the searches of the problem of dims ``dims`` (its rows, not
    a count we keep; not those measured at its shape alongside another problem's search, a
    companion's, where searches have them)."""
    import sqlalchemy as sa

    engine = sa.create_engine(db_url)
    with engine.connect() as c:
        n = c.execute(sa.text("select count(*) from autotune_trials t join autotune_searches s on t.search_id = s.id "
                              "where s.dims = :dims and s.sampler not like '%(companion)'"), {"dims": dims}).scalar()
    engine.dispose()
    return n


def test_a_search_cut_by_a_signal_is_resumed_where_it_stopped_within_the_trial_cap(monkeypatch, device_info, db_url):
    """Issue 51 (10): --max-trials is per problem over every run of a tuning: cut after 2 of
    5 trials, the resumed search measures 3 more, not 5."""
    from autotune.workload.tune import tune_workload

    from fakes import FakeAnyBench

    record_app(monkeypatch, device_info, db_url, calls=(3, 2, 0))
    fake_gpu(monkeypatch, device_info)
    real, seen = FakeAnyBench.measure, []

    def measure(self, config):  # a signal during the 3rd measurement of the second problem's own search
        if self.companion:  # measured alongside the first problem's search
            return real(self, config)
        seen.append(self.problem.dims)
        if self.problem.dims == (("n", 1000),) and seen.count(self.problem.dims) == 3 and not getattr(
                FakeAnyBench, "cut", False):
            FakeAnyBench.cut = True
            raise KeyboardInterrupt
        return real(self, config)

    monkeypatch.setattr(FakeAnyBench, "measure", measure)
    monkeypatch.setattr(FakeAnyBench, "cut", False, raising=False)
    with pytest.raises(KeyboardInterrupt):
        tune_workload("app", budget_s=60, db=db_url, max_trials=5, options=SEEDED)
    assert _stored_trials(db_url, "n=1000") == 2
    outcome = tune_workload("app", budget_s=60, db=db_url, max_trials=5, options=SEEDED)
    results = {r.label: r for r in outcome.tuning.results}
    small = results["histogram256 1000 uint8"]
    assert outcome.resumed and small.status == "tuned" and small.trials == 5  # 2 kept, then 3 more
    assert _stored_trials(db_url, "n=1000") == 5 and seen.count((("n", 1000),)) == 3 + 3
    assert results["histogram256 100000 uint8"].trials == 5  # not searched again
    assert _stored_trials(db_url, "n=100000") == 5


def test_a_problem_cut_with_its_trial_cap_measured_is_not_searched_again(monkeypatch, device_info, db_url):
    """Cut in the search's final re-timing, its 4 trials (the cap) measured: the resumed tuning
    measures no config of it again; it re-times the stored best against the default."""
    from autotune.runtime.lookup import lookup
    from autotune.workload.tune import tune_workload

    from fakes import FakeAnyBench

    record_app(monkeypatch, device_info, db_url, calls=(3, 0, 0))
    benches = fake_gpu(monkeypatch, device_info)
    real = FakeAnyBench.retime

    def retime(self, configs, rounds):  # a signal in the first re-timing
        if not getattr(FakeAnyBench, "cut", False):
            FakeAnyBench.cut = True
            raise KeyboardInterrupt
        return real(self, configs, rounds)

    monkeypatch.setattr(FakeAnyBench, "retime", retime)
    monkeypatch.setattr(FakeAnyBench, "cut", False, raising=False)
    with pytest.raises(KeyboardInterrupt):
        tune_workload("app", budget_s=60, db=db_url, max_trials=4, options=SEEDED)
    assert _stored_trials(db_url, "n=100000") == 4
    benches.clear()
    outcome = tune_workload("app", budget_s=60, db=db_url, max_trials=4, options=SEEDED)
    (r,) = outcome.tuning.results
    (bench,) = benches
    assert r.status == "tuned" and r.trials == 4 and _stored_trials(db_url, "n=100000") == 4
    assert not [c for c in bench.calls if c[0] == "measure"]  # nothing measured again
    best = lookup(bench.problem, device=device_info, db=db_url)
    assert best.rung == "exact" and r.config_key == best.config.key and r.tuned_ms is not None
    assert r.default_ms == pytest.approx(bench.ms(bench.problem.kernel.default_config()))
