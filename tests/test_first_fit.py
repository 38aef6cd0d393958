"""The first fit after installing: one log record says that gputree's
kernels are being compiled, once per process, only when a compile lasts
longer than ``compile_notice.NOTICE_AFTER_S`` (compiles happen only when
numba's disk cache does not hold the kernels)."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: compiles two small CPU kernels (zero_rows, subtract_histograms)
_TWO_COMPILES = """
import numpy as np
from gputree.backends import compile_notice, get_backend
compile_notice.NOTICE_AFTER_S = {delay}
backend = get_backend("cpu")
hist = np.ones((2, 3, 4, 2), dtype=np.int64)
backend.zero_rows(hist, np.array([1], dtype=np.int64))
one = np.zeros(1, dtype=np.int32)
backend.subtract_histograms(hist, one, hist, one + 1, one)
"""


def _notices(cache, delay):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT))
    result = subprocess.run([sys.executable, "-c", _TWO_COMPILES.format(delay=delay)], env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return [line for line in result.stderr.splitlines() if "compiling" in line]


def test_a_slow_compile_is_announced_once_and_a_warm_cache_not_at_all(tmp_path):
    # delay 0: any compile counts as slow; two compiles, one line
    lines = _notices(tmp_path, 0)
    assert len(lines) == 1 and "gputree" in lines[0]
    # the same kernels again: loaded from the disk cache, nothing compiles
    assert _notices(tmp_path, 0) == []


def test_a_compile_shorter_than_the_delay_is_not_announced(tmp_path):
    assert _notices(tmp_path, 600) == []
