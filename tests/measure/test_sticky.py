"""The CUDA errors that leave a context unusable, named from the driver's message."""

from autotune.measure.sticky import sticky_reason


def test_sticky_errors_are_named():
    assert sticky_reason("cuCtxSynchronize failed: an illegal memory access was encountered") == \
        "illegal_address: an illegal memory access was encountered"
    assert sticky_reason("cuMemcpyDtoH failed: misaligned address").startswith("misaligned_address: ")
    assert sticky_reason("cuCtxSynchronize failed: unspecified launch failure").startswith("launch_failed: ")
    assert sticky_reason("cuLaunchKernel failed: too many resources requested for launch") is None
