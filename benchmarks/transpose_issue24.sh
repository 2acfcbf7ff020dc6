#!/usr/bin/env bash
# Issue 24 on one GPU: skinny and odd-row transposes, each kernel and config measured side by side
# (benchmarks/unaligned_transpose.py: verified bit for bit, then the median of CUDA-event-timed
# launches, % of a device memcpy of the same bytes), then the peers table of issue 24's shapes at
# the default choice (benchmarks/transpose_vs_peers.py --cases odd --cases skinny --cases batched).
#   bash benchmarks/transpose_issue24.sh sweep      # skinny configs, odd-row kernels (about 3 minutes)
#   bash benchmarks/transpose_issue24.sh heldout    # shapes the rule was not made from: its pick against the others
#   bash benchmarks/transpose_issue24.sh explore    # skinny's whole space where it trails PyTorch or its best
#   bash benchmarks/transpose_issue24.sh peers      # the table (no database: every line a default config)
# Output: $OUT (if set) or benchmarks/results/, file names carry the date and the GPU.
set -euo pipefail
step=$1
here=$(cd "$(dirname "$0")" && pwd)
. "$here/gpu_info.sh"
file=${day}_${tag}
dest=${OUT:-$here/results}
mkdir -p "$dest"
ua() { python3 "$here/unaligned_transpose.py" --repeats 30 "$@"; }
skinny_configs() {
  for kib in 4 8 16; do for t in 128 256 512; do for s in 0 1; do
    echo --config "skinny:BLOCK_KIB=$kib,THREADS=$t,STREAMING=$s"; done; done; done
}
case $step in
sweep)
  {
    echo "# skinny at every config of its space against the square-tile kernels at their defaults"
    ua --shape 7x1000003 --shape 1000003x7 --dtype int8 $(skinny_configs) --config smem_bytes --config smem_vec \
      --config smem_pad --config unroll_row
    ua --shape 65536x33 --shape 33x65536 --shape 65536x32 --dtype float32 $(skinny_configs) --config smem_vec \
      --config smem_vec_realign --config smem_pad
    ua --shape 33x65536 --shape 200003x5 --dtype float16 --config skinny --config skinny:BLOCK_KIB=16 \
      --config skinny:BLOCK_KIB=4 --config smem_vec_realign --config smem_vec
    ua --shape 9x200003 --dtype float64 --config skinny --config skinny:BLOCK_KIB=16 --config skinny:BLOCK_KIB=4 \
      --config smem_vec_realign --config smem_vec
  } 2>&1 | tee "$dest/${file}_transpose_skinny_sweep.txt"
  {
    echo "# rows not 16-byte aligned on both sides (5000x7001: on one side): smem_vec (its element path), smem_vec_realign, smem_pad"
    ua --shape 12345x6789 --shape 4093x4099 --shape 3001x7919 --shape 4099x2053 --shape 2047x8191 --shape 5000x7001 \
      --dtype float16 --dtype float32 --dtype float64 --config smem_vec --config smem_vec:BLOCK_ROWS=32 \
      --config smem_vec:BLOCK_ROWS=32,STREAMING=1 --config smem_vec:TILE_DIM=32,BLOCK_ROWS=8 \
      --config smem_vec_realign --config smem_vec_realign:BLOCK_ROWS=32 --config smem_pad \
      --config smem_pad:TILE_DIM=64,BLOCK_ROWS=8
  } 2>&1 | tee "$dest/${file}_transpose_odd_rows_sweep.txt"
  ;;
heldout)
  {
    echo "# held out: shapes the rule (autotune/runtime/op_choice.py) was not made from, each kernel at its default"
    ua --shape 6007x3001 --shape 999x12347 --shape 7777x5555 --shape 1001x30001 --dtype float32 --config smem_vec \
      --config smem_vec_realign --config smem_pad
    ua --shape 13x500009 --shape 100003x21 --dtype float16 --config skinny --config smem_vec_realign --config smem_vec
    ua --shape 5x777777 --shape 300007x3 --dtype float32 --config skinny --config smem_vec_realign --config smem_vec
    ua --shape 50x100003 --dtype int8 --config skinny --config smem_bytes --config smem_vec
  } 2>&1 | tee "$dest/${file}_transpose_heldout.txt"
  ;;
explore)
  {
    echo "# skinny's 18 configs where the default trails PyTorch (9x200003 float64, 200003x5 float16) or its best (33x65536 float16)"
    ua --shape 9x200003 --dtype float64 $(skinny_configs)
    ua --shape 200003x5 --shape 33x65536 --dtype float16 $(skinny_configs)
  } 2>&1 | tee "$dest/${file}_transpose_skinny_explore.txt"
  ;;
peers)
  python3 "$here/transpose_vs_peers.py" --db "sqlite:///$(mktemp -d)/none.db" --only table --cases odd \
    --cases skinny --cases batched --kernel skinny --kernel smem_vec --kernel smem_vec_realign 2>&1 \
    | tee "$dest/${file}_transpose_vs_peers_issue24.md"
  ;;
*) echo "usage: $0 sweep|heldout|explore|peers" >&2; exit 2 ;;
esac
