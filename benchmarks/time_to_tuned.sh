#!/usr/bin/env bash
# Issue 13, autotune's side: wall time to tuned on one GPU, from a cold start (fresh database,
# empty cubin cache), for the issue's two workloads:
#   1. `autotune sweep` of smem_pad's 54-config space at 8192^2 float32 (Kernel Tuner 1.5.0
#      brute force took 75 s and autotune 145 s on the H100 when the issue was filed);
#   2. the README's main job, `autotune search --kernel smem_pad --size 8192` (TPE, 100 trials:
#      117 s then).
# Then the sweep again with the cubin cache warm (a second machine tuning the same source).
# Each search prints where its time went (compile, load, verify, time, store).
#   bash benchmarks/time_to_tuned.sh
# Output: $OUT (or benchmarks/results)/<date>_<gpu>_time_to_tuned.txt
set -euo pipefail
run=${AUTOTUNE:-python3 -m autotune}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/gpu_info.sh"
dest=${OUT:-$here/results}
mkdir -p "$dest"
scratch=$(mktemp -d)
export AUTOTUNE_CACHE_DIR="$scratch/cache"
timed() {  # timed LABEL COMMAND...
  local label=$1 start end
  shift
  start=$(date +%s.%N)
  "$@"
  end=$(date +%s.%N)
  echo "# wall time of $label: $(python3 -c "print(f'{$end - $start:.1f}')") s"
}
{
  echo "# time to tuned (issue 13): cold start, fresh database, empty cubin cache"
  echo "# date: $(date -u '+%Y-%m-%d %H:%M UTC')  device: $gpu  driver: $driver  $(nvcc --version | tail -1)"
  echo "# CPU cores: $(nproc)"
  echo
  set -x
  timed "sweep (cold cache)" $run sweep --kernel smem_pad --size 8192 --db "sqlite:///$scratch/sweep.db"
  timed "search, TPE 100 trials (README main job)" $run search --kernel smem_pad --device 0 --size 8192 \
        --db "sqlite:///$scratch/search.db"
  timed "sweep (warm cache, new database)" $run sweep --kernel smem_pad --size 8192 --db "sqlite:///$scratch/again.db"
} 2>&1 | tee "$dest/${day}_${tag}_time_to_tuned.txt"
