"""The dispatch rung on the GPU: two shapes of smem_pad swept for real, a third shape looked up
answers from the dispatch, its config launches and transposes correctly, and the C header's
``select`` picks what ``lookup`` picks."""

import shutil
import subprocess

import numpy as np
import pytest

import autotune
from autotune import clear_cache, lookup
from autotune.kernel.catalog import get_kernel

pytestmark = pytest.mark.gpu_slow


def test_an_untuned_shape_takes_the_dispatch_and_launches(tmp_path, device):
    db = f"sqlite:///{tmp_path / 'gpu.db'}"
    for shape in ((512, 2048), (2048, 512)):
        autotune.tune("smem_pad", shape, "float32", device=0, strategy="grid", trials=54, repeats=20, top_k=1,
                      rounds=1, db=db)
    clear_cache()
    got = lookup("smem_pad", (1000, 1000), "float32", device=device, db=db)
    assert got.rung == "dispatch" and got.source == "tuned" and got.tuned_shape in ((512, 2048), (2048, 512))
    assert got.note.startswith("dispatch of 2 tuned shapes on this device")
    kernel = get_kernel("smem_pad")
    assert not kernel.space().violations(got.config)

    import pycuda.autoprimaryctx  # noqa: F401  (the arrays' PyCUDA context: the device fixture's is cuda-bindings')
    from pycuda import gpuarray

    a = np.random.default_rng(0).standard_normal((1000, 1000)).astype(np.float32)
    f = autotune.compiled("smem_pad", (1000, 1000), "float32", db=db)
    assert f.chosen.rung == "dispatch" and f.chosen.config == got.config
    np.testing.assert_array_equal(autotune.transpose(gpuarray.to_gpu(a), kernel="smem_pad", db=db).get(), a.T)

    if shutil.which("gcc") is None:
        return
    from typer.testing import CliRunner

    from autotune.cli import app

    header = tmp_path / "tuned.h"
    r = CliRunner().invoke(app, ["export", "--header", str(header), "--kernel", "smem_pad", "--db", db])
    assert r.exit_code == 0, r.output
    (tmp_path / "main.c").write_text(
        '#include <stdio.h>\n#include "tuned.h"\nint main(void) {\n    long long dims[2] = {1000, 1000};\n'
        '    int rung;\n'
        f'    const int *m = autotune_smem_pad_select("{device.name}", {device.compute_capability.replace(".", ", ")}, '
        '"float32", dims, &rung);\n'
        '    printf("%d %d %d %d %d\\n", rung, m[AUTOTUNE_SMEM_PAD_MACRO_BLOCK_ROWS], m[AUTOTUNE_SMEM_PAD_MACRO_DIAGONAL], '
        'm[AUTOTUNE_SMEM_PAD_MACRO_IPAD], m[AUTOTUNE_SMEM_PAD_MACRO_TILE_DIM]);\n    return 0;\n}\n')
    subprocess.run(["gcc", "-std=c99", "-I", str(tmp_path), str(tmp_path / "main.c"), "-o", str(tmp_path / "sel"),
                    "-lm"], check=True)
    out = subprocess.run([str(tmp_path / "sel")], capture_output=True, text=True, check=True).stdout.split()
    c = got.config
    assert out == ["1", *(str(c[m]) for m in ("BLOCK_ROWS", "DIAGONAL", "IPAD", "TILE_DIM"))]


def test_tune_shapes_ends_with_a_dense_matrix_on_the_gpu(tmp_path, device):
    """Issue 48: after tune-shapes' searches, every tuned shape's winner and runner-up is timed at
    every tuned shape, as stored trials, and lookup's dispatch is fit on them."""
    from autotune.dispatch import tables_from_trials
    from autotune.search.options import SearchOptions
    from autotune.search.shapes import matrix_configs, tune_shapes
    from autotune.store.key import tuning_key
    from autotune.store.opening import open_results

    db = f"sqlite:///{tmp_path / 'gpu.db'}"
    options = SearchOptions(trials=6, strategy="random", repeats=20, top_k=2, rounds=1)
    results = tune_shapes("smem_pad", {"rows": (256, 4096), "cols": (256, 4096)}, 3, options=options, db=db)
    assert len(results) >= 3
    store = open_results(db)
    tables = tables_from_trials(store.shape_trials(tuning_key("smem_pad", device, (1, 1), "float32")))
    configs = matrix_configs(tables)
    assert len(tables) == 3 and all(t.ms(c) is not None for t in tables for c in configs)
    clear_cache()
    got = lookup("smem_pad", (1000, 3000), "float32", device=device, db=db)
    assert got.rung == "dispatch" and got.note.startswith("dispatch of 3 tuned shapes on this device")
