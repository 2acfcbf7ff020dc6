"""Fixtures of the ``gpu`` tests."""

import pytest

from autotune.measure.device import open_device


@pytest.fixture(scope="module")
def device():
    """GPU 0 opened for the tests of one module (a PyCUDA context, closed after them):
    its :class:`~autotune.measure.device.DeviceInfo`."""
    with open_device(0) as info:
        yield info


@pytest.fixture(autouse=True)
def _user_kernels_forgotten(monkeypatch):
    """Each test loads its kernel files afresh: a process refuses a second file of a name it has
    loaded (autotune.kernel.catalog), and two tests of a module write the same kernel file (its
    name too) into their own temporary folders."""
    from autotune.kernel import catalog

    monkeypatch.setattr(catalog, "_user", {})
    monkeypatch.setattr(catalog, "_files", {})
