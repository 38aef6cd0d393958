"""The CPU best-first step: one compiled call per split taken by a tree
grown best first (:mod:`gputree.growth.bestfirst`) on the CPU's row
partition, with the Newton criterion and nothing drawn or constrained.

The call takes, of the nodes just scanned, each one's best split (the
largest gain over its features, the first on ties, as
``scan.best_split_per_node``) and keeps those that may split in the
frontier (a finite gain above ``min_split_gain``; their priority the gain);
then it takes the next split: the waiting leaf of the highest priority
(equal: the lowest node id), whose two children it appends to the node
arrays (totals, depth, parent), decides which children may split (depth,
sizes: :func:`gputree.growth.policy.splittable`'s rules for the Newton
criterion), which child's histogram is built (the one with fewer rows) and
whether the other's is derived in the parent's pool row, and hands out and
releases the pool's rows (its ``in_use`` flags) as the general step
does. Python then runs only the row split, the histogram pass and the scan
between two calls. The trees are the general step's, node for node; once
grown, a tree's arrays (:func:`gputree.growth.policy.finish_tree`'s) are
assembled from the node arrays in one compiled pass (:func:`_tree_nodes`).
"""
import numpy as np

from ..._dtypes import (BITMAP_BINS, BITSET_DTYPE, BITSET_RANGE_WORD, BITSET_WORDS,
                        FLOAT_DTYPE, NODE_DTYPE, STAT_DTYPE)
from ..._threads import kernel_jit
from ...tree import TreeArrays
from ..kernel_cache import cache_numba_cpu_kernels
from ..node_features import ALL_CANDIDATES
from ..splitset import left_sets
from . import claims, histograms, split_scan
from .jit import ir_inline

cache_numba_cpu_kernels(__file__)

# the step's scalars (int64 ``state``) ...
_N_NODES, _N_LEAVES, _BUDGET, _MAX_DEPTH, _N_SCANNED, _RELEASE, _TOUCHED = range(7)
_COUNT_CHANNEL, _N_OUTPUTS = 7, 8
# ... its float64 ``limits`` ...
_MIN_SPLIT, _MIN_LEAF2, _MIN_WEIGHT2, _MIN_GAIN = range(4)
# ... and what it tells its caller (int64 ``out``)
NODE, N_SCAN, BUILT_NODE, BUILT_ROW, SCAN_ROWS = range(5)


@kernel_jit()
def _step(gain, missing_left, bitset, left, words, state, limits, inv, scan_rows, scan_nodes,
          totals, depth, parent, taken, waiting, priority, hist_row, best_feature, best_bitset,
          best_words, best_gain, best_missing_left, best_left, in_use, allowed, built_of, out):
    """One best-first step. IN: the last scan's outputs (gain float64 (m,
    F), missing_left uint8 (m, F), bitset uint32 (m, F, BITSET_WORDS), left
    int64 (m, F, C), words uint32 (m, F, W')) for the ``state[_N_SCANNED]``
    nodes ``scan_nodes`` in pool rows ``scan_rows`` (int64 (2,) IN/OUT),
    ``limits`` float64 (4,), ``inv`` float64 (C,). IN/OUT: ``state`` int64
    (9,); the node arrays (capacity N): totals int64 (N, C), depth int32,
    parent int32, taken / waiting uint8, priority float64, hist_row int64
    (N,), each scanned node's best split (best_feature int32, best_bitset
    uint32 (N, BITSET_WORDS), best_words uint32 (N, W), best_gain float64,
    best_missing_left uint8, best_left int64 (N, C)); the pool's in_use
    bool (R,) (a free row there: the caller's), allowed uint8 (R, F) (the
    rows to scan next; zeros elsewhere), built_of int32 (R,) (the row a
    row is derived from, or -1) and the scan's ``left`` (zeroed in the rows
    to scan). OUT: ``out`` int64 (5,): the node split (-1: the tree is
    grown), the nodes to scan next (0: none), the node built, its row, the
    rows the scan reads."""
    for i in range(state[_N_SCANNED]):
        row, node = scan_rows[i], scan_nodes[i]
        g = split_scan.take_best(gain, missing_left, bitset, left, words, row, node,
                                 best_feature, best_bitset, best_words, best_gain,
                                 best_missing_left, best_left)
        if np.isfinite(g) and g > limits[_MIN_GAIN]:
            waiting[node], priority[node], hist_row[node] = 1, g, row
        else:
            in_use[row] = False
        allowed[row, :] = 0
        built_of[row] = -1
    state[_N_SCANNED] = 0
    if state[_RELEASE] >= 0:
        in_use[state[_RELEASE]] = False
        state[_RELEASE] = -1
    out[NODE], out[N_SCAN] = -1, 0
    n_nodes = state[_N_NODES]
    if state[_N_LEAVES] >= state[_BUDGET]:
        return
    node = -1
    for k in range(n_nodes):
        if waiting[k] and (node < 0 or priority[k] > priority[node]):
            node = k
    if node < 0:
        return
    waiting[node], taken[node] = 0, 1
    state[_N_LEAVES] += 1
    out[NODE] = node
    child = n_nodes
    state[_N_NODES] = n_nodes + 2
    for k in range(totals.shape[1]):
        totals[child, k] = best_left[node, k]
        totals[child + 1, k] = totals[node, k] - best_left[node, k]
    d = depth[node] + 1
    depth[child], depth[child + 1] = d, d
    parent[child], parent[child + 1] = node, node
    parent_row = hist_row[node]
    hist_row[node] = -1
    count0, may0 = may_split(totals, child, d, state, limits, inv)
    count1, may1 = may_split(totals, child + 1, d, state, limits, inv)
    if not (may0 or may1):
        in_use[parent_row] = False
        return
    smaller = 0 if count0 <= count1 else 1
    derive = may1 if smaller == 0 else may0
    if not derive:
        in_use[parent_row] = False
    row = 0
    while in_use[row]:
        row += 1
    in_use[row] = True
    state[_TOUCHED] = max(state[_TOUCHED], row + 1)
    out[BUILT_NODE], out[BUILT_ROW] = child + smaller, row
    hist_row[child + smaller] = row
    if derive:
        hist_row[child + 1 - smaller] = parent_row
        built_of[parent_row] = row
    if not (may1 if smaller else may0):
        state[_RELEASE] = row
    n_scan, last = 0, 0
    for c in range(2):
        if may1 if c else may0:
            r = hist_row[child + c]
            scan_rows[n_scan], scan_nodes[n_scan] = r, child + c
            n_scan += 1
            last = max(last, r + 1)
            allowed[r, :] = 1
            left[r, :, :] = 0
    state[_N_SCANNED] = n_scan
    out[N_SCAN], out[SCAN_ROWS] = n_scan, last


@kernel_jit()
def _tree_nodes(taken, best_feature, best_bitset, best_gain, best_missing_left, totals, parent,
                inv, count_channel, n_outputs, feature_categorical, thresholds, missing_bin,
                feature, bitset, left_child, threshold, missing_left, is_categorical, n_samples,
                weight, gain):
    """The per-node arrays of :func:`gputree.growth.policy.finish_tree` for
    the n grown nodes (``feature`` int32 (n,) OUT; the node arrays IN as
    the steps keep them; ``inv`` float64 (C,), ``count_channel`` and
    ``n_outputs`` the layout's; ``feature_categorical`` uint8 (F,),
    ``thresholds`` float64 (F, T) and ``missing_bin``: the binned data's),
    the same values: OUT feature int32, bitset uint32 (n, BITSET_WORDS),
    left_child int32, missing_left uint8, gain float64 of the splits taken
    (-1 / zeros elsewhere); threshold float64 (policy.real_thresholds:
    ``x <= threshold`` goes left at a numerical split, NaN elsewhere,
    inf past the thresholds), is_categorical uint8, n_samples int64 (the
    count rounded) and weight float64 (policy.counts_and_weights, Newton's)
    of every node."""
    n = feature.shape[0]
    map_bins = min(missing_bin, BITMAP_BINS)
    for i in range(n):
        left_child[i] = -1
    for i in range(1, n, 2):        # children come in pairs, left first
        left_child[parent[i]] = i
    for i in range(n):
        w = totals[i, 1] * inv[1]
        for o in range(1, n_outputs):
            w = min(w, totals[i, 2 * o + 1] * inv[2 * o + 1])
        weight[i] = w
        n_samples[i] = np.int64(np.rint(np.float64(totals[i, count_channel])
                                        if count_channel >= 0 else w))
        threshold[i] = np.nan
        is_categorical[i] = 0
        if not taken[i]:
            feature[i], missing_left[i], gain[i] = -1, 0, 0.0
            bitset[i, :] = 0
            continue
        f = best_feature[i]
        feature[i], missing_left[i], gain[i] = f, best_missing_left[i], best_gain[i]
        for k in range(bitset.shape[1]):
            bitset[i, k] = best_bitset[i, k]
        is_categorical[i] = feature_categorical[f]
        if is_categorical[i]:
            continue
        last = np.int64(bitset[i, BITSET_RANGE_WORD])
        if last == 0:
            last = -1
            for b in range(map_bins):
                last += (np.int64(bitset[i, b >> 5]) >> (b & 31)) & 1
        threshold[i] = thresholds[f, last] if 0 <= last < thresholds.shape[1] else np.inf


@ir_inline
def may_split(totals, node, d, state, limits, inv):
    """(count, whether ``node`` may split) by the Newton criterion's rules
    of :func:`gputree.growth.policy.splittable` (its count and weight as
    :func:`gputree.growth.policy.counts_and_weights`)."""
    weight = totals[node, 1] * inv[1]
    for o in range(1, state[_N_OUTPUTS]):
        weight = min(weight, totals[node, 2 * o + 1] * inv[2 * o + 1])
    c = state[_COUNT_CHANNEL]
    count = np.float64(totals[node, c]) if c >= 0 else weight
    may = (d < state[_MAX_DEPTH] and count >= limits[_MIN_SPLIT]
           and count >= limits[_MIN_LEAF2] and weight >= limits[_MIN_WEIGHT2])
    return count, may


#: a tree's pool rows take the compact layout (histograms.row_layout) when
#: it holds at most this share of the full layout's cells (LETOR's 300
#: features: 6,601 of 76,800 cells; the scan, the derivation and the
#: histogram pass then touch 12x less memory)
COMPACT_SHARE = 0.5

#: the leaves of a tree without a budget; the scan slots asked for a tree's
#: scratch (np.iinfo's, made once: two of its objects a tree cost more)
_NO_BUDGET, _MOST_SLOTS = np.iinfo(np.int64).max, np.iinfo(np.int32).max


class BestFirstSteps:
    """The node arrays of one tree grown best first, its compiled step
    (:func:`_step`) and scan; ``n_channels`` C, ``n_features`` F, ``n_words``
    W (a split's words beyond its bitset), ``limits`` (min_samples_split,
    2 min_samples_leaf, 2 min_weight_leaf, min_split_gain) float64,
    ``budget`` the most leaves (0: any), ``max_depth``, the layout's count
    channel and outputs, ``scan`` the scan's constants (n_bins_non_missing,
    is_categorical, missing_bin, layout, inv, params: the backend's
    find_best_splits' arguments), ``kept`` (scratch, outputs): the
    backend's kept scan arrays (``scratch(C, any_categorical, n_bins,
    n_slots)``, ``outputs(F, C, n_bins, n_rows)``), ``capacity`` the
    nodes the arrays hold from the start without a budget (grown as
    needed)."""

    def __init__(self, n_channels, n_features, n_words, limits, budget, max_depth,
                 count_channel, n_outputs, scan, kept, capacity=8):
        self.n_features, self.n_channels = n_features, n_channels
        self.state = np.array([1, 1, budget or _NO_BUDGET, max_depth, 0, -1, 0,
                               count_channel, n_outputs], dtype=np.int64)
        self.limits = np.asarray(limits, dtype=FLOAT_DTYPE)
        self.scan_rows = np.zeros(2, dtype=np.int64)
        self.scan_nodes = np.zeros(2, dtype=np.int64)
        self.out = np.zeros(5, dtype=np.int64)
        self._nodes(capacity if not budget else 2 * budget + 1, n_channels, n_words)
        n_bins_non_missing, is_categorical, missing_bin, _, _, _ = scan
        self.n_bins = missing_bin + 1
        self.any_categorical = bool(np.count_nonzero(is_categorical))
        self._scan_constants(scan)
        scratch, self._outputs = kept
        full = scratch(n_channels, self.any_categorical, self.n_bins,
                       split_scan.scan_slots(_MOST_SLOTS))
        self._scratch = lambda n_slots: tuple(a[:n_slots] for a in full)
        self.n_slots = full[0].shape[0]             # the scan's slots
        self.cells = histograms.FULL_LAYOUT      # the pool's layout (histograms.row_layout)
        self.claims = claims.slot_claims(0, 0)      # the scan's slots claimed
        self._scan_arguments = None                 # (:meth:`_scan_arrays`)
        self._rows(0)

    def histogram_rows(self, row_shape):
        """The pool's row shape for this tree, whose histograms are shaped
        ``row_shape`` (F, n_bins, C) in the full layout: the compact
        layout's (1, cells, C) (histograms.row_layout, of the scan's
        n_bins_non_missing) where it has at most :data:`COMPACT_SHARE` of
        the cells and F > 1, else ``row_shape``; the scan reads the rows
        in that layout."""
        n_features, n_bins, n_channels = row_shape
        self._scan_arguments = None
        _, cells, _, _ = histograms.row_layout(self.constants[0], (0,) + row_shape)
        if n_features > 1 and cells[-1] <= COMPACT_SHARE * n_features * n_bins:
            self.cells = cells
            return (1, int(cells[-1]), n_channels)
        self.cells = histograms.FULL_LAYOUT
        return row_shape

    def _scan_constants(self, scan):
        """The scan's constants of a tree (``scan``: as the constructor's)."""
        n_bins_non_missing, is_categorical, missing_bin, layout, inv, params = scan
        self._scan_arguments = None
        self.inv = np.ascontiguousarray(inv, dtype=FLOAT_DTYPE)
        self.constants = (n_bins_non_missing, is_categorical, missing_bin, layout, inv, params)
        self.find_splits = split_scan.finder_of(layout, params, self.any_categorical)
        # a scanned row's work: every feature's bins
        self.row_work = int(split_scan.feature_work(n_bins_non_missing, is_categorical).sum())

    def _rows(self, n_rows):
        """The arrays of the pool's rows for ``n_rows`` rows (the first kept)."""
        self._scan_arguments = None
        old = getattr(self, "allowed", np.zeros((0, self.n_features), dtype=np.uint8))
        self.allowed = np.zeros((n_rows, self.n_features), dtype=np.uint8)
        self.allowed[:old.shape[0]] = old
        self.built_of = np.full(n_rows, -1, dtype=NODE_DTYPE)
        self.split_bin = np.full((n_rows, self.n_features), ALL_CANDIDATES, dtype=np.int32)
        old = getattr(self, "outputs", ())
        self.outputs = self._outputs(self.n_features, self.n_channels, self.n_bins,
                                     max(n_rows, 1))
        for new, last in zip(self.outputs, old):    # the last scan's, not absorbed yet
            new[:last.shape[0]] = last

    def _nodes(self, capacity, n_channels, n_words):
        """The node arrays with room for ``capacity`` nodes (the first
        ones kept)."""
        shapes = {"totals": ((n_channels,), STAT_DTYPE), "depth": ((), np.int32),
                  "parent": ((), NODE_DTYPE), "taken": ((), np.uint8),
                  "waiting": ((), np.uint8), "priority": ((), FLOAT_DTYPE),
                  "hist_row": ((), np.int64), "best_feature": ((), np.int32),
                  "best_bitset": ((BITSET_WORDS,), BITSET_DTYPE),
                  "best_words": ((n_words,), BITSET_DTYPE), "best_gain": ((), FLOAT_DTYPE),
                  "best_missing_left": ((), np.uint8), "best_left": ((n_channels,), STAT_DTYPE)}
        for name, (shape, dtype) in shapes.items():
            array = np.zeros((capacity,) + shape, dtype=dtype)
            old = getattr(self, name, None)
            if old is not None:
                array[:old.shape[0]] = old
            setattr(self, name, array)

    def start(self, root_totals, split, priority, row):
        """The root (int64 totals (C,)) waiting to split as ``split`` (a dict
        of its best split: feature, bitset, words, gain, missing_left,
        left_sums) with ``priority`` in pool ``row``; or, ``split`` None, a
        root that does not split."""
        self.totals[0], self.parent[0] = root_totals, -1
        if split is None:
            return
        self.best_feature[0], self.best_bitset[0] = split["feature"], split["bitset"]
        self.best_words[0], self.best_gain[0] = split["words"], split["gain"]
        self.best_missing_left[0], self.best_left[0] = split["missing_left"], split["left_sums"]
        self.waiting[0], self.priority[0], self.hist_row[0] = 1, priority, row

    def start_root(self, root_totals, row, pool):
        """The root (int64 totals (C,)) whose histogram is in pool ``row``,
        scanned next (:meth:`scan`; the first step takes its best split),
        or, ``row`` -1, a root that may not split; ``pool`` (a
        HistogramPool) the tree's."""
        self.start(root_totals, None, 0.0, -1)
        if self.allowed.shape[0] != pool.in_use.shape[0]:
            self._rows(pool.in_use.shape[0])
        if row < 0:
            return
        self.state[_N_SCANNED] = 1
        self.scan_rows[0], self.scan_nodes[0] = row, 0
        self.allowed[row, :] = 1
        self.built_of[row] = -1
        self.outputs[3][row] = 0

    def step(self, pool):
        """The next split (:func:`_step`) after the last :meth:`scan`, with
        the rows of ``pool`` (a HistogramPool, grown here where it might
        lack a free row): ``out`` (see :func:`_step`)."""
        state = self.state
        if state[_N_NODES] + 2 > self.totals.shape[0]:
            self._nodes(2 * self.totals.shape[0], self.totals.shape[1],
                        self.best_words.shape[1])
        if pool.in_use.shape[0] < state[_N_LEAVES] + 1:
            pool.reserve(int(state[_N_LEAVES]) + 1, int(state[_TOUCHED]))
        if self.allowed.shape[0] != pool.in_use.shape[0]:
            self._rows(pool.in_use.shape[0])
        gain, missing_left, bitset, left, _, words = self.outputs
        _step(gain, missing_left, bitset, left, words, state, self.limits, self.inv,
              self.scan_rows, self.scan_nodes, self.totals, self.depth, self.parent,
              self.taken, self.waiting, self.priority, self.hist_row, self.best_feature,
              self.best_bitset, self.best_words, self.best_gain, self.best_missing_left,
              self.best_left, pool.in_use, self.allowed, self.built_of, self.out)
        return self.out

    def advance(self, pool, split_and_build):
        """The next step (:meth:`step`) and what of it is left to the caller:
        (``out``, whether its row split is done, only its histogram build
        left): here nothing is done (a subclass may run steps in compiled
        calls with ``split_and_build``, a backend's
        :meth:`~gputree.backends.base.Backend.split_builder` function)."""
        return self.step(pool), False

    def scan(self, hist, n_rows, n_scan):
        """The split scan of the ``n_scan`` nodes the last step chose (pool
        rows ``scan_rows[:n_scan]``), in the first ``n_rows`` rows of the
        pool's ``hist`` (the backend's find_best_splits' scan, with this
        tree's arrays, of those rows alone)."""
        if self._scan_arguments is None or self._scan_arguments[0] is not hist:
            self._scan_arguments = self._scan_arrays(hist)
        claims.start_job(self.claims, self.n_slots, n_scan)
        self.find_splits.run(n_scan * self.row_work, *self._scan_arguments, self.scan_rows,
                             self.claims)

    def _scan_arrays(self, hist):
        """The scan's arguments but the rows and claims, on the pool's
        ``hist``: whole arrays of every pool row (the scan reads and writes
        the rows it scans and their built rows alone; its slots, all the
        scratch's, only group tasks), made again only when the pool's or
        this tree's arrays change (:meth:`_rows`, :meth:`_scan_constants`,
        :meth:`histogram_rows`): a best-first step's scan had a dozen
        slices made per call."""
        n_bins_non_missing, is_categorical, missing_bin, layout, inv, params = self.constants
        return (hist, n_bins_non_missing, is_categorical, self.allowed, self.split_bin,
                missing_bin, layout, inv, params, *self._scratch(_MOST_SLOTS), *self.outputs,
                hist, self.built_of, self.cells)

    @property
    def touched(self):
        """One past the highest pool row the steps handed out."""
        return int(self.state[_TOUCHED])

    @property
    def grown_totals(self):
        """int64 (n, C): the grown tree's nodes' totals (a view)."""
        return self.totals[:int(self.state[_N_NODES])]

    def tree(self, values, impurity, feature_categorical, thresholds, missing_bin):
        """The grown tree as :func:`gputree.growth.policy.finish_tree`
        assembles it, field for field, its per-node arrays from one compiled
        pass (:func:`_tree_nodes`): ``values`` float64 (n, K, 1) and
        ``impurity`` float64 (n,) the node summaries of
        :attr:`grown_totals`; the binned data's ``feature_categorical``
        uint8 (F,), ``thresholds`` float64 (F, T) and ``missing_bin``."""
        n = int(self.state[_N_NODES])
        feature, left_child = np.empty(n, np.int32), np.empty(n, NODE_DTYPE)
        bitset = np.empty((n, BITSET_WORDS), BITSET_DTYPE)
        threshold, gain, weight = np.empty(n), np.empty(n), np.empty(n)
        missing_left, is_categorical = np.empty(n, np.uint8), np.empty(n, np.uint8)
        n_samples = np.empty(n, np.int64)
        taken = self.taken[:n]
        _tree_nodes(taken, self.best_feature, self.best_bitset, self.best_gain,
                    self.best_missing_left, self.totals, self.parent, self.inv,
                    self.state[_COUNT_CHANNEL], self.state[_N_OUTPUTS], feature_categorical,
                    thresholds, missing_bin, feature, bitset, left_child, threshold,
                    missing_left, is_categorical, n_samples, weight, gain)
        words = self.best_words[:n]
        if words.shape[1]:
            words = np.where(taken[:, None] != 0, words, 0).astype(BITSET_DTYPE)
        sets = left_sets(bitset, words)
        return TreeArrays(
            feature=feature, bitset=bitset, left_child=left_child, threshold=threshold,
            missing_left=missing_left, is_categorical=is_categorical, value=values,
            impurity=impurity, n_node_samples=n_samples, weighted_n_node_samples=weight,
            gain=gain, depth=self.depth[:n].copy(), parent=self.parent[:n].copy(),
            cat_words=sets.words, cat_start=np.where(sets.n_words > 0, sets.start, 0),
            cat_n_words=sets.n_words)
