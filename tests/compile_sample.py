"""The configs of a shipped space that CI compiles (tests/measure/test_compile.py builds them
with nvcc, tests/cli/test_check.py runs ``autotune check --sample`` over the same ones, which
the run's one cubin cache then answers).

nvcc costs about a second of CPU a build whatever the config (its preprocessing and front end
dominate), and the 22 shipped spaces hold 596 configs at 48 a space, and test_check built 12 a space
more (other configs: not cached); the compile checks took about 45 % of the suite's time on CI's
2 cores. The
sample keeps what finds most configs that do not build: the default, the first and last configs
(the ends of every range, where the largest tiles are), and for each macro the first config
holding each of its values (:meth:`~autotune.kernel.space.SearchSpace.sample`); it grows past
:data:`SAMPLE` where those corners need more (matmul_warp: 28). What it gives up: a build that
fails only for a combination of values outside the sample. ``autotune check KERNEL`` without
``--sample`` builds every config of a space: run it after changing a kernel or its space.
"""

from __future__ import annotations

SAMPLE = 12
"""Configs a space is sampled to at least (all of a space of at most this many)."""


def compile_sample(kernel) -> tuple[int, list]:
    """``(n, configs)``: the sample of ``kernel``'s shipped space for the least ``n`` >=
    :data:`SAMPLE` (in steps of 4) whose sample holds every value of every macro that the
    constraints leave (:meth:`~autotune.kernel.space.SearchSpace.domains`), or the whole space;
    ``n`` is what ``autotune check --sample`` is given for the same configs."""
    space, n = kernel.space(), SAMPLE
    while True:
        configs = space.sample(n, (kernel.default_config(),))
        if len(configs) < n or all({c[name] for c in configs} >= set(domain)
                                   for (name, _), domain in zip(space.params, space.domains())):
            return n, configs
        n += 4
