"""The CPU's best-first steps run in one compiled call: a tree grown best
first (:mod:`gputree.growth.bestfirst`) takes, split after split, the
compiled step (:func:`.bestfirst_step._step`), the row split with the
histogram build (:func:`.split_build._split_and_build`) and the split scan
(:mod:`.split_scan`), the same kernels with the same arguments in the same
order as its Python loop calls them, until it needs Python: room in the
node arrays, the pool or the row partition, a leaf too large for one
chunk, or a child too large for one piece (LETOR, lossguide: some 3,000
steps a fit, each three calls of ~30 arguments from Python and their
glue, some 9 us a step). The calling thread takes the steps, and every
thread of a team scans the slots of each step's scan (:mod:`.claims`):
waking pool threads for each scan cost more than a step's scan (LETOR's
two nodes of 300 features, some 45 us on one thread).
"""
import numpy as np

from ..._threads import run_parts, thread_count
from ..kernel_cache import cache_numba_cpu_kernels, kernel_factory, renamed_copy
from . import split_build, split_scan
from .bestfirst_step import (BUILT_NODE, BUILT_ROW, N_SCAN, NODE, _N_LEAVES, _N_NODES,
                             BestFirstSteps, _step)
from .claims import leave, publish, start_job, wait_done, wait_for_slots
from .threaded import threaded

_CACHE = cache_numba_cpu_kernels(__file__)

#: what the loop left to its caller: nothing (the tree is grown); a step
#: not taken (room to make first: the caller takes it); the row split, the
#: histogram build and the scan of the step taken; its build and scan
NOTHING, STEP, SPLIT, BUILD = range(4)

#: the scan of the variant, set in each compiled copy's globals (:func:`steps_loop`)
_find_splits = None
_split_and_build = split_build._split_and_build.compiled


def _steps(gain, missing_left, bitset, left, words, state, limits, inv, scan_rows, scan_nodes,
           totals, depth, parent, taken, waiting, priority, hist_row, best_feature, best_bitset,
           best_words, best_gain, best_missing_left, best_left, in_use, allowed, built_of, out,
           X_columns, order, row_left, row_right, counts, table, begin, count, is_split, size,
           split_start, split_n_words, first, sparse_feature, sparse_bins, stats, n_add, pieces,
           first_piece, one_thread, hist, private, feature_bins, sums, mode, alone, layout,
           most_rows, n_bins_non_missing, is_categorical, split_bin, missing_bin, scan_layout,
           params, scratch_sums, scratch_keys, scratch_order, scratch_prefix, scratch_gains,
           out_info, cells, claims, most_leaf_rows, part, n_parts):
    """Best-first steps until the tree is grown or a step needs Python;
    returns what is left (:data:`NOTHING`, :data:`STEP`, :data:`SPLIT`,
    :data:`BUILD`; ``out`` the step's, as ``_step`` leaves it). The
    arguments: ``_step``'s (the scan's outputs, the node arrays, the
    pool's, ``out``), then ``_split_and_build``'s but the split's
    (``row_left``, ``row_right``: the partition's, ``sums``: its
    totals), then the scan's constants, scratch and info output
    (``_find_splits``' arguments, ``scan_layout`` its layout); a leaf of
    ``most_leaf_rows`` rows or more is left to Python. Part 0 (the
    calling thread) takes the steps; the other parts are its team: they
    scan the slots of each scan it publishes (``claims`` int64
    (claims.N_CLAIMS,) INOUT, zeros before the call) while it scans them
    too, and leave when it is done (:mod:`.claims`; a part that starts
    late or leaves early only leaves it more slots)."""
    if part > 0:
        while wait_for_slots(claims):
            _find_splits(hist, n_bins_non_missing, is_categorical, allowed, split_bin,
                         missing_bin, scan_layout, inv, params, scratch_sums, scratch_keys,
                         scratch_order, scratch_prefix, scratch_gains, gain, missing_left,
                         bitset, left, out_info, words, hist, built_of, cells, scan_rows,
                         claims, part, n_parts)
        return NOTHING
    n_slots = scratch_sums.shape[0]
    left_behind = NOTHING
    while True:
        # (BestFirstSteps.step's and RowPartition.reserve's checks of room)
        if (state[_N_NODES] + 2 > totals.shape[0] or in_use.shape[0] < state[_N_LEAVES] + 1
                or allowed.shape[0] != in_use.shape[0] or size[0] + 2 > begin.shape[0]):
            left_behind = STEP
            break
        _step(gain, missing_left, bitset, left, words, state, limits, inv, scan_rows,
              scan_nodes, totals, depth, parent, taken, waiting, priority, hist_row,
              best_feature, best_bitset, best_words, best_gain, best_missing_left, best_left,
              in_use, allowed, built_of, out)
        node, n_scan = out[NODE], out[N_SCAN]
        if node < 0:
            break
        if count[node] >= most_leaf_rows:
            left_behind = SPLIT
            break
        built_node = out[BUILT_NODE] if n_scan else -1
        pieces[0, 4] = out[BUILT_ROW]
        done = _split_and_build(X_columns, order, row_left, row_right, counts, table, begin,
                                count, is_split, size, node, best_feature[node],
                                best_bitset[node:node + 1], best_words[node], split_start,
                                split_n_words, built_node, first, sparse_feature, sparse_bins,
                                stats, n_add, pieces, first_piece, one_thread, hist, private,
                                feature_bins, sums, mode, alone, layout, most_rows, 0, 1)
        if built_node >= 0 and not done & split_build.BUILT:
            left_behind = BUILD
            break
        if n_scan:
            end = publish(claims, n_slots, n_scan)
            _find_splits(hist, n_bins_non_missing, is_categorical, allowed, split_bin,
                         missing_bin, scan_layout, inv, params, scratch_sums, scratch_keys,
                         scratch_order, scratch_prefix, scratch_gains, gain, missing_left,
                         bitset, left, out_info, words, hist, built_of, cells, scan_rows,
                         claims, 0, n_parts)
            wait_done(claims, end)
    leave(claims)
    return left_behind


@kernel_factory
def steps_loop(measure, categorical, newton_one):
    """:func:`_steps` with the scan of one criterion measure
    (:func:`.split_scan.split_finder`'s variant), named
    ``_steps_<variant>`` (numba's disk cache tells functions apart by their
    qualified names)."""
    finder = split_scan.split_finder(measure, categorical, newton_one)
    variant = (f"{measure[0]}_{measure[1]}{'c' if categorical else 'n'}"
               f"{'1' if newton_one else '0'}")
    return threaded(renamed_copy(_steps, f"_steps_{variant}", {"_find_splits": finder.compiled}),
                    cache=_CACHE)


def loop_of(layout, params, any_categorical):
    """:func:`steps_loop` of the criterion ``layout`` / ``params`` (as
    split_scan.finder_of)."""
    return steps_loop(*split_scan.scan_variant(layout, params, any_categorical))


def run_team(kernel, *arguments):
    """``kernel(*arguments)`` (a steps loop of :func:`steps_loop`) in one
    part per thread, its team; what it left."""
    return run_parts(kernel.compiled, thread_count(), *arguments, claimed=True)


class LoopedSteps(BestFirstSteps):
    """BestFirstSteps whose :meth:`advance` runs the steps in compiled
    calls (:func:`_steps`) where ``split_and_build`` offers its arguments
    (``loop_arguments``: the CPU's :class:`.split_build.TreeSplitBuild`)."""

    def advance(self, pool, split_and_build):
        arguments = getattr(split_and_build, "loop_arguments", None)
        if arguments is not None:
            hist = pool.hist
            if self._scan_arguments is None or self._scan_arguments[0] is not hist:
                self._scan_arguments = self._scan_arrays(hist)
            split_arguments, most_leaf_rows = arguments()
            n_bins_non_missing, is_categorical, missing_bin, layout, inv, params = self.constants
            gain, missing_left, bitset, left, info, words = self.outputs
            start_job(self.claims, 0, 0)
            left_behind = run_team(
                loop_of(layout, params, self.any_categorical), gain, missing_left, bitset,
                left, words, self.state, self.limits, self.inv,
                self.scan_rows, self.scan_nodes, self.totals, self.depth, self.parent,
                self.taken, self.waiting, self.priority, self.hist_row, self.best_feature,
                self.best_bitset, self.best_words, self.best_gain, self.best_missing_left,
                self.best_left, pool.in_use, self.allowed, self.built_of, self.out,
                *split_arguments, n_bins_non_missing, is_categorical, self.split_bin,
                missing_bin, layout, params, *self._scan_arguments[9:14], info, self.cells,
                self.claims, most_leaf_rows)
            if left_behind != STEP:
                return self.out, left_behind == BUILD
        return self.step(pool), False
