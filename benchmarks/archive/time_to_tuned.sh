#!/usr/bin/env bash
# Issue 13, time to tuned, in one GPU run (benchmarks/time_to_tuned.py says what and how):
#   (a) Kernel Tuner 1.5.0 brute force of smem_pad's 54 configs at 8192^2 float32 (lang=PYCUDA);
#   (b) `autotune sweep --kernel smem_pad --size 8192` and (c) the README main job, `autotune
#       search --kernel smem_pad --device 0 --size 8192` (TPE, 100 trials), each from a cold start
#       (fresh database, empty cubin cache), with where their time went;
#   (d) the three bests re-measured by one common timer;
#   (e) TPE and random orders replayed on a measured 1,080-config table (a surrogate): configs
#       measured until within 2 % of the best, and the best-so-far curves (CSV, PNG).
#   bash benchmarks/time_to_tuned.sh [--quick]
# Output: $OUT (or benchmarks/results)/<date>_<gpu>_time_to_tuned{.txt,_table.csv,_curves.csv,_curves.png}
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
exec python3 "$here/time_to_tuned.py" --out "${OUT:-$here/results}" "$@"
