"""A bundle carries each kernel's dispatch: a shape it does not hold gets from the bundle, and from
its C header, the config ``lookup`` gives it from the database the bundle was made from."""

from __future__ import annotations

import json
import random
import shutil
import subprocess

import pytest
from typer.testing import CliRunner

import autotune
from autotune.cli import app
from autotune.kernel.catalog import get_kernel
from autotune.kernel.problem import Problem
from autotune.measure.measurement import Measurement
from autotune.measure.toolchain import Toolchain
from autotune.runtime.bundle import BundleError, bundle_config, read_bundle
from autotune.store.key import tuning_key
from autotune.store.opening import open_results

from workload_fixtures import copy_database, h100, tune_app

VEC = get_kernel("smem_vec")


@pytest.fixture(scope="module")
def tuned_once(tmp_path_factory):
    """The test workload recorded and tuned once (fake GPU), then smem_vec's trials at 12 more
    shapes, every config of a few timed at each (a dense matrix)."""
    device = h100()
    folder = tmp_path_factory.mktemp("tuned")
    tune_app(folder, device)
    store = open_results(f"sqlite:///{folder / 'tuned.db'}")
    rnd = random.Random(48)
    configs = [VEC.default_config()] + [c for c in VEC.space().configs() if c != VEC.default_config()][:5]
    for i in range(12):
        shape = (int(2 ** rnd.uniform(5, 12)), int(2 ** rnd.uniform(5, 12)))
        key = tuning_key("smem_vec", device, shape, "float32")
        sid = store.start_search(key, study_name=key.study_name, sampler="grid", seed=None, memcpy_gbps=3000.0)
        wide = shape[1] > shape[0]
        for n, c in enumerate(configs):
            ms = rnd.uniform(0.95, 1.15) * (0.6 if (n % 2 == 0) == wide and n else 1.0)
            store.record_trial(sid, n, c, status="ok", measurement=Measurement(ms, ms, ms, 100.0, 3.0, 20, 4000, 50))
        store.finish_search(sid, "finished")
    store.close()
    return folder / "tuned.db", device


def test_bundle_header_and_lookup_answer_20_untuned_shapes_alike(tuned_once, db_url, tmp_path):
    copy_database(tuned_once[0], db_url)
    device = tuned_once[1]
    autotune.clear_cache()
    folder = tmp_path / "deploy"
    result = CliRunner().invoke(app, ["export", "app", "--bundle", str(folder), "--db", db_url])
    assert result.exit_code == 0, result.output
    doc = json.loads((folder / "bundle.json").read_text())
    assert {(d["kernel"], d["dtype"]) for d in doc["dispatches"]} >= {("smem_vec", "float32")}
    bundle = read_bundle(folder)
    toolchain = Toolchain.of(device.arch)
    rnd = random.Random(20)
    shapes = [(int(2 ** rnd.uniform(4, 13)), int(2 ** rnd.uniform(4, 13))) for _ in range(20)]
    got_lookup, got_bundle = [], []
    for shape in shapes:
        problem = Problem.of("smem_vec", shape, "float32")
        by_lookup = autotune.lookup(problem, device=device, db=db_url)
        by_bundle = bundle_config(bundle, problem, device, toolchain)
        assert by_lookup.rung == by_bundle.rung == "dispatch", (by_lookup.note, by_bundle.note)
        assert by_bundle.note.startswith(f"from bundle {folder / 'bundle.json'}, workload 'app': dispatch of 13 ")
        got_lookup.append(by_lookup.config)
        got_bundle.append(by_bundle.config)
    assert got_bundle == got_lookup and len(set(got_lookup)) > 1
    if shutil.which("gcc") is None:
        pytest.skip("no gcc: the header's half not checked")
    names = sorted(VEC.tunables)
    (tmp_path / "main.c").write_text(
        '#include <stdio.h>\n#include "smem_vec.h"\nint main(void) {\n    long long q[2];\n'
        '    while (scanf("%lld %lld", &q[0], &q[1]) == 2) {\n        int rung, i;\n'
        f'        const int *m = autotune_smem_vec_select("{device.name}", 9, 0, "float32", q, &rung);\n'
        '        printf("%d", rung);\n        for (i = 0; i < AUTOTUNE_SMEM_VEC_NUM_MACROS; ++i) printf(" %d", m[i]);\n'
        '        printf("\\n");\n    }\n    return 0;\n}\n')
    subprocess.run(["gcc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-I", str(folder), str(tmp_path / "main.c"),
                    "-o", str(tmp_path / "sel"), "-lm"], check=True, capture_output=True, text=True)
    lines = subprocess.run([str(tmp_path / "sel")], input="".join(f"{a} {b}\n" for a, b in shapes), check=True,
                           capture_output=True, text=True).stdout.splitlines()
    assert lines == [" ".join(["1", *(str(c[n]) for n in names)]) for c in got_lookup]


def test_a_malformed_dispatch_is_one_error_naming_the_file(tuned_once, db_url, tmp_path):
    copy_database(tuned_once[0], db_url)
    autotune.clear_cache()
    folder = tmp_path / "deploy"
    assert CliRunner().invoke(app, ["export", "app", "--bundle", str(folder), "--db", db_url]).exit_code == 0
    file = folder / "bundle.json"
    doc = json.loads(file.read_text())
    doc["dispatches"][0]["kind"] = "forest"
    file.write_text(json.dumps(doc))
    autotune.clear_cache()
    with pytest.raises(BundleError) as info:
        read_bundle(folder)
    assert str(info.value) == (f"bundle {file}: dispatch 1 is malformed (dispatch rule 'forest'; allowed: knn, "
                               "tree (with nodes), nearest)")
