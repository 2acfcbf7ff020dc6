#!/usr/bin/env bash
# The main job of the README, recorded: `autotune search` of smem_pad at SIZE x SIZE float32 on
# device 0, then `autotune best`, into a fresh database; the output, with the device, driver
# and date, goes to benchmarks/results/<date>_<gpu>_smem_pad_<size>.txt.
#   bash benchmarks/search_smem_pad.sh [SIZE] [extra search options...]
# AUTOTUNE="python3 -m autotune" selects how autotune is run (default: the `autotune` script).
set -euo pipefail
size=${1:-8192}
shift || true
run=${AUTOTUNE:-autotune}
here=$(cd "$(dirname "$0")" && pwd)
. "$(dirname "$0")/gpu_info.sh"
out="$here/results/${day}_${tag}_smem_pad_${size}.txt"
db=$(mktemp -d)/autotune.db
mkdir -p "$here/results"
{
  echo "# autotune search --kernel smem_pad --device 0 --size $size $*; autotune best --size $size"
  echo "# date: $(date -u '+%Y-%m-%d %H:%M UTC')  device: $gpu  driver: $driver  $(nvcc --version | tail -1)"
  echo "# database: fresh SQLite file"
  echo
  $run search --kernel smem_pad --device 0 --size "$size" --db "sqlite:///$db" "$@"
  echo
  $run best --size "$size" --db "sqlite:///$db"
} 2>&1 | tee "$out"
echo "wrote $out"
