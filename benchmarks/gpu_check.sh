#!/usr/bin/env bash
# The whole run on a machine with an NVIDIA GPU, in steps that each take at
# most about 10 minutes and can run as separate commands: versions; the
# PTX, kernel, parity, Dask-worker, budget and toolchain tests on the GPU
# (GPUTREE_TEST_DEVICE=cuda); the kernel bench; first- and second-process
# start; peak GPU memory next to fit_memory_estimate; compare.py at 1M rows
# (tree, gbdt, forest, predict, memory) and GBDT at 7.04M rows against
# LightGBM and XGBoost on all CPU cores; the CPU scaling curve; the suite.
# Each step writes LOG_DIR/<step>.txt and ends it with "exit <status>".
#
#   bash benchmarks/gpu_check.sh LOG_DIR STEP [STEP...]   # some steps
#   bash benchmarks/gpu_check.sh LOG_DIR all              # every step, in order
#   bash benchmarks/gpu_check.sh                          # list the steps
#
# THREADS (default: every core) is the peers' and the CPU backend's thread
# count; STEP_TIMEOUT (default 570 s) stops a step that runs too long, and
# its log keeps what it printed ("exit 124").
#
# Peers on a machine that cannot install packages: on a machine that can,
# from the repository root, `bash benchmarks/gpu_check.sh . wheels` saves
# LightGBM and XGBoost (CPU) wheels for CPython 3.12 on x86-64 Linux in
# .whl/ (git-ignored locally through .git/info/exclude); carry .whl to the
# GPU machine, where every step first installs them into /tmp/site (once)
# and puts that on PYTHONPATH.
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
THREADS=${THREADS:-$(nproc)}
STEP_TIMEOUT=${STEP_TIMEOUT:-570}
WHEELS=${WHEELS:-.whl}
SITE=/tmp/site
#: the peers' versions the wheels step saves (those of the development machine)
LIGHTGBM_VERSION=${LIGHTGBM_VERSION:-4.7.0}
XGBOOST_VERSION=${XGBOOST_VERSION:-3.2.0}
STEPS="versions ptx kernels-test parity dask budgets toolchain kernel-bench forest-bench startup memory
       bench-1M-tree bench-1M-gbdt bench-1M-forest bench-1M-predict bench-1M-memory
       bench-7M-gbdt cpu-scaling-16 cpu-scaling-8 cpu-scaling-4 cpu-scaling-2 cpu-scaling-1
       suite"

gpu_tests() {  # pytest on the GPU device, quiet, with every outcome listed
    GPUTREE_TEST_DEVICE=cuda python3 -m pytest -q -p no:cacheprovider -rA "$@"
}

compare() {  # compare.py with the peers and gputree on the CPU and the GPU
    python3 benchmarks/compare.py "$@" --threads "$THREADS" --devices cpu cuda --repeat 1
}

step_versions() {
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem \
        --format=csv
    nvcc --version | tail -2
    git log -1 --format='gputree %H %s' 2>/dev/null
    python3 - <<'PY'
import importlib.metadata as md, os, platform, sys
print("python", platform.python_version(), sys.executable, "cores", os.cpu_count())
for name in ("numpy", "numba", "numba-cuda", "cupy-cuda12x", "cupy-cuda13x", "scipy",
             "scikit-learn", "pandas", "lightgbm", "xgboost", "xgboost-cpu", "treelite"):
    try:
        print(name, md.version(name))
    except md.PackageNotFoundError:
        print(name, "not installed")
import cupy
attributes = cupy.cuda.Device().attributes
print("multiprocessors", attributes["MultiProcessorCount"],
      "shared memory opt-in per block", attributes["MaxSharedMemoryPerBlockOptin"])
PY
}

step_ptx() {  # no fma, no libdevice, every kernel file compiles without warnings
    gpu_tests tests/test_exact_device_code.py tests/test_nvcc_compile.py
}

step_kernels-test() {  # every histogram variant and kernel against numpy, both split scans
    gpu_tests tests/test_histogram_kernels.py tests/test_cuda_c_kernels.py tests/test_block_scan.py
}

step_parity() {  # every estimator, CPU vs GPU, bit for bit
    gpu_tests tests/test_device_parity.py
}

step_dask() {  # Dask workers on the GPU (cupy partitions too) grow the CPU model
    gpu_tests tests/test_dask_devices.py
}

step_budgets() {  # copies per level and tree; the memory estimate bounds the pool
    gpu_tests tests/test_device_budgets.py
}

step_toolchain() {
    gpu_tests tests/test_cuda_toolchain.py tests/test_kernel_cache.py
}

step_kernel-bench() {  # every primitive, histogram and scan variant, 1M and 7.04M rows
    python3 benchmarks/gpu_kernels.py --rows 1000000 7040000 --levels 0 4 7 \
        --scan-threads 32 64 128 256
}

step_forest-bench() {  # forests of 20 and 100 trees of depth 10 at 1M rows: one tree at a
    # time, the batch "auto" picks from free memory, every tree in one batch
    python3 benchmarks/gpu_kernels.py --rows 1000000 --levels 0 --forest 20 100 \
        --forest-depth 10 --forest-batch 1 auto all
}

step_startup() {  # a fresh process twice: the second finds the compiled kernels cached
    for run in first second; do
        python3 - "$run" <<'PY'
import sys, time
start = time.perf_counter()
import numpy as np
from gputree import GradientBoostingClassifier
X = np.random.RandomState(0).normal(size=(2000, 8))
GradientBoostingClassifier(n_estimators=2, max_depth=3, device="cuda").fit(X, X[:, 0] > 0)
print(sys.argv[1], "process: import and first fit", round(time.perf_counter() - start, 2), "s")
PY
    done
}

step_memory() {  # cupy's pool after a fit (it keeps its peak) next to the estimate
    python3 - <<'PY'
import sys
sys.path.append(".")
import cupy
from benchmarks.common import classification_data
from gputree import GradientBoostingClassifier, RandomForestClassifier
from gputree.backends import get_backend

backend = get_backend("cuda")
X, y = classification_data(1_000_000)
for make in (lambda: GradientBoostingClassifier(n_estimators=20, max_depth=8, device="cuda"),
             lambda: RandomForestClassifier(n_estimators=10, max_depth=10, device="cuda")):
    pool = cupy.get_default_memory_pool()
    pool.free_all_blocks()
    estimates = []
    original = backend.check_fit_memory

    def check(*args, **kwargs):
        original(*args, **kwargs)
        estimates.append(backend.last_fit_estimate)

    backend.check_fit_memory = check
    model = make().fit(X, y)
    del backend.check_fit_memory
    peak = pool.total_bytes()
    print(f"{type(model).__name__}: 1M x 28, pool peak {peak / 2**20:.0f} MiB, "
          f"fit_memory_estimate {min(estimates) / 2**20:.0f} MiB, "
          f"peak / estimate {peak / min(estimates):.2f}")
    del model
PY
}

step_bench-1M-tree() { compare tree --rows 1000000; }
step_bench-1M-gbdt() { compare gbdt --rows 1000000; }
step_bench-1M-forest() { compare forest --rows 1000000; }
step_bench-1M-predict() { compare predict --rows 1000000; }
step_bench-1M-memory() { compare memory --rows 1000000; }
step_bench-7M-gbdt() {  # 9,386,667 rows less compare.py's 25% test split: 7.04M to fit
    compare gbdt --rows 9386667 --models gputree lightgbm xgboost
}

cpu_scaling() { bash benchmarks/cpu_scaling.sh "$LOG_DIR/cpu-scaling-$1" "$1"; \
                cat "$LOG_DIR/cpu-scaling-$1"/*.txt; }
step_cpu-scaling-16() { cpu_scaling 16; }
step_cpu-scaling-8() { cpu_scaling 8; }
step_cpu-scaling-4() { cpu_scaling 4; }
step_cpu-scaling-2() { cpu_scaling 2; }
step_cpu-scaling-1() { cpu_scaling 1; }

step_suite() {  # the whole suite on this machine (GPU tests where a test asks for one)
    python3 -m pytest -q -p no:cacheprovider -n 8 tests
}

save_wheels() {  # on a machine with pip and the network: the peers' wheels in $WHEELS
    mkdir -p "$WHEELS"
    grep -qx "/$WHEELS/" .git/info/exclude 2>/dev/null || echo "/$WHEELS/" >> .git/info/exclude
    python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 \
        --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
        --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
        -d "$WHEELS" "lightgbm==$LIGHTGBM_VERSION" "xgboost-cpu==$XGBOOST_VERSION"
    ls -l "$WHEELS"
}

use_wheels() {  # install carried wheels once per machine; put them on the path
    if compgen -G "$WHEELS/*.whl" > /dev/null; then
        if [ ! -e "$SITE/.gputree-wheels" ]; then
            python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
                --upgrade --target "$SITE" "$WHEELS"/*.whl && touch "$SITE/.gputree-wheels"
        fi
        export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
    fi
}

run_step() {
    local step=$1 log="$LOG_DIR/$1.txt"
    echo "== $step -> $log"
    {
        echo "# $step, $(date -u +%FT%TZ), THREADS=$THREADS"
        STEP=$step timeout "$STEP_TIMEOUT" bash -c "$(declare -f); step_$step"
        echo "exit $?"
    } > "$log" 2>&1
    tail -n 1 "$log"
}

if [ $# -lt 2 ]; then
    echo "usage: bash benchmarks/gpu_check.sh LOG_DIR STEP [STEP...] | all | wheels"
    echo "steps:" $STEPS
    exit 2
fi
LOG_DIR=$1
shift
mkdir -p "$LOG_DIR"
if [ "$1" = wheels ]; then
    save_wheels
    exit $?
fi
[ "$1" = all ] && set -- $STEPS
use_wheels
export THREADS WHEELS LOG_DIR
for step in "$@"; do
    if ! declare -F "step_$step" > /dev/null; then
        echo "unknown step $step; steps:" $STEPS
        exit 2
    fi
    run_step "$step"
done
