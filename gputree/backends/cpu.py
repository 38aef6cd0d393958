"""CPU backend: the tree primitives as numpy arrays and ``numba.njit`` loops.

Loops are parallel over rows (binning, partition, prediction) or, for
histograms, over (row block, feature block) tasks cut from the level's shape
and numba's thread count (:func:`histogram_cut`): a row block other than the
first adds into private histograms, reduced afterwards in a fixed order. No
two threads ever write the same cell and no atomics are needed. Histogram
cells are int64 fixed-point sums, so the result is the same for any cut and
thread count and equals the CUDA backend's bit for bit.

The split scan and node summaries are compiled per criterion (the formulas
specialised to it), on first use: a process compiles only what it uses.
Every parallel kernel is staged (:mod:`gputree.backends.cpu_stages`):
serial until a process runs a large job, so that a small fit compiles no
parallel kernel.
"""
import contextlib
import functools
import math
import mmap

import numba
import numpy as np
from numba import njit, prange

from .._dtypes import NODE_DTYPE, STAT_DTYPE, bin_dtype
from .formulas import measure_of
from .scan import best_split_per_node, empty_scan_outputs, empty_scratch, make_split_scanner
from .base import Backend, node_summaries_kernel_body
from .compile_notice import watch_compilation
from .cpu_stages import renamed_copy, staged
from .splitset import make_splitset
from .kernel_cache import cache_numba_cpu_kernels

# the scan kernels also compile code from other files: their cache covers them
_CACHE_SCAN = cache_numba_cpu_kernels(__file__)

def _without_reference_counting():
    """``njit`` for functions that only index and slice arrays they are given.

    numba reference-counts every array view and every array passed to an
    inlined helper with atomic increments and decrements; in the split scan
    that cost 20 times the arithmetic (123 -> 9 ns per newton candidate in a
    micro-benchmark), and more when two threads share the criterion arrays'
    counters. numba's ``_nrt=False`` compiles without the runtime (no
    allocation possible, views are plain structs). Plain ``njit`` where a
    numba version does not know the option.
    """
    try:
        njit(_nrt=False)(lambda a: a[0:1][0]).compile("(int64[:],)")
    except Exception:  # noqa: BLE001 - any failure means: keep the runtime
        return njit
    return functools.partial(njit, _nrt=False)


#: the helpers below are only called by kernels: numba builds them no
#: wrappers for calls from Python or C (nor emits those wrappers' code)
_plain_jit = functools.partial(_without_reference_counting(), no_cpython_wrapper=True,
                               no_cfunc_wrapper=True)
_force_inline = functools.partial(_plain_jit, forceinline=True)


def _inline(function):
    """The split scan's per-candidate helpers are inlined: calls cost more
    than the arithmetic they do, and inlined, the compiler sees the
    criterion constant (one scan per criterion) and drops the other
    criteria's code. Small helpers (under _IR_INLINE_BYTES of bytecode) are
    inlined in numba's IR, so they are not compiled on their own; larger
    ones by LLVM (``forceinline``): numba compiles each once, where IR
    inlining copied every formula into every call site and took minutes
    to compile. devmath's exp/log family is called, not inlined: those
    functions are large and only a few criteria call them (not gini nor
    newton)."""
    if function.__module__.endswith(".devmath"):
        return _plain_jit(function)
    if len(function.__code__.co_code) < _IR_INLINE_BYTES:
        return njit(inline="always")(function)
    return _force_inline(function)


_ir_inline = njit(inline="always")
_goes_left = make_splitset(_ir_inline).goes_left
#: helpers smaller than this (bytes of CPython bytecode) are inlined in numba's IR
_IR_INLINE_BYTES = 160


# Indices are cast to unsigned in the hot loops: numba wraps negative signed
# indices around (a compare and a select per index), which cost 10% of a
# histogram pass and a third of a prediction.
_U = np.uint64

_BINNING_BLOCK = 256
#: work (about ns, cpu_stages' unit) of binning one value
_SEARCH_WORK = 8
#: thresholds are padded to 2**k - 1 >= this width: the search unrolls its
#: last 8 steps, and loops over the steps above them (16-bit bins only)
_SEARCH_WIDTH = 255


@njit(inline="always")
def _search_step(row, lo, x, step):
    return lo + step * (row[_U(lo + step - 1)] < x)


@staged
def _map_to_bins(X, thresholds, is_categorical, missing_bin, out):
    """X float (n, F) IN; thresholds float64 (F, 2**k - 1 >= 255) IN, rows
    padded with +inf; out uint8 or uint16 (n, F) OUT (Fortran order).

    Parallel over blocks of rows; within a block, feature by feature so that
    writes are contiguous. The binary search is branch-free, its last 8
    steps unrolled: ``lo`` ends as the number of thresholds strictly below
    ``x``."""
    n_samples, n_features = X.shape
    width = thresholds.shape[1]
    n_blocks = (n_samples + _BINNING_BLOCK - 1) // _BINNING_BLOCK
    for block in prange(n_blocks):
        start = block * _BINNING_BLOCK
        stop = min(start + _BINNING_BLOCK, n_samples)
        for f in range(n_features):
            row = thresholds[f]
            for i in range(start, stop):
                x = np.float64(X[_U(i), _U(f)])
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
                if np.isnan(x) or (is_categorical[f] and (lo == width or row[_U(lo)] != x)):
                    out[_U(i), _U(f)] = missing_bin
                else:
                    out[_U(i), _U(f)] = lo


def _pad_thresholds(thresholds):
    """thresholds (F, T) -> (F, 2**k - 1 >= max(T, 255)) padded with +inf."""
    width = max(_SEARCH_WIDTH, 2 ** int(thresholds.shape[1]).bit_length() - 1)
    padded = np.full((thresholds.shape[0], width), np.inf)
    padded[:, :thresholds.shape[1]] = thresholds
    return padded


_ROW_CHUNK = 16384



@njit(inline="always")
def _slot_of(positions, i, level_start, node_to_build):
    """Histogram index of row i's node, -1 when its node is not built."""
    k = positions[_U(i)] - level_start
    if k < 0 or k >= node_to_build.shape[0]:
        return -1
    return node_to_build[_U(k)]


@staged
def _rows_to_build(positions, level_start, node_to_build, stats):
    """Rows whose node needs a histogram (int32, ascending), that histogram's
    index (int32), and those rows' statistics gathered in order (int64
    (m, C)), so that every feature's pass reads them sequentially.

    One parallel pass over chunks of rows lists each chunk's rows at the
    chunk's own place in ``found``; a second copies them to their offset
    (a prefix sum of the chunks' counts) with their slots and statistics:
    ``positions`` is read once in full, then only at the rows found."""
    n_samples = positions.shape[0]
    n_chunks = (n_samples + _ROW_CHUNK - 1) // _ROW_CHUNK
    found = np.empty(n_samples, dtype=np.int32)
    counts = np.zeros(n_chunks + 1, dtype=np.int64)
    for chunk in prange(n_chunks):
        start = chunk * _ROW_CHUNK
        k = start
        for i in range(start, min(start + _ROW_CHUNK, n_samples)):
            found[_U(k)] = i
            k += _slot_of(positions, i, level_start, node_to_build) >= 0
        counts[chunk + 1] = k - start
    offsets = np.cumsum(counts)
    n = offsets[-1]
    rows = np.empty(n, dtype=np.int32)
    slots = np.empty(n, dtype=np.int32)
    ordered = np.empty((n, stats.shape[1]), dtype=stats.dtype)
    for chunk in prange(n_chunks):
        for k in range(counts[chunk + 1]):
            i = found[_U(chunk * _ROW_CHUNK + k)]
            r = _U(offsets[chunk] + k)
            rows[r] = i
            slots[r] = _slot_of(positions, i, level_start, node_to_build)
            for c in range(stats.shape[1]):
                ordered[r, _U(c)] = stats[_U(i), _U(c)]
    return rows, slots, ordered


@njit(inline="always")
def _row_and_slot(rows, slots, all_rows, one_slot, dest_rows, r):
    """(row of X, destination histogram) of gathered row r, as unsigned
    (``all_rows``: every row in order, into histogram ``one_slot``)."""
    if all_rows:
        return _U(r), _U(dest_rows[one_slot])
    return _U(rows[r]), _U(dest_rows[one_slot if one_slot >= 0 else slots[r]])


@njit(inline="always")
def _add_rows(X_binned, stats, rows, slots, all_rows, one_slot, first, stop,
              f_first, f_stop, dest, dest_rows):
    """dest[dest_rows[s]] INOUT += the histograms of gathered rows first ..
    stop-1 (s = one_slot, or slots[r] when one_slot < 0), features f_first
    .. f_stop-1. Each row's statistics are read once for all those features.
    Three channels go in pairs of rows, the rest (and an odd last row) one
    at a time: two rows' loads and read-modify-writes are independent, so
    their cache misses overlap (1.3-1.5x faster than one row at a time on
    nodes' histograms that do not fit in L2). Cells are indexed, never
    sliced: numba reference-counts every view."""
    if stats.shape[1] == 3:
        first = _add_row_pairs_three_channels(X_binned, stats, rows, slots, all_rows, one_slot,
                                              first, stop, f_first, f_stop, dest, dest_rows)
    for r in range(first, stop):
        i, s = _row_and_slot(rows, slots, all_rows, one_slot, dest_rows, r)
        for f in range(f_first, f_stop):
            b = X_binned[i, _U(f)]
            for c in range(stats.shape[1]):
                dest[s, _U(f), b, _U(c)] += stats[_U(r), _U(c)]


@njit(inline="always")
def _add_row_pairs_three_channels(X_binned, stats, rows, slots, all_rows, one_slot, first, stop,
                                  f_first, f_stop, dest, dest_rows):
    """_add_rows for 3 channels (boosting's gradient, hessian, count), two
    rows at a time, constant channel indices, the rows' values in registers
    (40% faster than the loop over channels, root histograms, 750k rows).
    Returns the first row not added (``stop - 1`` for an odd count)."""
    last = stop - (stop - first) % 2
    for r in range(first, last, 2):
        i, s = _row_and_slot(rows, slots, all_rows, one_slot, dest_rows, r)
        j, t = _row_and_slot(rows, slots, all_rows, one_slot, dest_rows, r + 1)
        g, h, n = stats[_U(r), 0], stats[_U(r), 1], stats[_U(r), 2]
        g2, h2, n2 = stats[_U(r + 1), 0], stats[_U(r + 1), 1], stats[_U(r + 1), 2]
        for f in range(f_first, f_stop):
            b, b2 = X_binned[i, _U(f)], X_binned[j, _U(f)]
            dest[s, _U(f), b, 0] += g
            dest[s, _U(f), b, 1] += h
            dest[s, _U(f), b, 2] += n
            dest[t, _U(f), b2, 0] += g2
            dest[t, _U(f), b2, 1] += h2
            dest[t, _U(f), b2, 2] += n2
    return last


@staged
def _build_histograms(X_binned, stats, rows, slots, all_rows, one_slot, part_of_row,
                      n_row_blocks, features_per_task, hist, part):
    """Histograms of gathered rows, parallel over (row block, feature block)
    tasks.

    X_binned uint8 or uint16 (n, F) IN; stats int64 (m, C) IN: the gathered rows'
    statistics (``all_rows``: every row in order, ``rows`` unread; else row
    ``rows[r]``, int32 (m,)); slots int32 (m,) IN: the hist row of row r's
    node (or ``one_slot`` for every row when >= 0). hist int64 (n_hist, F,
    n_bins, C) INOUT (built rows zeroed) takes row block 0; part int64
    (n_row_blocks - 1, n_build, F, n_bins, C) INOUT, zeroed, takes the other
    blocks, hist row h in part row part_of_row[h] (int32 (n_hist,) IN); then
    :func:`_add_parts`. Integer sums: the result depends on neither the cut
    nor the thread count."""
    m, n_features = stats.shape[0], X_binned.shape[1]
    n_groups = (n_features + features_per_task - 1) // features_per_task
    block_rows = (m + n_row_blocks - 1) // n_row_blocks
    same_row = np.arange(hist.shape[0]).astype(np.int32)
    for task in prange(n_row_blocks * n_groups):
        block, group = task // n_groups, task % n_groups
        first, stop = block * block_rows, min((block + 1) * block_rows, m)
        f_first = group * features_per_task
        f_stop = min(f_first + features_per_task, n_features)
        dest = hist if block == 0 else part[block - 1]
        dest_rows = same_row if block == 0 else part_of_row
        # the flag as a constant in each inlined copy: the row loop has no branch on it
        if all_rows:
            _add_rows(X_binned, stats, rows, slots, True, one_slot, first, stop,
                      f_first, f_stop, dest, dest_rows)
        else:
            _add_rows(X_binned, stats, rows, slots, False, one_slot, first, stop,
                      f_first, f_stop, dest, dest_rows)


@staged
def _add_parts(part, built_rows, hist):
    """hist[built_rows[k]] INOUT += part[p, k] for p in order (int64,
    exact); part int64 (P, n_build, F, n_bins, C) IN. Parallel over
    (histogram, feature)."""
    n_features = part.shape[2]
    for t in prange(part.shape[1] * n_features):
        k, f = t // n_features, t % n_features
        out = hist[built_rows[k], f]
        for p in range(part.shape[0]):
            block = part[p, k, f]
            for b in range(out.shape[0]):
                for c in range(out.shape[1]):
                    out[b, c] += block[b, c]


#: features per task of a histogram pass: a row's index, slot and statistics
#: (32 bytes against its 1-byte bin) are read once per task, so more
#: features per task read less, while the task's histograms (features x
#: nodes x bins) must stay in cache. Measured on 750k rows, 28 features, 2
#: threads: 7 per task is fastest up to 16
#: nodes built (3x faster than 1 per task), 4 per task from 32 to 256 nodes
#: (1.4-1.7x faster than 1; 7 is 25-40% slower there), 2 beyond (512 nodes:
#: 10% faster than 4)
_FEW_NODES, _FEW_NODES_FEATURES_PER_TASK = 16, 7
_MANY_NODES, _MANY_NODES_FEATURES_PER_TASK, _MOST_NODES_FEATURES_PER_TASK = 256, 4, 2
#: tasks per thread wanted in a histogram pass (load balance)
_TASKS_PER_THREAD = 2
#: an extra row block costs its private histograms (zeroing, reduction): it
#: must hold at least this many rows per histogram bin
_ROWS_PER_BIN = 4


def histogram_task_features(n_build):
    """Features a histogram task adds for each of its rows, given the number
    of nodes built."""
    if n_build <= _FEW_NODES:
        return _FEW_NODES_FEATURES_PER_TASK
    if n_build <= _MANY_NODES:
        return _MANY_NODES_FEATURES_PER_TASK
    return _MOST_NODES_FEATURES_PER_TASK


def histogram_cut(n_rows, n_build, n_features, n_bins, n_threads):
    """(n_row_blocks, features_per_task) of a histogram pass: blocks of
    features first (they need no reduction), then blocks of rows until every
    thread has ``_TASKS_PER_THREAD`` tasks, while a block keeps at least
    ``_ROWS_PER_BIN`` rows per bin of its private histograms. Feature groups
    hold at most :func:`histogram_task_features`, evened out."""
    n_groups = -(-n_features // histogram_task_features(n_build))
    per_task = -(-n_features // n_groups)   # groups of even size
    wanted = -(-_TASKS_PER_THREAD * n_threads // n_groups)
    affordable = n_rows // (_ROWS_PER_BIN * n_build * n_bins)
    return max(1, min(wanted, affordable)), per_task


def _histograms_of_rows(X_binned, stats, rows, slots, built_rows, hist):
    """Add the histograms of gathered rows into hist's rows ``built_rows``
    (int32, zeroed), cut by :func:`histogram_cut` for numba's threads.
    ``rows`` None: every row in order (stats as they are)."""
    n_bins = hist.shape[2]
    n_blocks, per_task = histogram_cut(stats.shape[0], built_rows.size, X_binned.shape[1],
                                       n_bins, numba.get_num_threads())
    part = np.zeros((n_blocks - 1, built_rows.size) + hist.shape[1:], dtype=hist.dtype)
    part_of_row = np.zeros(hist.shape[0], dtype=np.int32)
    part_of_row[built_rows] = np.arange(built_rows.size)
    one_slot = int(built_rows[0]) if built_rows.size == 1 else -1
    empty = np.empty(0, np.int32)
    _build_histograms.run(stats.shape[0] * X_binned.shape[1], X_binned, stats,
                          empty if rows is None else rows, empty if slots is None else slots,
                          rows is None, one_slot, part_of_row, n_blocks, per_task, hist, part)
    if n_blocks > 1:
        _add_parts.run(part.size, part, built_rows, hist)


@staged
def _subtract_histograms(parent_hist, parent_rows, hist, built_rows, derived_rows):
    """hist[derived_rows[p]] = parent_hist[parent_rows[p]] - hist[built_rows[p]]
    (int64, exact); hist INOUT, the rest IN. Parallel over (pair, feature)."""
    n_features = hist.shape[1]
    for t in prange(parent_rows.shape[0] * n_features):
        p, f = t // n_features, t % n_features
        parent = parent_hist[parent_rows[p], f]
        built = hist[built_rows[p], f]
        derived = hist[derived_rows[p], f]
        for b in range(parent.shape[0]):
            for c in range(parent.shape[1]):
                derived[b, c] = parent[b, c] - built[b, c]


@staged
def _update_positions(X_binned, positions, level_start, split_feature,
                      split_bitset, left_child):
    """positions int32 (n,) INOUT: rows of split nodes move to a child."""
    n_level = split_feature.shape[0]
    for i in prange(positions.shape[0]):
        k = positions[_U(i)] - level_start
        if 0 <= k < n_level and split_feature[_U(k)] >= 0:
            b = X_binned[_U(i), _U(split_feature[_U(k)])]
            goes_left = _goes_left(split_bitset, k, b)
            positions[_U(i)] = left_child[_U(k)] + (0 if goes_left else 1)


_PREDICT_BLOCK = 64


@njit(cache=True)
def _walk_arrays(node_feature, node_bitset, node_left, tree_roots):
    """Trees (as ``predict_leaves`` takes them) rewritten so that one step is
    the same for every node: a leaf gets feature 0, an all-ones bitset and
    ``next = itself + 1`` (it goes "left" to itself); an internal node gets
    ``next = left + 1``, so the child is ``next - goes_left``. Also returns
    each tree's depth (int32 (n_trees,)): the number of steps to take.
    Children follow their parent (BFS numbering), so one forward pass per
    tree finds every node's depth."""
    feature = np.maximum(node_feature, 0)
    bitset = node_bitset.copy()
    step_next = np.empty(node_left.shape[0], dtype=np.int32)
    depth = np.zeros(node_left.shape[0], dtype=np.int32)
    tree_depth = np.zeros(tree_roots.shape[0], dtype=np.int32)
    for t in range(tree_roots.shape[0]):
        stop = tree_roots[t + 1] if t + 1 < tree_roots.shape[0] else node_left.shape[0]
        depth[tree_roots[t]] = 0
        for node in range(tree_roots[t], stop):
            if node_feature[node] < 0:
                step_next[node] = node + 1
                bitset[node, :] = np.uint32(0xFFFFFFFF)
                tree_depth[t] = max(tree_depth[t], depth[node])
            else:
                step_next[node] = node_left[node] + 1
                depth[node_left[node]] = depth[node] + 1
                depth[node_left[node] + 1] = depth[node] + 1
    return feature, bitset, step_next, tree_depth


@njit(inline="always")
def _descend(X_binned, start, n_rows, root, n_steps, feature, bitset, step_next, nodes):
    """nodes int32 (>= n_rows,) OUT: leaf of rows start .. start+n_rows-1 in
    the tree at ``root`` (arrays from _walk_arrays). All rows of the block
    step down one level together, branch-free, so their loads overlap."""
    for j in range(n_rows):
        nodes[j] = root
    for _ in range(n_steps):
        for j in range(n_rows):
            node = _U(nodes[j])
            b = X_binned[_U(start + j), _U(feature[node])]
            nodes[j] = step_next[node] - np.int32(_goes_left(bitset, node, b))


@staged
def _walk_trees(X_binned, feature, bitset, step_next, tree_roots, tree_depth, leaves,
                node_values, tree_columns, out):
    """Every row down every tree (tree arrays from _walk_arrays), in tree
    order, then with the leaf reached:

    leaves       OUT   int32 (n, n_trees) leaf ids, or (0, 0) to skip;
    out          INOUT float64 (n, W), or (0, 0) to skip:
                 ``out[i, tree_columns[t] + v] += node_values[leaf, v]`` for
                 v < node_values.shape[1] (one fixed order per row).

    Parallel over blocks of rows; each block walks one tree at a time, so the
    tree's nodes stay in cache while the block's rows traverse it."""
    n_samples = X_binned.shape[0]
    n_blocks = (n_samples + _PREDICT_BLOCK - 1) // _PREDICT_BLOCK
    for block in prange(n_blocks):
        start = block * _PREDICT_BLOCK
        n_rows = min(_PREDICT_BLOCK, n_samples - start)
        nodes = np.empty(_PREDICT_BLOCK, dtype=np.int32)
        for t in range(tree_roots.shape[0]):
            _descend(X_binned, start, n_rows, tree_roots[t], tree_depth[t], feature, bitset,
                     step_next, nodes)
            if leaves.shape[0] > 0:
                for j in range(n_rows):
                    leaves[start + j, t] = nodes[j]
            if out.shape[0] > 0:
                for j in range(n_rows):
                    for v in range(node_values.shape[1]):
                        out[_U(start + j), _U(tree_columns[t] + v)] += node_values[_U(nodes[j]),
                                                                                   _U(v)]


@staged
def _zero_rows(array, rows):
    """array (m, ...) INOUT: rows[k] of it set to zero; parallel over
    (row, first inner index)."""
    inner = array.shape[1]
    flat = array.reshape(array.shape[0], inner, -1)
    for t in prange(rows.shape[0] * inner):
        r, j = rows[t // inner], t % inner
        for k in range(flat.shape[2]):
            flat[_U(r), _U(j), _U(k)] = 0


@staged
def _add_node_values(node_values, positions, out, first_column):
    """out float64 (n, W) INOUT: out[i, first_column + v] +=
    node_values[positions[i], v]; the rest IN. Parallel over rows."""
    for i in prange(positions.shape[0]):
        for v in range(node_values.shape[1]):
            out[_U(i), _U(first_column + v)] += node_values[_U(positions[i]), _U(v)]


#: work (about ns, cpu_stages' unit) of the split scan per bin
_SCAN_WORK_PER_BIN = 20

#: the scan and the node summary that the two kernels below call: set in
#: each compiled copy's globals by _split_finder and _summaries_kernel
_scan = _node_summary = None


def _find_splits(hist, n_bins_non_missing, is_categorical, feature_allowed,
                 missing_bin, layout, inv, params, scratch_sums, scratch_keys,
                 scratch_order, out_gain, out_missing_left, out_bitset, out_left, out_info):
    """The split scan of every (node, feature) (arguments as
    scan.make_split_scanner; the scan inlined); compiled per criterion by
    _split_finder."""
    n_features = hist.shape[1]
    for t in prange(hist.shape[0] * n_features):
        # int64 as typed before the loop became a parallel region (unsigned
        # there): one signature, compiled once
        _scan(np.int64(t), hist, n_features, n_bins_non_missing, is_categorical,
              feature_allowed, missing_bin, layout, inv, params, scratch_sums,
              scratch_keys, scratch_order, out_gain, out_missing_left,
              out_bitset, out_left, out_info)


def _node_summaries(totals, layout, inv, params, values, impurity):
    """Leaf values and impurity of every node (base.node_summaries_kernel_body);
    serial: a few thousand nodes at most, less work than waking threads.
    Compiled per criterion by _summaries_kernel."""
    for node in range(totals.shape[0]):
        _node_summary(node, totals, layout, inv, params, values, impurity)


@functools.lru_cache(maxsize=None)
def _split_finder(measure, categorical):
    """find_splits of one criterion measure ((kind, impurity), from
    formulas.measure_of; with the categorical scan or without), the scan and
    formulas specialised to it: compiled only for what a process uses, each
    compile smaller than one for everything. Staged, named
    ``_find_splits_<variant>`` (numba's disk cache tells functions apart by
    their qualified names)."""
    scan = make_split_scanner(_plain_jit, _inline, measure, categorical, _ir_inline)
    variant = f"{measure[0]}_{measure[1]}{'c' if categorical else 'n'}"
    return staged(renamed_copy(_find_splits, f"_find_splits_{variant}", {"_scan": scan}),
                  cache=_CACHE_SCAN)


@functools.lru_cache(maxsize=None)
def _summaries_kernel(measure):
    """node_summaries of one criterion measure (its formulas specialised)."""
    summary = node_summaries_kernel_body(_plain_jit, _inline, measure, _ir_inline)
    name = f"_node_summaries_{measure[0]}_{measure[1]}"
    return njit(cache=_CACHE_SCAN)(renamed_copy(_node_summaries, name,
                                                {"_node_summary": summary}))


@contextlib.contextmanager
def _loop_vectorizer_off():
    """Compile what runs inside without LLVM's loop vectorizer (numba's
    NUMBA_LOOP_VECTORIZE, read when a kernel is compiled; the disk cache then
    keeps that code). For the tree walk only: vectorized, its row loop
    became AVX-512 gathers that took 62 ms where scalar code takes 42 (100
    trees x 100k rows); the other kernels are faster vectorized."""
    saved = numba.config.LOOP_VECTORIZE
    numba.config.LOOP_VECTORIZE = False
    try:
        yield
    finally:
        numba.config.LOOP_VECTORIZE = saved


def _walk(X_binned, node_feature, node_bitset, node_left, tree_roots, leaves, node_values,
          tree_columns, out):
    """_walk_trees of these trees (its outputs as there)."""
    walk = _walk_arrays(node_feature, node_bitset, node_left, tree_roots)
    steps = X_binned.shape[0] * (int(walk[3].sum()) + tree_roots.shape[0])
    with _loop_vectorizer_off():
        _walk_trees.run(steps, X_binned, *walk[:3], tree_roots, walk[3], leaves, node_values,
                        tree_columns, out)


class CPUBackend(Backend):
    """numpy arrays, numba.njit kernels."""

    name = "cpu"
    xp = np

    def __init__(self):
        watch_compilation()

    def zeros(self, shape, dtype):
        """A zeroed array mapped straight from the OS (anonymous mmap): pages
        never written take no memory, and all of it goes back to the OS when
        the array is dropped. (malloc serves mid-sized arrays from its heap,
        whose pages it may keep after they are freed.)"""
        nbytes = math.prod(shape) * np.dtype(dtype).itemsize
        if nbytes == 0:
            return np.zeros(shape, dtype=dtype)
        return np.frombuffer(mmap.mmap(-1, nbytes), dtype=dtype).reshape(shape)

    def map_to_bins(self, X, thresholds, is_categorical, missing_bin):
        X = np.asarray(X)
        if X.dtype not in (np.float32, np.float64):
            X = X.astype(np.float64)
        out = np.empty(X.shape, dtype=bin_dtype(missing_bin + 1), order="F")
        _map_to_bins.run(X.size * _SEARCH_WORK, X, _pad_thresholds(thresholds), is_categorical,
                         missing_bin, out)
        return out

    def build_histograms(self, X_binned, stats, positions, level_start,
                         node_to_build, n_build, n_bins, out=None):
        hist = out
        if hist is None:
            hist = np.zeros((n_build, X_binned.shape[1], n_bins, stats.shape[1]),
                            dtype=STAT_DTYPE)
        built_rows = node_to_build[node_to_build >= 0].astype(np.int32)
        if (built_rows.size == 1 and node_to_build[0] >= 0 and level_start == 0
                and not positions.any()):
            # the root: every row, in order, statistics as they are (no gather)
            rows = slots = None
        else:
            rows, slots, stats = _rows_to_build.run(2 * positions.shape[0], positions,
                                                    level_start, node_to_build, stats)
        _histograms_of_rows(X_binned, stats, rows, slots, built_rows, hist)
        return hist

    def subtract_histograms(self, parent_hist, parent_rows, hist, built_rows, derived_rows):
        _subtract_histograms.run(parent_rows.shape[0] * math.prod(hist.shape[1:]), parent_hist,
                                 parent_rows, hist, built_rows, derived_rows)

    def find_best_splits(self, hist, n_bins_non_missing, is_categorical,
                         feature_allowed, missing_bin, layout, inv, params):
        return best_split_per_node(np, *self.scan_splits(
            hist, n_bins_non_missing, is_categorical, feature_allowed, missing_bin,
            layout, inv, params))

    def scan_splits(self, hist, n_bins_non_missing, is_categorical,
                    feature_allowed, missing_bin, layout, inv, params):
        n_nodes, n_features, n_bins, n_channels = hist.shape
        any_categorical = bool(is_categorical.any())
        outputs = empty_scan_outputs(np, n_nodes, n_features, n_channels)
        scratch = empty_scratch(np, n_nodes, n_features, n_channels, any_categorical)
        find_splits = _split_finder(measure_of(layout), any_categorical)
        find_splits.run(n_nodes * n_features * n_bins * _SCAN_WORK_PER_BIN, hist,
                        n_bins_non_missing, is_categorical, feature_allowed, missing_bin, layout,
                        inv, params, *scratch, *outputs)
        return outputs

    def update_positions(self, X_binned, positions, level_start, split_feature,
                         split_bitset, left_child):
        _update_positions.run(positions.shape[0], X_binned, positions, level_start,
                              split_feature, split_bitset, left_child)

    def predict_leaves(self, X_binned, node_feature, node_bitset, node_left, tree_roots):
        leaves = np.empty((X_binned.shape[0], tree_roots.shape[0]), dtype=NODE_DTYPE)
        _walk(X_binned, node_feature, node_bitset, node_left, tree_roots, leaves,
              np.empty((0, 0)), tree_roots, np.empty((0, 0)))
        return leaves

    def zero_rows(self, array, rows):
        _zero_rows.run(rows.shape[0] * math.prod(array.shape[1:]), array, rows)

    def add_node_values(self, node_values, positions, out, first_column):
        _add_node_values.run(node_values.shape[1] * positions.shape[0], node_values, positions,
                             out, first_column)

    def add_leaf_values(self, X_binned, node_feature, node_bitset, node_left, tree_roots,
                        node_values, tree_columns, out):
        _walk(X_binned, node_feature, node_bitset, node_left, tree_roots,
              np.empty((0, 0), dtype=NODE_DTYPE), node_values, tree_columns, out)

    def node_summaries(self, totals, layout, inv, params, n_outputs, n_classes):
        values, impurity = self.empty_summaries(totals.shape[0], n_outputs, n_classes)
        _summaries_kernel(measure_of(layout))(totals, layout, inv, params, values, impurity)
        return values, impurity
