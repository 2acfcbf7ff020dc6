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
