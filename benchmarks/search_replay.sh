#!/usr/bin/env bash
# Issue 35 (CPU, no GPU): the default search strategy against tpe, random, a hill climber,
# transfer and Kernel Tuner's strategies, replayed on the tables committed under
# benchmarks/results/ (benchmarks/search_replay.py says what and how). Niced: it is not a test.
#   bash benchmarks/search_replay.sh [--seeds 20] [--kt-seeds 10] [--kt greedy_ils mls ...] [--workers 2]
# Output: benchmarks/results/<date>_cpu_search_replay.{md,csv} (--out DIR for elsewhere).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
exec nice python3 "$here/search_replay.py" "$@"
