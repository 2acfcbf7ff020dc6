"""``autotune report``: the plots, the data behind the heatmap, and what happens when data is missing."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from autotune.store.opening import open_results
from typer.testing import CliRunner

from autotune.errors import NotTunedError
from autotune.report.bench import BenchLine
from autotune.cli import app
from autotune.kernel.config import Config
from autotune.kernel.dtypes import get_dtype
from autotune.kernel.catalog import get_kernel
from autotune.store.key import ProblemKey, TuningKey
from autotune.measure.measurement import Decision, Measurement, Retiming
from autotune.report.plots import DPI, FIGSIZE, heatmap_data, largest_shape, scaling_data
from autotune.store.repository import Store

runner = CliRunner()
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
MEMCPY = 3000.0
TILES = (8, 16, 32, 64)
BLOCK_ROWS = (1, 2, 4, 8, 16, 32)


def run(*args):
    result = runner.invoke(app, [str(a) for a in args])
    assert "Traceback" not in result.output, result.output
    return result


def key_of(device, kernel: str, rows: int, cols: int, dtype: str = "float32", source: str | None = None) -> TuningKey:
    k = get_kernel(kernel)
    arch = "sm_" + device.compute_capability.replace(".", "")  # the flags of the device's own architecture
    return TuningKey(device, ProblemKey(k.name, source or k.source_hash, k.spec_hash,
                                        (("rows", rows), ("cols", cols)), dtype),
                     "13.0.88", f"-O3 -arch={arch}")


def measurement(rows: int, cols: int, gbps: float, itemsize: int = 4) -> Measurement:
    ms = 2 * rows * cols * itemsize / (gbps * 1e9) * 1e3
    return Measurement(ms, ms * 0.99, ms * 1.02, gbps, 100 * gbps / MEMCPY, 20, 4000, 50, 100 * gbps / 2950, 1.0)


def landscape(m: dict[str, int]) -> float:
    """A made-up bandwidth: best at 64x8, IPAD=1, DIAGONAL=0."""
    gbps = 2900.0 - 120 * abs(m["TILE_DIM"].bit_length() - 7) - 90 * abs(m["BLOCK_ROWS"].bit_length() - 4)
    return gbps - 300 * (m.get("IPAD", 1) == 0) - 40 * m.get("DIAGONAL", 0) - 15 * abs(m.get("IPAD", 1) - 1)


def grid(kernel: str = "smem_pad"):
    """Configs of ``kernel`` over TILES x BLOCK_ROWS (and IPAD, DIAGONAL where tunable)."""
    tunables = get_kernel(kernel).tunables
    for t in TILES:
        for b in BLOCK_ROWS:
            if t % b or t * b > 1024:
                continue
            for ipad in ((0, 1, 2) if "IPAD" in tunables else (None,)):
                for diagonal in ((0, 1) if "DIAGONAL" in tunables else (None,)):
                    m = {"TILE_DIM": t, "BLOCK_ROWS": b, "IPAD": ipad, "DIAGONAL": diagonal}
                    yield {k: v for k, v in m.items() if v is not None}


def failing(m: dict[str, int]) -> bool:
    """Planted failures: the whole 64x16 block shape (a blank cell), and 8x1 with DIAGONAL=1."""
    return (m["TILE_DIM"], m["BLOCK_ROWS"]) == (64, 16) or ((m["TILE_DIM"], m["BLOCK_ROWS"]) == (8, 1)
                                                           and m.get("DIAGONAL") == 1)


def add_search(store: Store, key: TuningKey, configs, gbps=landscape, memcpy: float | None = MEMCPY) -> list[Config]:
    """A finished search of ``key`` measuring ``configs``; returns the ok configs."""
    sid = store.start_search(key, study_name=key.study_name, sampler="grid", seed=1, memcpy_gbps=memcpy,
                             copy_gbps=None if memcpy is None else memcpy - 50, l2_mode="single")
    ok = []
    for number, m in enumerate(configs):
        config = Config.of(key.kernel, m)
        if failing(m):
            store.record_trial(sid, number, config, status="resources", reason="planted")
        else:
            store.record_trial(sid, number, config, status="ok", measurement=measurement(*key.shape, gbps(m)))
            ok.append(config)
    store.finish_search(sid, "finished")
    return ok


def retime(store: Store, key: TuningKey, config: Config, pooled_gbps: float) -> None:
    """Make ``config`` the key's best with a pooled re-timing of ``pooled_gbps``."""
    ms = 2 * key.dim("rows") * key.dim("cols") * 4 / (pooled_gbps * 1e9) * 1e3
    r = Retiming(config, (ms * 0.999, ms, ms * 1.001), ms)
    store.set_winner(key, Decision(r, r, (r,)), rounds=3)


BENCH_LINES = [
    BenchLine("cudaMemcpy device-to-device", "memcpy", 0.18, MEMCPY, 100.0),
    BenchLine("copy_row", "kernel", 0.183, 2941.0, 98.0, "BLOCK_ROWS=8,TILE_DIM=32", "default"),
    BenchLine("copy_row", "kernel", 0.182, 2955.0, 98.5, "BLOCK_ROWS=4,TILE_DIM=32", "tuned"),
    BenchLine("copy_col", "kernel", 0.6, 890.0, 29.7, "BLOCK_ROWS=8,TILE_DIM=32", "default=tuned"),
    BenchLine("naive_row", "kernel", 0.4, 1340.0, 44.7, "BLOCK_ROWS=8,TILE_DIM=32", "default"),
    BenchLine("naive_col", "kernel", None, None, None, "BLOCK_ROWS=8,TILE_DIM=32", "default",
              note="wrong_result: planted"),
    BenchLine("smem", "kernel", 0.25, 2150.0, 71.7, "BLOCK_ROWS=8,DIAGONAL=0,TILE_DIM=32", "default"),
    BenchLine("smem_pad", "kernel", 0.1945, 2760.0, 92.0, "BLOCK_ROWS=8,DIAGONAL=0,IPAD=1,TILE_DIM=32", "default"),
    BenchLine("smem_pad", "kernel", 0.1869, 2873.0, 95.8, "BLOCK_ROWS=8,DIAGONAL=0,IPAD=1,TILE_DIM=64", "tuned"),
    BenchLine("numpy.ascontiguousarray(a.T) on the CPU", "cpu", 180.0, 2.98, 0.1),
    BenchLine("host-to-device (pageable)", "transfer", 25.0, 10.7),
]


def add_bench(store: Store, device, rows: int, cols: int, dtype: str = "float32", lines=BENCH_LINES,
              memcpy: float = MEMCPY) -> int:
    return store.save_bench_run(device, {"rows": rows, "cols": cols}, get_dtype(dtype).name, "13.0.88", memcpy,
                                "rotating", lines)


def populate(store: Store, device) -> dict:
    """The sample database: smem_pad searched on four shapes (the largest, 8192x8192, on the whole
    grid, with planted failures), one best re-timed, and a bench run of 8192x8192."""
    ok = add_search(store, key_of(device, "smem_pad", 8192, 8192), list(grid()))
    small = [m for m in grid() if m["TILE_DIM"] in (32, 64) and m["BLOCK_ROWS"] in (4, 8)]
    for rows, cols, scale in ((1024, 1024, 0.55), (2048, 8192, 0.93), (4096, 4096, 0.95)):
        add_search(store, key_of(device, "smem_pad", rows, cols), small, gbps=lambda m, s=scale: s * landscape(m),
                   memcpy=MEMCPY * (0.6 if rows == 1024 else 0.98))
    key = key_of(device, "smem_pad", 4096, 4096)
    retime(store, key, Config.of("smem_pad", {"TILE_DIM": 64, "BLOCK_ROWS": 8, "IPAD": 1, "DIAGONAL": 0}), 2810.0)
    add_bench(store, device, 8192, 8192)
    return {"ok": ok}


def assert_png(path: Path, kind: str) -> None:
    import matplotlib.image

    assert path.is_file(), path
    assert path.read_bytes()[:8] == PNG_SIGNATURE
    image = matplotlib.image.imread(path)
    width, height = FIGSIZE[kind]
    assert image.shape[:2] == (round(height * DPI), round(width * DPI))


def test_report_writes_the_three_plots(store, db_url, device_info, tmp_path):
    populate(store, device_info)
    out = tmp_path / "plots" / "new"  # created, parents too
    r = run("report", "--out", out, "--db", db_url)
    assert r.exit_code == 0, r.output
    names = {"heatmap": "heatmap_smem_pad_8192x8192_float32.png", "kernels": "kernels_8192x8192_float32.png",
             "scaling": "scaling_smem_pad_float32.png"}
    for kind, name in names.items():
        assert_png(out / name, kind)
        assert str(out / name) in r.output
    assert "skipped" not in r.output
    assert sorted(p.name for p in out.iterdir()) == sorted(names.values())


def test_heatmap_cells_are_the_best_over_the_other_macros(store, device_info):
    ok = populate(store, device_info)["ok"]
    data = heatmap_data(store, "smem_pad", {"rows": 8192, "cols": 8192}, "float32")
    expected: dict[tuple[int, int], float] = {}
    for c in ok:
        cell = (c["TILE_DIM"], c["BLOCK_ROWS"])
        expected[cell] = max(expected.get(cell, 0.0), landscape(c.as_dict()))
    assert data.cells == pytest.approx(expected)
    assert (data.x_macro, data.y_macro, data.figure.unit) == ("TILE_DIM", "BLOCK_ROWS", "GB/s")
    assert (64, 16) not in data.cells and 16 in data.ys  # tried, all failed: a blank cell
    assert (8, 1) in data.cells  # DIAGONAL=1 failed there, DIAGONAL=0 did not
    assert data.xs == TILES and data.ys == BLOCK_ROWS
    assert data.other_macros == ("DIAGONAL", "IPAD")
    assert data.best == ((64, 8), pytest.approx(2900.0))
    assert data.configs[(64, 8)] == "BLOCK_ROWS=8,DIAGONAL=0,IPAD=1,TILE_DIM=64"
    # the best over IPAD and DIAGONAL, not e.g. the IPAD=0 or DIAGONAL=1 trial of the cell
    assert data.cells[(32, 4)] == pytest.approx(landscape({"TILE_DIM": 32, "BLOCK_ROWS": 4, "IPAD": 1, "DIAGONAL": 0}))
    assert data.ok_trials == len(ok) and data.failed_trials == len(list(grid())) - len(ok)
    assert data.device == device_info.name and data.source_hash == get_kernel("smem_pad").source_hash


def test_heatmap_uses_the_latest_kernel_source_and_one_device(store, device_info):
    configs = [{"TILE_DIM": 32, "BLOCK_ROWS": 8, "IPAD": 1, "DIAGONAL": 0}]
    other = dataclasses.replace(device_info, name="NVIDIA A100-SXM4-40GB", compute_capability="8.0")
    add_search(store, key_of(device_info, "smem_pad", 512, 512, source="0" * 64), configs, gbps=lambda m: 9999.0)
    add_search(store, key_of(other, "smem_pad", 512, 512), configs, gbps=lambda m: 1500.0)
    add_search(store, key_of(device_info, "smem_pad", 512, 512), configs, gbps=lambda m: 2500.0)
    latest = heatmap_data(store, "smem_pad", (("rows", 512), ("cols", 512)), "float32")
    assert latest.cells == {(32, 8): 2500.0} and latest.device == device_info.name  # not the old source's 9999
    a100 = heatmap_data(store, "smem_pad", (("rows", 512), ("cols", 512)), "float32", device="a100")
    assert a100.cells == {(32, 8): 1500.0} and a100.device == other.name


def test_scaling_uses_pooled_figures_and_each_search_memcpy(store, device_info):
    populate(store, device_info)
    data = scaling_data(store, "smem_pad", "float32")
    assert [p.shape for p in data.points] == [(1024, 1024), (2048, 8192), (4096, 4096), (8192, 8192)]
    assert data.figure.unit == "GB/s"
    pooled = {p.shape: (p.value, p.pooled, p.memcpy_gbps) for p in data.points}
    assert pooled[(4096, 4096)] == (pytest.approx(2810.0), True, pytest.approx(MEMCPY * 0.98))
    assert pooled[(8192, 8192)] == (pytest.approx(2900.0), False, MEMCPY)
    assert pooled[(1024, 1024)][2] == pytest.approx(MEMCPY * 0.6)


def test_largest_shape_then_bench_runs(store, device_info):
    assert largest_shape(store, "smem_pad", "float32") is None
    add_bench(store, device_info, 300, 200)
    assert largest_shape(store, "smem_pad", "float32") == (("rows", 300), ("cols", 200))  # no search: the bench's
    populate(store, device_info)
    assert largest_shape(store, "smem_pad", "float32") == (("rows", 8192), ("cols", 8192))
    assert largest_shape(store, "smem_pad", "float64") is None


def test_missing_bench_run_is_skipped_with_a_note(store, db_url, device_info, tmp_path):
    add_search(store, key_of(device_info, "smem_pad", 8192, 8192), list(grid()))
    r = run("report", "--out", tmp_path / "out", "--db", db_url)
    assert r.exit_code == 0, r.output
    assert "no bench run for 8192x8192 float32: run autotune bench --size 8192" in r.output
    assert ("skipped: one tuned shape of smem_pad float32 (8192x8192): a scaling plot needs two or more; run "
            "autotune search --kernel smem_pad --size N for another size") in r.output
    assert_png(tmp_path / "out" / "heatmap_smem_pad_8192x8192_float32.png", "heatmap")
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["heatmap_smem_pad_8192x8192_float32.png"]


def test_shape_without_data_keeps_the_scaling_plot(store, db_url, device_info, tmp_path):
    populate(store, device_info)
    r = run("report", "--rows", 512, "--cols", 256, "--out", tmp_path, "--db", db_url)
    assert r.exit_code == 0, r.output
    assert "no trials of smem_pad 512x256 float32: run autotune search --kernel smem_pad --rows 512 --cols 256" in r.output
    assert "no bench run for 512x256 float32: run autotune bench --rows 512 --cols 256" in r.output
    assert sorted(p.name for p in tmp_path.glob("*.png")) == ["scaling_smem_pad_float32.png"]


def test_bench_run_alone_gives_the_kernels_plot(store, db_url, device_info, tmp_path):
    add_bench(store, device_info, 1000, 3000, "float64")
    r = run("report", "--kernel", "naive_row", "--dtype", "float64", "--out", tmp_path, "--db", db_url)
    assert r.exit_code == 0, r.output
    assert "no trials of naive_row 1000x3000 float64: run autotune search --kernel naive_row" in r.output
    assert "no tuned result of naive_row float64" in r.output
    assert_png(tmp_path / "kernels_1000x3000_float64.png", "kernels")
    assert [p.name for p in tmp_path.glob("*.png")] == ["kernels_1000x3000_float64.png"]


def test_latest_bench_run_of_the_device_is_plotted(store, db_url, device_info, tmp_path):
    from autotune.report.plots import bench_data

    other = dataclasses.replace(device_info, name="NVIDIA A100-SXM4-40GB", compute_capability="8.0")
    first = add_bench(store, device_info, 2048, 2048)
    a100 = add_bench(store, other, 2048, 2048, memcpy=1300.0)
    square = {"rows": 2048, "cols": 2048}
    assert bench_data(store, square, "float32").run_id == a100
    assert bench_data(store, square, "float32", device="h100").run_id == first
    data = bench_data(store, square, "float32", device="H100")
    assert (data.bound("copy_row"), data.bound("copy_col"), data.bound("naive_col")) == (2955.0, 890.0, None)
    r = run("report", "--size", 2048, "--device", "h100", "--out", tmp_path, "--db", db_url)
    assert r.exit_code == 0, r.output
    assert_png(tmp_path / "kernels_2048x2048_float32.png", "kernels")


def test_nothing_to_plot_is_an_error(db_url, tmp_path):
    r = run("report", "--out", tmp_path / "out", "--db", db_url)  # no database: refused, nothing created
    assert r.exit_code == 2 and r.output.startswith("error: nothing is tuned yet; run: "), r.output
    assert "(no results database at " in r.output
    assert not (tmp_path / "out").exists()
    open_results(db_url).close()  # an empty database: nothing to plot
    r = run("report", "--out", tmp_path / "out", "--db", db_url)
    assert r.exit_code == 2
    assert "error: nothing to plot" in r.output
    assert "run autotune search --kernel smem_pad --size N" in r.output
    assert not (tmp_path / "out").exists()

    r = run("report", "--size", 1024, "--dtype", "int8", "--out", tmp_path / "out", "--db", db_url)
    assert r.exit_code == 2
    assert "no trials of smem_pad 1024x1024 int8" in r.output
    assert "no bench run for 1024x1024 int8: run autotune bench --size 1024 --dtype int8" in r.output
    assert "no tuned result of smem_pad int8" in r.output


def test_bad_input(db_url, tmp_path):
    r = run("report", "--kernel", "smem_padd", "--out", tmp_path, "--db", f"sqlite:///{tmp_path / 'never.db'}")
    assert r.exit_code == 2 and "smem_padd" in r.output
    assert not (tmp_path / "never.db").exists()
    a_file = tmp_path / "file.png"
    a_file.write_bytes(b"x")
    assert run("report", "--out", a_file, "--db", db_url).exit_code == 2
    r = run("report", "--rows", 64, "--out", tmp_path, "--db", db_url)
    assert r.exit_code == 2 and "dim cols is missing" in r.output
    r = run("report", "--dims", "n=64", "--out", tmp_path, "--db", db_url)
    assert r.exit_code == 2 and "--dims n is not a dim of kernel smem_pad" in r.output


def test_importing_autotune_does_not_import_matplotlib():
    code = ("import sys, autotune, autotune.cli, autotune.report.plots; "
            "assert not [m for m in sys.modules if m.startswith('matplotlib')]")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parents[2])


def test_a_matrix_product_is_plotted_in_gflops(store, db_url, device_info, tmp_path):
    from autotune.store.key import tuning_key

    def product_ms(m):
        return 0.5 / (1 + (m["BM"] == 128) + (m["TM"] == 8))

    k = get_kernel("matmul_reg")
    key = tuning_key(k, device_info, (256, 256, 256), "float32")
    sid = store.start_search(key, study_name=key.study_name, sampler="grid", seed=1, memcpy_gbps=None)
    configs = list(k.space().configs())[:12]
    for number, config in enumerate(configs):
        ms = product_ms(config.as_dict())
        store.record_trial(sid, number, config, status="ok", measurement=Measurement(
            ms, ms, ms, 1.0 / ms, None, 64, 8192, 50, None, 0.5, 2 * 256**3 / (ms * 1e-3) / 1e9))
    data = heatmap_data(store, k, key.dims, "float32")
    assert data.figure.unit == "GFLOP/s" and {data.x_macro, data.y_macro} <= set(k.tunables)
    assert data.best[1] == pytest.approx(max(2 * 256**3 / (product_ms(c.as_dict()) * 1e-3) / 1e9 for c in configs))
    r = run("report", "--kernel", "matmul_reg", "--out", tmp_path, "--db", db_url)
    assert r.exit_code == 0, r.output
    assert_png(tmp_path / "heatmap_matmul_reg_256x256x256_float32.png", "heatmap")
    assert "no bench run for 256x256x256 float32: run autotune bench --size 256" in r.output
    assert "one tuned shape of matmul_reg float32 (256x256x256)" in r.output  # one point is no scaling plot
    assert not data.excluded & data.tried


def test_excluded_cells_are_those_no_valid_config_has(store, device_info):
    from autotune.report.data import excluded_cells

    k = get_kernel("matmul_reg")
    pairs = {(c["BK"], c["BM"]) for c in k.space().configs()}
    every = {(bk, bm) for bk in (8, 16, 32) for bm in (64, 128)}
    assert excluded_cells(k, "BK", "BM", every) == every - pairs == {(32, 128)}  # BK * (BM + 1 + BN) * 8 > 48 KiB
    assert excluded_cells(k, "BK", "BM", {(8, 64), (7, 64)}) == frozenset()  # 7 is no value of the space: not judged
    assert excluded_cells(get_kernel("smem_pad"), "TILE_DIM", "BLOCK_ROWS", {(64, 16), (8, 32)}) == frozenset()


def test_the_heatmap_title_wraps_the_other_tunables(store, device_info):
    from autotune.report.plots import TITLE_CHARS, heatmap_title

    populate(store, device_info)
    data = heatmap_data(store, "smem_pad", {"rows": 8192, "cols": 8192}, "float32")
    data = dataclasses.replace(data, other_macros=tuple(get_kernel("matmul_warp").tunables))
    lines = heatmap_title(data).splitlines()
    assert len(lines) == 4 and all(len(line) <= TITLE_CHARS for line in lines[2:])
    assert " ".join(lines[2:]) == "each cell: the fastest over " + ", ".join(get_kernel("matmul_warp").tunables)


def test_stale_results_are_left_out_named_and_included_on_request(store, db_url, device_info, tmp_path):
    """Issue 41 item 14: the report plotted stale results without a word. Now the heatmap and the
    scaling plot leave them out, saying how many, why, and --include-stale, which plots them."""
    configs = [{"TILE_DIM": 32, "BLOCK_ROWS": 8, "IPAD": 1, "DIAGONAL": 0}]
    for rows in (512, 1024):  # tuned with a kernel source that has changed since
        add_search(store, key_of(device_info, "smem_pad", rows, rows, source="0" * 64), configs, gbps=lambda m: 9999.0)
    add_search(store, key_of(device_info, "smem_pad", 2048, 2048), configs, gbps=lambda m: 2500.0)
    add_search(store, key_of(device_info, "smem_pad", 4096, 4096), configs, gbps=lambda m: 2600.0)
    note = "left out 2 stale results (2 kernel source changed); --include-stale plots them"
    data = scaling_data(store, "smem_pad", "float32")
    assert [p.shape for p in data.points] == [(2048, 2048), (4096, 4096)] and data.stale == ("kernel source changed",) * 2
    every = scaling_data(store, "smem_pad", "float32", include_stale=True)
    assert [p.shape for p in every.points] == [(512, 512), (1024, 1024), (2048, 2048), (4096, 4096)]
    with pytest.raises(NotTunedError, match="no current trials of smem_pad 512x512 float32: left out 1 stale "
                                            r"result \(1 kernel source changed\); --include-stale plots them"):
        heatmap_data(store, "smem_pad", (("rows", 512), ("cols", 512)), "float32")
    assert heatmap_data(store, "smem_pad", (("rows", 512), ("cols", 512)), "float32",
                        include_stale=True).cells == {(32, 8): 9999.0}

    r = run("report", "--out", tmp_path / "a", "--db", db_url)
    assert r.exit_code == 0, r.output
    assert f"scaling: {note}" in r.output and "9999" not in r.output
    r = run("report", "--out", tmp_path / "b", "--size", 512, "--db", db_url)
    assert r.exit_code == 0 and "skipped: no current trials of smem_pad 512x512 float32: left out 1 stale" in r.output
    r = run("report", "--out", tmp_path / "c", "--size", 512, "--include-stale", "--db", db_url)
    assert r.exit_code == 0 and "left out" not in r.output and (tmp_path / "c" / "heatmap_smem_pad_512x512_float32.png").exists()


def test_the_heatmap_takes_the_latest_current_search_over_a_newer_stale_one(store, device_info):
    configs = [{"TILE_DIM": 32, "BLOCK_ROWS": 8, "IPAD": 1, "DIAGONAL": 0}]
    add_search(store, key_of(device_info, "smem_pad", 512, 512), configs, gbps=lambda m: 2500.0)
    add_search(store, key_of(device_info, "smem_pad", 512, 512, source="0" * 64), configs, gbps=lambda m: 9999.0)
    data = heatmap_data(store, "smem_pad", (("rows", 512), ("cols", 512)), "float32")
    assert data.cells == {(32, 8): 2500.0} and data.stale == ("kernel source changed",)
