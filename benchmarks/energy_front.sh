#!/usr/bin/env bash
# Issue 40's energy target: the time-energy Pareto front (autotune search --objective time,energy,
# NSGA-II) of smem_pad 8192x8192 float32 and matmul_warp 2048^3 float32 on one GPU, ~40 trials
# each, the whole call capped at --max-seconds (default 170 s) (benchmarks/energy_front.py).
#   source .device/install.sh && bash benchmarks/energy_front.sh
#   bash benchmarks/energy_front.sh --trials 60 --max-seconds 300
# Output: $OUT (if set) or benchmarks/results/<date>_<gpu>_energy_front.txt (+ .json): the device,
# the date, each front member's ms and J per launch, the time- and energy-optimal configs named.
# A GPU without NVML's total-energy counter: the search's one error line, in the report.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
python3 "$here/energy_front.py" --out "${OUT:-$here/results}" "$@"
