#!/usr/bin/env bash
# Issue 6 on one GPU: tune smem_vec (the vectorized transpose) per dtype, then run
# benchmarks/transpose_vs_peers.py against memcpy, PyTorch, CuPy and the classic kernel.
#   bash benchmarks/transpose_vs_peers.sh tune DB_FILE     # searches into a SQLite file
#   bash benchmarks/transpose_vs_peers.sh peers DB_FILE    # the comparison table, and ncu counters
#   bash benchmarks/transpose_vs_peers.sh table DB_FILE    # the comparison table alone (every element size,
#        odd, batched and 1 x N shapes, host time per call, import and first-call time); DB_FILE may not
#        exist: the kernels' default configs (no tuning in the run, about 3 minutes)
# Output: $OUT (if set) or benchmarks/results/, file names carry the date and the GPU.
# AUTOTUNE="python3 -m autotune" selects how autotune is run (default: the `autotune` script).
set -euo pipefail
step=$1 db=$2
run=${AUTOTUNE:-autotune}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/gpu_info.sh"
file=${day}_${tag}
dest=${OUT:-$here/results}
mkdir -p "$dest"
header() { echo "# $*"; echo "# date: $(date -u '+%Y-%m-%d %H:%M UTC')  device: $gpu  $(nvcc --version | tail -1)"; echo; }

case $step in
tune)  # narrowed spaces (see their files): 12 configs at 8192^2, 4 at 16384^2
  {
    header "autotune search --kernel smem_vec --sampler grid: --size 8192 (four dtypes), --size 16384 (float32, float64)"
    git -C "$here" log -1 --format='# commit %h %s' 2>/dev/null || true
    for dtype in ${DTYPES_8192:-float32 float64 float16 int8}; do
      $run search --kernel smem_vec --size 8192 --dtype "$dtype" --sampler grid --trials 100 \
        --space "$here/spaces/smem_vec_bench.toml" --db "sqlite:///$db" --top 5
    done
    for dtype in ${DTYPES_16384:-float32 float64}; do
      $run search --kernel smem_vec --size 16384 --dtype "$dtype" --sampler grid --trials 100 \
        --space "$here/spaces/smem_vec_large.toml" --db "sqlite:///$db" --top 5
    done
    $run best --kernel smem_vec --db "sqlite:///$db"
  } 2>&1 | tee -a "$dest/${file}_smem_vec_search.txt"
  ;;
peers)
  python3 "$here/transpose_vs_peers.py" --db "sqlite:///$db" 2>&1 | tee "$dest/${file}_transpose_vs_peers.md"
  if command -v ncu >/dev/null; then  # what bounds the gap: DRAM traffic and throughput, memcpy-like copy vs transposes
    {
      header "ncu: DRAM counters of copy_row, smem_pad and smem_vec (tuned), float32 8192x8192"
      metrics=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,sm__warps_active.avg.pct_of_peak_sustained_active
      keep='^  [a-z_]+ \(|dram__|gpu__|l1tex__|sm__warps'
      echo "## copy_row (default config): the copy bound"
      ncu --metrics $metrics -k copy_tiled -c 1 $run bench --size 8192 --kernel copy_row --repeats 20 \
        --db "sqlite:///$(mktemp -d)/e.db" 2>&1 | grep -E "$keep" || true
      for k in smem_pad smem_vec; do  # smem_pad: not tuned in $db, so its classic default; smem_vec: tuned
        echo "## autotune.transpose(kernel=$k), float32 8192x8192"
        ncu --metrics $metrics -k regex:"transpose_" -c 1 python3 -c "
import torch, autotune
x = torch.randn(8192, 8192, device='cuda')
print(autotune.lookup('$k', (8192, 8192), 'float32', device=0, db='sqlite:///$db'))
autotune.transpose(x, kernel='$k', db='sqlite:///$db')
torch.cuda.synchronize()" 2>&1 | grep -E "$keep|LaunchConfig" || true
      done
    } > "$dest/${file}_transpose_ncu.txt" 2>&1
  fi
  ;;
table)
  python3 "$here/transpose_vs_peers.py" --db "sqlite:///$db" 2>&1 | tee "$dest/${file}_transpose_vs_peers.md"
  ;;
*) echo "usage: $0 tune|peers|table DB_FILE" >&2; exit 2 ;;
esac
