#!/usr/bin/env bash
# Issue 12 on one GPU: tune both example kernels (files outside autotune/) through the same
# path as the catalog, show `best`, then look them up and launch them from PyTorch
# (benchmarks/examples_launch.py).
#   bash benchmarks/examples_gpu.sh DB_FILE
# Output: $OUT (if set) or benchmarks/results/, file names carry the date and the GPU.
set -euo pipefail
db=$1
run=${AUTOTUNE:-autotune}
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
. "$here/gpu_info.sh"
dest=${OUT:-$here/results}
mkdir -p "$dest"
{
  echo "# autotune on users' kernels: examples/reduction and examples/softmax"
  echo "# date: $(date -u '+%Y-%m-%d %H:%M UTC')  device: $gpu  driver $driver  $(nvcc --version | tail -1)"
  echo
  set -x
  $run check "$root/examples/reduction/reduce.toml"
  $run search --kernel "$root/examples/reduction/reduce.toml" --dims n=16777216 --trials 40 --seed 1 --db "sqlite:///$db"
  $run best --kernel "$root/examples/reduction/reduce.toml" --dims n=16777216 --db "sqlite:///$db"
  $run check "$root/examples/softmax/softmax.toml"
  $run search --kernel "$root/examples/softmax/softmax.toml" --dims rows=4096,cols=4096 --sampler grid --db "sqlite:///$db"
  $run best --kernel "$root/examples/softmax/softmax.toml" --rows 4096 --cols 4096 --db "sqlite:///$db"
  $run list --db "sqlite:///$db"
  python3 "$here/examples_launch.py" --db "sqlite:///$db"
} 2>&1 | tee "$dest/${day}_${tag}_examples.txt"
