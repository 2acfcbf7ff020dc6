"""The search loop's batches: each batch goes to the compile pool before the GPU measures the
batch before it; a study written by the search of before strategies resumes; ``transfer``
measures the nearest tuned shapes' best after the default and the plain search's first configs."""

import optuna
import pytest


from autotune.kernel.config import Config
from autotune.kernel.space import SearchSpace
from autotune.search.options import SearchOptions
from autotune.search.tuner import search
from autotune.store.key import ProblemKey, TuningKey
from autotune.store.repository import Store

from fakes import FakeTimer

SPACE = SearchSpace("smem_pad", (("BLOCK_ROWS", (4, 8, 16, 32)), ("DIAGONAL", (0,)), ("IPAD", (1, 2)),
                                 ("TILE_DIM", (16, 32, 64))),
                    ("TILE_DIM % BLOCK_ROWS == 0", "TILE_DIM * BLOCK_ROWS <= 1024"))
DEFAULT = Config.of("smem_pad", {"BLOCK_ROWS": 8, "DIAGONAL": 0, "IPAD": 1, "TILE_DIM": 32})


def key_of(device_info, rows=1024, cols=1024) -> TuningKey:
    return TuningKey(device_info, ProblemKey("smem_pad", "f" * 64, "e" * 64,
                                             (("rows", rows), ("cols", cols)), "float32"),
                     "13.0.88", "-O3 -arch=sm_90")


@pytest.mark.parametrize("strategy", ["grid", "tpe", "random"])
def test_the_next_batch_is_handed_to_the_compile_pool_before_the_gpu_measures_this_one(store, device_info,
                                                                                       strategy):
    events, timer = [], FakeTimer()

    def measure(config):
        events.append(("measure", config))
        return timer(config)

    result = search(key_of(device_info), SPACE, measure, store,
                    SearchOptions(trials=11, strategy=strategy, seed=2, batch=3),
                    prefetch=lambda batch: events.append(("prefetch", list(batch))))
    batches = [b for kind, b in events if kind == "prefetch"]
    measured = [c for kind, c in events if kind == "measure"]
    assert [len(b) for b in batches] == [3, 3, 3, 2] and measured == [c for b in batches for c in b]
    assert measured[0] == DEFAULT and len(set(measured)) == 11 == result.measured_count
    for i, batch in enumerate(batches[:-1]):  # batch i+1 is compiling before batch i's first config measures
        assert events.index(("prefetch", batches[i + 1])) < events.index(("measure", batch[0]))
    for c in measured:  # and every config is handed over before it is measured
        at = next(k for k, e in enumerate(events) if e[0] == "prefetch" and c in e[1])
        assert at < events.index(("measure", c))


def old_study(store: Store, key: TuningKey, measured: dict[Config, float | None]) -> None:
    """A study as the search before strategies wrote it: ``suggest_categorical`` trials, a
    PRUNED constraint breaker, a COMPLETE ``duplicate`` with a copied value, a WAITING
    trial a grid queued, and the ok and failed configs."""
    study = optuna.create_study(study_name=key.study_name, storage=store.optuna_storage(), direction="minimize")
    items = list(measured.items())

    def objective(trial):
        config, ms = items.pop(0) if items else (DEFAULT, None)
        for n, v in SPACE.params:
            trial.suggest_categorical(n, list(v))
        trial.set_user_attr("status", "ok" if ms is not None else "compile_error")
        if ms is None:
            trial.set_user_attr("reason", "planted")
            raise RuntimeError("failed")
        return ms

    for config in measured:
        study.enqueue_trial(config.as_dict())
    study.optimize(objective, n_trials=len(measured), catch=(RuntimeError,))
    first = next(iter(measured))
    study.enqueue_trial(first.as_dict())  # a repeat, stored as a copy: status duplicate
    dup = study.ask({n: optuna.distributions.CategoricalDistribution(list(v)) for n, v in SPACE.params})
    dup.set_user_attr("status", "duplicate")
    dup.set_user_attr("duplicate_of", 0)
    study.tell(dup, measured[first])
    broken = {"BLOCK_ROWS": 32, "DIAGONAL": 0, "IPAD": 1, "TILE_DIM": 64}
    study.enqueue_trial(broken)
    pruned = study.ask({n: optuna.distributions.CategoricalDistribution(list(v)) for n, v in SPACE.params})
    pruned.set_user_attr("status", "constraint")
    study.tell(pruned, state=optuna.trial.TrialState.PRUNED)
    study.enqueue_trial(SPACE.configs()[-1].as_dict())  # left WAITING by an interrupted grid


def test_a_study_written_before_strategies_resumes_without_measuring_its_configs_again(store, device_info):
    key = key_of(device_info)
    configs = SPACE.configs()
    earlier = {DEFAULT: 0.02, configs[0]: 0.03, configs[1]: None}
    old_study(store, key, earlier)
    timer = FakeTimer()
    result = search(key, SPACE, timer, store, SearchOptions(trials=100, strategy="tpe", seed=0, resume=True, batch=4))
    assert result.stopped == "exhausted"
    assert set(timer.calls) == set(configs) - set(earlier) and len(timer.calls) == len(set(timer.calls))
    assert result.measured[DEFAULT] == 0.02 and configs[1] not in result.measured
    trials = optuna.load_study(study_name=key.study_name, storage=store.optuna_storage()).trials
    assert len(trials) == 6 + len(timer.calls)  # the old ones kept as they were, one new trial per config


def test_transfer_measures_the_nearest_tuned_shapes_best_after_the_default_and_the_plain_searchs_first(
        store, device_info):
    """Two shapes tuned (grid) with the best planted at a different config each; a new shape
    nearer the first measures the default, the plain search's first configs (the controls the
    prior is judged against), then the first shape's best, within 5 configs."""
    from autotune.search.strategies.transfer import PROBE

    from fakes import fake_retime

    class Planted(FakeTimer):
        def __init__(self, best):
            super().__init__()
            self.best = best

        def gbps(self, config):
            return 2900.0 if config == self.best else 1000.0 + 10 * SPACE.configs().index(config)

    configs = SPACE.configs()
    near_best, far_best = configs[2], configs[9]
    for (rows, cols), best in (((2048, 2048), near_best), ((256, 256), far_best)):
        search(key_of(device_info, rows, cols), SPACE, Planted(best), store,
               SearchOptions(trials=100, strategy="grid"), retime=fake_retime())
    timer = FakeTimer()
    search(key_of(device_info, 3000, 3000), SPACE, timer, store, SearchOptions(trials=6, strategy="transfer", seed=0,
                                                                               batch=2))
    # PROBE controls (the default and the plain search's first configs), then the prior's
    # first config, the nearest shape's best; a second one (slower here, the farther shape's
    # best) only after it
    assert timer.calls[0] == DEFAULT and near_best in timer.calls[PROBE:PROBE + 2]
    assert far_best not in timer.calls[:timer.calls.index(near_best)]


def test_the_cli_builds_the_options_once_and_its_header_says_the_strategy_and_batch(monkeypatch, device_info,
                                                                                    db_url):
    """``--strategy`` and ``--batch`` reach the search as one SearchOptions; ``--sampler`` is
    the old name of ``--strategy``; the header says both."""
    import contextlib

    from typer.testing import CliRunner

    from fakes import fake_retime

    from autotune.cli import app
    from autotune.measure import benchmark
    from autotune.search import tuner

    class Bench:
        device, memcpy_gbps, copy_gbps, l2_mode = device_info, 3000.0, None, "single"

        def __init__(self):
            self.measure, self.retime = FakeTimer(), fake_retime()

    @contextlib.contextmanager
    def open_benchmark(ordinal, problem, measure=None, also=()):
        yield Bench()

    seen = []
    original = tuner.Tuner.__init__

    def spy(self, key, space, store, options, instruments, **kw):
        seen.append(options)
        original(self, key, space, store, options, instruments, **kw)

    monkeypatch.setattr(benchmark, "open_benchmark", open_benchmark)
    monkeypatch.setattr(tuner.Tuner, "__init__", spy)
    r = CliRunner().invoke(app, ["search", "--size", "64", "--trials", "5", "--strategy", "random", "--batch", "3",
                                 "--seed", "4", "--db", db_url])
    assert r.exit_code == 0, r.output
    assert "strategy random, batches of 3" in r.output and "measured 5 configs: 5 ok" in r.output
    assert seen == [SearchOptions(trials=5, strategy="random", batch=3, seed=4)]  # --db beside them, not inside
    r = CliRunner().invoke(app, ["search", "--size", "64", "--trials", "2", "--sampler", "grid", "--resume",
                                 "--db", db_url])
    assert r.exit_code == 0, r.output
    assert seen[-1].strategy == "grid" and "strategy grid, batches of 1" in r.output  # tests: no compile workers


def test_autotune_tune_hands_every_config_to_the_compile_pool_before_measuring_it(monkeypatch, device_info,
                                                                                    db_url):
    """The real wiring (autotune.tune -> search_on_gpu -> the compile pool and the Tuner):
    the pool's feed gets the default from the start, then each batch as the strategy proposes
    it, always before the GPU measures its configs. (That the pool builds what it is fed, in
    order, is test_pipeline's and test_tune_ahead's.)"""
    import contextlib

    import autotune
    from autotune.measure import benchmark, compile as compiling, pipeline

    from fakes import fake_retime

    monkeypatch.setenv("AUTOTUNE_COMPILE_WORKERS", "2")
    events = []
    monkeypatch.setattr(pipeline, "helper_builds", lambda *a: [])
    monkeypatch.setattr(compiling, "build_cubin", lambda kernel, config, dtype, arch, **_: None)  # no nvcc
    put = pipeline.Feed.put

    def feed(self, configs):
        configs = list(configs)
        events.append(("feed", configs))
        put(self, configs)

    monkeypatch.setattr(pipeline.Feed, "put", feed)

    class Bench:
        device, memcpy_gbps, copy_gbps, l2_mode = device_info, 3000.0, None, "single"

        def __init__(self):
            self.timer, self.retime = FakeTimer(), fake_retime()

        def measure(self, config):
            events.append(("measure", config))
            return self.timer(config)

    @contextlib.contextmanager
    def open_benchmark(ordinal, problem, measure=None, also=()):
        events.append(("open", None))
        yield Bench()

    monkeypatch.setattr(benchmark, "open_benchmark", open_benchmark)
    result = autotune.tune("smem_pad", {"rows": 64, "cols": 64}, trials=5, strategy="random", batch=2, seed=3,
                           db=db_url)
    measured = [c for kind, c in events if kind == "measure"]
    assert result.measured_count == 5 == len(set(measured)) and measured[0] == DEFAULT
    fed = [(i, c) for i, (kind, configs) in enumerate(events) if kind == "feed" for c in configs]
    assert fed[0][1] == DEFAULT  # the default, from the start
    for config in measured:
        assert min(i for i, c in fed if c == config) < events.index(("measure", config))


def test_autotune_tune_measures_one_binary_once_through_the_compile_pool(monkeypatch, device_info, db_url):
    """The real wiring of ``Instruments.built`` (issue 47): with a compiler whose cubin ignores
    DIAGONAL, the configs that differ only there are measured once; the others' trials say so."""
    import contextlib

    import autotune
    from autotune.measure import benchmark, compile as compiling, pipeline
    from autotune.search.outcome import SAME_BINARY

    from fakes import fake_retime

    monkeypatch.setenv("AUTOTUNE_COMPILE_WORKERS", "2")
    monkeypatch.setattr(pipeline, "helper_builds", lambda *a: [])

    def build(kernel, config, dtype, arch, **_):
        macros = {k: v for k, v in config.as_dict().items() if k != "DIAGONAL"}
        return repr(sorted(macros.items())).encode(), {"registers": 32, "shared_bytes": 0}, True

    monkeypatch.setattr(compiling, "build_cubin", build)
    measured = []

    class Bench:
        device, memcpy_gbps, copy_gbps, l2_mode = device_info, 3000.0, None, "single"

        def __init__(self):
            self.timer, self.retime = FakeTimer(), fake_retime()

        def measure(self, config):
            measured.append(config)
            return self.timer(config)

    @contextlib.contextmanager
    def open_benchmark(ordinal, problem, measure=None, also=()):
        yield Bench()

    monkeypatch.setattr(benchmark, "open_benchmark", open_benchmark)
    result = autotune.tune("smem_pad", {"rows": 64, "cols": 64}, trials=200, strategy="grid", seed=3, db=db_url)
    same = [o for o in result.outcomes if o.same_as is not None]
    assert result.stopped == "exhausted" and same and len(measured) + len(same) == len(result.outcomes)
    assert all(o.reason.startswith(SAME_BINARY) and o.config not in measured for o in same)
    binaries = {tuple(sorted((k, v) for k, v in c.as_dict().items() if k != "DIAGONAL")) for c in measured}
    assert len(binaries) == len(measured) == len(same)  # each binary measured once, its twin recorded
    from typer.testing import CliRunner

    from autotune.cli import app

    r = CliRunner().invoke(app, ["search", "--size", "128", "--trials", "200", "--sampler", "grid", "--db", db_url])
    assert r.exit_code == 0, r.output
    twins = len(same)  # the same space: as many twins at this size
    assert (f"measured {twins} configs: {2 * twins} ok" in r.output
            and f"{twins} ok configs of a binary measured before" in r.output), r.output


def test_a_new_study_proposes_its_first_batch_before_it_is_open_and_measures_it_first(store, device_info):
    """Tuner.early: the strategy and its first batch (the default first) before the study
    exists, so that batch compiles while the measuring child starts; not for a resumed study,
    transfer, a grid or a worker of several GPUs."""
    from autotune.search.tuner import Tuner
    from autotune.search.instruments import Instruments

    options = SearchOptions(trials=7, strategy="tpe", seed=5, batch=3)
    assert Tuner.early("smem_pad", SPACE, options.replace(resume=True)) is None
    assert Tuner.early("smem_pad", SPACE, options.replace(strategy="transfer")) is None
    assert Tuner.early("smem_pad", SPACE, options.replace(strategy="grid")) is None
    assert Tuner.early("smem_pad", SPACE, options, part=(0, 2)) is None
    early = Tuner.early("smem_pad", SPACE, options)
    strategy, first = early
    assert len(first) == 3 and first[0] == DEFAULT
    events, timer = [], FakeTimer()

    def measure(config):
        events.append(("measure", config))
        return timer(config)

    tools = Instruments(measure, prefetch=lambda batch: events.append(("prefetch", list(batch))))
    result = Tuner(key_of(device_info), SPACE, store, options, tools, early=early).run()
    measured = [c for kind, c in events if kind == "measure"]
    assert measured[:3] == first and len(set(measured)) == 7 == result.measured_count
    assert not any(kind == "prefetch" and set(b) & set(first) for kind, b in events)  # handed over already
