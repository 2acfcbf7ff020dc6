"""The op search (autotune/search/op.py) and the runtime's kernel choice
(autotune/runtime/transpose/choice.py), on a fake device: each kernel's search is the real tuner on
a fake timer whose landscape is scaled per kernel, every test with its own database."""

import pytest

from autotune.store.opening import open_results

from autotune.errors import InvalidInputError
from autotune.kernel.catalog import KERNELS
from autotune.kernel.dtypes import get_dtype
from autotune.runtime.transpose import choice as op_choice
from autotune.base.caches import clear_cache
from autotune.kernel.ops import op_kernels
from autotune.search.op import halving_plan, op_standings, split_budget, tune_op
from autotune.search.tuner import search
from autotune.store.key import tuning_key
from autotune.store.repository import Store

from fakes import FakeTimer

TRANSPOSES = ["diagonal_col", "diagonal_row", "naive_col", "naive_flat", "naive_row", "skinny", "smem", "smem_aligned_out",
              "smem_bytes", "smem_bytes_aligned_out", "smem_pad", "smem_unroll_pad", "smem_vec", "smem_vec_realign", "unroll_col", "unroll_row"]
WIDE_TRANSPOSES = [k for k in TRANSPOSES if not k.startswith("smem_bytes")]  # 4 and 8 bytes: the byte kernels take 1 and 2


class ScaledTimer(FakeTimer):
    """The fake landscape times ``factor``: a faster or slower kernel."""

    def __init__(self, factor: float) -> None:
        super().__init__()
        self.factor = factor

    def gbps(self, config):
        return super().gbps(config) * self.factor


def fake_tune(device_info, factors, calls):
    """A ``tune_kernel`` for tune_op: the real tuner (random sampler) on a scaled fake timer."""
    def tune_kernel(kernel, dims, dtype, *, device, options, db):
        calls.append((kernel.name, options.trials, options.resume))
        key = tuning_key(kernel, device_info, dims, dtype)
        timer = ScaledTimer(factors.get(kernel.name, 0.5))
        return search(key, kernel.space(), timer, open_results(db), options.replace(strategy="random"),
                      memcpy_gbps=3000.0)
    return tune_kernel


@pytest.fixture(autouse=True)
def fresh_caches():
    clear_cache()  # autotune.clear_cache(): lookup's answers and the op choice alike
    yield
    clear_cache()


def test_the_transposes_of_the_catalog_are_the_candidates_and_copies_are_not():
    assert [k.name for k in op_kernels("transpose")] == TRANSPOSES
    assert [k.name for k in op_kernels("transpose", "int8")] == TRANSPOSES
    assert [k.name for k in op_kernels("transpose", "float16")] == TRANSPOSES
    assert [k.name for k in op_kernels("transpose", "float32")] == WIDE_TRANSPOSES
    assert "copy_row" in KERNELS and "matmul_reg" in KERNELS
    with pytest.raises(InvalidInputError, match="unknown operation 'gemm'; allowed: transpose"):
        op_kernels("gemm")


@pytest.mark.parametrize("kernels,trials", [(11, 100), (11, 3), (11, 25), (1, 5), (2, 10), (10, 40), (3, 3)])
def test_halving_plan_spends_the_budget_and_gives_every_racing_kernel_a_config(kernels, trials):
    plan = halving_plan(kernels, trials)
    assert sum(plan) == max(trials, kernels) and plan[0] >= kernels
    racing = kernels
    for share in plan:
        assert share >= racing
        racing = -(-racing // 2)
    with pytest.raises(InvalidInputError, match="--trials 0 is not allowed"):
        halving_plan(3, 0)


def test_split_budget_is_even_and_gives_the_remainder_to_the_first():
    assert split_budget(20, ["a", "b", "c"]) == {"a": 7, "b": 7, "c": 6}
    assert split_budget(2, ["a", "b", "c"]) == {"a": 1, "b": 1, "c": 1}


def test_op_search_finds_the_fastest_kernel_by_halving_and_stores_it(db_url, device_info):
    calls = []
    factors = {"smem_vec_realign": 1.05, "smem_vec": 1.0, "smem_pad": 0.9}
    result = tune_op("transpose", {"rows": 5000, "cols": 7001}, "float32", trials=60, seed=1, db=db_url,
                     tune_kernel=fake_tune(device_info, factors, calls))
    assert result.best.kernel == "smem_vec_realign"
    assert [s.kernel for s in result.standings[:3]] == ["smem_vec_realign", "smem_vec", "smem_pad"]
    times = [s.time_ms for s in result.standings]
    assert times == sorted(times)
    # every kernel raced the first round; the racing set halves; the winner raced every round
    assert sorted(result.rounds[0]) == WIDE_TRANSPOSES and [len(r) for r in result.rounds] == [14, 7, 4, 2, 1]
    assert all("smem_vec_realign" in r for r in result.rounds)
    assert sum(sum(r.values()) for r in result.rounds) == 60
    assert all(s.measured >= 1 for s in result.standings)
    assert sum(s.measured for s in result.standings) <= 60
    # the first search of each kernel starts its study; later rounds continue it
    first = {}
    for name, _, resume in calls:
        first.setdefault(name, resume)
    assert not any(first.values()) and all(resume for name, _, resume in calls[14:])
    # the op best survives a restart: a fresh Store ranks the stored bests the same
    again = op_standings(open_results(db_url), {s.kernel: s.key for s in result.standings})
    assert [s.kernel for s in again] == [s.kernel for s in result.standings]
    assert again[0].best.config == result.best.best.config


def test_a_second_op_search_needs_resume_and_then_continues(db_url, device_info):
    calls = []
    tune = fake_tune(device_info, {"smem_pad": 1.1}, calls)
    tune_op("transpose", (300, 301), "float64", trials=11, seed=0, db=db_url, tune_kernel=tune)
    with pytest.raises(InvalidInputError, match="resume"):
        tune_op("transpose", (300, 301), "float64", trials=11, seed=0, db=db_url, tune_kernel=tune)
    again = tune_op("transpose", (300, 301), "float64", trials=22, seed=5, db=db_url, resume=True, tune_kernel=tune)
    assert again.best.kernel == "smem_pad" and sum(s.measured for s in again.standings) >= 11


def test_rule_without_stored_results(device_info, tmp_path):
    db = f"sqlite:///{tmp_path / 'none.db'}"  # no database: every lookup answers the default rung
    for rows, cols, dtype, kernel in [(8192, 8192, "float32", "smem_vec"), (5000, 7001, "float32", "smem_vec_realign"),
                                      (4096, 4100, "int8", "smem_bytes_aligned_out"), (1024, 1001, "int8", "smem_bytes"), (4096, 4112, "int8", "smem_vec"),
                                      (3001, 7919, "float64", "smem_aligned_out"), (64, 8, "float16", "naive_flat"),
                                      (33, 65, "float32", "naive_flat"), (100, 100, "float64", "naive_flat"),
                                      (101, 100, "float32", "smem_vec_realign"), (64, 128, "float16", "smem_vec"),
                                      (8192, 8192, "complex128", "naive_col"), (5000, 7001, "complex128", "naive_col"),
                                      (7, 1000003, "int8", "skinny"), (65536, 33, "float16", "skinny"),
                                      (9, 200003, "float64", "naive_flat"), (200003, 9, "float64", "skinny"),
                                      (7, 1000003, "float32", "naive_flat"), (7, 1000003, "float16", "skinny"), (65536, 33, "float32", "smem_vec_realign"),
                                      (63, 4096, "int8", "skinny"), (48, 1 << 20, "uint8", "smem_vec"),
                                      (64, 8, "int8", "naive_flat"), (64, 101, "int8", "skinny"), (16, 4096, "int8", "smem_vec"),
                                      (12345, 6789, "float32", "smem_aligned_out"), (4099, 2053, "float16", "smem_pad"), (513, 771, "int8", "smem_pad"),
                                      (5000, 7001, "float16", "smem_bytes_aligned_out"), (7001, 5000, "float64", "smem_aligned_out"), (7001, 5000, "float32", "smem_aligned_out"),
                                      (129, 65536, "float32", "smem_aligned_out"), (65, 65536, "float32", "smem_vec_realign"),
                                      (12345, 6789, "float64", "smem_aligned_out")]:
        name, config, why = op_choice.choose_transpose(rows, cols, dtype, device=device_info, db=db)
        assert name == kernel and config.rung == "default" and config.config.kernel == kernel, (rows, cols, dtype)
        assert why.startswith("rule:") and "no kernel tuned for this exact key" in why
    for rows, cols in [(1, 5000), (5000, 1), (1, 1)]:
        assert op_choice.choose_transpose(rows, cols, "int8", device=device_info, db=db)[:2] == ("copy", None)
    assert not (tmp_path / "none.db").exists()  # read-only: nothing created


def test_small_rows_misaligned_on_both_sides_take_the_padded_tiles_config(device_info, tmp_path):
    db = f"sqlite:///{tmp_path / 'none.db'}"
    for rows, cols, dtype, macros in [(4099, 2053, "float16", {"TILE_DIM": 64, "BLOCK_ROWS": 8, "DIAGONAL": 0}),
                                      (1001, 3001, "int16", {"TILE_DIM": 64, "BLOCK_ROWS": 8, "DIAGONAL": 1}),
                                      (513, 771, "int8", {"TILE_DIM": 64, "DIAGONAL": 0}),  # square-ish: row order
                                      (1001, 2002, "uint8", {"DIAGONAL": 1}), (1001, 2001, "uint8", {"DIAGONAL": 0})]:
        name, chosen, _ = op_choice.choose_transpose(rows, cols, dtype, device=device_info, db=db)
        assert rows * cols * get_dtype(dtype).itemsize < op_choice.BYTES_MIN[get_dtype(dtype).itemsize]
        assert name == "smem_pad" and chosen.rung == "default" and "the rule's config" in chosen.note
        assert {k: chosen.config[k] for k in macros} == macros and chosen.config == op_choice.rule_config(
            rows, cols, get_dtype(dtype).itemsize)
        assert KERNELS["smem_pad"].space().violations(chosen.config) == []  # a config of its space


def test_large_one_and_two_byte_matrices_take_the_byte_kernel_at_the_rules_config(device_info, tmp_path):
    db = f"sqlite:///{tmp_path / 'none.db'}"
    wide = {"BLOCK_ROWS": 8, "OUT_ALIGN": 32, "TILE_BYTES": 128}  # 2 bytes
    small = {"BLOCK_ROWS": 16, "OUT_ALIGN": 4, "TILE_BYTES": 64}  # 1 byte, 4 to 20 MiB
    for rows, cols, dtype, macros in [(3001, 5003, "float16", wide), (12345, 6789, "int16", wide),
                                      (7001, 5000, "float16", wide), (4096, 4100, "int8", small),
                                      (2049, 3001, "uint8", small), (3001, 7919, "uint8", None),
                                      (5000, 7001, "int8", None), (7001, 5000, "uint8", None)]:
        name, chosen, _ = op_choice.choose_transpose(rows, cols, dtype, device=device_info, db=db)
        assert name == "smem_bytes_aligned_out" and chosen.rung == "default", (rows, cols, dtype)
        assert chosen.config == (op_choice.rule_config(rows, cols, get_dtype(dtype).itemsize)
                                 or KERNELS[name].default_config())
        assert chosen.config.as_dict() == (macros or KERNELS[name].defaults), (rows, cols, dtype)
        assert KERNELS[name].space().violations(chosen.config) == []  # a config of its space
    assert op_choice.BYTES_CONFIG == {1: small, 2: wide}
    # the edges: 4 MiB of 1-byte and 24 MiB of 2-byte elements are the first the byte kernel takes; from
    # 20 MiB of 1-byte elements it runs at its default
    assert [op_choice.rule_kernel(1024, c, 1)[0] for c in (4095, 4097)] == ["smem_bytes", "smem_bytes_aligned_out"]
    assert [op_choice.rule_kernel(3072, c, 2)[0] for c in (4095, 4097)] == ["smem_vec_realign",
                                                                           "smem_bytes_aligned_out"]
    assert op_choice.rule_config(4096, 5119, 1).as_dict() == small and op_choice.rule_config(4096, 5121, 1) is None


def test_the_other_classes_keep_the_kernel_files_default(device_info, tmp_path):
    db = f"sqlite:///{tmp_path / 'none.db'}"
    # 4- and 8-byte elements (smem_aligned_out), one side aligned, the aligned and small classes, 1-byte
    # elements from 20 MiB: the kernel file's default
    for rows, cols, itemsize in [(12345, 6789, 4), (5000, 7001, 4), (12345, 6789, 8), (8192, 8192, 4), (33, 65, 4),
                                 (12345, 6789, 1)]:
        assert op_choice.rule_config(rows, cols, itemsize) is None
    name, chosen, _ = op_choice.choose_transpose(12345, 6789, "float32", device=device_info, db=db)
    assert name == "smem_aligned_out" and chosen.config == KERNELS[name].default_config()


def test_the_stored_op_best_is_chosen_and_cached(db_url, device_info, monkeypatch):
    result = tune_op("transpose", (5000, 7001), "float32", trials=30, seed=2, db=db_url,
                     tune_kernel=fake_tune(device_info, {"smem_pad": 1.2, "smem_vec_realign": 1.0}, []))
    assert result.best.kernel == "smem_pad"  # the rule would say smem_vec_realign
    name, config, why = op_choice.choose_transpose(5000, 7001, "float32", device=device_info, db=db_url)
    assert name == "smem_pad" and config.rung == "exact" and config.config == result.best.best.config
    assert why.startswith("stored op best: the fastest of 14 kernels tuned for this exact key")
    # another shape: nothing exact, the rule's kernel with its config from its dispatch
    name, config, why = op_choice.choose_transpose(5000, 7003, "float32", device=device_info, db=db_url)
    assert name == "smem_vec_realign" and config.rung == "dispatch"
    # a warm call is a dict lookup: neither lookup nor the database is touched
    monkeypatch.setattr("autotune.runtime.lookup.lookup", lambda *a, **k: pytest.fail("lookup called"))
    monkeypatch.setattr(Store, "best", lambda *a, **k: pytest.fail("database read"))
    assert op_choice.choose_transpose(5000, 7001, "float32", device=device_info, db=db_url)[0] == "smem_pad"


def test_transpose_without_kernel_takes_the_choice_unless_a_view_needs_a_pitched_kernel(device_info, tmp_path):
    db = f"sqlite:///{tmp_path / 'none.db'}"
    pick = op_choice.transpose_kernel_for
    for views in (False, True):  # both read row-pitched views and batches
        assert pick(5000, 7001, "float16", views=views, device=device_info, db=db)[0] == "smem_bytes_aligned_out"
        assert pick(5000, 7001, "float32", views=views, device=device_info, db=db)[0] == "smem_vec_realign"
    assert pick(8192, 8192, "float32", views=True, device=device_info, db=db)[0] == "smem_vec"
    name, why = pick(1, 5000, "int8", views=True, device=device_info, db=db)  # a strided row: no plain copy
    assert name == "smem_vec" and "not contiguous" in why
    assert op_choice.takes_views(KERNELS["smem_pad"]) and op_choice.takes_views(KERNELS["smem_vec_realign"])
    assert op_choice.takes_views(KERNELS["smem_bytes"])  # read row-pitched views and batches
    assert op_choice.takes_views(KERNELS["smem_bytes_aligned_out"])
    assert pick(5000, 7001, "complex128", views=False, device=device_info, db=db)[0] == "naive_col"
    assert pick(5000, 7001, "complex128", views=True, device=device_info, db=db)[0] == "naive_col"  # pitched
    assert op_choice.takes_views(KERNELS["naive_col"]) and not op_choice.takes_views(KERNELS["copy_row"])


def test_transpose_without_kernel_follows_a_stored_op_best(db_url, device_info):
    tune_op("transpose", (5000, 7001), "float32", trials=30, seed=2, db=db_url,
            tune_kernel=fake_tune(device_info, {"smem_pad": 1.2, "smem_vec_realign": 1.0}, []))
    for views in (False, True):  # smem_pad reads views: the stored best either way
        name, why = op_choice.transpose_kernel_for(5000, 7001, "float32", views=views, device=device_info, db=db_url)
        assert name == "smem_pad" and why.startswith("stored op best")


def test_clear_cache_forgets_the_op_choice_after_an_op_search_in_the_same_process(db_url, device_info):
    """``autotune.clear_cache()`` used to miss the op-choice cache: after an op search in the same
    process, ``transpose`` kept the kernel chosen before it."""
    import autotune

    before = op_choice.choose_transpose(5000, 7001, "float32", device=device_info, db=db_url)
    assert before[0] == "smem_vec_realign" and before[2].startswith("rule")
    tune_op("transpose", (5000, 7001), "float32", trials=30, seed=2, db=db_url,
            tune_kernel=fake_tune(device_info, {"smem_pad": 1.2, "smem_vec_realign": 1.0}, []))
    assert op_choice.choose_transpose(5000, 7001, "float32", device=device_info, db=db_url) == before  # cached
    autotune.clear_cache()
    name, _, why = op_choice.choose_transpose(5000, 7001, "float32", device=device_info, db=db_url)
    assert name == "smem_pad" and why.startswith("stored op best")
    assert op_choice.transpose_kernel_for(5000, 7001, "float32", views=False, device=device_info,
                                          db=db_url)[0] == "smem_pad"


def test_a_stored_smem_bytes_best_is_kept_for_views_and_batches(db_url, device_info):
    tune_op("transpose", (5000, 7001), "int8", trials=30, seed=2, db=db_url,
            tune_kernel=fake_tune(device_info, {"smem_bytes": 1.2, "smem_vec_realign": 1.0}, []))
    for views in (False, True):  # smem_bytes reads row-pitched views and batches
        name, why = op_choice.transpose_kernel_for(5000, 7001, "int8", views=views, device=device_info, db=db_url)
        assert name == "smem_bytes" and why.startswith("stored op best")


@pytest.mark.parametrize("rows,cols,dtype,message", [
    (0, 5, "float32", "rows 0 is not allowed; give an integer >= 1"),
    (5, 2.5, "float32", "cols 2.5 is not allowed; give an integer >= 1"),
    (5, True, "float32", "cols True is not allowed"),
    (5, 5, "uint16", "dtype 'uint16' is not allowed; allowed: int8"),
    (5, 5, "complex64", "unknown dtype 'complex64'"),
])
def test_bad_input_to_choose_transpose(rows, cols, dtype, message, device_info):
    with pytest.raises(InvalidInputError, match=message):
        op_choice.choose_transpose(rows, cols, dtype, device=device_info)


@pytest.fixture
def fake_gpu(monkeypatch, device_info):
    """The GPU benchmark replaced by the fake timer (as in test_cli.py)."""
    import contextlib

    from autotune.measure import benchmark
    from fakes import fake_retime

    class FakeBench:
        def __init__(self):
            self.device, self.measure = device_info, FakeTimer()
            self.memcpy_gbps, self.copy_gbps, self.l2_mode, self.retime = 3000.0, 2900.0, "single", fake_retime()

    opened = []

    @contextlib.contextmanager
    def open_benchmark(ordinal, problem, measure=None, also=()):
        opened.append(problem.kernel.name)
        yield FakeBench()

    monkeypatch.setattr(benchmark, "open_benchmark", open_benchmark)
    return opened


def test_cli_search_op_ranks_every_transpose_and_names_the_op_best(fake_gpu, db_url):
    from typer.testing import CliRunner

    from autotune.cli import app

    r = CliRunner().invoke(app, ["search", "--op", "transpose", "--rows", "300", "--cols", "301", "--trials", "25",
                                 "--seed", "1", "--db", db_url])
    assert r.exit_code == 0 and "Traceback" not in r.output, r.output
    assert "--op transpose 300x301 float32 on device 0: 14 kernels" in r.output
    # rounds of 14, 7 and 4 kernels (halving_plan(14, 25) == [14, 7, 4])
    assert sorted(set(fake_gpu)) == WIDE_TRANSPOSES and len(fake_gpu) == 14 + 7 + 4  # a search per kernel a round
    assert r.output.count("round 1: ") == 14 and r.output.count("round 3: ") == 4
    assert all(name in r.output for name in WIDE_TRANSPOSES) and "op best: " in r.output
    again = CliRunner().invoke(app, ["search", "--op", "transpose", "--rows", "300", "--cols", "301", "--db", db_url])
    assert again.exit_code == 2 and "--resume" in again.output


@pytest.mark.parametrize("args,message", [
    (["--op", "gemm", "--size", "64"], "error: unknown operation 'gemm'; allowed: transpose"),
    (["--op", "transpose", "--m", "64", "--n", "2", "--k", "3"], "error: --m is not a dim of kernel"),
    (["--op", "transpose", "--size", "64", "--space", "configs/smem_pad.toml"], "is not allowed with --op"),
    (["--op", "transpose", "--size", "64", "--dtype", "complex64"], "error: unknown dtype 'complex64'"),
])
def test_cli_search_op_bad_input_is_one_error_line(args, message, db_url):
    from typer.testing import CliRunner

    from autotune.cli import app

    r = CliRunner().invoke(app, ["search", *args, "--db", db_url])
    assert r.exit_code == 2 and message in r.output and "Traceback" not in r.output, r.output
