"""``tune-shapes``'s dense matrix (autotune.search.shapes): after the searches, every tuned shape's
winner and runner-up is timed at every tuned shape, through the search path, as stored trials."""

from __future__ import annotations

import contextlib

import pytest

from autotune.dispatch import tables_from_trials
from autotune.kernel.catalog import get_kernel
from autotune.search.options import SearchOptions
from autotune.search.shapes import complete_matrix, matrix_configs, tune_shapes
from autotune.store.key import tuning_key
from autotune.store.opening import open_results

from fakes import FakeAnyBench

K = "smem_pad"


class ShapedBench(FakeAnyBench):
    """The fake benchmark of any kernel, its optimum moving with the shape: small shapes (below a
    million elements) want the smallest value of each macro, large ones the largest."""

    def __init__(self, device, problem, failures=None, also=()) -> None:
        super().__init__(device, problem, failures, also)
        rows, cols = (v for _, v in problem.dims)
        if rows * cols < 1_000_000:
            self.optimum = {name: min(values) for name, values in problem.kernel.space().params}


@pytest.fixture
def shaped_gpu(monkeypatch, device_info):
    from autotune.measure import benchmark, device

    opened = []

    @contextlib.contextmanager
    def open_benchmark(ordinal, problem, measure=None, also=()):
        bench = ShapedBench(device_info, problem, also=also)
        opened.append(bench)
        yield bench

    monkeypatch.setattr(benchmark, "open_benchmark", open_benchmark)
    monkeypatch.setattr(device, "query_device", lambda ordinal: device_info)
    return opened


def seeded_tune(kernel, dims, dtype, *, device, options, db, also=()):
    """``autotune.tune`` with a seed of its own per shape (one seed for all would measure the
    same random configs at every shape: a dense matrix from the start), and without the
    shapes tuned before measured alongside (``also``), for the same reason."""
    import autotune

    return autotune.tune(kernel, dims, dtype, device=device, options=options.replace(seed=sum(dims.values())), db=db)


def _tables(db_url, device_info):
    key = tuning_key(K, device_info, (1, 1), "float32")
    return tables_from_trials(open_results(db_url).shape_trials(key))


def test_the_matrix_times_every_winner_and_runner_up_at_every_tuned_shape(shaped_gpu, db_url, device_info):
    planned = []
    options = SearchOptions(trials=6, strategy="random", seed=1, top_k=2, rounds=1)
    results = tune_shapes(K, {"rows": (64, 4096), "cols": (64, 4096)}, 3, options=options, db=db_url,
                          on_plan=planned.append,
                          device_info=device_info, tune=seeded_tune)
    tables = _tables(db_url, device_info)
    configs = matrix_configs(tables)
    assert len(tables) == 3 and len(configs) > 2
    assert all(t.ms(c) is not None for t in tables for c in configs)  # the matrix is dense
    matrix = [p for p in planned if p.why.startswith("the dense matrix")]
    assert matrix and len(results) == 3 + len(matrix)
    # each matrix search measured just the configs missing at its shape, through the search path
    for p, r in zip(matrix, results[3:]):
        missing = int(p.why.split(": ")[1].split(" of ")[0])
        assert r.key.shape == p.shape and len(r.outcomes) == missing
    # dense already: nothing more to time
    before = len(shaped_gpu)
    assert complete_matrix(get_kernel(K), tuning_key(K, device_info, (1, 1), "float32"), "float32",
                           options=options, db=db_url, tune=seeded_tune) == []
    assert len(shaped_gpu) == before


def test_without_the_matrix_only_the_searches_run(shaped_gpu, db_url, device_info):
    options = SearchOptions(trials=6, strategy="random", seed=1, top_k=2, rounds=1)
    results = tune_shapes(K, {"rows": (64, 4096), "cols": (64, 4096)}, 2, options=options, db=db_url,
                          device_info=device_info,
                          matrix=False, tune=seeded_tune)
    assert len(results) == 2
    tables = _tables(db_url, device_info)
    assert any(t.ms(c) is None for t in tables for c in matrix_configs(tables))


def test_each_search_measures_its_configs_at_the_shapes_tuned_before_it(shaped_gpu, db_url, device_info):
    """``also``: the second and third searches measure each config at the range's shapes tuned
    before them too (one compile, a trial at each shape)."""
    import autotune

    asked = []

    def tune(kernel, dims, dtype, *, device, options, db, also=()):
        asked.append((dict(dims), [dict(d) for d in also]))
        return autotune.tune(kernel, dims, dtype, device=device, options=options.replace(seed=sum(dims.values())),
                             db=db, also=also)
    options = SearchOptions(trials=4, strategy="random", seed=1, top_k=2, rounds=1)
    results = tune_shapes(K, {"rows": (64, 4096), "cols": (64, 4096)}, 3, options=options, db=db_url,
                          device_info=device_info,
                          matrix=False, tune=tune)
    assert [len(also) for _, also in asked] == [0, 1, 2]
    assert sorted(map(str, asked[2][1])) == sorted(map(str, [asked[0][0], asked[1][0]]))
    last = results[2]
    assert len(last.companions) == 2
    ok = {o.config for o in last.outcomes if o.status == "ok"}
    for c in last.companions:  # each config measured there now, or earlier (the default, a queued one)
        assert ok <= set(c.measured) and {o.config for o in c.outcomes} <= ok and c.outcomes
