"""A user's kernel file (1-D, no bytes objective) through the storage side: stored by its
hashes, shown by ``best``/``list --kernel FILE --dims``, exported and imported with its file,
and looked up; its results never mix with another kernel of the same name."""

from __future__ import annotations

import re
import json

import pytest

from autotune.store.opening import open_results
from typer.testing import CliRunner

import autotune
from autotune.cli import app
from autotune.kernel.catalog import resolve_kernel
from autotune.kernel.config import Config
from autotune.measure.measurement import Measurement
from autotune.store.key import tuning_key
from autotune.store.repository import Store

runner = CliRunner()

SOURCE = """extern "C" __global__ void scale(float *out, const float *a, int n) {
    int i = blockIdx.x * BLOCK + threadIdx.x;
    if (i < n) out[i] = 2.0f * a[i];
}
"""
FILE = """name = "stored_scale"
summary = "out = 2 a, one element per thread"
source = "scale.cu"
function = "scale"

[problem]
dims = ["n"]
dtypes = ["float32"]

[[args]]
name = "out"
array = ["n"]
role = "out"

[[args]]
name = "a"
array = ["n"]
role = "in"

[[args]]
name = "n"
scalar = "int32"
value = "n"

[launch]
block = ["BLOCK", 1, 1]
grid = ["cdiv(n, BLOCK)", 1, 1]

[space]
params = { BLOCK = [64, 128, 256] }
default = { BLOCK = 128 }

[check]
reference = "ref.py:scale"
compare = "tolerance"
"""


@pytest.fixture(scope="module")
def kernel_file(tmp_path_factory):
    """The kernel file (one per test process: a loaded kernel's name is taken for the process)."""
    folder = tmp_path_factory.mktemp("user_kernel")
    (folder / "scale.cu").write_text(SOURCE)
    (folder / "ref.py").write_text("def scale(out, a, n):\n    return 2 * a\n")
    (folder / "scale.toml").write_text(FILE)
    return folder / "scale.toml"


def run(*args):
    result = runner.invoke(app, [str(a) for a in args])
    assert "Traceback" not in result.output, result.output
    return result


def tune(store: Store, kernel, device, n: int, block: int, ms: float, **key_changes) -> Config:
    key = tuning_key(kernel, device, {"n": n}, "float32").replace(**key_changes)
    sid = store.start_search(key, study_name=key.study_name, sampler="tpe", seed=1, memcpy_gbps=None)
    config = Config.of(kernel.name, {"BLOCK": block})
    store.record_trial(sid, 0, config, status="ok", measurement=Measurement(ms, ms, ms, None, None, 12, 0, 50))
    store.finish_search(sid, "finished")
    return config


def test_best_list_export_import_and_lookup_of_a_kernel_file(kernel_file, db_url, device_info, tmp_path):
    kernel = resolve_kernel(kernel_file)
    store = open_results(db_url)
    fastest = tune(store, kernel, device_info, 1 << 20, 256, 0.05)
    tune(store, kernel, device_info, 1 << 20, 64, 0.02, spec_hash="0" * 64)  # another kernel of that name
    tune(store, kernel, device_info, 1 << 10, 64, 0.001)

    r = run("best", "--kernel", kernel_file, "--dims", "n=1048576", "--db", db_url)
    assert r.exit_code == 0, r.output
    assert "stored_scale" in r.output and "BLOCK=256" in r.output and "50.00 µs" in r.output  # µs below 0.1 ms
    assert "left out 1 stale result (1 kernel description changed); --include-stale shows them" in r.output
    r = run("best", "--kernel", kernel_file, "--n", 7, "--db", db_url)  # the sugar of the dim named n
    assert r.exit_code == 2 and "nothing is tuned for" in r.output and "--n 7" in r.output
    r = run("best", "--dims", "n=1048576", "--db", db_url)  # without the file: not judged
    assert r.exit_code == 2 and "of kernels this autotune does not know (stored_scale)" in r.output

    r = run("list", "--kernel", kernel_file, "--db", db_url)
    assert r.exit_code == 0 and "3 tuned keys" in r.output and "yes (kernel description changed)" in r.output
    r = run("list", "--db", db_url)
    assert r.exit_code == 0 and re.search(r"^\s*stale\s+\?$", r.output, re.M)  # cannot be judged without the file

    path = tmp_path / "user.json"
    r = run("export", "--out", path, "--kernel", kernel_file, "--db", db_url)
    assert r.exit_code == 0 and "exported 2 results" in r.output and "left out 1 stale result" in r.output
    entries = json.loads(path.read_text())["results"]
    assert {e["dims"] for e in entries} == {"n=1048576", "n=1024"}
    assert {e["kernel"]["spec_hash"] for e in entries} == {kernel.spec_hash}
    other = f"sqlite:///{tmp_path / 'other.db'}"
    r = run("import", path, "--db", other)
    assert r.exit_code == 2 and "unknown kernel 'stored_scale'" in r.output
    r = run("import", path, "--kernel", kernel_file, "--db", other)
    assert r.exit_code == 0 and "imported 2 result(s)" in r.output

    autotune.clear_cache()
    got = autotune.lookup(kernel, {"n": 1 << 20}, "float32", device=device_info, db=other)
    assert (got.rung, got.config, got.gbps, got.median_ms) == ("exact", fastest, None, 0.05)
    got = autotune.lookup(kernel_file, (1 << 19,), "float32", device=device_info, db=other)
    assert got.rung == "dispatch" and got.tuned_dims == (("n", 1 << 20),)
    autotune.clear_cache()
