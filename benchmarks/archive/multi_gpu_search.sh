#!/usr/bin/env bash
# Issue 8 on a machine with 2+ GPUs of one model: `autotune search --device 0,1` of smem_pad
# at SIZE x SIZE float32 (one worker per GPU, one study), then `autotune best`, and the trials
# per GPU from the database, into a fresh SQLite file. The output goes to
# $OUT/<date>_<gpu>_multi_gpu_smem_pad_<size>.txt ($OUT, else benchmarks/results).
#   bash benchmarks/multi_gpu_search.sh [SIZE] [extra search options...]
# AUTOTUNE="python3 -m autotune" selects how autotune is run (default: python3 -m autotune).
set -euo pipefail
size=${1:-8192}
shift || true
run=${AUTOTUNE:-python3 -m autotune}
here=$(cd "$(dirname "$0")" && pwd)
dest=${OUT:-$here/results}
. "$(dirname "$0")/../gpu_info.sh"
out="$dest/${day}_${tag}_multi_gpu_smem_pad_${size}.txt"
db=$(mktemp -d)/autotune.db
mkdir -p "$dest"
{
  echo "# autotune search --kernel smem_pad --device 0,1 --size $size $*; autotune best --size $size"
  echo "# date: $(date -u '+%Y-%m-%d %H:%M UTC')  driver: $driver  $(nvcc --version | tail -1)"
  nvidia-smi --query-gpu=index,name,uuid,pci.bus_id --format=csv,noheader | sed 's/^/# gpu: /'
  echo "# database: fresh SQLite file"
  echo
  $run search --kernel smem_pad --device 0,1 --size "$size" --db "sqlite:///$db" "$@"
  echo
  $run best --size "$size" --db "sqlite:///$db"
  echo
  echo "# trials per GPU (autotune_searches: one row per GPU worker; studies: Optuna's)"
  python3 - "$db" <<'PY'
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
print("studies:", [name for (name,) in con.execute("select study_name from studies")])
print(f"{'gpu':>3}  {'uuid':<42} {'pci bus id':<14} {'trials':>6} {'ok':>4} {'best GB/s':>10}")
for row in con.execute(
        "select s.gpu_ordinal, s.gpu_uuid, s.gpu_pci_bus_id, count(t.id), sum(t.status = 'ok'), max(t.gbps) "
        "from autotune_searches s left join autotune_trials t on t.search_id = s.id "
        "group by s.id order by s.gpu_ordinal"):
    print(f"{row[0]:>3}  {row[1]:<42} {row[2]:<14} {row[3]:>6} {row[4] or 0:>4} {row[5] or 0:>10.0f}")
PY
} 2>&1 | tee "$out"
echo "wrote $out"
