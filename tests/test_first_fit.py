"""The first fit after installing: one log record says the CPU kernels are
being compiled, once per process, and only when numba's disk cache does not
hold them."""
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from gputree.backends import cpu
from gputree.criteria import SQUARED_ERROR, regression_statistics
from gputree.grower import GrowthParams

ROOT = Path(__file__).resolve().parents[1]


def test_a_cold_cache_is_announced_once():
    code = ("from gputree.backends import get_backend\n"
            "from gputree.backends.cpu import CPUBackend\n"
            "get_backend('cpu'); get_backend('cpu')\n")
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache, PYTHONPATH=str(ROOT))
        result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                                text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if "compiling" in line]
    assert len(lines) == 1 and "gputree" in lines[0]


def test_a_warm_cache_is_not_announced(backend):
    # compile (and cache) the kernels the announcement looks at
    X_binned = np.zeros((4, 2), dtype=np.uint8, order="F")
    statistics = regression_statistics(np.arange(4.0)[:, None], np.ones(4), SQUARED_ERROR)
    hist = backend.build_histograms(X_binned, statistics.stats, np.zeros(4, np.int32), 0,
                                    np.zeros(1, np.int32), 1, 3)
    backend.find_best_splits(hist, np.full(2, 2, np.int32), np.zeros(2, np.uint8),
                             np.ones((1, 2), np.uint8), 2, statistics.layout,
                             statistics.inv_scale, GrowthParams().criterion_params())
    assert not cpu._cache_is_cold((cpu._find_splits, cpu._build_histograms))
