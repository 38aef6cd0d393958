"""The CPU binning kernel: raw float X to bin codes by a branch-free binary
search over each feature's thresholds, parallel over blocks of rows."""
import numpy as np
from numba import njit

from ..kernel_cache import cache_numba_cpu_kernels
from .jit import U64, part_bounds
from .threaded import threaded

cache_numba_cpu_kernels(__file__)


_BINNING_BLOCK = 256


#: work (about ns, ThreadedKernel.run's unit) of binning one value
SEARCH_WORK = 8


#: thresholds are padded to 2**k - 1 >= this width: the search unrolls its
#: last 8 steps, and loops over the steps above them (16-bit bins only)
_SEARCH_WIDTH = 255


@njit(inline="always")
def _search_step(row, lo, x, step):
    return lo + step * (row[U64(lo + step - 1)] < x)


@threaded
def map_to_bins(X, thresholds, is_categorical, missing_bin, out, part, n_parts):
    """X float (n, F) IN; thresholds float64 (F, 2**k - 1 >= 255) IN, rows
    padded with +inf; out uint8 or uint16 (n, F) OUT (either order).

    In parts over blocks of rows; within a block, feature by feature (a
    block's output stays in cache in either order). The binary search is branch-free, its last 8
    steps unrolled: ``lo`` ends as the number of thresholds strictly below
    ``x``."""
    n_samples, n_features = X.shape
    width = thresholds.shape[1]
    n_blocks = (n_samples + _BINNING_BLOCK - 1) // _BINNING_BLOCK
    first, stop = part_bounds(n_blocks, part, n_parts)
    for block in range(first, stop):
        start = block * _BINNING_BLOCK
        stop = min(start + _BINNING_BLOCK, n_samples)
        for f in range(n_features):
            row = thresholds[f]
            for i in range(start, stop):
                x = np.float64(X[U64(i), U64(f)])
                lo, step = 0, (width + 1) // 2
                while step > 128:
                    lo = _search_step(row, lo, x, step)
                    step //= 2
                lo = _search_step(row, lo, x, 128)
                lo = _search_step(row, lo, x, 64)
                lo = _search_step(row, lo, x, 32)
                lo = _search_step(row, lo, x, 16)
                lo = _search_step(row, lo, x, 8)
                lo = _search_step(row, lo, x, 4)
                lo = _search_step(row, lo, x, 2)
                lo = _search_step(row, lo, x, 1)
                if np.isnan(x) or (is_categorical[f] and (lo == width or row[U64(lo)] != x)):
                    out[U64(i), U64(f)] = missing_bin
                else:
                    out[U64(i), U64(f)] = lo


def pad_thresholds(thresholds):
    """thresholds (F, T) -> (F, 2**k - 1 >= max(T, 255)) padded with +inf."""
    width = max(_SEARCH_WIDTH, 2 ** int(thresholds.shape[1]).bit_length() - 1)
    padded = np.full((thresholds.shape[0], width), np.inf)
    padded[:, :thresholds.shape[1]] = thresholds
    return padded
