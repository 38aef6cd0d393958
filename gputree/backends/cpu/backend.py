"""CPU backend: the tree primitives as numpy arrays and ``numba.njit``
kernels, one module per stage: binning (:mod:`.binning`), the moves of rows
to their nodes (:mod:`.partition`), histograms (:mod:`.histograms`), the
split scan and node summaries (:mod:`.split_scan`), prediction
(:mod:`.predict`); what it keeps per binned X (:mod:`.binned_cache`).

Loops are cut into parts over rows (binning, partition, prediction) or,
for histograms, over threads each adding its list of pieces of the level's
work; no two threads ever write the same cell, and histogram cells are
int64 fixed-point sums, so results are the same for any cut and thread
count and equal the CUDA backend's bit for bit. Every such kernel is
compiled once and run in parts on gputree's threads (:mod:`.threaded`):
small and large jobs share its compiled code.
"""
import math
import mmap
import threading

import numpy as np

from ..._dtypes import FEATURE_DTYPE, NODE_DTYPE, STAT_DTYPE, bin_dtype
from ..._threads import thread_count
from ...tree import LeftSets
from ..base import Backend
from ..formulas import measure_of
from ..lambdarank import FLAG_GRADIENTS, kernel_arguments
from ..node_features import ALL_CANDIDATES
from ..scan import SplitInfo, empty_scan_outputs, empty_scratch
from . import (bestfirst_loop, binning, claims, histograms, lean_gather, level_step,
               partition, predict, ranking, sparse_rows, split_build, split_scan)
from .row_partition import RowPartition
from .binned_cache import BinnedCache


class CPUBackend(Backend):
    """numpy arrays, numba.njit kernels."""

    name = "cpu"
    xp = np
    #: a row's bins in one cache line: the histogram pass reads the rows of
    #: one node at a time, scattered over X
    binned_order = "C"
    #: the root's count channel copied from counts kept per binned X: one
    #: channel less to add over every row (boosting, 750k x 28 rows, 2
    #: threads: the root's histograms 14.8 -> 11.6 ms)
    uses_bin_counts = True
    #: a histogram pass zeroes the cells it builds itself
    overwrites_built_rows = True
    #: a histogram pass and a subtraction touch only the cells rows can be
    #: in (sparse or low-cardinality features: a few of the 256 bins)
    uses_feature_bins = True
    #: the dense histogram pass adds 1 per row to the channels beyond the
    #: statistics' (8 bytes a row less for boosting on lean rows)
    implicit_count_channel = True
    #: the split scan derives the larger siblings itself, each (node,
    #: feature) just before scanning it: no pass of its own over the level's
    #: histograms, and the scan reads cells it has just written (LETOR, 300
    #: features of 21 bins on average: 500 subtraction calls a fit less)
    derives_in_scan = True

    def __init__(self):
        self.binned = BinnedCache(self.free_memory_bytes)

    def keep_binned_lean(self, X_binned):
        self.binned.keep_lean(X_binned)

    def take_columns(self, X_binned, columns):
        subset = super().take_columns(X_binned, columns)
        self.binned.derive(X_binned, columns, subset)
        return subset

    def zeros(self, shape, dtype):
        """A zeroed array mapped straight from the OS (private anonymous
        mmap where the platform has it): pages never written take no memory,
        and all of it goes back to the OS when the array is dropped. (malloc
        serves mid-sized arrays from its heap, whose pages it may keep after
        they are freed.) Huge pages are left to the OS's own policy: asking
        for them (madvise) made LETOR's sparse histogram pass ~10% faster but
        commits 2 MiB per page written and may stall a fault on memory
        compaction, a cost for every user's memory."""
        nbytes = math.prod(shape) * np.dtype(dtype).itemsize
        if nbytes == 0:
            return np.zeros(shape, dtype=dtype)
        private = {"flags": mmap.MAP_PRIVATE} if hasattr(mmap, "MAP_PRIVATE") else {}
        memory = mmap.mmap(-1, nbytes, **private)
        return np.frombuffer(memory, dtype=dtype).reshape(shape)

    def map_to_bins(self, X, thresholds, is_categorical, missing_bin):
        X = np.asarray(X)
        if X.dtype not in (np.float32, np.float64):
            X = X.astype(np.float64)
        out = np.empty(X.shape, dtype=bin_dtype(missing_bin + 1), order=self.binned_order)
        binning.map_to_bins.run(X.size * binning.SEARCH_WORK, X,
                                binning.pad_thresholds(thresholds), is_categorical,
                                missing_bin, out)
        return out

    def bin_counts(self, X_binned, n_bins):
        """Backend.bin_counts: the counts of the sparse rows' decision where
        it is made now (the same integers, sparse rows or not); else a
        channel of ones added without an array of them
        (:attr:`implicit_count_channel`) unless X_binned has sparse rows
        (their pass reads every channel)."""
        counted = []        # the counts made for the sparse rows' decision, if it was made now
        sparse = self._sparse(X_binned, n_bins, counted)
        if counted:
            return counted[0]
        if sparse is not None:
            return super().bin_counts(X_binned, n_bins)
        return self._implicit_bin_counts(X_binned, n_bins)

    def _sparse(self, X_binned, n_bins, counted=None):
        """X_binned's sparse rows or None (BinnedCache.sparse), its features'
        most frequent bins found from :meth:`_implicit_bin_counts` (appended
        to the list ``counted`` where made now)."""
        def bin_counts():
            counts = self._implicit_bin_counts(X_binned, n_bins)
            if counted is not None:
                counted.append(counts)
            return counts
        return self.binned.sparse(X_binned, n_bins, bin_counts)

    def _implicit_bin_counts(self, X_binned, n_bins):
        """int64 (F, n_bins): the root's histogram of the implicit channel of
        ones (no sparse rows: its pass reads no channel from stats)."""
        n_samples = X_binned.shape[0]
        hist = np.zeros((1, X_binned.shape[1], n_bins, 1), dtype=STAT_DTYPE)
        return self.build_histograms(X_binned, np.empty((n_samples, 0), dtype=STAT_DTYPE),
                                     self.row_zeros(n_samples, NODE_DTYPE), 0,
                                     np.zeros(1, dtype=NODE_DTYPE), 1, n_bins, hist)[0, :, :, 0]

    def build_histograms(self, X_binned, stats, positions, level_start,
                         node_to_build, n_build, n_bins, out=None, bin_counts=None,
                         feature_bins=None):
        """Backend.build_histograms; ``bin_counts`` (int64 (n_features, n_bins),
        see :attr:`uses_bin_counts`) when stats' last channel is 1 in every
        row: at the root that channel's histogram is a copy of it, only the
        other channels are added; ``feature_bins``: see
        :attr:`uses_feature_bins` (None: every bin)."""
        no_move = np.empty(0, np.int32)
        return self.move_and_build_histograms(
            X_binned, positions, (0, no_move, LeftSets.of_bitset(np.empty((0, 1), np.uint32)),
                                  no_move), stats,
            level_start, node_to_build, n_build, n_bins, out, bin_counts, feature_bins)

    def move_and_build_histograms(self, X_binned, positions, moves, stats, level_start,
                                  node_to_build, n_build, n_bins, out, bin_counts=None,
                                  feature_bins=None, built=None):
        """One pass over the rows moves them (update_positions' ``moves``)
        and gathers the rows of the nodes to build, grouped by node. The
        channels of ``out`` beyond stats' columns count rows
        (:attr:`implicit_count_channel`). ``out`` (n, 1, cells, C) for
        X_binned of more than one feature: the compact layout of
        histograms.row_layout (``feature_bins`` given). ``built``: (the
        built nodes' rows int64 (b,), each node's index among them int32
        (n_level,), -1 where not built), node_to_build's, where the caller
        has them (the compiled levels: level_step.LevelSteps); None: found
        here."""
        hist = out
        if hist is None:
            hist = np.zeros((n_build, X_binned.shape[1], n_bins, stats.shape[1]),
                            dtype=STAT_DTYPE)
        if moves[1].size and not self.binned.is_lean(X_binned):
            # moved by update_positions, then gathered without moves: faster
            # than the gather pass's own moves (boosting, depth 8, 750,000 x
            # 28 rows, one thread, alternated: 8.38-8.76 s a fit against
            # 8.90-9.29 s)
            self.update_positions(X_binned, positions, *moves)
            moves = _no_moves()
        level = self._level_rows(X_binned, positions, moves, stats, level_start, node_to_build,
                                 hist, bin_counts is not None, n_bins, built)
        rows, node_first, X_rows, stats_rows, built_rows, n_add, sparse = level
        compact = n_bins if hist.shape[1] != X_binned.shape[1] else None
        feature_bins = _feature_bins(feature_bins, hist.shape)
        if sparse is None:
            histograms.histograms_of_rows(X_rows, stats_rows, rows, node_first, built_rows,
                                          hist, n_add, feature_bins, n_bins=compact)
        else:
            sparse_rows.histograms_of_rows(sparse, stats, rows, node_first, built_rows, hist,
                                           n_add, feature_bins, thread_count(), compact)
        if n_add < hist.shape[3]:
            feature_bins, _, layout, _ = histograms.row_layout(feature_bins, hist.shape, compact)
            histograms.copy_channel(hist, built_rows[0], n_add, bin_counts, feature_bins, layout)
        return hist

    def build_histograms_by_features(self, X_binned, stats, positions, level_start,
                                     node_to_build, n_build, n_bins, bounds, order, done,
                                     out=None):
        """Backend.build_histograms_by_features: the level's rows gathered
        once, then one pass a slice over its features (rows with sparse
        bins: the whole pass first), each overwriting its features' rows
        (:attr:`overwrites_built_rows`: ``out`` is not zeroed; fresh pages
        at every level cost more than the pass that fills them)."""
        if out is None:
            hist = np.zeros((n_build, X_binned.shape[1], n_bins, stats.shape[1]),
                            dtype=STAT_DTYPE)
        else:
            hist = out[:n_build]
        rows, node_first, X_rows, stats_rows, built_rows, n_add, sparse = self._level_rows(
            X_binned, positions, _no_moves(), stats, level_start, node_to_build, hist, False,
            n_bins)
        feature_bins = _feature_bins(None, hist.shape)
        if sparse is not None:
            if out is not None:     # the sparse pass adds its values in place
                hist[...] = 0
            sparse_rows.histograms_of_rows(sparse, stats, rows, node_first, built_rows, hist,
                                           n_add, feature_bins, thread_count())
        for s in order:
            if sparse is None:
                histograms.histograms_of_rows(X_rows, stats_rows, rows, node_first, built_rows,
                                              hist, n_add, feature_bins,
                                              (int(bounds[s]), int(bounds[s + 1])))
            done(s, hist)
        return hist

    def _level_rows(self, X_binned, positions, moves, stats, level_start, node_to_build, hist,
                    with_bin_counts, n_bins, built=None):
        """The rows of a histogram pass (moved by ``moves`` first): (rows,
        node_first, X_rows, stats_rows (:meth:`_rows_by_node`), built_rows
        int64, n_add the channels added, the sparse rows or None);
        ``built``: see :meth:`move_and_build_histograms`."""
        built_rows, build_index = built or (
            node_to_build[node_to_build >= 0].astype(np.int64), None)
        n_add = hist.shape[3]
        split_feature = moves[1]
        root = (built_rows.size == 1 and node_to_build[0] >= 0 and level_start == 0
                and split_feature.size == 0 and not positions.any())
        if root and with_bin_counts:
            n_add -= 1          # the root's count channel is a copy of bin_counts
        # (the sparse rows' pass reads every channel from stats)
        sparse = (self._sparse(X_binned, n_bins) if n_add <= stats.shape[1]
                  else None)
        if root:
            # every row, in order (no gather)
            rows = self._identity_rows(X_binned)
            node_first = np.array([0, stats.shape[0]], dtype=np.int64)
            X_rows, stats_rows = X_binned, stats
        else:
            if build_index is None:
                build_index = np.full(node_to_build.shape[0], -1, dtype=np.int32)
                build_index[node_to_build >= 0] = np.arange(built_rows.size, dtype=np.int32)
            node_first, rows, X_rows, stats_rows = self._rows_by_node(
                X_binned, positions, moves, stats, level_start, build_index,
                built_rows.size, sparse is None)
        return rows, node_first, X_rows, stats_rows, built_rows, n_add, sparse

    def _identity_rows(self, X_binned):
        """int32 (n,) 0 .. n-1 for X_binned's rows: a buffer kept per binned
        X, or, for X kept lean (memory first), its "rows" buffer filled
        anew."""
        cache = self.binned
        if not cache.is_lean(X_binned):
            return cache.rows(X_binned, "identity")
        rows = cache.rows(X_binned, "rows")
        lean_gather.identity_rows.run(rows.shape[0], rows)
        return rows

    def _rows_by_node(self, X_binned, positions, moves, stats, level_start, build_index,
                      n_build, may_copy):
        """Move the rows (``moves``: see move_and_build_histograms) and
        gather the rows of the nodes to build (``build_index`` int32
        (n_level,): each level node's index among them, -1 for a node not
        built), grouped by node: for X kept lean by counting then placing
        (:func:`.lean_gather.rows_by_node_lean`, no buffers but "rows"),
        else by :func:`.partition.rows_by_node`, their bins and statistics
        copied in that order where BinnedCache.ordered_rows allows and
        ``may_copy``. Returns (node_first int64 (n_build + 1,), rows int32
        (m,) into X_rows and stats_rows, X_rows, stats_rows)."""
        moves_start, split_feature, split_sets, left_child = moves
        n, cache = positions.shape[0], self.binned
        rows = cache.rows(X_binned, "rows")
        if cache.is_lean(X_binned):
            node_first = lean_gather.rows_by_node_lean(
                2 * n, X_binned, positions, moves_start, split_feature, split_sets,
                left_child, level_start, build_index, n_build, rows)
            return node_first, rows[:node_first[-1]], X_binned, stats
        copy_from, copy_to = cache.ordered_rows(X_binned, stats, may_copy)
        node_first, X_rows, stats_rows = partition.rows_by_node(
            2 * n, cache.columns(X_binned), positions, moves_start, split_feature,
            split_sets, left_child, level_start, build_index, n_build,
            partition.gather_chunk(n, n_build), cache.rows(X_binned, "found"),
            cache.rows(X_binned, "found_node"), rows, copy_from, copy_to)
        m = int(node_first[-1])
        if X_rows.shape[0]:
            return (node_first, cache.rows(X_binned, "identity")[:m],
                    X_rows.view(X_binned.dtype), stats_rows)
        return node_first, rows[:m], X_binned, stats

    def start_row_partition(self, X_binned):
        """A :class:`.row_partition.RowPartition` in buffers kept per binned
        X, every row at the root."""
        cache = self.binned
        order = cache.rows(X_binned, "order")
        if cache.is_lean(X_binned):
            lean_gather.identity_rows.run(order.shape[0], order)
        else:
            order[:] = cache.rows(X_binned, "identity")
        return RowPartition(order, cache.rows(X_binned, "split_left"),
                            cache.rows(X_binned, "split_right"))

    @property
    def compiles_best_first(self):
        """Compiled best-first steps where the histograms take each
        feature's own bins (:attr:`uses_feature_bins`): their pool rows
        hold the compact layout of those bins."""
        return self.uses_feature_bins

    def best_first_steps(self, n_channels, n_features, n_words, limits, budget, max_depth,
                         count_channel, n_outputs, scan):
        if not self.compiles_best_first:
            return None
        return bestfirst_loop.LoopedSteps(n_channels, n_features, n_words, limits, budget,
                                          max_depth, count_channel, n_outputs, scan,
                                          (_scan_scratch, _scan_outputs))

    def level_steps(self, n_channels, n_features, n_words, limits, max_depth, count_channel,
                    n_outputs, scan, reuse=None):
        if isinstance(reuse, level_step.LevelSteps) and reuse.restart(
                n_channels, n_features, n_words, limits, max_depth, count_channel, n_outputs,
                scan):
            return reuse
        return level_step.LevelSteps(n_channels, n_features, n_words, limits, max_depth,
                                     count_channel, n_outputs, scan,
                                     (_scan_scratch, _scan_outputs))

    def split_node_rows(self, partition, X_binned, node, feature, split_sets):
        partition.split(self.binned.columns(X_binned), node, feature, split_sets)

    def partition_positions(self, partition, positions):
        partition.write_positions(positions)

    def build_node_histogram(self, partition, X_binned, stats, node, hist_row, hist,
                             feature_bins=None, n_bins=None):
        """Backend.build_node_histogram: ``hist`` (R, 1, cells, C) for X_binned
        of more than one feature is in the compact layout of histograms of
        ``n_bins`` bins (histograms.row_layout; ``feature_bins`` given);
        rows kept sparse (BinnedCache.sparse) are added by the sparse pass
        (its rows read every channel from stats)."""
        rows = partition.rows(node)
        node_first = np.array([0, rows.shape[0]], dtype=np.int64)
        built_rows = np.array([hist_row], dtype=np.int64)
        compact = n_bins if hist.shape[1] != X_binned.shape[1] else None
        feature_bins = _feature_bins(feature_bins, hist.shape)
        sparse = (self._sparse(X_binned, n_bins) if n_bins is not None
                  and hist.shape[3] <= stats.shape[1] else None)
        if sparse is None:
            histograms.histograms_of_rows(X_binned, stats, rows, node_first, built_rows, hist,
                                          hist.shape[3], feature_bins, n_bins=compact)
        else:
            sparse_rows.histograms_of_rows(sparse, stats, rows, node_first, built_rows, hist,
                                           hist.shape[3], feature_bins, thread_count(), compact)

    def split_and_build(self, partition, X_binned, stats, node, feature, bitset, words,
                        built_node, built_row, hist, feature_bins=None, n_bins=None):
        """Backend.split_and_build, as :meth:`split_builder`'s function."""
        self.split_builder(partition, X_binned, stats, hist, feature_bins, n_bins)(
            node, feature, bitset, words, built_node, built_row)

    def split_builder(self, partition, X_binned, stats, hist, feature_bins=None, n_bins=None):
        """Backend.split_builder: one compiled call (:mod:`.split_build`,
        its arguments but the step's found once) where X_binned has sparse
        rows and the leaf's rows move in one chunk, the built child's
        histogram added by it where one piece holds it; else (and for what
        it left) the two primitives."""
        sparse = (self._sparse(X_binned, n_bins) if n_bins is not None
                  and hist.shape[3] <= stats.shape[1] else None)

        def primitives(node, feature, bitset, words, built_node, built_row):
            Backend.split_and_build(self, partition, X_binned, stats, node, feature, bitset,
                                    words, built_node, built_row, hist, feature_bins, n_bins)
        if sparse is None:
            return primitives
        compact = n_bins if hist.shape[1] != X_binned.shape[1] else None
        bins, _, layout, shape = histograms.row_layout(_feature_bins(feature_bins, hist.shape),
                                                       hist.shape, compact)
        in_one_call = _split_build(hist.shape[3]).prepare(
            self.binned.columns(X_binned), sparse, stats, hist, bins, layout, shape[2])

        def build(node, row):
            self.build_node_histogram(partition, X_binned, stats, node, row, hist,
                                      feature_bins, n_bins)
        return split_build.TreeSplitBuild(partition, in_one_call, primitives, build)

    def subtract_histograms(self, parent_hist, parent_rows, hist, built_rows, derived_rows,
                            feature_bins=None):
        feature_bins = _feature_bins(feature_bins, hist.shape)
        cells = (int(feature_bins.sum()) + feature_bins.shape[0]) * hist.shape[3]
        histograms.subtract_histograms.run(parent_rows.shape[0] * cells, parent_hist,
                                           parent_rows, hist, built_rows, derived_rows,
                                           feature_bins, histograms.FULL_LAYOUT)

    def find_best_splits(self, hist, n_bins_non_missing, is_categorical,
                         feature_allowed, missing_bin, layout, inv, params, split_bin=None,
                         derive=None):
        """Backend.find_best_splits; ``derive``: see :attr:`derives_in_scan`."""
        gain, missing_left, bitset, left, _, words = self.scan_splits(
            hist, n_bins_non_missing, is_categorical, feature_allowed, missing_bin,
            layout, inv, params, split_bin, reuse=True, derive=derive)
        n_nodes = gain.shape[0]
        best = SplitInfo(np.empty(n_nodes, dtype=gain.dtype),
                         np.empty(n_nodes, dtype=FEATURE_DTYPE),
                         np.empty((n_nodes,) + bitset.shape[2:], dtype=bitset.dtype),
                         np.empty(n_nodes, dtype=missing_left.dtype),
                         np.empty((n_nodes,) + left.shape[2:], dtype=left.dtype),
                         np.empty((n_nodes,) + words.shape[2:], dtype=words.dtype))
        # scan.best_split_per_node in one compiled call
        split_scan.best_per_node(gain, missing_left, bitset, left, words, best.feature,
                                 best.gain, best.missing_left, best.bitset, best.left_sums,
                                 best.words)
        return best

    def choose_node_features(self, hist, feature_allowed, order, max_features, draws,
                             n_bins_non_missing, is_categorical, missing_bin, layout):
        n_nodes, n_features, n_bins, _ = hist.shape
        split_bin = np.full((n_nodes, n_features), ALL_CANDIDATES, dtype=np.int32)
        soft, random = order is not None, draws is not None
        if soft:
            split_scan.limit_node_features.run(
                n_nodes * n_bins, hist, order, max_features, n_bins_non_missing, missing_bin,
                layout, feature_allowed)
        if random:
            split_scan.draw_node_bins.run(
                n_nodes * n_bins * n_features, hist, draws, n_bins_non_missing, missing_bin,
                is_categorical, layout, feature_allowed, split_bin)
        return split_bin if random else None

    def scan_splits(self, hist, n_bins_non_missing, is_categorical,
                    feature_allowed, missing_bin, layout, inv, params, split_bin=None,
                    reuse=False, derive=None):
        """Backend.scan_splits; ``reuse``: the outputs may be this thread's
        arrays of the previous scan of the same shapes (a caller that reads
        them before its next scan: :meth:`find_best_splits`); ``derive``
        (derived_rows, built_rows int32 (p,), source int64 (m, F, n_bins,
        C)): first ``hist[derived_rows] -= source[built_rows]`` on each
        feature's cells (n_bins_non_missing's, :attr:`derives_in_scan`)."""
        n_nodes, n_features, n_bins, n_channels = hist.shape
        if split_bin is None:
            # every candidate everywhere: a kept array (the kernel only reads it)
            split_bin, = _kept_rows("all_candidates", n_features, n_nodes, lambda rows: (
                np.full((rows, n_features), ALL_CANDIDATES, dtype=np.int32),))
        # count_nonzero: one C call (``any`` is a ufunc reduction, ~6x slower)
        any_categorical = bool(np.count_nonzero(is_categorical))
        if reuse:
            outputs = _scan_outputs(n_features, n_channels, n_bins, n_nodes)
            outputs[3].fill(0)          # left sums start at zero, as empty_scan_outputs'
        else:
            outputs = empty_scan_outputs(np, n_nodes, n_features, n_channels, n_bins)
        n_slots = split_scan.scan_slots(n_nodes * n_features)
        scratch = _scan_scratch(n_channels, any_categorical, n_bins, n_slots)
        find_splits = split_scan.finder_of(layout, params, any_categorical)
        # the work of the (node, feature) pairs scanned (their bins);
        # add.reduce then dot: half the calls of sum's wrapper and np.dot
        work = int(np.add.reduce(feature_allowed, axis=0, dtype=np.int64)
                   .dot(split_scan.feature_work(n_bins_non_missing, is_categorical)))
        built_of, = _kept_rows("built_of", (), n_nodes,
                               lambda rows: (np.empty(rows, dtype=NODE_DTYPE),))
        built_of.fill(-1)
        source = hist
        if derive is not None:
            derived_rows, built_rows, source = derive
            built_of[derived_rows] = built_rows
        find_splits.run(work, hist,
                        n_bins_non_missing, is_categorical, feature_allowed, split_bin,
                        missing_bin, layout, inv, params, *scratch, *outputs, source,
                        built_of, histograms.FULL_LAYOUT, _every_row(n_nodes),
                        claims.slot_claims(n_slots, n_nodes))
        return outputs

    def update_positions(self, X_binned, positions, level_start, split_feature,
                         split_sets, left_child):
        partition.update_positions.run(positions.shape[0], self.binned.columns(X_binned),
                                       positions, level_start, split_feature, *split_sets,
                                       left_child)

    def predict_leaves(self, X_binned, node_feature, node_sets, node_left, tree_roots):
        leaves = np.empty((X_binned.shape[0], tree_roots.shape[0]), dtype=NODE_DTYPE)
        predict.walk(X_binned, node_feature, node_sets, node_left, tree_roots, leaves,
                     np.empty((0, 0)), tree_roots, np.empty((0, 0)))
        return leaves

    def zero_rows(self, array, rows):
        histograms.zero_rows.run(rows.shape[0] * math.prod(array.shape[1:]), array, rows)

    def add_node_values(self, node_values, positions, out, first_column):
        predict.add_node_values.run(node_values.shape[1] * positions.shape[0], node_values,
                                    positions, out, first_column)

    def query_terms(self, scores, queries, settings, g, h, ndcg):
        per_row = settings.truncation if settings.flags & FLAG_GRADIENTS else 4
        ranking.query_terms.run(scores.shape[0] * per_row,
                                *kernel_arguments(scores, queries, settings, g, h, ndcg),
                                np.zeros(1, dtype=np.int64))

    def add_leaf_values(self, X_binned, node_feature, node_sets, node_left, tree_roots,
                        node_values, tree_columns, out):
        predict.walk(X_binned, node_feature, node_sets, node_left, tree_roots,
                     np.empty((0, 0), dtype=NODE_DTYPE), node_values, tree_columns, out)

    def node_summaries(self, totals, layout, inv, params, n_outputs, n_classes):
        values, impurity = self.empty_summaries(totals.shape[0], n_outputs, n_classes)
        split_scan.summaries_kernel(measure_of(layout))(totals, layout, inv, params, values, impurity)
        return values, impurity


def _scan_scratch(n_channels, any_categorical, n_bins, n_slots):
    """This thread's scratch of the split scan in ``n_slots`` slots (kept)."""
    return _kept_rows("scratch", (n_channels, any_categorical, n_bins), n_slots,
                      lambda rows: empty_scratch(np, rows, n_channels, any_categorical,
                                                 n_bins, vector=True))


def _scan_outputs(n_features, n_channels, n_bins, n_rows):
    """This thread's scan outputs of ``n_rows`` histogram rows (kept)."""
    return _kept_rows("outputs", (n_features, n_channels, n_bins), n_rows,
                      lambda rows: empty_scan_outputs(np, rows, n_features, n_channels, n_bins))


def _split_build(n_channels):
    """This thread's split_build.SplitBuild for histograms of ``n_channels``
    channels (kept)."""
    kept = _local.__dict__.setdefault("split_build", {})
    if n_channels not in kept:
        kept[n_channels] = split_build.SplitBuild(n_channels)
    return kept[n_channels]


def _every_row(n_rows):
    """int64 0 .. n_rows-1: the scan's rows where it scans every one (kept)."""
    rows, = _kept_rows("every_row", (), n_rows,
                       lambda rows: (np.arange(rows, dtype=np.int64),))
    return rows


def _feature_bins(feature_bins, hist_shape):
    """int32 (F,): ``feature_bins`` (the bins a histogram pass or a
    subtraction touches below the missing bin), or every bin of histograms
    shaped ``hist_shape`` (n, F, n_bins, C) for None."""
    if feature_bins is None:
        return np.full(hist_shape[1], hist_shape[2], dtype=np.int32)
    return np.ascontiguousarray(feature_bins, dtype=np.int32)


#: arrays kept per thread between scans (:func:`_kept_rows`)
_local = threading.local()


def _kept_rows(kind, key, n_rows, make):
    """This thread's arrays of ``kind`` (a tuple of arrays of ``make(rows)``,
    ``rows`` first-axis entries each), their first ``n_rows`` rows: made anew
    only when the last ones of that kind had another ``key`` (the shapes
    after the first axis) or fewer rows, so that a scan's scratch and
    outputs are not allocated, and their pages not faulted in, at every
    level or best-first step of a fit (LETOR's levels: ~1 MiB each; a
    best-first step's scan reads a number of pool rows that changes at
    every step)."""
    kept = _local.__dict__.setdefault("kept", {})
    if kind not in kept or kept[kind][0] != key or kept[kind][1] < n_rows:
        rows = max(n_rows, 2 * kept[kind][1] if kind in kept and kept[kind][0] == key else 0)
        kept[kind] = (key, rows, make(rows))
    return tuple(array[:n_rows] for array in kept[kind][2])


def _no_moves():
    """update_positions' moves that move no row (level_start, split_feature,
    split_sets, left_child)."""
    none = np.empty(0, np.int32)
    return 0, none, LeftSets.of_bitset(np.empty((0, 1), np.uint32)), none
