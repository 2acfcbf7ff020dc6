"""Matrix products through the whole CPU-testable path: CLI shape options and their errors,
search -> store -> best with the fake matmul benchmark, lookup with (M, N, K), export/import
of K (named dims m, n, k), and the migration of an older database."""

from __future__ import annotations

import contextlib
import json
import sqlite3

import pytest

from autotune.store.opening import open_results
from typer.testing import CliRunner

from autotune.kernel.catalog import get_kernel
from autotune import clear_cache, lookup
from autotune.measure import benchmark, device
from autotune.cli import app
from autotune.kernel.dtypes import get_dtype
from autotune.errors import InvalidInputError
from autotune.store.key import tuning_key
from autotune.interchange.share import export_results, import_results, read_results
from autotune.store.schema import head_revision
from autotune.search.options import SearchOptions
from autotune.search.tuner import search

from fakes import FakeMatmulBench

runner = CliRunner()


@pytest.fixture
def fake_gpu(monkeypatch, device_info):
    opened = []

    @contextlib.contextmanager
    def open_benchmark(ordinal, problem, measure=None, also=()):
        m, n, k = problem.shape
        opened.append((m, n, k, problem.dtype.name))
        yield FakeMatmulBench(device_info, m, n, k, problem.dtype, problem.kernel)

    monkeypatch.setattr(benchmark, "open_benchmark", open_benchmark)
    monkeypatch.setattr(device, "query_device", lambda ordinal: device_info)  # bench asks before the database
    return opened


def run(*args):
    result = runner.invoke(app, [str(a) for a in args])
    assert "Traceback" not in result.output, result.output
    return result


def test_search_of_a_product_is_stored_and_best_returns_it(fake_gpu, db_url):
    r = run("search", "--kernel", "matmul_tiled", "--size", 512, "--sampler", "grid", "--db", db_url)
    assert r.exit_code == 0, r.output
    assert fake_gpu == [(512, 512, 512, "float32")]
    assert "matmul_tiled 512x512x512 (m=512,n=512,k=512) float32" in r.output and "GFLOP/s" in r.output and "3 ok" in r.output
    assert "best: TILE_WIDTH=32  20000 GFLOP/s" in r.output

    r = run("search", "--kernel", "matmul_reg", "--m", 300, "--n", 200, "--k", 100, "--trials", 5, "--seed", 1,
            "--db", db_url)
    assert r.exit_code == 0, r.output
    assert fake_gpu[-1] == (300, 200, 100, "float32")

    r = run("best", "--kernel", "matmul_tiled", "--size", 512, "--db", db_url)
    assert r.exit_code == 0, r.output
    assert "512x512x512" in r.output and "TILE_WIDTH=32" in r.output and "20000" in r.output
    r = run("best", "--m", 300, "--n", 200, "--k", 100, "--db", db_url)
    assert r.exit_code == 0 and "matmul_reg" in r.output and "300x200x100" in r.output
    r = run("best", "--size", 512, "--db", db_url)  # --size alone: transposes and products of that size
    assert r.exit_code == 0 and "matmul_tiled" in r.output
    r = run("best", "--kernel", "matmul_tiled", "--m", 512, "--n", 512, "--k", 256, "--db", db_url)
    assert r.exit_code == 2 and "nothing is tuned for matmul_tiled 512x512x256" in r.output
    assert "--m 512 --n 512 --k 256" in r.output
    r = run("list", "--db", db_url)
    assert r.exit_code == 0 and "512x512x512" in r.output and "300x200x100" in r.output


@pytest.mark.parametrize("args, message", [
    (["search", "--kernel", "smem_pad", "--size", 64, "--k", 64], "--k is not a dim of kernel smem_pad; it takes rows, cols"),
    (["search", "--kernel", "matmul_tiled", "--rows", 64, "--cols", 64], "--rows is not a dim of kernel matmul_tiled"),
    (["search", "--kernel", "matmul_tiled", "--m", 64, "--n", 64], "dim k is missing; kernel matmul_tiled takes m, n, k"),
    (["search", "--kernel", "matmul_tiled", "--m", 0, "--n", 4, "--k", 4], "--m 0 is not allowed"),
    (["search", "--kernel", "matmul_reg", "--size", 64, "--dtype", "float16"], "does not support dtype 'float16'"),
    (["sweep", "--kernel", "matmul_naive", "--cols", 64], "--cols is not a dim of kernel matmul_naive"),
    (["bench", "--kernel", "matmul_tiled", "--kernel", "smem_pad", "--size", 64], "not of the same kind"),
    (["bench", "--kernel", "copy_row", "--m", 4, "--n", 4, "--k", 4], "--m is not a dim of kernel copy_row"),
    (["bench", "--m", 4, "--n", 4, "--k", 4, "--dtype", "int8"],
     "no catalog kernel of dims m, n, k takes dtype 'int8'; allowed: float32"),
    (["best", "--kernel", "matmul_reg", "--rows", 4, "--cols", 4], "--rows is not a dim of kernel matmul_reg; it takes m, n, k"),
    (["best", "--kernel", "smem", "--n", 4], "--n is not a dim of kernel smem; it takes rows, cols"),
    (["best", "--kernel", "matmul_reg", "--m", 4, "--n", 4], "dim k is missing; kernel matmul_reg takes m, n, k"),
    (["best", "--k", 4], "dim m is missing; kernel matmul_naive takes m, n, k"),
    (["report", "--out", "never_written", "--kernel", "matmul_tiled"], "no trials of matmul_tiled"),
])
def test_contradictory_shape_options_are_one_line_errors(fake_gpu, db_url, args, message):
    open_results(db_url).close()  # an existing, empty database (report refuses a missing one before its own checks)
    r = run(*args, "--db", db_url)
    assert r.exit_code == 2, r.output
    assert r.output.startswith("error: ") and message in r.output and r.output.count("\n") == 1
    assert fake_gpu == []


def tune(db_url, device_info, m, n, k, kernel="matmul_reg", trials=8):
    key = tuning_key(kernel, device_info, (m, n, k), "float32")
    bench = FakeMatmulBench(device_info, m, n, k, get_dtype("float32"))
    search(key, get_kernel(kernel).space(), bench.measure, open_results(db_url),
           SearchOptions(trials=trials, seed=3))
    return key


def test_lookup_takes_m_n_k_and_climbs_the_ladder_by_k_too(db_url, device_info):
    clear_cache()
    tune(db_url, device_info, 1024, 1024, 1024)
    tune(db_url, device_info, 1024, 1024, 64)
    exact = lookup("matmul_reg", (1024, 1024, 1024), device=device_info, db=db_url)
    assert exact.rung == "exact" and exact.tuned_shape == (1024, 1024, 1024) and "GFLOP/s" in exact.note
    assert exact.gflops > 0
    near = lookup("matmul_reg", (1024, 1024, 512), device=device_info, db=db_url, shape_rung="nearest_shape")
    assert near.rung == "nearest_shape" and near.tuned_shape == (1024, 1024, 1024)  # ln 2 nearer than ln 8
    assert "tuned for 1024x1024x1024 on this device (nearest of 2 tuned shapes)" in near.note
    dispatched = lookup("matmul_reg", (1024, 1024, 512), device=device_info, db=db_url)
    assert dispatched.rung == "dispatch" and dispatched.tuned_shape == (1024, 1024, 1024)
    assert "dispatch of 2 tuned shapes on this device" in dispatched.note
    default = lookup("matmul_tiled", (64, 64, 64), device=device_info, db=db_url)
    assert default.rung == "default" and "64x64x64" in default.note
    with pytest.raises(InvalidInputError, match="kernel matmul_reg takes \\(m, n, k\\)"):
        lookup("matmul_reg", (1024, 1024), device=device_info, db=db_url)
    with pytest.raises(InvalidInputError, match="kernel smem_pad takes \\(rows, cols\\)"):
        lookup("smem_pad", (1024, 1024, 1024), device=device_info, db=db_url)
    clear_cache()


def test_export_and_import_carry_k_and_gflops(db_url, device_info, tmp_path):
    tune(db_url, device_info, 512, 256, 128)
    path = tmp_path / "tuned.json"
    assert export_results(open_results(db_url), path).exported == 1
    entry = json.loads(path.read_text())["results"][0]
    assert entry["dims"] == "m=512,n=256,k=128" and entry["measurement"]["gflops"] > 0
    assert entry["measurement"]["pct_memcpy"] is None
    other = open_results(f"sqlite:///{tmp_path / 'other.db'}")
    assert import_results(other, path).imported == 1
    (best,) = other.find_best()
    assert (best.dims, best.gflops) == ((("m", 512), ("n", 256), ("k", 128)), entry["measurement"]["gflops"])

    for dims, message in (("m=512,n=256", "kernel matmul_reg has the dims m, n, k"),
                          ("rows=512,cols=256", "kernel matmul_reg has the dims m, n, k")):
        entry["dims"] = dims
        path.write_text(json.dumps({**json.loads(path.read_text()), "results": [entry]}))
        with pytest.raises(InvalidInputError, match=message):
            read_results(path)


def test_a_version_1_export_with_and_without_depth_still_imports(db_url, device_info, tmp_path):
    from fakes import FakeTimer

    key = tuning_key("smem_pad", device_info, (256, 256), "float32")
    search(key, get_kernel("smem_pad").space(), FakeTimer(), open_results(db_url),
           SearchOptions(trials=3, seed=1))
    tune(db_url, device_info, 512, 256, 128)
    path = tmp_path / "old.json"
    export_results(open_results(db_url), path)
    document = json.loads(path.read_text())
    for entry in document["results"]:  # what the previous releases wrote: rows, cols (depth), no spec hash
        values = [int(part.split("=")[1]) for part in entry.pop("dims").split(",")]
        entry["rows"], entry["cols"] = values[:2]
        if len(values) == 3:
            entry["depth"] = values[2]
            m, n, k = values  # 0.1 stored a product's GB/s of its three float32 matrices
            entry["measurement"]["gbps"] = (m * k + k * n + m * n) * 4 / (entry["measurement"]["median_ms"] * 1e6)
        else:
            del entry["measurement"]["gflops"]  # (nor gflops, before the matrix products)
        del entry["kernel"]["spec_hash"]
    path.write_text(json.dumps({**document, "schema_version": 1}))
    other = open_results(f"sqlite:///{tmp_path / 'other.db'}")
    assert import_results(other, path).imported == 2
    assert sorted(b.dims for b in other.find_best()) == [(("m", 512), ("n", 256), ("k", 128)),
                                                        (("rows", 256), ("cols", 256))]
    product = next(e for e in document["results"] if "depth" in e)
    for depth, message in ((0, "needs K >= 1"), (None, "needs K >= 1")):
        product["depth"] = depth
        path.write_text(json.dumps({**document, "schema_version": 1, "results": [product]}))
        with pytest.raises(InvalidInputError, match=message):
            read_results(path)


def test_a_database_of_revision_0003_upgrades_and_its_bench_run_gets_named_dims(tmp_path, device_info):
    from fakes import FakeTimer

    db = tmp_path / "old.db"
    url = f"sqlite:///{db}"
    old = open_results(url, "unmigrated")
    old.upgrade("0003")
    con = sqlite3.connect(db)
    con.execute("insert into autotune_devices (name, compute_capability, sm_count, total_memory, driver_version,"
                " cuda_version, uuid) values ('NVIDIA H100 80GB HBM3', '9.0', 132, 85000000000, '13.0', '13.0', '')")
    con.execute("insert into autotune_bench_runs (device_id, rows, cols, dtype, nvcc_version, memcpy_gbps, l2_mode,"
                " created_at) values (1, 64, 64, 'float32', '13.0.88', 2900.0, 'single', '2026-11-22 10:00:00')")
    con.commit()
    con.close()
    old.close()
    store = open_results(url)
    assert store.backup is not None and store.current_revision() == head_revision()
    con = sqlite3.connect(db)
    assert con.execute("select dims from autotune_bench_runs").fetchall() == [("rows=64,cols=64",)]
    con.close()
    key = tuning_key("smem_pad", device_info, (64, 64), "float32")
    search(key, get_kernel("smem_pad").space(), FakeTimer(), store, SearchOptions(trials=2, seed=1))
    assert store.best(key).dims == (("rows", 64), ("cols", 64))  # the old device row is reused


def test_matmul_bench_shows_default_tuned_and_the_vendor_line_and_stores_them(fake_gpu, db_url, monkeypatch):
    from sqlalchemy import select

    from autotune.measure import vendor
    from autotune.store.models import BenchRow, BenchRun

    assert run("search", "--kernel", "matmul_tiled", "--size", 256, "--sampler", "grid", "--db", db_url).exit_code == 0

    def fake_vendor(bench, libraries=vendor.LIBRARIES):  # cuBLAS at 40000 GFLOP/s
        d = bench.dim_values
        ms = 2 * d["m"] * d["n"] * d["k"] / 40000e9 * 1e3
        return vendor.VendorResult("cuBLAS via CuPy (cupy.matmul)", ms, 40000.0)

    monkeypatch.setattr(vendor, "vendor_matmul", fake_vendor)
    r = run("bench", "--kernel", "matmul_naive", "--kernel", "matmul_tiled", "--size", 256, "--db", db_url)
    assert r.exit_code == 0, r.output
    assert fake_gpu[-1] == (256, 256, 256, "float32") and "% vendor" in r.output
    # tiled: default 16 (18000 GFLOP/s, 45.0 % of 40000) and tuned 32 (20000, 50.0 %)
    assert "matmul_tiled (default)" in r.output and "matmul_tiled (tuned)" in r.output
    assert "18000" in r.output and "45.0" in r.output and "50.0" in r.output and "100.0" in r.output
    with open_results(db_url).session() as s:
        run_ = s.scalars(select(BenchRun)).one()
        assert (run_.dims, run_.memcpy_gbps) == ("m=256,n=256,k=256", None)
        lines = s.scalars(select(BenchRow).order_by(BenchRow.position)).all()
        assert [(line.name, line.kind, line.source) for line in lines] == [
            ("matmul_naive", "kernel", "default"), ("matmul_tiled", "kernel", "default"),
            ("matmul_tiled", "kernel", "tuned"), ("cuBLAS via CuPy (cupy.matmul)", "vendor", None)]
        assert [line.gflops for line in lines][1:] == pytest.approx([18000.0, 20000.0, 40000.0])


def test_without_cupy_or_torch_the_vendor_line_says_so():
    from autotune.measure.vendor import vendor_matmul

    class Shape:
        dim_values = {"m": 8, "n": 8, "k": 8}
        dtype = get_dtype("float32")

    result = vendor_matmul(Shape(), libraries=("autotune_no_such_library",))
    assert result.gflops is None and result.note == "not measured: autotune_no_such_library is not installed"
    both = vendor_matmul(Shape(), libraries=("autotune_no_such_a", "autotune_no_such_b"))
    assert both.note == "not measured: neither autotune_no_such_a nor autotune_no_such_b is installed"
