#!/usr/bin/env bash
# The CPU backend's scaling curve: 100 boosted trees of depth 8 on 7.04M x 28
# training rows (9,386,667 rows before compare.py's 25% test split), gputree
# (device cpu), LightGBM and XGBoost side by side, one run per thread count,
# in a default environment (no OMP_WAIT_POLICY). One log per thread count.
#
#   bash benchmarks/cpu_scaling.sh [LOG_DIR] ["16 8 4 2 1"]
#
# With 2 threads on a 2-core Xeon VM the three fits took 54, 59 and 69 s
# (plus making the data); fewer threads take longer: split long lists of
# thread counts over several calls where a call's time is limited.
set -uo pipefail
cd "$(dirname "$0")/.."
LOG_DIR=${1:-cpu-scaling-logs}
THREAD_COUNTS=${2:-"16 8 4 2 1"}
mkdir -p "$LOG_DIR"
export PYTHONUNBUFFERED=1
for threads in $THREAD_COUNTS; do
    python3 benchmarks/compare.py gbdt --rows 9386667 --repeat 1 --devices cpu \
        --models gputree lightgbm xgboost --threads "$threads" \
        > "$LOG_DIR/gbdt-7M-threads-$threads.txt" 2>&1
    echo "exit $?" >> "$LOG_DIR/gbdt-7M-threads-$threads.txt"
done
