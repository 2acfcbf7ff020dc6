"""The cache registry (autotune/base/caches.py) that ``autotune.clear_cache()`` walks."""

import importlib

import autotune
from autotune.base import caches


def test_clear_cache_is_the_registry_walk():
    assert autotune.clear_cache is caches.clear_cache


def test_every_runtime_cache_registers_itself_when_imported():
    for module in ("autotune.runtime.lookup", "autotune.runtime.transpose.choice", "autotune.runtime.compiled",
                   "autotune.runtime.transpose.op"):
        importlib.import_module(module)
    assert {"lookup", "op_choice", "launchers", "prepared_transposes"} <= set(caches.registered())


def test_clear_cache_calls_every_registered_clear_once():
    calls = []
    caches.register("test_a", lambda: calls.append("a"))
    caches.register("test_b", lambda: calls.append("b"))
    caches.register("test_a", lambda: calls.append("a2"))  # a name registered again is replaced
    try:
        autotune.clear_cache()
        assert calls == ["a2", "b"]
        assert caches.registered().index("test_a") < caches.registered().index("test_b")
    finally:
        caches._clears.pop("test_a")
        caches._clears.pop("test_b")


def test_clear_cache_forgets_lookup_answers_and_the_op_choice(db_url, device_info):
    from autotune.runtime import lookup
    from autotune.runtime.transpose import choice as op_choice

    op_choice.choose_transpose(64, 64, "float32", device=device_info, db=db_url)
    assert lookup._cache and op_choice._cache
    autotune.clear_cache()
    assert not lookup._cache and not op_choice._cache
