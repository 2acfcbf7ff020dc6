#!/usr/bin/env bash
# Issue 23 on one GPU: host time per launch of autotune.launcher (1, 2, 4, 6 arrays; PyTorch,
# CuPy, PyCUDA), PyTorch's ops in the same run, graph capture, the floors (bare ctypes, PyCUDA,
# cuda.bindings) and the back-to-back check (benchmarks/launch_overhead.py; about a minute).
#   bash benchmarks/launch_overhead.sh
# Output: $OUT (if set) or benchmarks/results/<date>_<gpu>_launch_overhead.txt.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
python3 "$here/launch_overhead.py" --out "${OUT:-$here/results}" "$@"
