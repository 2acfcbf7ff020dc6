#!/usr/bin/env bash
# Issue 34: the example application (examples/app/) recorded, planned and tuned with a budget on
# one GPU; its measured kernel time at the defaults against the tuned configs, per problem and in
# total, and each tuned config's % of its own best from a longer search (benchmarks/app_tuning.py).
#   bash benchmarks/app_tuning.sh                 # one GPU: record, tune --budget 10m, long searches
#   bash benchmarks/app_tuning.sh --scaling       # 2+ GPUs: --device 0 against --device all
# Each call stops starting work after --call-limit seconds (540 by default) and exits 3: run the
# same command again (the state is kept in benchmarks/.state/app_tuning) until it exits 0.
# Output: $OUT (if set) or benchmarks/results/<date>_<gpu>_app_tuning.txt, the plan's plots, and
# a copy of the state in OUT/state/.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
python3 "$here/app_tuning.py" --out "${OUT:-$here/results}" "$@"
