"""The CUDA backend's ``numba.cuda`` kernels: the split scan, the node
summaries and the ranking pass (the same device code the CPU backend
compiles with ``njit``, :mod:`gputree.backends.scan`,
:mod:`gputree.backends.summaries`, :mod:`gputree.backends.lambdarank`) and the
elementwise devmath functions of device arrays, which this module lends to
:func:`gputree.backends.devmath.apply` when it loads.

The split scan comes in two kernels (:data:`SCAN_KERNELS`): one thread per
(node, feature) running the sequential scan (``_find_splits``, every kind
of task), and one thread block per (node, feature) for boosting's scan of a
numerical feature (``_find_splits_by_block``, the tasks
``scan.newton_task`` covers): its threads add up the bins' int64 sums with a
parallel prefix sum in shared memory, each evaluates its own candidates with
the scan's own device functions (formulas.newton_gain_one through
``newton_candidate``), and a block reduction picks the candidate the
sequential scan picks (the greatest gain, the first in the sequential order
on ties: integer sums and the same arithmetic make every value equal).

numba.cuda compiles lazily, at the first launch; the simulator swaps the
module-level name ``cuda`` inside kernels, so kernels live at module level.
"""
import math
import os

import numpy as np
from numba import cuda, float64, int64

from .. import devmath
from . import simulator_shared
from ..kernel_cache import cache_numba_cuda_kernels
from ..lambdarank import make_query_terms
from ..node_features import make_node_features
from ..scan import make_scan_parts
from ..summaries import node_summaries_kernel_body

simulator_shared.install()

#: threads per block of the scan, summary and devmath launches
THREADS_PER_BLOCK = 64
#: the split scan kernels: "thread" (one thread per (node, feature)),
#: "block" (one thread block per boosting task, scan.newton_task; the thread
#: kernel for the others) and "auto" (the choice :func:`scan_kernel_for` makes)
SCAN_KERNELS = ("auto", "thread", "block")
SCAN_KERNEL_ENV = "GPUTREE_SCAN_KERNEL"
#: most threads per block of the block scan (the length of its shared arrays)
BLOCK_SCAN_MAX_THREADS = 256
#: fewest threads per block of the block scan (a warp)
BLOCK_SCAN_MIN_THREADS = 32
#: channels of boosting's statistics with one output: gradient, hessian, count
NEWTON_CHANNELS = 3

# numba.cuda compiles lazily, at the first launch; the simulator swaps the
# module-level name ``cuda`` inside kernels, so kernels live at module level.
# (kernels call device functions bound to module-level names: numba types
# no attribute of a namespace)
_scan_parts = make_scan_parts(cuda.jit(device=True))
_scan, _newton_task = _scan_parts.scan, _scan_parts.newton_task
_clear_task = _scan_parts.clear_task
_newton_candidate, _newton_missing_right = (_scan_parts.newton_candidate,
                                            _scan_parts.newton_missing_right)
_add_bins_upto, _record_split = _scan_parts.add_bins_upto, _scan_parts.record_split
_parent_score, _node_count = _scan_parts.bounded_parent_score, _scan_parts.node_count


_summary = node_summaries_kernel_body(cuda.jit(device=True))


_soft_limit_row, _random_bin_task, _ = make_node_features(cuda.jit(device=True))


_devmath_one = devmath.make_devmath(cuda.jit(device=True)).apply_one


_one_query = make_query_terms(cuda.jit(device=True))


# compiled kernels kept on disk: a second process starts without compiling
_CACHE_KERNELS = cache_numba_cuda_kernels(__file__)


def scan_kernel_from_env():
    """The split scan kernel named by $GPUTREE_SCAN_KERNEL (default "auto")."""
    return check_scan_kernel(os.environ.get(SCAN_KERNEL_ENV, "auto"), f"${SCAN_KERNEL_ENV}")


def check_scan_kernel(name, where="scan_kernel"):
    """``name`` when it is one of SCAN_KERNELS, else a ValueError naming ``where``."""
    if name not in SCAN_KERNELS:
        raise ValueError(f"{where} must be one of {', '.join(SCAN_KERNELS)}, got {name!r}")
    return name


def scan_kernel_for(option, runtime):
    """The kernel ("thread" or "block") that scans a level under the option
    ``option`` (SCAN_KERNELS) on ``runtime`` ("cupy" or "emulator"). "auto"
    picks "block" on a GPU, a rule still to be set from a GPU's
    measurements (benchmarks/gpu_kernels.py times both kernels on every
    level shape; a level with enough tasks to fill the device thread by
    thread may favour "thread"), and "thread" on the simulated device,
    where every CUDA thread is a Python thread and a barrier costs
    milliseconds (both kernels give the same outputs)."""
    if option != "auto":
        return option
    return "block" if runtime == "cupy" else "thread"


def check_scan_threads(threads, where="scan_threads"):
    """``threads`` when None or a power of two from 1 to
    BLOCK_SCAN_MAX_THREADS (the block scan's shared arrays), else a
    ValueError naming ``where``."""
    if threads is not None and not (1 <= threads <= BLOCK_SCAN_MAX_THREADS
                                    and threads & (threads - 1) == 0):
        raise ValueError(f"{where} must be a power of two from 1 to {BLOCK_SCAN_MAX_THREADS} "
                         f"(threads per block of the block scan), got {threads!r}")
    return threads


def block_scan_threads(n_bins):
    """Threads per block of the block scan on histograms of ``n_bins`` bins:
    the most candidate thresholds (n_bins - 2) up to a power of two, from
    BLOCK_SCAN_MIN_THREADS to BLOCK_SCAN_MAX_THREADS (more candidates are
    scanned in several rounds)."""
    return min(BLOCK_SCAN_MAX_THREADS,
               max(BLOCK_SCAN_MIN_THREADS, 1 << max(0, n_bins - 3).bit_length()))


@cuda.jit(cache=_CACHE_KERNELS)
def _find_splits(hist, n_bins_non_missing, is_categorical, feature_allowed, split_bin,
                 missing_bin, layout, inv, params, skip_newton_tasks, cells, scratch_sums,
                 scratch_keys, scratch_order, scratch_prefix, scratch_gains,
                 out_gain, out_missing_left, out_bitset, out_left, out_info, out_words):
    """One thread per (node, feature), its scratch slot its own index;
    arguments as scan.make_split_scanner (``cells`` empty: histograms in
    the full layout); ``skip_newton_tasks`` int64, 1: the tasks
    scan.newton_task covers are left alone (the block kernel's)."""
    t = cuda.grid(1)
    n_features = hist.shape[1]
    node = t // n_features
    if t < hist.shape[0] * n_features and not (
            skip_newton_tasks != 0 and _newton_task(
                node, t - node * n_features, is_categorical, split_bin, layout, params)):
        _scan(t, t, hist, cells, n_features, n_bins_non_missing, is_categorical,
              feature_allowed, split_bin, missing_bin, layout, inv, params, scratch_sums,
              scratch_keys, scratch_order, scratch_prefix, scratch_gains,
              out_gain, out_missing_left, out_bitset, out_left, out_info, out_words)


@cuda.jit(device=True)
def _block_sum(sums, k, width):
    """sums[:, 0] = the sum of sums[:, :width] (int64 (NEWTON_CHANNELS, >=
    width), shared; width a power of two), a tree of halvings; k is the
    thread's index. Every thread calls it; the others' entries are spent."""
    half = width // 2
    while half > 0:
        if k < half:
            for c in range(NEWTON_CHANNELS):
                sums[c, k] += sums[c, k + half]
        cuda.syncthreads()
        half //= 2


@cuda.jit(device=True)
def _block_inclusive_scan(sums, k, width):
    """sums[:, j] = the sum of sums[:, :j + 1] for j < width (int64, shared):
    Hillis and Steele's scan, log2(width) rounds. Every thread calls it."""
    offset = 1
    while offset < width:
        g = sums[0, k - offset] if k >= offset else 0
        h = sums[1, k - offset] if k >= offset else 0
        n = sums[2, k - offset] if k >= offset else 0
        cuda.syncthreads()
        sums[0, k] += g
        sums[1, k] += h
        sums[2, k] += n
        cuda.syncthreads()
        offset *= 2


@cuda.jit(device=True)
def _block_first_best(gains, keys, k, width):
    """(gains[0], keys[0]) = the entry of greatest gain among the first
    ``width`` (shared; width a power of two), of smallest key among equal
    gains: the sequential scan's first strictly best candidate when keys
    number candidates in its order. No entry is NaN (a thread keeps its best
    as the scan does: by ``>``)."""
    half = width // 2
    while half > 0:
        if k < half:
            g, key = gains[k + half], keys[k + half]
            if g > gains[k] or (g == gains[k] and key < keys[k]):
                gains[k], keys[k] = g, key
        cuda.syncthreads()
        half //= 2


@cuda.jit(device=True)
def _node_totals(H, n_non_missing, missing_bin, sums, task, k, width):
    """task[0] = the node's total T: the sums of H's first min(n_non_missing,
    missing_bin) bins and the missing bin, as the thread scan sums it (no row
    is in a bin between them, and those cells are not read: their contents
    are not defined); task[1] = the missing bin's (M); int64, in any order
    (exact). Every thread calls it."""
    g, h, n = H[0, 0] * 0, H[0, 1] * 0, H[0, 2] * 0
    for b in range(k, min(n_non_missing, missing_bin), width):
        g, h, n = g + H[b, 0], h + H[b, 1], n + H[b, 2]
    sums[0, k], sums[1, k], sums[2, k] = g, h, n
    cuda.syncthreads()
    _block_sum(sums, k, width)
    if k == 0:
        for c in range(NEWTON_CHANNELS):
            task[0, c] = sums[c, 0] + H[missing_bin, c]
            task[1, c] = H[missing_bin, c]
    cuda.syncthreads()


@cuda.jit(device=True)
def _thread_best(H, T, M, n_non_missing, has_missing, parent, inv, params, sums, left, k,
                 width):
    """The best of this thread's candidates, the thresholds after bins k,
    k + width, ... (missing right, then left; thread 0 also "all
    non-missing left"), by scan_newton_one's rules: (gain, bin,
    missing_left), its left sums in ``left``. The bins' running sums come
    ``width`` bins a round from a prefix sum in ``sums``."""
    best, best_bin, best_ml = -math.inf, -1, 0
    n_ml = 2 if has_missing else 1
    n_candidates = n_non_missing - 1
    cg, ch, cn = H[0, 0] * 0, H[0, 1] * 0, H[0, 2] * 0      # the rounds before's sums
    for first in range(0, n_candidates, width):
        b = first + k
        inside = b < n_candidates
        sums[0, k] = H[b, 0] if inside else 0
        sums[1, k] = H[b, 1] if inside else 0
        sums[2, k] = H[b, 2] if inside else 0
        cuda.syncthreads()
        _block_inclusive_scan(sums, k, width)
        ag, ah, an = cg + sums[0, k], ch + sums[1, k], cn + sums[2, k]
        # the sequential scan skips a bin whose count equals the last one's
        # (the candidate repeats); before bin 0 it compares with -1
        previous = -1.0 if b == 0 else (cn + (sums[2, k - 1] if k > 0 else 0)) * 1.0
        cg, ch, cn = cg + sums[0, width - 1], ch + sums[1, width - 1], cn + sums[2, width - 1]
        cuda.syncthreads()
        if inside and an * 1.0 != previous:
            for ml in range(n_ml):
                gain, lg, lh, ln = _newton_candidate(ag, ah, an, T, M, ml, parent,
                                                                inv, params)
                if gain > best:
                    best, best_bin, best_ml = gain, b, ml
                    left[0], left[1], left[2] = lg, lh, ln
    if k == 0 and has_missing:
        return _newton_missing_right(T, left, M, n_non_missing, parent, inv, params,
                                                best, best_bin, best_ml)
    return best, best_bin, best_ml


@cuda.jit(cache=_CACHE_KERNELS)
def _find_splits_by_block(hist, n_bins_non_missing, is_categorical, feature_allowed, split_bin,
                          missing_bin, layout, inv, params, out_gain, out_missing_left,
                          out_bitset, out_left, out_info, out_words):
    """One block per (node, feature), block b task b, of a power-of-two
    number of threads up to BLOCK_SCAN_MAX_THREADS; the tasks
    scan.newton_task does not cover return at once (the thread kernel's).
    Arguments and outputs as scan.make_split_scanner (no scratch: shared
    memory)."""
    n_features = hist.shape[1]
    node = cuda.blockIdx.x // n_features
    f = cuda.blockIdx.x - node * n_features
    if not _newton_task(node, f, is_categorical, split_bin, layout, params):
        return
    k, width = cuda.threadIdx.x, cuda.blockDim.x
    if k == 0:
        _clear_task(node, f, out_gain, out_missing_left, out_bitset, out_info,
                               out_words)
    if feature_allowed[node, f] == 0:
        return
    sums = cuda.shared.array((NEWTON_CHANNELS, BLOCK_SCAN_MAX_THREADS), int64)
    task = cuda.shared.array((2, NEWTON_CHANNELS), int64)
    H = hist[node, f]
    _node_totals(H, n_bins_non_missing[f], missing_bin, sums, task, k, width)
    T, M = task[0], task[1]
    parent = _parent_score(T, layout, inv, params, node, n_features)
    has_missing = _node_count(M, layout, inv) > 0
    left = cuda.local.array(NEWTON_CHANNELS, int64)
    best, best_bin, best_ml = _thread_best(H, T, M, n_bins_non_missing[f], has_missing, parent,
                                           inv, params, sums, left, k, width)
    gains = cuda.shared.array(BLOCK_SCAN_MAX_THREADS, float64)
    keys = cuda.shared.array(BLOCK_SCAN_MAX_THREADS, int64)
    key = 2 * best_bin + best_ml          # the candidate's place in the sequential order
    gains[k], keys[k] = best, key
    cuda.syncthreads()
    _block_first_best(gains, keys, k, width)
    if gains[0] != -math.inf and keys[0] == key:      # this thread holds the split
        right = cuda.local.array(NEWTON_CHANNELS, int64)
        _add_bins_upto(out_bitset[node], f, best_bin)
        _record_split(H, T, left, right, node, f, best, best_ml, missing_bin, missing_bin,
                                 has_missing, parent, layout, inv, params, True, out_gain,
                                 out_missing_left, out_bitset, out_left, out_info, out_words)


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
