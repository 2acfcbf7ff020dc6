#!/usr/bin/env bash
# smem_bytes (kernels/bytes_realign.cu) against smem_vec_realign, smem_pad and smem_vec on unaligned rows of
# 1- and 2-byte elements, in one run on GPU 0: 5000x7001 and 3001x7919, int8 and float16, each kernel at its
# default and at the configs named below, every line verified bit for bit first (benchmarks/unaligned_transpose.py).
# Then, with `search`, a grid search of smem_bytes' whole space (28 configs) at 5000x7001 for both dtypes.
#   bash benchmarks/unaligned_transpose.sh [search]
# Output: $OUT (if set) or benchmarks/results/, <date>_<gpu>_unaligned_transpose_bytes.txt (and _bytes_search.txt).
# AUTOTUNE="python3 -m autotune" selects how autotune is run (default: the `autotune` script).
set -euo pipefail
run=${AUTOTUNE:-autotune}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/gpu_info.sh"
dest=${OUT:-$here/results}
mkdir -p "$dest"
header() { echo "# $*"; echo "# date: $(date -u '+%Y-%m-%d %H:%M UTC')  device: $gpu  driver: $driver  $(nvcc --version | tail -1)"; }
{
  header "unaligned transposes of 1- and 2-byte elements: smem_bytes vs smem_vec_realign, smem_pad, smem_vec"
  git -C "$here" log -1 --format='# commit %h %s' 2>/dev/null || true
  python3 "$here/unaligned_transpose.py" --shape 5000x7001 --shape 3001x7919 --dtype int8 --dtype float16 \
    --config smem_bytes --config smem_bytes:BLOCK_ROWS=16 --config smem_bytes:BLOCK_ROWS=4 \
    --config smem_bytes:STREAMING=1 --config smem_bytes:TILE_BYTES=64,BLOCK_ROWS=8 \
    --config smem_vec_realign --config smem_vec_realign:BLOCK_ROWS=32 \
    --config smem_pad --config smem_vec:BLOCK_ROWS=32 --repeats 30
} 2>&1 | tee "$dest/${day}_${tag}_unaligned_transpose_bytes.txt"
if [ "${1:-}" = search ]; then
  db=$(mktemp -d)/autotune.db
  {
    header "autotune search --kernel smem_bytes --sampler grid (its 28 configs) at 5000x7001, int8 and float16"
    for dtype in int8 float16; do
      $run search --kernel smem_bytes --rows 5000 --cols 7001 --dtype "$dtype" --sampler grid --trials 28 \
        --db "sqlite:///$db" --top 5
    done
  } 2>&1 | tee "$dest/${day}_${tag}_unaligned_transpose_bytes_search.txt"
fi
