"""The configs of a shipped space that CI compiles (tests/measure/test_compile.py builds them
with nvcc, tests/cli/test_check.py runs ``autotune check --sample`` over the same ones, which
the run's one cubin cache then answers).

nvcc costs about a second of CPU a build whatever the config (its preprocessing and front end
dominate), and the compile checks were the largest part of the suite's time on CI's 2 cores.
The sample is what finds most configs that do not build: the default, the first and last
configs (the ends of every range, where the largest tiles are), and for each macro the first
config holding each of its values (:meth:`~autotune.kernel.space.SearchSpace.sample`), and
no more: the least sample that holds every value of every macro that the constraints leave
(3 to 11 configs of a shipped space; matmul_warp 28, its corners found by bounded walks).
What it gives up: a build that fails only for a combination of values outside the sample
(the evenly spaced configs a sample of 12 added were such combinations: 98 builds of the
shipped and the examples' spaces). ``autotune check KERNEL`` without ``--sample`` builds
every config of a space: run it after changing a kernel or its space.
"""

from __future__ import annotations

import functools

SAMPLE = 3
"""The least ``--sample`` tried (``autotune check`` takes 3 or more): the default and the two ends."""


@functools.cache
def shipped_space(kernel):
    """``kernel.space()``, made once a process for a kernel, so that its valid configs, once
    walked, are kept for every test that asks (each ``kernel.space()`` is a new space that walks
    them again: matmul_warp's walk is about 4 s of CPU)."""
    return kernel.space()


@functools.cache
def compile_sample(kernel) -> tuple[int, tuple]:
    """``(n, configs)``: the sample of ``kernel``'s shipped space for the least ``n`` >=
    :data:`SAMPLE` whose sample holds the default, the first and last configs and every value
    of every macro that the constraints leave (:meth:`~autotune.kernel.space.SearchSpace.domains`),
    or the whole space; ``n`` is what ``autotune check --sample`` is given for the same configs.
    Found once a process for a kernel (test_check and test_compile both ask)."""
    space, n = shipped_space(kernel), SAMPLE

    def sample(n: int) -> tuple | None:
        """The sample of ``n``, or ``None`` where it misses a value (a larger ``n`` adds to it:
        its configs are the first ``n`` of one order of priority)."""
        configs = space.sample(n, (kernel.default_config(),))
        if len(configs) < n or all({c[name] for c in configs} >= set(domain)
                                   for (name, _), domain in zip(space.params, space.domains())):
            return tuple(configs)
        return None

    # up in steps of 4, then down to the least: a space too large to count (matmul_warp) is
    # sampled by bounded walks, a second or more a sample
    while (configs := sample(n)) is None:
        n += 4
    while n > SAMPLE and (fewer := sample(n - 1)) is not None:
        n, configs = n - 1, fewer
    return n, configs
