#!/usr/bin/env bash
# One run on a machine with an NVIDIA GPU: versions, the exact-arithmetic and
# CPU-vs-GPU parity checks, then the GPU benchmarks side by side with the CPU
# peers. Logs go to LOG_DIR (default ./gpu-logs), one file per step.
#
#   bash benchmarks/gpu_check.sh [LOG_DIR] [THREADS]
#
# Needs gputree's test and cuda (or cuda13) extras installed; LightGBM and
# XGBoost are used by the benchmarks when importable.
set -uo pipefail
cd "$(dirname "$0")/.."
LOG_DIR=${1:-gpu-logs}
THREADS=${2:-$(nproc)}
mkdir -p "$LOG_DIR"
export PYTHONUNBUFFERED=1

{
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
    python3 - <<'PY'
import importlib.metadata as md, platform, sys
print("python", platform.python_version(), sys.executable)
for name in ("numpy", "numba", "numba-cuda", "cupy-cuda12x", "cupy-cuda13x", "scikit-learn",
             "lightgbm", "xgboost"):
    try:
        print(name, md.version(name))
    except md.PackageNotFoundError:
        pass
PY
} > "$LOG_DIR/versions.txt" 2>&1

# correctness first: PTX checks, then every estimator CPU vs GPU, bit for bit
GPUTREE_TEST_DEVICE=cuda python3 -m pytest -q -p no:cacheprovider -rA \
    tests/test_exact_device_code.py tests/test_device_parity.py tests/test_cuda_toolchain.py \
    tests/test_device_budgets.py > "$LOG_DIR/parity.txt" 2>&1
echo "parity exit $?" >> "$LOG_DIR/parity.txt"

# start-up: the same small GPU fit in two fresh processes; the second finds
# the compiled kernels in the on-disk caches (numba-cuda's and cupy's)
for run in first second; do
    python3 - >> "$LOG_DIR/startup.txt" 2>&1 <<PY
import time
start = time.perf_counter()
import numpy as np
from gputree import GradientBoostingClassifier
X = np.random.RandomState(0).normal(size=(2000, 8))
GradientBoostingClassifier(n_estimators=2, max_depth=3, device="cuda").fit(X, X[:, 0] > 0)
print("$run process: import and fit", round(time.perf_counter() - start, 2), "s")
PY
done

# the whole suite on this machine (the CUDA backend is tested where a test asks for it)
python3 -m pytest -q -p no:cacheprovider -n 4 tests > "$LOG_DIR/suite.txt" 2>&1
echo "suite exit $?" >> "$LOG_DIR/suite.txt"

# speed: 1M rows, GPU and CPU side by side with the peers on all cores
python3 benchmarks/compare.py tree gbdt predict --rows 1000000 --threads "$THREADS" \
    --devices cpu cuda --repeat 1 > "$LOG_DIR/bench-1M.txt" 2>&1
echo "bench exit $?" >> "$LOG_DIR/bench-1M.txt"
