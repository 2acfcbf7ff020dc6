#!/usr/bin/env bash
# Issue 22, search in large spaces (benchmarks/large_space_search.py says what and how):
#   GPU: bash benchmarks/large_space_search.sh --record [--only smem_vec_2048x2048_float32 ...]
#        (each table of TABLES measured whole by `autotune sweep`, written as CSV config,median_ms)
#   GPU: bash benchmarks/large_space_search.sh --throughput [--batch 16]
#        ((a): `autotune search --kernel matmul_warp --size 4096 --strategy tpe --batch K --trials 100`, cold)
#   CPU: bash benchmarks/large_space_search.sh [--seeds 20 --kt-seeds 10]
#        ((b) autotune's and Kernel Tuner's strategies replayed on the tables and scored, (c) transfer);
#        needs Kernel Tuner: pip install -e '.[interchange]' (kernel_tuner 1.5.0; its wheel is in
#        ../shared/device/wheels/ for the GPU machine)
# The replay reads tables from benchmarks/results (--results DIR for others, e.g. --results "$OUT"
# right after a --record run on the GPU machine).
# Output: $OUT (or benchmarks/results)/<date>_<gpu>_large_space_search* and ..._table_<kernel>_<shape>_<dtype>.csv
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
exec python3 "$here/large_space_search.py" --out "${OUT:-$here/results}" "$@"
