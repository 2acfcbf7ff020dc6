"""The device's identity (autotune/measure/device.py) without a GPU: the ordinal is checked
before any CUDA backend is asked."""

from __future__ import annotations

import pytest

from autotune.errors import InvalidInputError
from autotune.measure import device


@pytest.mark.parametrize("ordinal", [-1, True, 0.0, "0", None])
def test_a_bad_ordinal_is_named_before_any_backend_is_asked(monkeypatch, ordinal):
    def asked():
        raise AssertionError("the CUDA backend was asked before the ordinal was checked")

    monkeypatch.setattr(device, "cuda_driver", asked)
    with pytest.raises(InvalidInputError) as info:
        device.query_device(ordinal)
    assert str(info.value) == f"--device {ordinal!r} is not allowed; give a CUDA ordinal 0, 1, ..."
