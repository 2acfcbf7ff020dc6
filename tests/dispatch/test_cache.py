"""One dispatch fit per store state (autotune.dispatch.cache)."""

from __future__ import annotations

from autotune import clear_cache
from autotune.dispatch import cache
from autotune.dispatch.fit import build_dispatch
from autotune.kernel.catalog import get_kernel


def test_a_fit_is_kept_until_the_state_changes_and_clear_cache_forgets_it():
    default = get_kernel("smem_pad").default_config()
    calls = []

    def fit():
        calls.append(1)
        return build_dispatch([], default, ("rows", "cols"))

    clear_cache()
    first = cache.fitted(("db", "smem_pad"), (7, 3), fit)
    assert cache.fitted(("db", "smem_pad"), (7, 3), fit) is first and len(calls) == 1
    cache.fitted(("db", "smem_pad"), (8, 4), fit)  # a trial stored since: fit again
    cache.fitted(("other db", "smem_pad"), (8, 4), fit)  # another identity: its own fit
    assert len(calls) == 3
    clear_cache()
    cache.fitted(("db", "smem_pad"), (8, 4), fit)
    assert len(calls) == 4
