#!/usr/bin/env bash
# Issue 24 on one GPU: skinny and odd-row transposes, each kernel and config measured side by side
# (benchmarks/unaligned_transpose.py: verified bit for bit, then the median of CUDA-event-timed
# launches, % of a device memcpy of the same bytes), then the peers table of issue 24's shapes at
# the default choice (benchmarks/transpose_vs_peers.py --cases odd --cases skinny --cases batched).
#   bash benchmarks/transpose_issue24.sh sweep      # skinny configs, odd-row kernels (about 3 minutes)
#   bash benchmarks/transpose_issue24.sh heldout    # shapes the rule was not made from: its pick against the others
#   bash benchmarks/transpose_issue24.sh explore    # skinny's whole space where it trails PyTorch or its best
#   bash benchmarks/transpose_issue24.sh peers      # the table (no database: every line a default config)
#   bash benchmarks/transpose_issue24.sh tuned      # op searches (`autotune search --op transpose`, 30 configs) of
#                                                   # six shapes, then their peers table at the default and tuned
#   bash benchmarks/transpose_issue24.sh wide       # 128 x 128 smem_pad tiles (dynamic shared memory) against the
                                                   # rule's 64 x 64 on rows odd on both sides, 8 shapes x 4 dtypes
#   bash benchmarks/transpose_issue24.sh aligned    # smem_aligned_out (output segments on sector boundaries) against
                                                   # smem_pad and the rule's kernels, odd rows on both sides
#   bash benchmarks/transpose_issue24.sh one_side   # smem_aligned_out where rows are misaligned on one side only,
                                                   # and for 16-byte elements, against the rule's kernels
#   bash benchmarks/transpose_issue24.sh untuned    # op searches (26 configs) of 2 shapes the rule was made from and 4
                                                   # held out, then the peers table at the default choice and op-tuned
#   bash benchmarks/transpose_issue24.sh half       # smem_pad configs for 2-byte rows odd on both sides (diagonal order,
                                                   # padding), 8 shapes
#   bash benchmarks/transpose_issue24.sh bytes      # smem_bytes_aligned_out (every config) against smem_bytes and the
                                                   # rule's kernels for 1- and 2-byte elements, odd, one-side, aligned;
                                                   # then its configs in row and diagonal order
#   bash benchmarks/transpose_issue24.sh warm       # 1- and 2-byte configs timed back to back on one argument set
                                                   # (L2-warm up to ~24 MiB), 0.4 to 45 MiB (warm_l2_transpose.py)
#   bash benchmarks/transpose_issue24.sh flat       # naive_flat (a copy over the flattened output) beside the rule,
                                                   # PyTorch and naive_col on the small, skinny and batched cases
#   bash benchmarks/transpose_issue24.sh ncu        # Nsight Compute counters of one launch per class, beside the
#                                                   # aligned case and PyTorch's strided copy of the same shape
# Output: $OUT (if set) or benchmarks/results/, file names carry the date and the GPU.
set -euo pipefail
step=$1
run=${AUTOTUNE:-autotune}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/gpu_info.sh"
file=${day}_${tag}
dest=${OUT:-$here/results}
mkdir -p "$dest"
header() { echo "# $*"; echo "# date: $(date -u '+%Y-%m-%d %H:%M UTC')  device: $gpu  driver: $driver  $(nvcc --version | tail -1)"; }
ua() { python3 "$here/unaligned_transpose.py" --repeats 30 "$@"; }
# rows odd on both sides: 4 shapes the rule was made from, 4 held out (6007x3001 ...)
ODD="--shape 12345x6789 --shape 4093x4099 --shape 3001x7919 --shape 4099x2053 --shape 6007x3001 --shape 999x12347
  --shape 7777x5555 --shape 1001x30001"
default_and_tuned() {  # DB "DTYPE SIZES"...: the peers table with no database, then with the op searches in DB
  local db=$1 pair; shift
  for pair in "$@"; do
    set -- $pair
    echo "## default choice (empty database)"
    python3 "$here/transpose_vs_peers.py" --db "sqlite:///$(mktemp -d)/none.db" --only table --dtypes "$1" --sizes "$2"
    echo "## op-tuned (the database of the searches above)"
    python3 "$here/transpose_vs_peers.py" --db "sqlite:///$db" --only table --dtypes "$1" --sizes "$2"
  done
}
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
    echo "# held out: shapes the rule (autotune/runtime/transpose/choice.py) was not made from, each kernel at its default"
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
    --cases skinny --cases batched --cases small --kernel skinny --kernel smem_vec --kernel smem_vec_realign \
    --kernel smem_aligned_out --kernel smem_bytes --kernel smem_bytes_aligned_out --kernel naive_flat \
    --kernel naive_col 2>&1 | tee "$dest/${file}_transpose_vs_peers_issue24.md"
  ;;
tuned)
  db=$(mktemp -d)/tuned.db
  {
    echo "# autotune search --op transpose --trials 30 of each shape into one database (its default strategy and batches)"
    for case in 12345x6789:float32 4099x2053:float16 10007x10009:uint8 9x200003:float64 65536x33:float32 \
                33x65536:float32; do
      shape=${case%%:*} dtype=${case##*:}
      $run search --op transpose --rows "${shape%%x*}" --cols "${shape##*x}" --dtype "$dtype" --trials 30 \
        --db "sqlite:///$db" 2>&1 | tail -12
    done
  } 2>&1 | tee "$dest/${file}_transpose_op_search_issue24.txt"
  {
    default_and_tuned "$db" "float32 12345x6789,65536x33,33x65536" "float16 4099x2053" "bfloat16 4099x2053" \
      "uint8 10007x10009" "float64 9x200003"
  } 2>&1 | tee "$dest/${file}_transpose_vs_peers_issue24_tuned.md"
  ;;
untuned)
  db=$(mktemp -d)/tuned.db
  {
    header "autotune search --op transpose --trials 26 into one database; made the rule: 12345x6789 float32," \
           "4099x2053 float16; held out: 7777x5555 and 7001x5000 float32, 999x12347 float64, 1001x30001 float16"
    for case in 12345x6789:float32 4099x2053:float16 7777x5555:float32 7001x5000:float32 999x12347:float64 \
                1001x30001:float16; do
      shape=${case%%:*} dtype=${case##*:}
      $run search --op transpose --rows "${shape%%x*}" --cols "${shape##*x}" --dtype "$dtype" --trials 26 \
        --db "sqlite:///$db" 2>&1 | tail -6
    done
  } 2>&1 | tee "$dest/${file}_transpose_op_search_untuned.txt"
  {
    header "the default choice (empty database) against op-tuned (the searches above), same run"
    default_and_tuned "$db" "float32 12345x6789,7777x5555,7001x5000" "float16 4099x2053,1001x30001" "float64 999x12347"
  } 2>&1 | tee "$dest/${file}_transpose_vs_peers_untuned.md"
  ;;
wide)
  {
    header "smem_pad 128 x 128 tiles (dynamic shared memory above 48 KiB) against 64 x 64, rows odd on both sides;" \
           "4 shapes the rule was made from, 4 held out (6007x3001 ...), then aligned 8192^2"
    ua $ODD --dtype float32 --dtype float16 --dtype float64 --config smem_pad:TILE_DIM=64,BLOCK_ROWS=16 --config smem_pad:TILE_DIM=64,BLOCK_ROWS=8 \
      --config smem_pad:TILE_DIM=128,BLOCK_ROWS=8 --config smem_pad:TILE_DIM=128,BLOCK_ROWS=4 \
      --config smem_pad:TILE_DIM=128,BLOCK_ROWS=8,IPAD=2 --config smem_vec_realign
    ua --shape 10007x10009 --shape 3001x7919 --dtype uint8 --config smem_bytes --config smem_pad:TILE_DIM=64,BLOCK_ROWS=16 \
      --config smem_pad:TILE_DIM=128,BLOCK_ROWS=8,IPAD=4 --config smem_pad:TILE_DIM=128,BLOCK_ROWS=4,IPAD=4
    ua --shape 8192x8192 --dtype float32 --dtype float64 --config smem_vec --config smem_pad:TILE_DIM=64,BLOCK_ROWS=16 \
      --config smem_pad:TILE_DIM=128,BLOCK_ROWS=8
  } 2>&1 | tee "$dest/${file}_transpose_wide_tiles.txt"
  ;;
aligned)
  {
    header "smem_aligned_out (output row segments on 32-byte sector boundaries) against smem_pad 64 x 64 (the rule" \
           "for 2 and 4 bytes) and smem_vec_realign (8 bytes), rows odd on both sides; 6007x3001 ... held out"
    ua $ODD --dtype float32 --dtype float16 --dtype float64 --config smem_pad:TILE_DIM=64,BLOCK_ROWS=16 \
      --config smem_pad:TILE_DIM=64,BLOCK_ROWS=8 --config smem_vec_realign --config smem_aligned_out \
      --config smem_aligned_out:BLOCK_ROWS=8 --config smem_aligned_out:BLOCK_ROWS=8,IPAD=2 \
      --config smem_aligned_out:TILE_DIM=32,BLOCK_ROWS=8
    ua --shape 10007x10009 --shape 3001x7919 --shape 4099x2053 --dtype uint8 --config smem_bytes \
      --config smem_aligned_out --config smem_aligned_out:TILE_DIM=128,BLOCK_ROWS=8,IPAD=2 \
      --config smem_aligned_out:TILE_DIM=128,BLOCK_ROWS=4,IPAD=2 --config smem_aligned_out:BLOCK_ROWS=8,IPAD=2
    ua --shape 5000x7001 --shape 7001x5000 --shape 2047x8191 --shape 65536x33 --shape 33x65536 --dtype float32 \
      --config smem_pad:TILE_DIM=64,BLOCK_ROWS=16 --config smem_vec_realign --config smem_vec --config smem_aligned_out
  } 2>&1 | tee "$dest/${file}_transpose_aligned_out.txt"
  ;;
bytes)
  all="--config smem_bytes_aligned_out"
  for t in 64 128; do for b in 8 16; do for a in 4 32; do
    all="$all --config smem_bytes_aligned_out:TILE_BYTES=$t,BLOCK_ROWS=$b,OUT_ALIGN=$a"; done; done; done
  {
    header "smem_bytes_aligned_out (output rows from 4-byte words or 32-byte sectors, every config) against smem_bytes" \
           "and smem_pad (the rule's kernels), 1- and 2-byte elements; rows odd on both sides (6007x3001 ... held" \
           "out), on one side, aligned, and skinny"
    ua $ODD --shape 10007x10009 --dtype uint8 --dtype float16 $all --config smem_bytes \
      --config smem_pad:TILE_DIM=64,BLOCK_ROWS=8 --config smem_pad:TILE_DIM=64,BLOCK_ROWS=8,DIAGONAL=1
    ua --shape 5000x7001 --shape 7001x5000 --shape 8192x8192 --shape 7x1000003 --shape 65536x33 --dtype uint8 \
      --dtype float16 $all --config smem_bytes --config smem_vec_realign --config smem_vec --config skinny
  } 2>&1 | tee "$dest/${file}_transpose_bytes_aligned_out.txt"
  b=smem_bytes_aligned_out
  {
    echo "# smem_bytes_aligned_out in row and diagonal order (DIAGONAL=1), sector-aligned output (OUT_ALIGN=32)," \
         "128-byte tiles at BLOCK_ROWS 16 and 8, 64-byte at 16; uint8 and float16"
    ua $ODD --shape 10007x10009 --shape 5000x7001 --shape 7001x5000 --dtype uint8 --dtype float16 \
      --config $b:BLOCK_ROWS=16 --config $b:BLOCK_ROWS=16,DIAGONAL=1 --config $b:BLOCK_ROWS=8 \
      --config $b:BLOCK_ROWS=8,DIAGONAL=1 --config $b:BLOCK_ROWS=16,TILE_BYTES=64 \
      --config $b:BLOCK_ROWS=16,TILE_BYTES=64,DIAGONAL=1
  } 2>&1 | tee "$dest/${file}_transpose_bytes_diagonal.txt"
  ;;
warm)
  b=smem_bytes_aligned_out
  sizes="--shape 513x771 --shape 1001x1999 --shape 2049x3001 --shape 4099x2053 --shape 3001x5003 --shape 4093x4099"
  {
    python3 "$here/warm_l2_transpose.py" $sizes --shape 6007x3001 --shape 3001x7919 --dtype float16 \
      --config smem_pad:TILE_DIM=64,BLOCK_ROWS=8 --config smem_pad:TILE_DIM=64,BLOCK_ROWS=8,DIAGONAL=1 \
      --config smem_vec_realign --config $b:BLOCK_ROWS=8 --config $b:BLOCK_ROWS=8,OUT_ALIGN=4 --config $b \
      --config $b:TILE_BYTES=64,OUT_ALIGN=4
    python3 "$here/warm_l2_transpose.py" $sizes --shape 3001x7919 --dtype uint8 --config smem_bytes \
      --config smem_pad:TILE_DIM=64,BLOCK_ROWS=8 --config $b --config $b:OUT_ALIGN=4 --config $b:TILE_BYTES=64 \
      --config $b:TILE_BYTES=64,OUT_ALIGN=4
  } 2>&1 | tee "$dest/${file}_transpose_bytes_warm_l2.txt"
  ;;
flat)
  python3 "$here/transpose_vs_peers.py" --db "sqlite:///$(mktemp -d)/none.db" --only table --cases skinny \
    --cases batched --cases small --kernel naive_flat --kernel naive_col --kernel skinny 2>&1 \
    | tee "$dest/${file}_transpose_vs_peers_flat.md"
  ;;
half)
  {
    header "smem_pad configs for float16 rows odd on both sides: the rule's 64 x 8 against the diagonal order and" \
           "IPAD=2 (1001x30001's op search stored 32 x 8, DIAGONAL=1, IPAD=2); 6007x3001 ... held out"
    ua $ODD --dtype float16 --config smem_pad:TILE_DIM=64,BLOCK_ROWS=8 \
      --config smem_pad:TILE_DIM=64,BLOCK_ROWS=8,DIAGONAL=1 --config smem_pad:TILE_DIM=64,BLOCK_ROWS=8,DIAGONAL=1,IPAD=2 \
      --config smem_pad:TILE_DIM=32,BLOCK_ROWS=8,DIAGONAL=1,IPAD=2 --config smem_pad:TILE_DIM=32,BLOCK_ROWS=8,DIAGONAL=1 \
      --config smem_pad:TILE_DIM=32,BLOCK_ROWS=8,IPAD=2 --config smem_pad:TILE_DIM=64,BLOCK_ROWS=16,DIAGONAL=1,IPAD=2
  } 2>&1 | tee "$dest/${file}_transpose_half_configs.txt"
  ;;
one_side)
  {
    header "smem_aligned_out where only one side's rows are misaligned (7001x5000: the output's; 5000x7001: the" \
           "input's) and for complex128 (naive_col: the rule), against the rule's kernels"
    ua --shape 7001x5000 --shape 5000x7001 --shape 8191x2048 --shape 2048x8191 --shape 30001x1000 --dtype float32 \
      --dtype float64 --config smem_vec_realign --config smem_vec --config smem_pad:TILE_DIM=64,BLOCK_ROWS=16 \
      --config smem_aligned_out --config smem_aligned_out:TILE_DIM=64,BLOCK_ROWS=16
    ua --shape 33x65536 --shape 65x65536 --shape 129x65536 --shape 257x30001 --dtype float32 --config smem_vec_realign \
      --config smem_vec --config smem_aligned_out --config skinny
    ua --shape 12345x6789 --shape 4093x4099 --shape 8192x8192 --dtype complex128 --config naive_col \
      --config smem_aligned_out --config smem_aligned_out:TILE_DIM=64,BLOCK_ROWS=16 --config smem_pad
  } 2>&1 | tee "$dest/${file}_transpose_aligned_out_one_side.txt"
  ;;
ncu)
  metrics=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed
  metrics=$metrics,lts__t_sectors_op_read.sum,lts__t_sectors_op_write.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed
  metrics=$metrics,l1tex__throughput.avg.pct_of_peak_sustained_active,sm__throughput.avg.pct_of_peak_sustained_elapsed
  metrics=$metrics,sm__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active
  metrics=$metrics,sm__warps_active.avg.pct_of_peak_sustained_active,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum
  for s in long_scoreboard barrier mio_throttle short_scoreboard lg_throttle; do
    metrics=$metrics,smsp__average_warps_issue_stalled_${s}_per_issue_active.ratio
  done
  db="sqlite:///$(mktemp -d)/none.db"
  one() {  # shape dtype kernel: one launch of autotune.transpose(x, kernel=) ("rule": the rule's choice;
           # "strided": PyTorch's copy into rows one element longer; "torch": x.mT.contiguous())
    echo "## $1 $2 $3"
    ncu --metrics "$metrics" -k regex:"transpose_|elementwise" -c 1 python3 -c "
import torch, autotune
shape = tuple(map(int, '$1'.split('x')))
x = torch.empty(shape, dtype=getattr(torch, '$2'), device='cuda')  # no fill: the first kernel is the one measured
if '$3' == 'strided':
    y = torch.empty((*shape[:-1], shape[-1] + 1), dtype=x.dtype, device='cuda'); y[..., :shape[-1]].copy_(x)
elif '$3' == 'torch':
    x.mT.contiguous()
else:
    autotune.transpose(x, kernel=None if '$3' == 'rule' else '$3', db='$db')
torch.cuda.synchronize()" 2>&1 | grep -E "Context [0-9]|^    [a-z0-9_]+__"
  }
  # NCU_CASES="SHAPE:DTYPE:KERNEL ..." measures those instead, into ..._transpose_ncu_${NCU_TAG}.txt
  cases=${NCU_CASES:-"12288x6784:float32:smem_vec 12345x6789:float32:smem_vec 12345x6789:float32:smem_vec_realign
    12345x6789:float32:strided 12345x6789:float64:smem_vec_realign 12345x6789:float16:smem_pad
    12345x6789:float16:smem_vec 10007x10009:uint8:smem_bytes 16384x16384:float32:smem_vec
    65536x33:float32:smem_vec_realign 33x65536:float32:smem_vec_realign 9x200003:float64:skinny
    9x200003:float64:torch 1000x33x65:float32:naive_col 1000x33x65:float32:torch"}
  {
    header "ncu: one launch per class (cold L2, ncu's clocks), the kernel of autotune.transpose at default configs"
    for c in $cases; do IFS=: read -r shape dtype kernel <<< "$c"; one "$shape" "$dtype" "$kernel"; done
  } > "$dest/${file}_transpose_ncu_${NCU_TAG:-issue24}.txt" 2>&1
  ;;
*) echo "usage: $0 sweep|heldout|explore|peers|tuned|untuned|wide|aligned|one_side|half|bytes|warm|flat|ncu" >&2; exit 2 ;;
esac
