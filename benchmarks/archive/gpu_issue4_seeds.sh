#!/usr/bin/env bash
# Issue 4's reproducibility check: two searches of smem_pad at SIZE^2 float32 with different
# seeds, each into its own fresh database, then `best` of each. Both outputs go to
# benchmarks/results/<date>_<gpu>_smem_pad_<size>_seed<N>.txt.
#   bash benchmarks/gpu_issue4_seeds.sh [SIZE]
set -euo pipefail
size=${1:-8192}
run=${AUTOTUNE:-autotune}
here=$(cd "$(dirname "$0")" && pwd)
. "$(dirname "$0")/../gpu_info.sh"
mkdir -p "$here/results"
for seed in 1 2; do
  db=$(mktemp -d)/autotune.db
  out="$here/results/${day}_${tag}_smem_pad_${size}_seed${seed}.txt"
  {
    echo "# autotune search --kernel smem_pad --device 0 --size $size --seed $seed; autotune best --size $size"
    echo "# date: $(date -u '+%Y-%m-%d %H:%M UTC')  device: $gpu  driver: $driver  $(nvcc --version | tail -1)"
    echo "# database: fresh SQLite file"
    echo
    $run search --kernel smem_pad --device 0 --size "$size" --seed "$seed" --db "sqlite:///$db"
    echo
    $run best --size "$size" --kernel smem_pad --db "sqlite:///$db"
  } 2>&1 | tee "$out"
done
