"""The stream a launch goes on: the caller's current stream of its array's library, or ``stream=``."""

from __future__ import annotations

from autotune.errors import InvalidInputError

__all__ = ["stream_handle"]


def stream_handle(stream, first, kind: str | None = None) -> int:
    """The ``CUstream`` handle to launch on.

    Args:
        stream: ``None`` (the current stream of ``first``'s library: PyTorch's
            ``torch.cuda.current_stream(device)``, CuPy's ``get_current_stream()``, the legacy
            default stream 0 otherwise), a handle (int), or an object with ``cuda_stream``
            (torch), ``ptr`` (CuPy) or ``handle`` (PyCUDA).
        first: the first array of the launch; ``kind`` its library (``torch``, ``cupy``, ...),
            read from its type if not given.

    Raises:
        InvalidInputError: ``stream`` is none of these.
    """
    if stream is None:
        kind = kind or type(first).__module__.split(".")[0]
        if kind == "torch":
            return _torch_stream(first)
        if kind == "cupy":
            import cupy

            return int(cupy.cuda.get_current_stream().ptr)
        return 0
    if isinstance(stream, int) and not isinstance(stream, bool):
        return stream
    for attr in ("cuda_stream", "ptr", "handle"):
        if hasattr(stream, attr):
            return int(getattr(stream, attr))
    raise InvalidInputError(f"stream {stream!r} is not allowed; give a stream handle (int), a torch or CuPy "
                            "stream, or a PyCUDA Stream")


def _torch_stream(tensor) -> int:
    """The current PyTorch stream of ``tensor``'s device: the raw handle where torch has the
    private fast accessor (about 0.2 µs instead of a Stream object's 2 µs)."""
    import torch

    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return int(raw(tensor.get_device()))
    return int(torch.cuda.current_stream(tensor.device).cuda_stream)
