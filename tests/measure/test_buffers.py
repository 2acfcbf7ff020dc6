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


def test_random_bytes_are_uniform_in_every_byte_of_a_word():
    # drawn as 64-bit words: each of a word's 8 bytes must be uniform, not only the low ones
    lanes = random_bytes(np.random.default_rng(7), 8 << 17).reshape(-1, 8)
    counts = np.stack([np.bincount(lanes[:, i], minlength=256) for i in range(8)])
    expected = lanes.shape[0] / 256
    chi2 = ((counts - expected) ** 2 / expected).sum(axis=1)
    assert (chi2 < 350).all(), chi2  # 255 degrees of freedom: P(chi2 > 350) < 1e-4 for uniform bytes


@pytest.mark.parametrize("name", ["float32", "float64", "float16"])
def test_uniform_floats_are_in_minus_one_to_one_of_the_type(name):
    dt = get_dtype(name)
    v = host_values(Array("src", (), "T", "in", "uniform"), (64, 96), dt, np.random.default_rng(0))
    assert v.shape == (64, 96) and v.dtype == dt.numpy
    assert v.min() >= -1 and v.max() <= 1 and v.min() < -0.9 and v.max() > 0.9
