"""``autotune.lookup``: the ladder exact -> dispatch -> same_arch -> default (and the
``nearest_shape`` rung kept behind ``shape_rung``), staleness, and the in-process cache. The
dispatch itself is tested in ``tests/store/test_dispatch.py``. Results are written straight into the store (no search) except
where a real (fake-timed) search is the point. No timing assertions here: see
``benchmarks/lookup_latency.py`` for latency."""

import re
import threading
from dataclasses import dataclass, replace

import numpy as np
import pytest

from autotune.store.opening import open_results

import autotune.runtime.lookup as tuned
from autotune import Config, clear_cache, lookup
from autotune.errors import GPUUnavailableError, InvalidInputError
from autotune.kernel.catalog import get_kernel
from autotune.store.key import tuning_key
from autotune.measure.measurement import Measurement
from autotune.store.repository import Store
from autotune.search.options import SearchOptions
from autotune.search.tuner import search

from fakes import OPTIMUM, FakeTimer

CONFIGS = get_kernel("smem_pad").space().configs()
"""Distinct valid configs of smem_pad, to tell stored results apart (macro set not hard-coded)."""


@pytest.fixture(autouse=True)
def fresh_cache():
    clear_cache()
    yield
    clear_cache()


@pytest.fixture
def pcie(device_info):
    """Another device of the same compute capability."""
    return replace(device_info, name="NVIDIA H100 PCIe", sm_count=114, total_memory=80_000_000_000)


def tune(db_url, device_info, shape=(512, 512), dtype="float32"):
    key = tuning_key("smem_pad", device_info, shape, dtype)
    search(key, get_kernel("smem_pad").space(), FakeTimer(), open_results(db_url), SearchOptions(trials=200, strategy="grid"))
    return key


def put(store, device, shape, i=0, gbps=2000.0, dtype="float32", **key_changes) -> Config:
    """Store ``CONFIGS[i]`` as the best of ``device``/``shape`` (key fields overridable)."""
    key = tuning_key("smem_pad", device, shape, dtype).replace(**key_changes)
    sid = store.start_search(key, study_name=key.study_name, sampler="grid", seed=None, memcpy_gbps=3000.0)
    ms = 2 * shape[0] * shape[1] * 4 / (gbps * 1e9) * 1e3
    store.record_trial(sid, 0, CONFIGS[i], status="ok",
                       measurement=Measurement(ms, ms, ms, gbps, 100 * gbps / 3000, 20, 4000, 50))
    return CONFIGS[i]


def look(device, shape, db, dtype="float32", shape_rung="dispatch"):
    return lookup("smem_pad", shape, dtype, device=device, db=db, shape_rung=shape_rung)


def near(device, shape, db, dtype="float32"):
    """The lookup with today's former second rung, ``nearest_shape``."""
    return look(device, shape, db, dtype, "nearest_shape")


# --- the rungs ------------------------------------------------------------------------

def test_untuned_key_gives_the_default_and_says_so(db_url, device_info):
    got = look(device_info, (512, 512), db_url)
    assert got.source == "default" and got.rung == "default" and got.gbps is None
    assert got.config == get_kernel("smem_pad").default_config()
    assert got.tuned_shape is None and got.tuned_device is None
    assert "nothing tuned for smem_pad 512x512 float32 on NVIDIA H100 80GB HBM3" in got.note
    assert "stale" not in got.note


def test_tuned_key_gives_the_stored_best(db_url, device_info):
    key = tune(db_url, device_info)
    got = look(device_info, (512, 512), db_url)
    assert got.source == "tuned" and got.rung == "exact"
    assert got.config == open_results(db_url).best(key).config
    assert {k: got.config[k] for k in OPTIMUM} == OPTIMUM
    assert got.gbps == pytest.approx(2800.0) and got.pct_memcpy == pytest.approx(2800 / 30)
    assert got.tuned_shape == (512, 512) and got.tuned_device == device_info.name
    assert got.tuned_dims == (("rows", 512), ("cols", 512)) and got.median_ms > 0
    assert got.note.startswith("tuned for this exact key on ") and "2800 GB/s" in got.note
    # another shape or a device of the same arch is not the exact key; another dtype is nothing
    assert look(device_info, (512, 1024), db_url).rung == "dispatch"
    assert near(device_info, (512, 1024), db_url).rung == "nearest_shape"
    assert look(device_info, (512, 512), db_url, "float64").rung == "default"
    assert look(replace(device_info, name="NVIDIA H200"), (512, 512), db_url).rung == "same_arch"
    assert look(replace(device_info, compute_capability="10.0"), (512, 512), db_url).rung == "default"


def test_exact_beats_nearer_rungs(store, db_url, device_info, pcie):
    mine = put(store, device_info, (4096, 4096), 0)
    put(store, device_info, (4000, 4000), 1)
    put(store, pcie, (4096, 4096), 2)
    got = look(device_info, (4096, 4096), db_url)
    assert (got.rung, got.config, got.tuned_shape) == ("exact", mine, (4096, 4096))


def test_nearest_shape_on_this_device(store, db_url, device_info, pcie):
    put(store, device_info, (1024, 1024), 0, gbps=1500)
    best = put(store, device_info, (4096, 4096), 1, gbps=2500)
    put(store, device_info, (512, 2048), 2)
    put(store, pcie, (3000, 3000), 3)  # the exact shape, but another device: rung 3 only
    got = near(device_info, (3000, 3000), db_url)
    assert got.source == "tuned" and got.rung == "nearest_shape" and got.config == best
    assert got.tuned_shape == (4096, 4096) and got.tuned_device == device_info.name
    assert got.gbps == pytest.approx(2500)
    assert got.note == "tuned for 4096x4096 on this device (nearest of 3 tuned shapes): 2500 GB/s there"


def test_nearest_shape_uses_log_distance_of_rows_and_cols(store, db_url, device_info):
    wide = put(store, device_info, (1024, 4096), 0)
    tall = put(store, device_info, (4096, 1024), 1)
    assert near(device_info, (1024, 3000), db_url).config == wide
    assert near(device_info, (3000, 1024), db_url).config == tall
    assert near(device_info, (600, 600), db_url).tuned_shape == (4096, 1024)  # a tie: more rows
    # ratios, not differences: 4600 is nearer 8192 than 2048 by ratio (not by difference)
    put(store, device_info, (2048, 2048), 2)
    put(store, device_info, (8192, 8192), 3)
    assert near(device_info, (4600, 4600), db_url).tuned_shape == (8192, 8192)
    assert near(device_info, (4000, 4000), db_url).tuned_shape == (2048, 2048)


@pytest.mark.parametrize("order", [0, 1])
def test_nearest_shape_ties_break_by_area_then_rows_then_cols(db_url, device_info, order):
    store = open_results(db_url)
    shapes = [(2048, 4096), (8192, 4096), (4096, 2048), (4096, 8192)]
    for i, shape in enumerate(shapes if order == 0 else shapes[::-1]):
        put(store, device_info, shape, i)
    # all at distance ln 2 from 4096x4096; the larger area wins, then more rows
    assert near(device_info, (4096, 4096), db_url).tuned_shape == (8192, 4096)
    # same distance and area: more rows wins
    assert near(device_info, (2048, 2048), db_url).tuned_shape == (4096, 2048)


def test_same_arch_prefers_the_same_shape_then_the_nearest(store, db_url, device_info, pcie):
    h800 = replace(pcie, name="NVIDIA H800 PCIe")
    zzz = replace(pcie, name="ZZZ H100")
    put(store, pcie, (4000, 4000), 0)
    put(store, pcie, (512, 512), 1)
    put(store, h800, (4096, 4096), 2)
    same = put(store, zzz, (1000, 3000), 3)
    put(store, replace(device_info, compute_capability="8.0", name="NVIDIA A100"), (1000, 3000), 4)

    got = look(device_info, (1000, 3000), db_url)  # same shape beats name order and nearness
    assert (got.rung, got.source, got.config) == ("same_arch", "tuned", same)
    assert got.tuned_device == "ZZZ H100" and got.tuned_shape == (1000, 3000)
    assert got.note.startswith("tuned for 1000x3000 on ZZZ H100 (same compute capability 9.0, same shape)")

    got = look(device_info, (4096, 4096), db_url)
    assert got.tuned_device == "NVIDIA H800 PCIe" and got.tuned_shape == (4096, 4096)
    got = look(device_info, (3500, 3500), db_url)
    assert got.tuned_device == "NVIDIA H100 PCIe" and got.tuned_shape == (4000, 4000)
    assert got.note.startswith("tuned for 4000x4000 on NVIDIA H100 PCIe (same compute capability 9.0, nearest shape)")


def test_same_arch_ties_break_by_device_name(store, db_url, device_info, pcie):
    for i, name in enumerate(["NVIDIA H800", "NVIDIA GH200", "NVIDIA H100 PCIe"]):
        put(store, replace(pcie, name=name), (2048, 2048), i)
    assert look(device_info, (2048, 2048), db_url).tuned_device == "NVIDIA GH200"


def test_same_gpu_with_another_driver_is_same_arch_another_unit_is_exact(store, db_url, device_info):
    put(store, replace(device_info, driver_version="12.8"), (512, 512), 0)
    got = look(device_info, (512, 512), db_url)
    assert got.rung == "same_arch" and "on another NVIDIA H100 80GB HBM3 (driver 12.8)" in got.note
    unit_a = replace(device_info, uuid="GPU-aaaa")
    put(store, unit_a, (512, 512), 1)
    assert look(unit_a, (512, 512), db_url).rung == "exact"
    # the model is the key: another unit of it uses the same result
    got = look(replace(device_info, uuid="GPU-bbbb", ordinal=1), (512, 512), db_url)
    assert (got.rung, got.config) == ("exact", CONFIGS[1])


def test_another_arch_is_never_used(store, db_url, device_info):
    put(store, replace(device_info, name="NVIDIA A100", compute_capability="8.0"), (512, 512), 0)
    got = look(device_info, (512, 512), db_url)
    assert got.rung == "default" and got.source == "default" and "stale" not in got.note


# --- staleness ------------------------------------------------------------------------

def test_stale_results_are_skipped_and_counted(store, db_url, device_info, pcie):
    current = tuning_key("smem_pad", device_info, (512, 512), "float32").nvcc_version
    put(store, device_info, (512, 512), 0, source_hash="0" * 64)
    put(store, device_info, (512, 512), 1, nvcc_version="11.8.89")
    put(store, pcie, (512, 512), 2, source_hash="1" * 64)
    got = look(device_info, (512, 512), db_url)
    assert got.rung == "default" and got.config == get_kernel("smem_pad").default_config()
    assert got.note.endswith(f"using the kernel's default; skipped 3 stale results "
                             f"(1 built with nvcc 11.8.89, not {current}, 2 kernel source changed)")

    fresh = put(store, device_info, (1024, 1024), 3)
    clear_cache()
    got = near(device_info, (512, 512), db_url)
    assert got.rung == "nearest_shape" and got.config == fresh and "skipped 3 stale results" in got.note
    got = look(device_info, (512, 512), db_url)  # the dispatch reads the current trials only: 1024^2's
    assert got.rung == "dispatch" and got.tuned_shape == (1024, 1024) and "skipped 3 stale results" in got.note


def test_a_kernel_source_change_makes_results_stale(store, db_url, device_info):
    from autotune.store.models import Kernel

    put(store, device_info, (512, 512), 0)
    assert look(device_info, (512, 512), db_url).rung == "exact"
    with store.session() as session:  # as if tuned with the source before today's
        session.query(Kernel).update({Kernel.source_hash: "f" * 64})
    clear_cache()
    got = look(device_info, (512, 512), db_url)
    assert got.rung == "default" and got.note.endswith("skipped 1 stale result (1 kernel source changed)")


def test_an_nvcc_upgrade_makes_results_stale(monkeypatch, store, db_url, device_info, pcie):
    old = tuning_key("smem_pad", device_info, (512, 512), "float32").nvcc_version
    put(store, device_info, (512, 512), 0)
    put(store, pcie, (512, 512), 1)
    monkeypatch.setattr("autotune.measure.device.nvcc_version", lambda nvcc="nvcc": "99.1.0")
    got = look(device_info, (512, 512), db_url)
    assert got.rung == "default"
    assert got.note.endswith(f"skipped 2 stale results (2 built with nvcc {old}, not 99.1.0)")


# --- the cache ------------------------------------------------------------------------

def test_answers_are_cached_until_cleared(db_url, device_info):
    first = look(device_info, (512, 512), db_url)
    tune(db_url, device_info)
    assert look(device_info, (512, 512), db_url) is first
    clear_cache()
    assert look(device_info, (512, 512), db_url).source == "tuned"


def test_warm_lookup_does_not_touch_the_database(monkeypatch, store, db_url, device_info):
    put(store, device_info, (512, 512), 0)
    first = look(device_info, (512, 512), db_url)
    second = look(device_info, [512, 512], db_url, np.dtype("float32"))  # other spellings: cold once

    def refuse(*args, **kwargs):
        raise AssertionError("a warm lookup opened the database")

    for name in ("best", "find_best", "__init__"):
        monkeypatch.setattr(Store, name, refuse)
    monkeypatch.setattr(tuned.TuningKey, "of", refuse)
    assert look(device_info, (512, 512), db_url) is first
    assert look(device_info, (np.int64(512), 512), db_url) is first
    assert look(device_info, [512, 512], db_url, np.dtype("float32")) is second
    assert second.config == first.config
    with pytest.raises(AssertionError):
        look(device_info, (512, 513), db_url)


def test_a_cold_lookup_and_op_choice_import_neither_alembic_nor_optuna(store, db_url, device_info):
    """Reading a database is a first call's cost: no Alembic (the read-only opening reads the
    revision itself) and no Optuna. A fresh process, as this one has both imported."""
    import subprocess
    import sys

    put(store, device_info, (512, 512), 0)
    store.close()
    code = ("import sys\n"
            "from autotune.measure.device import DeviceInfo\n"
            "from autotune.runtime.lookup import lookup\n"
            "from autotune.runtime.transpose.choice import choose_transpose\n"
            f"device = {device_info!r}\n"
            f"print(lookup('smem_pad', (512, 512), device=device, db={db_url!r}).rung)\n"
            f"print(choose_transpose(512, 512, 'float32', device=device, db={db_url!r})[0])\n"
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'alembic', 'optuna'}))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=__file__.rsplit("/tests/", 1)[0])
    rung, kernel, heavy = out.stdout.splitlines()
    assert (rung, heavy) == ("exact", "[]") and kernel, out.stdout


def test_a_device_ordinal_is_queried_once_per_process(monkeypatch, store, db_url, device_info):
    calls = []
    monkeypatch.setattr(tuned, "_devices", {})
    monkeypatch.setattr(tuned, "query_device", lambda ordinal: calls.append(ordinal) or device_info)
    put(store, device_info, (512, 512), 0)
    assert look(0, (512, 512), db_url).rung == "exact"
    clear_cache()
    assert look(0, (512, 512), db_url).rung == "exact"
    assert look(0, (1024, 1024), db_url).rung == "dispatch"
    assert calls == [0]


def test_lookup_is_thread_safe(db_url, device_info):
    tune(db_url, device_info)
    expected = open_results(db_url).best(tuning_key("smem_pad", device_info, (512, 512), "float32")).config
    answers, errors = [], []
    start = threading.Barrier(8)

    def worker():
        try:
            start.wait()  # all eight miss the cold cache together
            for _ in range(20):
                answers.append(look(device_info, (512, 512), db_url))
                answers.append(look(device_info, (600, 600), db_url))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(answers) == 320
    assert {a.config for a in answers} == {expected}
    assert len({id(a) for a in answers}) == 2  # one answer object per key, even for racing cold calls
    assert {a.rung for a in answers} == {"exact", "dispatch"}


# --- bad input ------------------------------------------------------------------------

def test_bad_arguments(db_url, device_info):
    with pytest.raises(InvalidInputError, match="unknown kernel"):
        lookup("transpose9", (4, 4), device=device_info, db=db_url)
    with pytest.raises(InvalidInputError, match="unknown dtype"):
        lookup("smem_pad", (4, 4), "complex64", device=device_info, db=db_url)
    for shape in [(0, 4), (4,), (4, 4, 4), (4.5, 4), ("4", 4)]:
        with pytest.raises(InvalidInputError, match="is not allowed"):
            lookup("smem_pad", shape, device=device_info, db=db_url)
    with pytest.raises(InvalidInputError, match="device"):
        lookup("smem_pad", (4, 4), device="cuda:0", db=db_url)


# --- named dims and kernels that are not in the catalog ---------------------------------

def test_dims_as_a_mapping_or_a_tuple_are_one_key(store, db_url, device_info):
    mine = put(store, device_info, (1024, 4096), 0)
    by_name = lookup("smem_pad", {"cols": 4096, "rows": 1024}, device=device_info, db=db_url)
    assert (by_name.rung, by_name.config, by_name.tuned_dims) == ("exact", mine, (("rows", 1024), ("cols", 4096)))
    assert look(device_info, (1024, 4096), db_url).config == mine
    with pytest.raises(InvalidInputError, match="unknown dim 'depth'; kernel smem_pad takes rows, cols"):
        lookup("smem_pad", {"rows": 4, "cols": 4, "depth": 4}, device=device_info, db=db_url)
    with pytest.raises(InvalidInputError, match="dim 'cols' is missing"):
        lookup("smem_pad", {"rows": 4}, device=device_info, db=db_url)


@dataclass(frozen=True)
class Reduction:
    """A user's 1-D kernel as the kernel model gives it (only what lookup and the store use)."""

    name: str = "reduce_sum"
    dims: tuple = ("n",)
    source_hash: str = "1" * 64
    spec_hash: str = "2" * 64
    tunables: tuple = ("BLOCK_SIZE", "ITEMS")

    def default_config(self) -> Config:
        return Config.of(self.name, {"BLOCK_SIZE": 256, "ITEMS": 4})


def put_reduction(store, kernel, device, n, block, ms=0.1):
    key = tuning_key(kernel, device, {"n": n}, "float32")
    sid = store.start_search(key, study_name=key.study_name, sampler="tpe", seed=None, memcpy_gbps=None)
    config = Config.of(kernel.name, {"BLOCK_SIZE": block, "ITEMS": 4})
    store.record_trial(sid, 0, config, status="ok", measurement=Measurement(ms, ms, ms, None, None, 20, 0, 50))
    return config


def test_a_one_dimensional_user_kernel_climbs_the_same_ladder(store, db_url, device_info, pcie):
    kernel = Reduction()
    near = put_reduction(store, kernel, device_info, 1 << 20, 128)
    put_reduction(store, kernel, device_info, 1 << 24, 512)
    other = put_reduction(store, kernel, pcie, 1 << 10, 64)

    got = lookup(kernel, {"n": 1 << 20}, device=device_info, db=db_url)
    assert (got.rung, got.config, got.tuned_dims, got.gbps) == ("exact", near, (("n", 1 << 20),), None)
    assert got.note.endswith(": 0.1 ms")  # no bytes or flops objective: the time is the figure
    got = lookup(kernel, (1 << 21,), device=device_info, db=db_url,  # ln 2 from 2^20, ln 8 from 2^24
                 shape_rung="nearest_shape")
    assert (got.rung, got.config, got.tuned_shape) == ("nearest_shape", near, (1 << 20,))
    assert got.note == "tuned for 1048576 on this device (nearest of 2 tuned shapes): 0.1 ms there"
    got = lookup(kernel, {"n": 1 << 10}, device=replace(device_info, name="NVIDIA H200"), db=db_url)
    assert (got.rung, got.config) == ("same_arch", other)
    got = lookup(kernel, {"n": 5}, device=replace(device_info, compute_capability="8.0"), db=db_url)
    assert got.rung == "default" and got.config == kernel.default_config()
    assert "nothing tuned for reduce_sum 5 float32" in got.note
    with pytest.raises(InvalidInputError, match=r"kernel reduce_sum takes \(n\)"):
        lookup(kernel, (4, 4), device=device_info, db=db_url)


def test_a_kernel_of_the_same_name_but_another_source_or_description_never_mixes(store, db_url, device_info):
    mine = Reduction()
    put_reduction(store, mine, device_info, 4096, 128)
    for theirs in (replace(mine, source_hash="3" * 64), replace(mine, spec_hash="4" * 64)):
        got = lookup(theirs, {"n": 4096}, device=device_info, db=db_url)
        assert got.rung == "default"
        assert got.note.endswith(("(1 kernel source changed)", "(1 kernel description changed)"))
    assert lookup(mine, {"n": 4096}, device=device_info, db=db_url).rung == "exact"
    assert lookup(replace(mine), {"n": 4096}, device=device_info, db=db_url).rung == "exact"  # an equal object


def test_a_changed_spec_makes_catalog_results_stale(store, db_url, device_info):
    put(store, device_info, (512, 512), 0, spec_hash="0" * 64)
    got = look(device_info, (512, 512), db_url)
    assert got.rung == "default" and got.note.endswith("skipped 1 stale result (1 kernel description changed)")


# Issue 25, cause 13: library entry points raise the project's own errors, naming the argument,
# before any database is opened.

@pytest.mark.parametrize(("kernel", "dims", "dtype", "message"), [
    (None, (64, 64), "float32", "kernel None is not allowed; give a catalog name"),
    (42, (64, 64), "float32", "kernel 42 is not allowed"),
    ("", (64, 64), "float32", "kernel '' is not allowed"),
    ("smem_pad", (64, 64), None, "dtype None is not allowed; allowed: int8"),
    ("smem_pad", (64, 64), object(), "dtype <object object at"),
    ("smem_pad", None, "float32", "dims None are not allowed"),
])
def test_lookup_refuses_bad_arguments_naming_them(kernel, dims, dtype, message, device_info, tmp_path):
    url = f"sqlite:///{tmp_path / 'never.db'}"
    with pytest.raises(InvalidInputError, match=message.replace("(", r"\(")):
        lookup(kernel, dims, dtype, device=device_info, db=url)
    assert not (tmp_path / "never.db").exists()


@pytest.mark.parametrize(("options", "message"), [
    ({"seed": -1}, "seed -1 is not allowed; give an integer 0..4294967295"),
    ({"seed": 2**40}, "seed 1099511627776 is not allowed"),
    ({"seed": True}, "seed True is not allowed"),
    ({"timeout": float("nan")}, "timeout nan is not allowed"),
    ({"timeout": float("inf")}, "timeout inf is not allowed"),
])
def test_tune_refuses_bad_options_before_anything_is_opened(options, message, tmp_path):
    from autotune import tune

    with pytest.raises(InvalidInputError, match=f"^{message}"):  # the library names the parameter
        tune("smem_pad", (64, 64), db=f"sqlite:///{tmp_path / 'never.db'}", **options)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("args", "said"), [
    (("nosuch", (64, 64), "float32"), "unknown kernel 'nosuch'"),
    (("smem_pad", (64, 64, 3), "float32"), "shape (64, 64, 3) is not allowed"),
    (("smem_pad", (64, 64), "float17"), "float17"),
])
def test_a_typo_is_said_before_a_missing_driver(args, said, monkeypatch):
    """Issue 49 item 7: without a GPU a bad name was answered with the missing CUDA driver."""
    from autotune.errors import no_driver

    def no_gpu(ordinal):
        raise no_driver("libcuda.so.1: cannot open shared object file")

    monkeypatch.setattr(tuned, "query_device", no_gpu)
    monkeypatch.setattr(tuned, "_devices", {})  # device info outlives clear_cache: another test's fake GPU
    clear_cache()
    with pytest.raises(InvalidInputError, match=re.escape(said)):
        lookup(*args, device=0)
    with pytest.raises(GPUUnavailableError, match=r"^the CUDA driver \(libcuda.so.1\) cannot be loaded"):
        lookup("smem_pad", (64, 64), "float32", device=0)
