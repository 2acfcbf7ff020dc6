"""Host values of autotune.measure.buffers: random bytes and uniform floats, per seed."""

import numpy as np
import pytest

from autotune.kernel.dtypes import get_dtype
from autotune.kernel.model import Array
from autotune.measure.buffers import host_values, random_bytes


@pytest.mark.parametrize("n", [0, 1, 5, 65539])
def test_random_bytes_has_the_length_asked_and_repeats_per_seed(n):
    a, b = random_bytes(np.random.default_rng(7), n), random_bytes(np.random.default_rng(7), n)
    assert a.dtype == np.uint8 and a.shape == (n,)
    assert a.tobytes() == b.tobytes()
    if n > 4096:
        assert len(np.unique(a)) == 256  # every byte value occurs
        assert a.tobytes() != random_bytes(np.random.default_rng(8), n).tobytes()


@pytest.mark.parametrize("name", ["float32", "float64", "float16"])
def test_uniform_floats_are_in_minus_one_to_one_of_the_type(name):
    dt = get_dtype(name)
    v = host_values(Array("src", (), "T", "in", "uniform"), (64, 96), dt, np.random.default_rng(0))
    assert v.shape == (64, 96) and v.dtype == dt.numpy
    assert v.min() >= -1 and v.max() <= 1 and v.min() < -0.9 and v.max() > 0.9
