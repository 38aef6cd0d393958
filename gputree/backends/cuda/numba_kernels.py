"""The CUDA backend's ``numba.cuda`` kernels: the split scan, the node
summaries and the ranking pass (the same device code the CPU backend
compiles with ``njit``, :mod:`gputree.backends.scan`,
:mod:`gputree.backends.summaries`, :mod:`gputree.backends.lambdarank`) and the
elementwise devmath functions of device arrays, which this module lends to
:func:`gputree.backends.devmath.apply` when it loads.

numba.cuda compiles lazily, at the first launch; the simulator swaps the
module-level name ``cuda`` inside kernels, so kernels live at module level.
"""
import math

import numpy as np
from numba import cuda

from .. import devmath
from ..kernel_cache import cache_numba_cuda_kernels
from ..lambdarank import make_query_terms
from ..node_features import make_node_features
from ..scan import make_split_scanner
from ..summaries import node_summaries_kernel_body

#: threads per block of the scan, summary and devmath launches
THREADS_PER_BLOCK = 64

# numba.cuda compiles lazily, at the first launch; the simulator swaps the
# module-level name ``cuda`` inside kernels, so kernels live at module level.
_scan = make_split_scanner(cuda.jit(device=True))


_summary = node_summaries_kernel_body(cuda.jit(device=True))


_soft_limit_row, _random_bin_task, _ = make_node_features(cuda.jit(device=True))


_devmath_one = devmath.make_devmath(cuda.jit(device=True)).apply_one


_one_query = make_query_terms(cuda.jit(device=True))


# compiled kernels kept on disk: a second process starts without compiling
_CACHE_KERNELS = cache_numba_cuda_kernels(__file__)


@cuda.jit(cache=_CACHE_KERNELS)
def _find_splits(hist, n_bins_non_missing, is_categorical, feature_allowed, split_bin,
                 missing_bin, layout, inv, params, scratch_sums, scratch_keys, scratch_order,
                 scratch_prefix, scratch_gains,
                 out_gain, out_missing_left, out_bitset, out_left, out_info, out_words):
    """One thread per (node, feature), its scratch slot its own index;
    arguments as scan.make_split_scanner."""
    t = cuda.grid(1)
    if t < hist.shape[0] * hist.shape[1]:
        _scan(t, t, hist, hist.shape[1], n_bins_non_missing, is_categorical, feature_allowed,
              split_bin, missing_bin, layout, inv, params, scratch_sums, scratch_keys,
              scratch_order, scratch_prefix, scratch_gains,
              out_gain, out_missing_left, out_bitset, out_left, out_info, out_words)


@cuda.jit(cache=_CACHE_KERNELS)
def _soft_feature_limit(hist, order, max_features, n_bins_non_missing, missing_bin, layout,
                        allowed):
    """One thread per histogram row; arguments as node_features.soft_limit_row."""
    row = cuda.grid(1)
    if row < hist.shape[0]:
        _soft_limit_row(row, hist, order, max_features, n_bins_non_missing, missing_bin, layout,
                        allowed)


@cuda.jit(cache=_CACHE_KERNELS)
def _random_split_bins(hist, draws, n_bins_non_missing, missing_bin, is_categorical, layout,
                       allowed, split_bin):
    """One thread per (row, feature); arguments as node_features.random_bin_task."""
    t = cuda.grid(1)
    if t < hist.shape[0] * hist.shape[1]:
        row = t // hist.shape[1]
        _random_bin_task(row, t - row * hist.shape[1], hist, draws, n_bins_non_missing,
                         missing_bin, is_categorical, layout, allowed, split_bin)


@cuda.jit(cache=_CACHE_KERNELS)
def _node_summaries(totals, layout, inv, params, values, impurity):
    """One thread per node: totals IN int64 (n_nodes, C); values, impurity OUT."""
    node = cuda.grid(1)
    if node < totals.shape[0]:
        _summary(node, totals, layout, inv, params, values, impurity)


@cuda.jit(cache=_CACHE_KERNELS)
def _query_terms(starts, scores, labels, gains, discounts, inv_ideal, inv_ideal_eval, sigma,
                 truncation, eval_k, flags, order, buffer, work, g, h, ndcg):
    """One thread per query; arguments as lambdarank.make_query_terms."""
    q = cuda.grid(1)
    if q < starts.shape[0] - 1:
        _one_query(q, starts, scores, labels, gains, discounts, inv_ideal, inv_ideal_eval,
                   sigma, truncation, eval_k, flags, order, buffer, work, g, h, ndcg)


@cuda.jit(cache=_CACHE_KERNELS)
def _devmath_kernel(code, x, out):
    """One thread per element: out[i] = f(x[i]), f = devmath.CODES[code];
    x IN float64 (n,), out OUT float64 (n,)."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = _devmath_one(code, x[i])


def apply_devmath(code, values):
    """devmath function ``code`` of a device array, elementwise (float64,
    same shape); the device half of :func:`gputree.backends.devmath.apply`
    (registered there below)."""
    import cupy
    values = cupy.ascontiguousarray(values, dtype=np.float64)
    out = cupy.empty_like(values)
    flat_in, flat_out = values.reshape(-1), out.reshape(-1)
    if flat_in.size:
        blocks = math.ceil(flat_in.size / THREADS_PER_BLOCK)
        _devmath_kernel[blocks, THREADS_PER_BLOCK](np.int64(code), flat_in, flat_out)
    return out


devmath.register_device_apply(apply_devmath)
