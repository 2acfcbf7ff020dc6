import threading

import pytest

from autotune import Config, clear_cache, lookup
from autotune.key import tuning_key
from autotune.space import load_space
from autotune.store import Store
from autotune.tuner import search

from fakes import OPTIMUM, FakeTimer


@pytest.fixture(autouse=True)
def fresh_cache():
    clear_cache()
    yield
    clear_cache()


def tune(db_url, device_info, shape=(512, 512), dtype="float32"):
    key = tuning_key("smem_pad", device_info, *shape, dtype)
    search(key, load_space("smem_pad"), FakeTimer(), Store(db_url), n_trials=200, sampler="grid")


def test_untuned_key_gives_the_default_and_says_so(db_url, device_info):
    got = lookup("smem_pad", (512, 512), "float32", device=device_info, db=db_url)
    assert got.source == "default" and got.gbps is None
    assert got.config == Config.of("smem_pad", {"TILE_DIM": 32, "BLOCK_ROWS": 8, "IPAD": 1})
    assert "nothing tuned for smem_pad 512x512 float32" in got.note


def test_tuned_key_gives_the_stored_best(db_url, device_info):
    tune(db_url, device_info)
    got = lookup("smem_pad", (512, 512), "float32", device=device_info, db=db_url)
    assert got.source == "tuned" and got.config == Config.of("smem_pad", OPTIMUM)
    assert got.gbps == pytest.approx(2800.0) and got.pct_memcpy == pytest.approx(2800 / 30)
    # another shape, dtype or device is not this key
    assert lookup("smem_pad", (512, 1024), device=device_info, db=db_url).source == "default"
    assert lookup("smem_pad", (512, 512), "float64", device=device_info, db=db_url).source == "default"
    from dataclasses import replace

    other = replace(device_info, name="NVIDIA H200")
    assert lookup("smem_pad", (512, 512), device=other, db=db_url).source == "default"


def test_answers_are_cached_until_cleared(db_url, device_info):
    first = lookup("smem_pad", (512, 512), device=device_info, db=db_url)
    tune(db_url, device_info)
    assert lookup("smem_pad", (512, 512), device=device_info, db=db_url) is first
    clear_cache()
    assert lookup("smem_pad", (512, 512), device=device_info, db=db_url).source == "tuned"


def test_lookup_is_thread_safe(db_url, device_info):
    tune(db_url, device_info)
    answers, errors = [], []

    def worker():
        try:
            for _ in range(20):
                answers.append(lookup("smem_pad", (512, 512), device=device_info, db=db_url))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(answers) == 160
    assert {a.config for a in answers} == {Config.of("smem_pad", OPTIMUM)}


def test_bad_arguments(db_url, device_info):
    from autotune.errors import InvalidInputError

    with pytest.raises(InvalidInputError, match="unknown kernel"):
        lookup("transpose9", (4, 4), device=device_info, db=db_url)
    with pytest.raises(InvalidInputError, match="unknown dtype"):
        lookup("smem_pad", (4, 4), "complex128", device=device_info, db=db_url)
