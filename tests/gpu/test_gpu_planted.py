"""Kernels that write wrong values, leave elements unwritten or write out of bounds are
caught by verification, stored as failed trials with the reason, and never become best."""

from pathlib import Path
from types import MappingProxyType

import pytest

import autotune.kernel.catalog as kernels
from autotune.measure.benchmark import open_benchmark
from autotune.kernel.dtypes import get_dtype
from autotune.kernel.catalog import Kernel
from autotune.store.key import tuning_key
from autotune.kernel.space import SearchSpace
from autotune.store.repository import Store
from autotune.search.tuner import search

pytestmark = pytest.mark.gpu

PLANTED = Kernel("planted", str(Path(__file__).parent / "planted.cu"), "planted", "transpose",
                 MappingProxyType({"TILE_DIM": 32, "BLOCK_ROWS": 8, "BUG": 0}),
                 MappingProxyType({"UNROLL": 1, "DIAGONAL": 0, "COLUMNWISE": 0}), "planted bugs")


def test_planted_bugs_are_failed_trials_and_never_best(tmp_path, monkeypatch):
    monkeypatch.setattr(kernels, "KERNELS", {**kernels.KERNELS, "planted": PLANTED})
    space = SearchSpace("planted", (("BLOCK_ROWS", (8,)), ("BUG", (0, 1, 2, 3)), ("TILE_DIM", (32,))))
    store = Store(f"sqlite:///{tmp_path / 'planted.db'}")
    with open_benchmark(0, 1000, 3001, get_dtype("float32"), repeats=20) as bench:
        key = tuning_key("planted", bench.device, (1000, 3001), "float32")
        result = search(key, space, bench.measure, store, n_trials=10, sampler="grid", memcpy_gbps=bench.memcpy_gbps)
    by_bug = {t.config["BUG"]: t for t in store.key_trials(key)}
    assert by_bug[0].status == "ok"
    assert by_bug[1].status == "wrong_result" and "elements differ from NumPy" in by_bug[1].reason
    assert by_bug[2].status == "wrong_result" and "1000 of 3001000 elements differ" in by_bug[2].reason
    assert by_bug[3].status == "wrong_result" and "guard bytes after the output buffer" in by_bug[3].reason
    assert store.best(key).config["BUG"] == 0
    assert set(result.measured) == {c for c in space.configs() if c["BUG"] == 0}
