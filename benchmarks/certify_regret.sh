#!/usr/bin/env bash
# Issue 40: certified (adaptive) timing on one GPU: flip rate over cold reruns of the same search
# (same seed, fresh databases, one cubin cache), each run's selection regret against an oracle
# (the union of the runs' top 10 re-timed over 20 paired interleaved rounds), and seconds per
# config against the old fixed sampling (--ci 0 --repeats 50) (benchmarks/certify_regret.py).
# Problems: smem_pad 8192x8192 float32, the reduction example (n=2^24 float32), the histogram
# example (n=2^26 uint8); --problem NAME=KERNEL:DIMS:DTYPE (repeated) replaces them.
#   bash benchmarks/certify_regret.sh --max-seconds 130              # inside a ~150 s call
#   bash benchmarks/certify_regret.sh --reruns 10 --fixed-reruns 3   # the issue's 10 reruns
# Output: $OUT (if set) or benchmarks/results/<date>_<gpu>_certify_regret.txt (+ .json), the
# runs' databases in OUT/certify_dbs/; the report is written even when the cap cut the work.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
python3 "$here/certify_regret.py" --out "${OUT:-$here/results}" "$@"
