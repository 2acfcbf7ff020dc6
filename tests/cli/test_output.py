"""The CLI as a person reads it: every command rendered at 80 and 120 columns (no ellipsised
cell, every config whole, no line wider than the terminal), JSON/CSV for scripts, help text,
--version, completion and ``autotune info``."""

from __future__ import annotations

import csv
import functools
import io
import json
import re

import pytest

from autotune.store.opening import open_results
from typer.testing import CliRunner

from autotune.cli import app
from autotune.cli.root import ORDER
from autotune.kernel.catalog import KERNELS

from test_cli import fake_gpu  # noqa: F401  (the fixture)

runner = CliRunner()
WIDTHS = (80, 120)


@pytest.fixture(autouse=True)
def terminal(monkeypatch):
    """Render as on a terminal of $COLUMNS columns (CliRunner's streams are not one: off a
    terminal the CLI prints 220 columns and never breaks a line)."""
    import autotune.cli._common as common

    monkeypatch.setattr(common, "on_terminal", lambda stream: True)


def render(width: int | None, *args, code: int = 0):
    result = runner.invoke(app, [str(a) for a in args], env={"COLUMNS": str(width)} if width else {})
    assert "Traceback" not in result.output, result.output
    assert result.exit_code == code, result.output
    return result


def assert_reads(text: str, width: int, configs=()) -> None:
    """No ellipsis, no line over ``width``, and each config whole: on one line where it fits,
    else cut only after its commas on consecutive lines."""
    lines = text.splitlines()
    assert "…" not in text and "..." not in text.replace("[ARGS]...", ""), text
    too_long = [line for line in lines if len(line) > width]
    assert not too_long, f"{len(too_long[0])} > {width}: {too_long[0]!r}"
    for key in configs:
        if len(key) <= width - 12:
            assert any(key in line for line in lines), f"{key} not on one line:\n{text}"
        else:
            assert key in "".join(line.strip() for line in lines), f"{key} not whole:\n{text}"
            for item in key.split(","):  # cut at commas only: every NAME=VALUE whole on a line
                assert any(re.search(rf"(^|[\s,]){re.escape(item)}(,|\s|$)", line) for line in lines), item


def study_configs(db_url, kernel: str) -> list[str]:

    return sorted({b.config.key for b in open_results(db_url).find_best(kernel=kernel)})


@pytest.mark.parametrize("width", WIDTHS)
def test_search_best_list_and_sweep_read_at_80_and_120_columns(fake_gpu, db_url, width):  # noqa: F811
    r = render(width, "search", "--kernel", "smem_pad", "--size", 256, "--sampler", "grid", "--db", db_url)
    top = re.findall(r"^  config\s+(\S+)$", r.stdout, re.M)
    assert len(top) == 10 + 5 and all("TILE_DIM=" in c for c in top)  # 10 top configs, 5 re-timed
    assert "top 10 configs of the study" in r.stdout and "re-timing of the top 5 configs" in r.stdout
    assert_reads(r.stdout, width, top)
    assert re.search(r"^ *1 +\d\.\d\d µs +2800 +93\.3 +20$", r.stdout, re.M), r.stdout  # GB/s whole, µs < 0.1 ms
    for args in (("best", "--size", 256), ("best", "--size", 256, "--wide"), ("list",), ("list", "--wide")):
        r = render(width, *args, "--db", db_url)
        assert_reads(r.stdout, width, study_configs(db_url, "smem_pad"))
        assert "smem_pad" in r.stdout and "256x256" in r.stdout and "float32" in r.stdout
    assert "regs" in r.stdout and "spread %" in r.stdout  # --wide shows the rest
    r = render(width, "sweep", "--kernel", "smem", "--size", 128, "--db", db_url)
    valid = int(re.search(r"(\d+)\s+valid\s+configs", r.stdout)[1])
    assert f"top {valid} configs of the study" in r.stdout  # a sweep lists every config it measured
    assert_reads(r.stdout, width, re.findall(r"^  config\s+(\S+)$", r.stdout, re.M))


@pytest.mark.parametrize("width", WIDTHS)
def test_a_matmul_config_longer_than_the_terminal_wraps_at_its_commas(fake_gpu, db_url, width):  # noqa: F811
    r = render(width, "search", "--kernel", "matmul_warp", "--size", 256, "--trials", 3, "--seed", 1,
               "--db", db_url)
    keys = study_configs(db_url, "matmul_warp")
    assert keys and max(map(len, keys)) > 80
    assert_reads(r.stdout, width, keys)
    assert "e+" not in r.stdout  # GFLOP/s as whole numbers, in both tables
    for args in (("best", "--kernel", "matmul_warp", "--size", 256), ("list", "--wide")):
        assert_reads(render(width, *args, "--db", db_url).stdout, width, keys)


@pytest.mark.parametrize("width", WIDTHS)
def test_kernels_shows_every_default_config_whole(width):
    for args in ((), ("--wide",)):
        r = render(width, "kernels", *args)
        assert_reads(r.stdout, width, [k.default_config().key for k in KERNELS.values()])
        assert all(k.summary.split()[0] in r.stdout for k in KERNELS.values())


@functools.cache
def first_matmul_warp_configs() -> tuple:
    """The first 3 configs of matmul_warp's space (long keys; its 22,944 configs are walked once)."""
    return tuple(KERNELS["matmul_warp"].space().configs()[:3])


@pytest.mark.parametrize("width", WIDTHS)
def test_check_lists_failures_whole_and_registers_once(monkeypatch, width):
    """The report of 3 builds, 2 failed, as ``check`` prints it: the plan, the builds and the
    file's check are stand-ins (the builds' report is what is printed), so matmul_warp's space
    is not walked again by each ``check``."""
    import autotune.cli.check as check
    from autotune.measure.buildcheck import BuildFailure, BuildPlan, BuildReport

    configs = first_matmul_warp_configs()
    reason = "ptxas error: Entry function uses too much shared data (0x12000 bytes, 0xc000 max) " * 2

    def check_builds(k, dtypes, **options):
        return BuildReport(kernel=k.name, arch="sm_90", configs=3, dtypes=("float32",), space_size=3,
                           failures=[BuildFailure(c, "float32", "compile", reason.strip()) for c in configs[1:]],
                           registers=(32, 32))

    monkeypatch.setattr(check, "plan_builds", lambda k, space, sample: BuildPlan(configs, 3))
    monkeypatch.setattr(check, "check_builds", check_builds)
    monkeypatch.setattr(check, "check_file", lambda *a: None)
    r = render(width, "check", "matmul_warp", "--dtype", "float32", code=2)
    flat = " ".join(r.stdout.split())
    assert "compiled 1 of 3 builds" in flat and "32 registers per thread" in flat and "32-32" not in flat
    assert_reads(r.stdout, width, [c.key for c in configs[1:]])
    assert "error: 2 of 3 builds of matmul_warp failed" in r.stderr
    data = json.loads(render(width, "check", "matmul_warp", "--format", "json", code=2).stdout)
    assert data["registers"] == [32, 32] and [f["config"] for f in data["records"]] == [c.as_dict() for c in configs[1:]]


def test_json_and_csv_carry_every_column(fake_gpu, db_url):  # noqa: F811
    r = render(None, "search", "--size", 64, "--sampler", "grid", "--format", "json", "--db", db_url)
    doc = json.loads(r.stdout)  # stdout is the document alone: the progress went to stderr
    assert doc["kernel"] == "smem_pad" and doc["dims"] == {"rows": 64, "cols": 64} and doc["stopped"] == "exhausted"
    assert len(doc["top"]) == 10 and doc["retiming"]["winner"] == doc["best"]["config"]
    assert "configs" in r.stderr
    best = json.loads(render(None, "best", "--size", 64, "--format", "json", "--db", db_url).stdout)["records"]
    assert [b["config"] for b in best] == [doc["best"]["config"]] and isinstance(doc["best"]["config"], dict)
    assert {"device", "registers", "shared_bytes", "tie_group", "gbps", "pct_memcpy"} <= set(best[0])
    rows = list(csv.DictReader(io.StringIO(render(None, "list", "--format", "csv", "--db", db_url).stdout)))
    assert len(rows) == 1 and rows[0]["config"] == ",".join(f"{k}={v}" for k, v in doc["best"]["config"].items())
    assert rows[0]["stale"] == ""  # CSV: the config's key, a field of its own
    rows = list(csv.DictReader(io.StringIO(render(None, "sweep", "--size", 64, "-f", "csv", "--db", db_url).stdout)))
    assert len(rows) == 54 and sum(bool(row["pooled_ms"]) for row in rows) == 5  # every config of the grid
    kernels = json.loads(render(None, "kernels", "--format", "json").stdout)["records"]
    assert {k["kernel"] for k in kernels} == set(KERNELS) and all(k["default_config"] for k in kernels)


def test_help_reads_plainly_with_an_example_for_every_command():
    r = render(80, "--help")
    listed = re.findall(r"^│ ([\w-]+) ", r.stdout.split("─ Commands ─")[1], re.M)
    assert listed == list(ORDER)
    for name in listed:
        for args in ([name, "--help"], ["db", "upgrade", "--help"], ["db", "current", "--help"]) if name == "db" \
                else ([name, "--help"],):
            text = render(80, *args).stdout
            assert "Example" in text and "autotune " in text.split("Example")[1], args
            options = re.sub(r"╭─ Arguments ─.*?╰─+╯", "", text, flags=re.S)  # Rich types an argument (<str>)
            assert not re.search(r"<(str|int|float|list\[str\])>", options), text
            assert "``" not in text, text
            assert_reads(text, 80)


def test_the_short_options_that_looked_like_matmul_dims_are_gone(db_url):
    r = render(None, "search", "-k", "smem_pad", "--size", 64, "--db", db_url, code=2)
    assert "No such option: -k" in r.output
    r = render(None, "search", "-n", "3", "--size", 64, "--db", db_url, code=2)
    assert "No such option: -n" in r.output


def test_version_and_completion(monkeypatch):
    from autotune import __version__

    assert render(None, "--version").stdout == f"autotune {__version__}\n"
    # the shell named, not detected: Typer otherwise asks shellingham, which reads the process
    # tree (the test failed where pytest's parent was no shell Typer knows)
    monkeypatch.setenv("_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION", "1")
    r = runner.invoke(app, ["--show-completion", "bash"], prog_name="autotune")
    assert r.exit_code == 0 and "_AUTOTUNE_COMPLETE=complete_bash" in r.stdout, r.output
    assert "complete -o default -F _autotune_completion autotune" in r.stdout
    assert "--install-completion" in render(None, "--help").stdout


def test_info_names_the_default_database_and_creates_nothing(monkeypatch, tmp_path):
    import platformdirs

    data = tmp_path / "data"
    monkeypatch.setattr(platformdirs, "user_data_dir", lambda *a, **k: str(data))
    monkeypatch.delenv("AUTOTUNE_DB", raising=False)
    for width in WIDTHS:
        r = render(width, "info")
        assert_reads(r.stdout, width)
        joined = "".join(line[13:] for line in r.stdout.splitlines())  # long paths wrap after a "/"
        assert f"{data / 'autotune.db'} (not created yet" in joined
        assert re.search(r"^nvcc +\S", r.stdout, re.M) and re.search(r"^GPU", r.stdout, re.M)
    doc = json.loads(render(None, "info", "--format", "json").stdout)
    assert doc["database"] == {"url": f"sqlite:///{data / 'autotune.db'}", "source": "default",
                               "file": str(data / "autotune.db"), "exists": False}
    assert doc["autotune"] and "optuna" in doc["libraries"]
    assert not data.exists()
    doc = json.loads(render(None, "info", "--format", "json", "--db", "postgresql://me:secret@host/db").stdout)
    assert doc["database"]["url"] == "postgresql://me:***@host/db" and doc["database"]["file"] is None


def test_db_upgrade_prints_the_url_not_a_repr(db_url, monkeypatch):
    import autotune.cli._common as common

    monkeypatch.setattr(common, "on_terminal", lambda stream: False)  # a log: one line, 220 columns
    r = render(None, "db", "upgrade", "--db", db_url)
    assert r.stdout.startswith(f"database {db_url} is at schema revision ") and "Store(" not in r.stdout


@pytest.mark.parametrize("width", WIDTHS)
def test_bench_reads_at_80_and_120_columns(fake_gpu, db_url, monkeypatch, width):  # noqa: F811
    from autotune.measure import vendor

    assert render(width, "search", "--kernel", "matmul_tiled", "--size", 256, "--sampler", "grid",
                  "--db", db_url).exit_code == 0
    monkeypatch.setattr(vendor, "vendor_matmul", lambda bench, libraries=vendor.LIBRARIES: vendor.VendorResult(
        "cuBLAS via CuPy (cupy.matmul)", 2 * 256 ** 3 / 40000e9 * 1e3, 40000.0))
    r = render(width, "bench", "--kernel", "matmul_naive", "--kernel", "matmul_tiled", "--size", 256, "--db", db_url)
    assert_reads(r.stdout, width, ["TILE_WIDTH=16", "TILE_WIDTH=32", "BLOCK_X=16,BLOCK_Y=16"])
    assert re.search(r"^matmul_tiled \(tuned\) +\d\.\d\d µs +20000 +50\.0 ", r.stdout, re.M), r.stdout
    doc = json.loads(render(width, "bench", "--kernel", "matmul_tiled", "--size", 256, "-f", "json",
                            "--db", db_url).stdout)
    assert doc["dims"] == {"m": 256, "n": 256, "k": 256} and doc["records"][-1]["gflops"] == 40000.0


@pytest.mark.parametrize("width", WIDTHS)
def test_a_transpose_bench_table_reads_at_80_and_120_columns(width):
    from autotune.cli.bench import bench_columns
    from autotune.cli.output import table_lines
    from autotune.report.bench import BenchLine

    key = KERNELS["smem_vec"].default_config().key
    lines = [BenchLine("device-to-device memcpy", "memcpy", 0.0512, 2950.0, 100.0),
             BenchLine("smem_vec", "kernel", 0.0531, 2840.0, 96.3, key, "default=tuned", 32, 16640, 0.75),
             BenchLine("smem_unroll_pad", "kernel", None, None, config_key="BLOCK_ROWS=8,DIAGONAL=0,IPAD=1,"
                       "TILE_DIM=32,UNROLL=2", source="default", note="out of resources: too many resources "
                       "requested for launch (the default config needs 65 KiB of shared memory per block)"),
             BenchLine("CPU (numpy.transpose)", "cpu", 41.2, 6.51, 0.2)]
    for wide in (False, True):
        text = "\n".join(table_lines(lines, bench_columns(lines, flops=False), width, wide=wide, title="bench"))
        assert_reads(text, width, [key])
        assert "out of resources" in text and "6.51" in text and "2840" in text


def test_wrap_cuts_only_at_the_breaks_and_starts_each_tie_member_on_its_own_line():
    from autotune.cli.output import wrap

    a = "ASYNC=0,A_SMEM=0,BK=8,BM=128,BN=128,GROUP_M=8,MINB=1,STAGES=2,TM=16,TN=8,VEC=1,WM=128,WN=32"
    b = "ASYNC=1,A_SMEM=0,BK=8,BM=64,BN=32,GROUP_M=1,MINB=1,STAGES=3,TM=4,TN=4,VEC=1,WM=32,WN=16"
    assert wrap(f"{a} | {b}", 120, ", |") == [f"{a} |", b]
    lines = wrap(f"{a} | {b}", 60, ", |")
    assert all(len(line) <= 60 and line.endswith((",", "|")) for line in lines[:-1])
    assert "".join(lines) == f"{a} |{b}" and lines[-1].endswith("WN=16")
    assert wrap("short", 80) == ["short"] and wrap(a, 200) == [a]


def test_help_groups_options_in_panels_as_wide_as_the_terminal():
    """Rich renders the help: the options of a search in panels (problem, search, measurement,
    output), at the terminal's width (120 columns here, not click's 80); a usage error stays one
    plain line."""
    text = render(120, "search", "--help").stdout
    panels = re.findall(r"╭─ ([\w ]+?) ─", text)
    assert panels[:1] == ["Options"] and {"Problem", "Search", "Measurement", "Database and output"} <= set(panels)
    problem = text.split("╭─ Problem")[1].split("╰")[0]
    assert "--kernel" in problem and "--dtype" in problem and "--size" in problem and "--trials" not in problem
    assert "--trials" in text.split("╭─ Search")[1].split("╰")[0]
    assert max(len(line) for line in text.splitlines()) == 120 and "docs/search.md" not in text
    assert_reads(text, 120)
    error = render(120, "search", "--bogus", code=2)
    assert "Error: No such option: --bogus" in error.output and "╭" not in error.output


def test_values_complete_kernels_dtypes_strategies_formats_and_files(tmp_path):
    def complete(*words):
        line = " ".join(("autotune", *words))
        r = runner.invoke(app, [], prog_name="autotune",
                          env={"_AUTOTUNE_COMPLETE": "complete_bash", "COMP_WORDS": line, "COMP_CWORD": str(len(words))})
        return r.stdout.split()

    assert complete("search", "--kernel", "smem_p") == ["smem_pad"]
    assert set(complete("best", "--kernel", "matmul_")) == {k for k in KERNELS if k.startswith("matmul_")}
    assert complete("search", "--dtype", "float") == ["float16", "float32", "float64"]
    assert complete("search", "--strategy", "cm") == ["cmaes"]
    assert complete("list", "--format", "c") == ["csv"]
    assert complete("--backend", "py") == ["pycuda"]
    (tmp_path / "mine.toml").write_text("")
    (tmp_path / "notes.txt").write_text("")
    (tmp_path / "sub").mkdir()
    assert complete("search", "--kernel", f"{tmp_path}/") == [f"{tmp_path}/mine.toml", f"{tmp_path}/sub/"]
    (tmp_path / "tuned.json").write_text("{}")
    assert complete("import", f"{tmp_path}/t") == [f"{tmp_path}/tuned.json"]


def test_kernels_takes_a_pattern():
    r = render(80, "kernels", "matmul_*")
    assert r.stdout.startswith(f"{sum(k.startswith('matmul_') for k in KERNELS)} of {len(KERNELS)} catalog kernels "
                               "match 'matmul_*'")
    shown = {k["kernel"] for k in json.loads(render(None, "kernels", "SKINNY", "--format", "json").stdout)["records"]}
    assert shown == {k for k, v in KERNELS.items() if "skinny" in k or "skinny" in (v.summary or "").lower()} and shown
    r = render(80, "kernels", "nothing_like_this")
    assert r.stdout == "" and "no catalog kernel matches 'nothing_like_this'" in r.stderr


def test_times_below_a_tenth_of_a_ms_print_in_microseconds(fake_gpu, db_url):  # noqa: F811
    from autotune.measure.figures import duration

    assert (duration(0.0042), duration(0.1938), duration(0.09999), duration(12.5)) == (
        "4.20 µs", "0.1938 ms", "99.99 µs", "12.5000 ms")
    render(None, "search", "--size", 64, "--sampler", "grid", "--db", db_url)
    text = render(120, "best", "--size", 64, "--db", db_url).stdout
    assert re.search(r"\s\d+\.\d\d µs\s", text) and "0.00" not in text  # the fake's 3 µs, not "0.0030"
    assert json.loads(render(None, "best", "--size", 64, "--format", "json", "--db", db_url).stdout)["records"][0]["median_ms"] < 0.1


def test_out_dash_writes_to_stdout_for_jq(fake_gpu, db_url, tmp_path):  # noqa: F811
    render(None, "search", "--size", 64, "--sampler", "grid", "--db", db_url)
    r = render(None, "export", "--out", "-", "--db", db_url)
    doc = json.loads(r.stdout)  # the file alone on stdout: what was done went to stderr
    assert doc["format"] == "autotune-results" and len(doc["results"]) == 1 and "exported 1 result to stdout" in r.stderr
    assert not (tmp_path / "-").exists()
    header = render(None, "export", "--header", "/dev/stdout", "--kernel", "smem_pad", "--db", db_url)
    assert header.stdout.lstrip().startswith(("/*", "//", "#")) and "wrote 1 tuned config" in header.stderr
    t4 = json.loads(render(None, "export", "--t4", "-", "--kernel", "smem_pad", "--db", db_url).stdout)
    assert t4["results"]
    r = render(None, "report", "--out", "-", "--db", db_url, code=2)
    assert "a report is several PNG files; give a folder" in r.stderr


def test_trials_lists_one_keys_trials_in_every_format(fake_gpu, db_url):  # noqa: F811
    render(None, "search", "--size", 64, "--sampler", "grid", "--trials", 7, "--db", db_url)
    for width in WIDTHS:
        text = render(width, "trials", "--kernel", "smem_pad", "--size", 64, "--db", db_url).stdout
        assert text.startswith("7 trials of smem_pad 64x64 float32 on NVIDIA H100 80GB HBM3")
        assert_reads(text, width)
    doc = json.loads(render(None, "trials", "--size", 64, "--format", "json", "--db", db_url).stdout)
    assert doc["kernel"] == "smem_pad" and doc["study"].startswith("smem_pad 64x64 float32 NVIDIA H100") and len(doc["records"]) == 7
    assert [t["number"] for t in doc["records"]] == list(range(7)) and all(t["status"] == "ok" for t in doc["records"])
    assert all(isinstance(t["config"], dict) for t in doc["records"])  # issue 49 item 8: one schema
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", t["created_at"]) for t in doc["records"])
    rows = list(csv.DictReader(io.StringIO(render(None, "trials", "--size", 64, "-f", "csv", "--db", db_url).stdout)))
    assert len(rows) == 7 and {"median_ms", "config", "reason", "occupancy"} <= set(rows[0])
    r = render(None, "trials", "--size", 128, "--db", db_url, code=2)
    assert "error: nothing is tuned for smem_pad 128x128 float32; run: autotune search" in r.stderr
    assert doc["stale"] is None


def test_trials_of_a_kernel_edited_since_say_they_are_stale(fake_gpu, db_url):  # noqa: F811
    """Issue 49 item 12: the trials of a key whose kernel changed since were listed as if current."""
    import sqlalchemy

    render(None, "search", "--size", 64, "--sampler", "grid", "--trials", 3, "--db", db_url)
    engine = sqlalchemy.create_engine(db_url)
    with engine.begin() as connection:  # the kernel's source as it was before an edit
        connection.execute(sqlalchemy.text("UPDATE autotune_kernels SET source_hash = :h WHERE name = 'smem_pad'"),
                           {"h": "0" * 64})
    engine.dispose()
    r = render(80, "trials", "--kernel", "smem_pad", "--size", 64, "--db", db_url)
    assert "stale: these trials are of smem_pad as it was built then (kernel source changed)" in r.stderr
    assert "run: autotune search --kernel smem_pad --rows 64 --cols 64 --dtype float32" in r.stderr
    assert r.stdout.startswith("3 trials of smem_pad 64x64 float32") and "stale: kernel source changed" in r.stdout
    doc = json.loads(render(None, "trials", "--size", 64, "--format", "json", "--db", db_url).stdout)
    assert doc["stale"] == "kernel source changed" and len(doc["records"]) == 3
    render(None, "search", "--size", 64, "--sampler", "grid", "--trials", 3, "--resume", "--db", db_url)  # today's kernel
    r = render(None, "trials", "--size", 64, "--db", db_url, code=2)
    assert "2 keys of smem_pad 64x64 float32 have trials" in r.stderr
    assert r.stderr.count("(stale: kernel source changed)") == 1, r.stderr


def test_stale_rows_are_coloured_where_colour_is_on():
    from rich.console import Console

    from autotune.cli.output import STALE_STYLE, Column, emit

    records = [("fresh", ""), ("old", "yes (another nvcc)")]
    columns = [Column("name", "name", lambda r: r[0]), Column("stale", "stale", lambda r: r[1] or None)]
    style = lambda r: STALE_STYLE if r[1] else None  # noqa: E731
    colour = Console(width=80, force_terminal=True, color_system="standard", file=io.StringIO())
    emit(colour, records, columns, style=style)
    lines = colour.file.getvalue().splitlines()
    assert "\x1b[33m" in next(line for line in lines if "old" in line)  # yellow
    assert "\x1b[33m" not in next(line for line in lines if "fresh" in line)
    plain = Console(width=80, force_terminal=False, file=io.StringIO())
    emit(plain, records, columns, style=style)
    assert "\x1b[" not in plain.file.getvalue() and "yes (another nvcc)" in plain.file.getvalue()


def test_list_wide_at_80_columns_is_a_table_with_a_second_row_per_key(db_url):
    """Issue 49 item 12: ``list --wide`` at 80 columns turned every key into a block of 20
    ``name  value`` lines; the --wide columns now get a second row of their own under each key's."""
    from stored_results import configs, key, tune

    store = open_results(db_url)
    cs = configs()
    for rows in (1024, 2048):
        tune(store, key(rows=rows, cols=rows), [(cs[0], 2000.0), (cs[1], 2500.0)], retime=True)
    lines = render(80, "list", "--wide", "--db", db_url).stdout.splitlines()
    assert_reads("\n".join(lines), 80)
    assert lines[1].startswith("kernel    shape") and lines[2].startswith("  % copy  spread %  regs  smem B  tuned")
    assert set(lines[3]) == {"-", " "}
    rows = [i for i, line in enumerate(lines) if line.startswith("smem_pad  ")]
    assert len(rows) == 2 and all(re.match(r"^ +\d+\.\d  +\d\.\d\d +24 +4224  \d{4}-\d\d-\d\d ", lines[i + 1])
                                  for i in rows), lines
    narrow = render(80, "list", "--db", db_url).stdout.splitlines()  # without --wide: one row, as before
    assert narrow[1].startswith("kernel    shape") and narrow[2].startswith("------")
