"""The CPU split scan and node summaries, compiled per criterion (the
formulas specialised to it) on first use, so a process compiles only what
it uses; the scan is the one the CUDA backend runs
(:mod:`gputree.backends.scan`)."""

import numpy as np
from numba import njit

from ..formulas import KIND_NEWTON, LAYOUT_N_OUTPUTS, PARAM_CONSTRAINTS, measure_of
from ..kernel_cache import cache_numba_cpu_kernels, kernel_factory, renamed_copy
from ..node_features import make_node_features
from ..scan import make_scan_parts
from ..summaries import node_summaries_kernel_body
from ..._compile_cache import gputree_cache
from ..._threads import kernel_jit, thread_count
from .histograms import subtract_cells
from .claims import ROWS, claim_slot, slot_done, slot_of
from .intrinsics import atomic_load
from .jit import U64, inline_helper, ir_inline, part_bounds, plain_jit
from .threaded import threaded


# the scan kernels also compile code from other files: their cache covers them
_CACHE_SCAN = cache_numba_cpu_kernels(__file__)


#: work (about ns, ThreadedKernel.run's unit) of the split scan per bin of
#: a (node, feature) it scans: a numerical feature's (the vectorised scan,
#: LETOR's 21 bins a feature: 69-84 ns a (node, feature) on one thread,
#: 3.3-4.0 ns a bin with each task's own work). Measured on LETOR's fits
#: (2 threads, medians of 7-9, 2 to 8 alternated): depth 6 flat from 2 to
#: 8 (0.195-0.200 s), lossguide flat from 2 to 5 (0.311-0.314 s) but 0.40 s
#: at 6, where a best-first step's two nodes (12,600 bins) run in two
#: parts ...
SCAN_WORK_PER_BIN = 4
#: ... and a categorical one's (a best-first step's two nodes of a
#: 2,000-category and a numerical feature: 59 us on one thread, 13 ns a
#: bin; 89 us in two parts on two threads)
CATEGORY_SCAN_WORK_PER_BIN = 13


def feature_work(n_bins_non_missing, is_categorical):
    """int64 (F,): the scan's work of each feature of one node (its bins,
    int32 (F,), at its kind's work per bin; ``is_categorical`` uint8 (F,))."""
    per_bin = np.where(np.asarray(is_categorical) != 0, CATEGORY_SCAN_WORK_PER_BIN,
                       SCAN_WORK_PER_BIN)
    return per_bin.astype(np.int64) * np.asarray(n_bins_non_missing, dtype=np.int64)


#: scratch slots of the split scan per thread (each slot's tasks run in
#: turn on one thread; several per thread balance the load)
SCAN_SLOTS_PER_THREAD = 8


#: the scan and the node summary that the two kernels below call: set in
#: each compiled copy's globals by split_finder and summaries_kernel
_scan = _node_summary = None


def _find_splits(hist, n_bins_non_missing, is_categorical, feature_allowed,
                 split_bin, missing_bin, layout, inv, params, scratch_sums, scratch_keys,
                 scratch_order, scratch_prefix, scratch_gains, out_gain, out_missing_left,
                 out_bitset, out_left, out_info, out_words, source, built_of, cells, scan_rows,
                 claims, part, n_parts):
    """The split scan of every (node, feature) of the nodes (histogram rows)
    ``scan_rows[:k]`` (int64 (>= k,) IN; the outputs of the other rows
    untouched) (arguments as scan.make_split_scanner; the scan inlined), in
    parts over the scratch slots, slot s scanning the s-th of n_slots runs
    of consecutive tasks (k F of them: row scan_rows[j]'s features, j after
    j), each part claiming the next slot not taken until none is left
    (``claims`` int64 (claims.N_CLAIMS,) INOUT, the job's: its ROWS is k;
    claims.slot_claims makes one: a part that starts late, a pool thread
    woken after the calling thread's part began, takes fewer; which part
    scans a slot changes nothing written); compiled per criterion by
    split_finder. A node whose ``built_of`` (int32 (n_nodes,) IN) is b >= 0
    is first derived in place, feature by feature:
    ``hist[node, f] -= source[b, f]`` (int64 (m, F, n_bins, C) IN) on the
    feature's cells (histograms.subtract_histograms' result, every feature
    of the node, scanned or not). ``cells`` int64: empty, hist and source
    (m, F, n_bins, C); else the compact layout (histograms.row_layout), hist
    and source (m, 1, cells[-1], C)."""
    n_features, n_bins = n_bins_non_missing.shape[0], hist.shape[2]
    n_slots = scratch_sums.shape[0]
    flat = hist.reshape(hist.shape[0], hist.shape[1], n_bins * hist.shape[3])
    source_flat = source.reshape(source.shape[0], hist.shape[1], n_bins * hist.shape[3])
    while True:
        # slot s scans the s-th of n_slots runs of consecutive tasks (their
        # cells side by side: read in order), claimed in turn by the parts
        claim = claim_slot(claims)
        if claim < 0:
            break
        slot = slot_of(claims, claim, n_slots)
        first, stop = part_bounds(atomic_load(claims, ROWS) * n_features, slot, n_slots)
        k = np.int64(first) // n_features      # task t is row scan_rows[k]'s feature t - k F
        f = np.int64(first) - k * n_features
        for _ in range(np.int64(first), np.int64(stop)):
            node = scan_rows[k]
            if built_of[node] >= 0:
                # unsigned like subtract_histograms' call: one compile of the helper
                subtract_cells(flat, U64(node), flat, U64(node), source_flat,
                               U64(built_of[node]), U64(f), n_bins_non_missing, n_bins, cells)
            _scan(node, f, np.int64(slot), hist, cells, n_features,
                  n_bins_non_missing, is_categorical, feature_allowed, split_bin, missing_bin,
                  layout, inv, params, scratch_sums, scratch_keys, scratch_order,
                  scratch_prefix, scratch_gains, out_gain, out_missing_left, out_bitset,
                  out_left, out_info, out_words)
            f += 1
            if f == n_features:
                k, f = k + 1, np.int64(0)
        slot_done(claims)


@ir_inline
def best_feature(gain, n):
    """The feature of the largest ``gain[n]`` (float64 (n_nodes, F)), the
    first on ties (or the first NaN, as numpy's argmax)."""
    best = 0
    if not np.isnan(gain[n, 0]):
        for f in range(1, gain.shape[1]):
            if np.isnan(gain[n, f]):
                return f
            if gain[n, f] > gain[n, best]:
                best = f
    return best


@ir_inline
def take_best(gain, missing_left, bitset, left, words, row, node, best_features,
              best_bitset, best_words, best_gain, best_missing_left, best_left):
    """Store the best split of the scan's ``row`` (the largest gain, the
    first on ties: :func:`best_feature`) as ``node``'s in the
    best_* node arrays (OUT); returns its gain."""
    best = best_feature(gain, row)
    g = gain[row, best]
    best_features[node], best_gain[node] = best, g
    best_missing_left[node] = missing_left[row, best]
    for k in range(bitset.shape[2]):
        best_bitset[node, k] = bitset[row, best, k]
    for k in range(best_words.shape[1]):
        best_words[node, k] = words[row, best, k]
    for k in range(left.shape[2]):
        best_left[node, k] = left[row, best, k]
    return g


@kernel_jit()
def best_per_node(gain, missing_left, bitset, left, words, feature, best_gain, best_missing_left,
                  best_bitset, best_left, best_words):
    """scan.best_split_per_node in one serial pass: per node (row of the
    (n_nodes, F, ...) scan outputs gain, missing_left, bitset, left, words
    IN) its feature OUT (int32 (n_nodes,)) of the largest gain, the first
    on ties (or the first NaN, as numpy's argmax), and that feature's
    results in the best_* arrays OUT."""
    for n in range(gain.shape[0]):
        take_best(gain, missing_left, bitset, left, words, n, n, feature, best_bitset,
                  best_words, best_gain, best_missing_left, best_left)


def _node_summaries(totals, layout, inv, params, values, impurity):
    """Leaf values and impurity of every node (base.node_summaries_kernel_body);
    serial: a few thousand nodes at most, less work than waking threads.
    Compiled per criterion by summaries_kernel."""
    for node in range(totals.shape[0]):
        _node_summary(node, totals, layout, inv, params, values, impurity)


_soft_limit_row, _random_bin_task, _ = make_node_features(ir_inline)


@threaded(cache=_CACHE_SCAN)
def limit_node_features(hist, order, max_features, n_bins_non_missing, missing_bin, layout,
                        allowed, part, n_parts):
    """Per histogram row, in parts over the rows: the soft limit of
    ``max_features`` of :mod:`gputree.backends.node_features` (arguments as
    there). A kernel of its own: random forests run it alone, so they
    compile nothing of the random thresholds."""
    first, stop = part_bounds(hist.shape[0], part, n_parts)
    for r in range(first, stop):
        _soft_limit_row(np.int64(r), hist, order, max_features, n_bins_non_missing,
                        missing_bin, layout, allowed)


@threaded(cache=_CACHE_SCAN)
def draw_node_bins(hist, draws, n_bins_non_missing, missing_bin, is_categorical, layout,
                   allowed, split_bin, part, n_parts):
    """Per histogram row, in parts over the rows: the random thresholds of
    :mod:`gputree.backends.node_features` (arguments as there)."""
    first, stop = part_bounds(hist.shape[0], part, n_parts)
    for r in range(first, stop):
        row = np.int64(r)
        for f in range(hist.shape[1]):
            _random_bin_task(row, f, hist, draws, n_bins_non_missing, missing_bin,
                             is_categorical, layout, allowed, split_bin)


def finder_of(layout, params, any_categorical):
    """The split scan (:func:`split_finder`) of the criterion ``layout`` /
    ``params`` (int64 / float64 host arrays), with the categorical scan
    where ``any_categorical``."""
    return split_finder(*scan_variant(layout, params, any_categorical))


def scan_variant(layout, params, any_categorical):
    """(measure, categorical, newton_one): :func:`split_finder`'s arguments
    for the criterion ``layout`` / ``params`` (as :func:`finder_of`)."""
    measure = measure_of(layout)
    newton_one = (measure[0] == KIND_NEWTON and int(layout[LAYOUT_N_OUTPUTS]) == 1
                  and int(params[PARAM_CONSTRAINTS]) == 0)
    return measure, bool(any_categorical), newton_one


def scan_slots(n_tasks):
    """The scratch slots of a scan of ``n_tasks`` (node, feature) tasks."""
    return max(1, min(n_tasks, SCAN_SLOTS_PER_THREAD * thread_count()))


@kernel_factory
def split_finder(measure, categorical, newton_one):
    """find_splits of one criterion measure ((kind, impurity), from
    formulas.measure_of; with the categorical scan or without; boosting's
    scan with one output and no constraints alone, ``newton_one``, or the
    others), the scan and formulas specialised to it: compiled only for
    what a process uses, each compile smaller than one for everything.
    Threaded, named ``_find_splits_<variant>`` (numba's disk cache tells
    functions apart by their qualified names)."""
    scan = make_scan_parts(plain_jit, inline_helper, measure, categorical, ir_inline,
                           vector=True, newton_only=newton_one).scan_task
    variant = (f"{measure[0]}_{measure[1]}{'c' if categorical else 'n'}"
               f"{'1' if newton_one else '0'}")
    return threaded(renamed_copy(_find_splits, f"_find_splits_{variant}", {"_scan": scan}),
                    cache=_CACHE_SCAN, claimed=True)


@kernel_factory
def summaries_kernel(measure):
    """node_summaries of one criterion measure (its formulas specialised)."""
    summary = node_summaries_kernel_body(plain_jit, inline_helper, measure, ir_inline)
    name = f"_node_summaries_{measure[0]}_{measure[1]}"
    kernel = renamed_copy(_node_summaries, name, {"_node_summary": summary})
    return gputree_cache(njit(cache=_CACHE_SCAN)(kernel))
