"""Fixtures of the ``gpu`` tests."""

import pytest

from autotune.measure.device import open_device


@pytest.fixture(scope="module")
def device():
    """GPU 0 opened for the tests of one module (a PyCUDA context, closed after them):
    its :class:`~autotune.measure.device.DeviceInfo`."""
    with open_device(0) as info:
        yield info
