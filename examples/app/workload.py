"""What the example application launches: every op at its shapes, and how often per step.

Kept apart from ``app.py`` (which needs PyTorch and a GPU) so that the shapes can be read and
checked anywhere (``tests/test_example_app.py``). Odd shapes are on purpose: a real program's
tensors are rarely powers of two.
"""

from __future__ import annotations

TRANSPOSES = [  # (dtype, rows, cols, calls per step)
    ("float32", 4096, 4096, 2), ("float32", 3001, 5003, 2), ("float32", 1023, 777, 8),
    ("float16", 2048, 8192, 2), ("float16", 4097, 1025, 4), ("float16", 513, 2049, 6),
    ("int8", 8192, 8192, 1), ("int8", 3000, 7919, 2),
]
MATMULS = [  # float32 (m, n, k, calls per step): C[m, n] = A[m, k] @ B[k, n]
    (2048, 2048, 2048, 1), (1024, 4096, 1024, 2), (1000, 3000, 700, 2), (4096, 512, 1536, 1),
]
REDUCTIONS = [("float32", 1 << 24, 2), ("float32", 3_000_017, 4), ("float64", 65_537, 8)]  # (dtype, n, calls)
SOFTMAXES = [("float32", 4096, 1024, 2), ("float32", 1000, 3001, 2), ("float64", 64, 32768, 1)]  # (dtype, rows, cols)
HISTOGRAMS = [(1 << 26, 1), (10_000_019, 2), (1_000_003, 4)]  # (n bytes, calls per step)


def problems() -> list[tuple[str, str, tuple[int, ...], int]]:
    """Every ``(op, dtype, shape, calls per step)`` the application launches."""
    out = [("transpose", dt, (r, c), n) for dt, r, c, n in TRANSPOSES]
    out += [("matmul_warp", "float32", (m, n_, k), n) for m, n_, k, n in MATMULS]
    out += [("reduce_sum", dt, (size,), n) for dt, size, n in REDUCTIONS]
    out += [("softmax_rows", dt, (r, c), n) for dt, r, c, n in SOFTMAXES]
    out += [("histogram256", "uint8", (size,), n) for size, n in HISTOGRAMS]
    return out
