"""``autotune export --header``: the stored, non-stale bests of one kernel as a C header that
a C program compiles and selects from (exact shape, nearest shape, default)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from autotune.store.opening import open_results
from typer.testing import CliRunner

from autotune.cli import app
from autotune.kernel.catalog import get_kernel
from autotune.search.options import SearchOptions
from autotune.search.tuner import search
from autotune.store.key import tuning_key

from fakes import FakeTimer

runner = CliRunner()

PROGRAM = r"""
#include <stdio.h>
#include "tuned.h"

int main(void)
{
    long long queries[3][2] = {{1024, 1024}, {1100, 1000}, {64, 64}};
    for (int i = 0; i < 3; ++i) {
        int rung = -1;
        const int *m = autotune_smem_pad_select("NVIDIA H100 80GB HBM3", 9, 0, "float32", queries[i], &rung);
        printf("%d %d %d %d\n", rung, m[AUTOTUNE_SMEM_PAD_MACRO_TILE_DIM], m[AUTOTUNE_SMEM_PAD_MACRO_BLOCK_ROWS],
               m[AUTOTUNE_SMEM_PAD_MACRO_IPAD]);
    }
    int rung = -1;
    const int *m = autotune_smem_pad_select("NVIDIA H100 80GB HBM3", 9, 0, "float64", queries[0], &rung);
    printf("%d %d\n", rung, m[AUTOTUNE_SMEM_PAD_MACRO_TILE_DIM]);
    return 0;
}
"""


def run(*args):
    result = runner.invoke(app, [str(a) for a in args])
    assert "Traceback" not in result.output, result.output
    return result


@pytest.fixture
def tuned_db(built_db, tmp_path, device_info):
    """smem_pad tuned (fake timer, grid) at 1024^2 and 4096^2 float32: this test's copy of the
    database those two searches wrote once (``built_db``)."""
    def build(url):
        for n in (1024, 4096):
            key = tuning_key("smem_pad", device_info, (n, n), "float32")
            store = open_results(url)
            search(key, get_kernel("smem_pad").space(), FakeTimer(), store, SearchOptions(trials=100, strategy="grid"))
            store.close()
    return built_db(tmp_path / "autotune.db", "smem_pad_tuned_twice", build)


@pytest.mark.skipif(shutil.which("gcc") is None, reason="no gcc")
def test_the_header_holds_the_stored_bests_and_selects_like_lookup(tuned_db, tmp_path, device_info):
    header = tmp_path / "tuned.h"
    r = run("export", "--header", header, "--kernel", "smem_pad", "--db", tuned_db)
    assert r.exit_code == 0, r.output
    assert r.output.startswith(f"wrote 2 tuned configs of smem_pad to {header}")
    best = open_results(tuned_db).best(tuning_key("smem_pad", device_info, (1024, 1024), "float32")).config
    (tmp_path / "main.c").write_text(PROGRAM)
    exe = tmp_path / "select"
    subprocess.run(["gcc", "-std=c99", "-Wall", "-Werror", "-I", str(tmp_path), str(tmp_path / "main.c"), "-o",
                    str(exe), "-lm"], check=True, capture_output=True, text=True)
    lines = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.split("\n")
    tuned = f"{best['TILE_DIM']} {best['BLOCK_ROWS']} {best['IPAD']}"
    default = get_kernel("smem_pad").default_config()
    assert lines[0] == f"0 {tuned}"  # exact
    assert lines[1] == f"1 {tuned}"  # nearest shape (1024^2 of the two)
    assert lines[2] == f"1 {tuned}"  # nearest too: the header holds this device's shapes
    assert lines[3] == f"3 {default['TILE_DIM']}"  # no float64 tuned: the default


def test_stale_results_are_left_out_and_said(tuned_db, tmp_path, monkeypatch):
    from autotune.store import stale

    monkeypatch.setattr(stale, "current_nvcc", lambda: "99.9.0")  # every stored result: another nvcc
    r = run("export", "--header", tmp_path / "tuned.h", "--kernel", "smem_pad", "--db", tuned_db)
    assert r.exit_code == 0, r.output
    assert "wrote 0 tuned configs of smem_pad" in r.output and "left out 2 stale results (2 built with nvcc" in r.output
    assert "AUTOTUNE_SMEM_PAD_NUM_ENTRIES 0" in (tmp_path / "tuned.h").read_text()


@pytest.mark.parametrize("args, message", [
    (["--header", "{tmp}/t.h"], "--header needs --kernel"),
    (["--header", "{tmp}/t.h", "--kernel", "smem_pad", "--size", "64"], "--dims/--size does not apply to --header"),
    (["--header", "{tmp}/t.h", "--out", "{tmp}/t.json", "--kernel", "smem_pad"], "give --out FILE.json or --header"),
    ([], "give --out FILE.json or --header FILE.h"),
    (["--header", "{tmp}/no/such/folder/t.h", "--kernel", "smem_pad"], "cannot write {tmp}/no/such/folder/t.h"),
])
def test_bad_header_requests_are_one_error_line(tuned_db, tmp_path, args, message):
    r = run("export", *[a.format(tmp=tmp_path) for a in args], "--db", tuned_db)
    assert r.exit_code == 2, r.output
    assert r.output.startswith("error: ") and message.format(tmp=tmp_path) in r.output and r.output.count("\n") == 1
    assert not (tmp_path / "t.h").exists() and not (tmp_path / "t.json").exists()
