"""Shared memory above 48 KiB, without a GPU: each arch's limit, the device's, the check of a
launch against it, and the opt-in (``MAX_DYNAMIC_SHARED_SIZE_BYTES``) on PyCUDA functions and
through the driver API."""

import ctypes
from dataclasses import replace

import pytest

from autotune.errors import AutotuneError, TrialFailed
from autotune.kernel.config import Config
from autotune.kernel.dtypes import get_dtype
from autotune.measure.backends.base import CudaError
from autotune.measure.compile import CompiledKernel
from autotune.measure.shared_memory import STATIC_LIMIT, block_limit, needs_opt_in, opt_in
from autotune.runtime import driver
from autotune.runtime import compiled as launch_module

KIB = 1024


@pytest.mark.parametrize("arch, kib", [("sm_70", 96), ("sm_75", 64), ("sm_80", 163), ("sm_86", 99), ("sm_87", 163),
                                       ("sm_89", 99), ("sm_90", 227), ("sm_90a", 227), ("compute_90", 227),
                                       ("sm_100a", 227), ("sm_120", 99), ("sm_61", 48), ("sm_999", 48)])
def test_each_arch_has_its_limit_per_block_and_unknown_ones_the_portable_48_kib(arch, kib):
    assert block_limit(arch) == kib * KIB


def test_the_device_limit_is_the_drivers_figure_else_the_archs(device_info):
    assert device_info.shared_limit == 227 * KIB  # no driver figure: sm_90's
    assert replace(device_info, compute_capability="8.6").shared_limit == 99 * KIB
    assert replace(device_info, max_shared_optin=200 * KIB).shared_limit == 200 * KIB


def test_only_more_than_48_kib_in_all_needs_the_opt_in():
    assert not needs_opt_in(0, STATIC_LIMIT) and not needs_opt_in(STATIC_LIMIT + 1, 0)
    assert needs_opt_in(0, STATIC_LIMIT + 1) and needs_opt_in(1024, STATIC_LIMIT - 1023)


def compiled_with(static: int) -> CompiledKernel:
    return CompiledKernel(None, Config.of("k", {}), get_dtype("float32"), None, 32, static, 0, 1024)


def test_a_launch_over_the_devices_limit_is_a_failed_trial_with_its_reason(device_info):
    compiled_with(1024).check_launch(device_info, (256, 1, 1), 100 * KIB)  # 101 KiB on an H100: fine
    with pytest.raises(TrialFailed) as info:
        compiled_with(1024).check_launch(replace(device_info, compute_capability="8.6"), (256, 1, 1), 100 * KIB)
    assert info.value.status == "resources"
    assert info.value.reason == ("103424 B shared memory per block (1024 static + 102400 dynamic) > 101376 B allowed "
                                 "on NVIDIA H100 80GB HBM3 (sm_86)")
    with pytest.raises(TrialFailed, match="> 232448 B allowed"):
        compiled_with(0).check_launch(device_info, (256, 1, 1), 227 * KIB + 1)


class FakeFunction:
    """A backend Function's dynamic shared memory limit; ``refuse_above``: what the driver refuses."""

    def __init__(self, refuse_above: int = 227 * KIB) -> None:
        self.attributes, self.sets, self.refuse_above = {"MAX_DYNAMIC": STATIC_LIMIT}, [], refuse_above

    def max_dynamic_shared(self):
        return self.attributes["MAX_DYNAMIC"]

    def set_max_dynamic_shared(self, value):
        if value > self.refuse_above:
            raise CudaError("cuFuncSetAttribute failed: invalid argument", 1)
        self.sets.append(value)
        self.attributes["MAX_DYNAMIC"] = value


def test_the_opt_in_raises_the_attribute_never_lowers_it_and_a_refusal_is_a_failed_trial():
    fn = FakeFunction()
    opt_in(fn, 100 * KIB)
    opt_in(fn, 60 * KIB)  # already allowed: not lowered
    opt_in(fn, 200 * KIB)
    assert fn.sets == [100 * KIB, 200 * KIB]
    with pytest.raises(TrialFailed) as info:
        opt_in(FakeFunction(refuse_above=99 * KIB), 100 * KIB)
    assert info.value.status == "resources" and "102400 B of dynamic shared memory" in info.value.reason


class FakeLibcuda:
    """cuFuncGetAttribute answers ``static`` shared bytes; cuFuncSetAttribute is recorded."""

    def __init__(self, static: int) -> None:
        self.static, self.sets = static, []

    def cuFuncGetAttribute(self, value, attribute, function):
        ctypes.cast(value, ctypes.POINTER(ctypes.c_int)).contents.value = self.static
        return 0

    def cuFuncSetAttribute(self, function, attribute, value):
        self.sets.append((function, attribute, value))
        return 0


@pytest.mark.parametrize("static, dynamic, sets", [(0, 48 * KIB, []), (1024, 47 * KIB, []),
                                                   (1024, 100 * KIB, [(7, 8, 100 * KIB)])])
def test_a_runtime_launch_above_48_kib_opts_in_through_the_driver_api(monkeypatch, device_info, static, dynamic, sets):
    fake = FakeLibcuda(static)
    monkeypatch.setattr(driver, "libcuda", lambda: fake)
    launch_module._opt_in(7, dynamic, device_info, "cfg")
    assert fake.sets == sets


def test_a_runtime_launch_over_the_devices_limit_is_refused_before_it_is_tried(monkeypatch, device_info):
    fake = FakeLibcuda(1024)
    monkeypatch.setattr(driver, "libcuda", lambda: fake)
    with pytest.raises(AutotuneError, match=r"cannot run on NVIDIA H100 80GB HBM3: 233472 B shared memory per block "
                                            r"\(1024 static \+ 232448 dynamic\) > 232448 B allowed"):
        launch_module._opt_in(7, 227 * KIB, device_info, "cfg")
    assert fake.sets == []
