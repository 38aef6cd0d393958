#!/usr/bin/env bash
# What a later process pays on its first fit: each process fits twice on a
# warm cache (benchmarks/first_fit.py --child), and the line gives the first
# fit, the repeated one and their difference. The first process of each
# estimator warms the cache (its line counts what it compiled).
#   usage: benchmarks/later_process_extra.sh ROWS PROCESSES ESTIMATOR...
#   e.g.   benchmarks/later_process_extra.sh 300000 7 forest_r tree_c gbdt_c
set -euo pipefail
cd "$(dirname "$0")/.."
unset PYTHONDONTWRITEBYTECODE            # .pyc written, as a pip install writes them
export NUMBA_CACHE_DIR=${NUMBA_CACHE_DIR:-$(mktemp -d)}
rows=$1; n=$2; shift 2
for est in "$@"; do
  for i in $(seq 0 "$n"); do
    load=$(cut -d' ' -f1 /proc/loadavg)
    python benchmarks/first_fit.py --child \
        "{\"kind\":\"fits\",\"estimator\":\"$est\",\"features\":20,\"fits\":[$rows,$rows]}" \
        2>/dev/null | tail -1 | python -c "
import json, sys
f = json.loads(sys.stdin.read())['fits']
print('$est rows=$rows process $i load=$load first %.3f repeat %.3f extra %.3f compiled %d'
      % (f[0]['seconds'], f[1]['seconds'], f[0]['seconds'] - f[1]['seconds'],
         f[0]['compiles'] + f[1]['compiles']))"
  done
done
