"""Regression trees with ``criterion="absolute_error"``: the exact split
search by weighted medians, and the growth that uses it.

The impurity of a node is scikit-learn's: the weighted mean absolute
deviation of its targets from their weighted median, averaged over the
outputs; a split's gain is the parent's impurity less its children's
weighted impurities, and a leaf's value is the weighted median (where the
cumulative weight reaches exactly half, the mean of that target and the
next, as scikit-learn's ``MAE`` criterion does).

Histograms cannot give a candidate child's median, so this is the exact
alternative the issue allows: for every (node, feature), the node's rows in
bin order are added one at a time to a Fenwick tree over the ranks of their
targets (weights in fixed point, so the median's comparisons are exact), and
after each addition the absolute deviation of the rows added so far from
their weighted median is read off (``wy_right - m * w_right + m * w_left -
wy_left``). Four such passes (rows by increasing and decreasing bin, with and
without the missing rows added first) give both children's deviation at
every bin threshold, with the missing rows on either side. Cost:
O(n log n) per level and feature, on the host (numba, one thread per
(node, feature) pair; each pair's sums in one fixed order, so the result
does not depend on the thread count).

Every backend runs this one host code path (the binned rows are copied to
the host once per tree), so the trees are the same on every device. The
growth is level-wise, like :mod:`gputree.growth.levelwise`, or best first with
``max_leaf_nodes``, like :mod:`gputree.growth.bestfirst` (scikit-learn's
priority, node ids in creation order, each step scanning its two new nodes),
and reuses their node table, stopping rules (``splittable``,
``accept_splits`` / ``split_priority``: min_samples_*,
min_weight_fraction_leaf, min_impurity_decrease) and tree assembly; the node values and impurities are then replaced by the medians
and the absolute-error impurity, so cost-complexity pruning prunes with it.
Categorical features are refused (no exact ordering of categories by
median is implemented).
"""
import numba
import numpy as np

from .._compile_cache import cached_kernel
from .._dtypes import BITSET_DTYPE, BITSET_WORDS, FLOAT_DTYPE, NODE_DTYPE
from ..backends import splitset
from ..backends.splitset import make_splitset
from ..quantiles import grouped_weighted_median
from ..backends.node_features import make_node_features
from .policy import (NodeTable, Waiting, accept_splits, feature_order, finish_tree,
                     no_splits, split_priority, splittable, threshold_draws,
                     uses_soft_limit)

_add_bin, _add_bins_upto = make_splitset(numba.njit(inline="always"))[1:3]
_random_bin = make_node_features(numba.njit(inline="always"))[2]
#: candidates whose children's deviation is within TIE times the node's own
#: deviation count as ties (the first, by feature then threshold, wins): the
#: pinball sums round differently for partitions of equal deviation, which
#: absolute error has often (scikit-learn keeps the first of exact ties)
TIE = 1e-12


@cached_kernel()
def _prefix_abs_errors(seq, rank, sorted_y, wfix, inv_w, tree_w, tree_wy, weight_at, out):
    """out float64 (len(seq),) INOUT: += the absolute deviation of the rows
    seq[:i + 1] from their weighted median, for every i. seq int64 local row
    indices IN; rank int64 (m,) each row's rank by target, sorted_y float64
    (m,) targets by rank, wfix int64 (m,) fixed-point weights (times inv_w:
    the real weight) IN; tree_w int64, tree_wy float64 (m + 1,), weight_at
    int64 (m,) scratch."""
    m = rank.shape[0]
    tree_w[:] = 0
    tree_wy[:] = 0.0
    weight_at[:] = 0
    top = 1
    while top * 2 <= m:
        top *= 2
    total_w, total_wy = 0, 0.0
    for i in range(seq.shape[0]):
        row = seq[i]
        r = rank[row]
        wy = (wfix[row] * inv_w) * sorted_y[r]
        weight_at[r] = wfix[row]
        j = r + 1
        while j <= m:
            tree_w[j] += wfix[row]
            tree_wy[j] += wy
            j += j & -j
        total_w += wfix[row]
        total_wy += wy
        if total_w == 0:
            continue
        # largest prefix of ranks whose weight is below half the total
        pos, w_left, wy_left, step = 0, 0, 0.0, top
        while step > 0:
            nxt = pos + step
            if nxt <= m and 2 * (w_left + tree_w[nxt]) < total_w:
                pos = nxt
                w_left += tree_w[nxt]
                wy_left += tree_wy[nxt]
            step //= 2
        median = sorted_y[pos]
        if 2 * (w_left + weight_at[pos]) == total_w:
            # exactly half up to rank pos: average with the next weighted rank
            # (rows up to rank pos now count as below the median)
            reached = w_left + weight_at[pos]
            pos, w_left, wy_left, step = 0, 0, 0.0, top
            while step > 0:
                nxt = pos + step
                if nxt <= m and w_left + tree_w[nxt] <= reached:
                    pos = nxt
                    w_left += tree_w[nxt]
                    wy_left += tree_wy[nxt]
                step //= 2
            median = (median + sorted_y[pos]) / 2.0
        wl = w_left * inv_w
        wr = (total_w - w_left) * inv_w
        out[i] += ((total_wy - wy_left) - median * wr) + (median * wl - wy_left)


@cached_kernel()
def _feature_best_split(bins, nm, rank, sorted_y, wfix, inv_w, missing_bin, min_leaf,
                        min_wfix, one_bin):
    """Best threshold of one (node, feature): (children's absolute deviation
    summed over outputs, +inf if no split is valid; last left bin;
    missing_left). bins (m,) the node rows' bins IN; rank int64 (m, O),
    sorted_y float64 (m, O) IN; min_wfix: min_weight_leaf in fixed point;
    one_bin >= 0: the threshold after that bin alone (a random threshold,
    last left bin ``one_bin``), -1: every threshold."""
    m, n_out = rank.shape
    # rows by bin (a stable sort: ties in row order); the missing bin is the last
    n_miss = m - nm
    ascending = np.empty(nm, dtype=np.int64)
    missing = np.empty(n_miss, dtype=np.int64)
    order = np.argsort(bins, kind="mergesort")
    ascending[:] = order[:nm]
    missing[:] = order[nm:]
    descending = ascending[::-1].copy()
    with_missing_up = np.concatenate((missing, ascending))
    with_missing_down = np.concatenate((missing, descending))
    left0 = np.zeros(nm)
    left1 = np.zeros(m)
    right0 = np.zeros(nm)
    right1 = np.zeros(m)
    tree_w = np.empty(m + 1, dtype=np.int64)
    tree_wy = np.empty(m + 1)
    weight_at = np.empty(m, dtype=np.int64)
    for o in range(n_out):
        args = (rank[:, o], sorted_y[:, o], wfix, inv_w, tree_w, tree_wy, weight_at)
        _prefix_abs_errors(ascending, *args, left0)
        _prefix_abs_errors(with_missing_up, *args, left1)
        _prefix_abs_errors(descending, *args, right0)
        _prefix_abs_errors(with_missing_down, *args, right1)
    miss_w = 0
    for t in range(n_miss):
        miss_w += wfix[missing[t]]
    total_w = miss_w
    for t in range(nm):
        total_w += wfix[ascending[t]]
    best, best_bin, best_ml, best_left = np.inf, -1, 0, 0
    slack = TIE * left1[m - 1]
    cum_w = 0
    for i in range(nm):
        cum_w += wfix[ascending[i]]
        b = bins[ascending[i]]
        if i + 1 < nm and bins[ascending[i + 1]] == b:
            continue
        if one_bin >= 0:
            if b > one_bin or (i + 1 < nm and bins[ascending[i + 1]] <= one_bin):
                continue
            b = one_bin
        q = nm - 1 - i
        # missing rows right
        if (i + 1 >= min_leaf and q + n_miss >= min_leaf and cum_w >= min_wfix
                and total_w - cum_w >= min_wfix):
            value = left0[i] + right1[n_miss + q - 1]
            if value < best - slack:
                best, best_bin, best_ml, best_left = value, b, 0, i + 1
        # missing rows left
        if (n_miss > 0 and q > 0 and i + 1 + n_miss >= min_leaf and q >= min_leaf
                and cum_w + miss_w >= min_wfix and total_w - cum_w - miss_w >= min_wfix):
            value = left1[n_miss + i] + right0[q - 1]
            if value < best - slack:
                best, best_bin, best_ml = value, b, 1
    if n_miss == 0 and best_left > nm - best_left:
        best_ml = 1     # no missing values here: they go to the child with more rows
    return best, best_bin, best_ml


@cached_kernel()
def _node_ranks(y, rows, starts, rank, sorted_y):
    """rank int64, sorted_y float64 (n_level_rows, O) OUT: within each node's
    segment of ``rows`` (int64, grouped by node; starts int64 (k + 1,)),
    every row's rank by target (ties by row order) and the sorted targets."""
    for j in range(starts.shape[0] - 1):
        s, e = starts[j], starts[j + 1]
        for o in range(y.shape[1]):
            values = np.empty(e - s)
            for t in range(e - s):
                values[t] = y[rows[s + t], o]
            order = np.argsort(values, kind="mergesort")
            for t in range(e - s):
                rank[s + order[t], o] = t
                sorted_y[s + t, o] = values[order[t]]


@cached_kernel()
def _node_bin_range(X, rows, f, missing_bin):
    """(lowest, highest) non-missing bin of feature f over ``rows`` (-1, -1
    when every value is missing), and whether a value is missing."""
    lo, hi, missing = -1, -1, False
    for t in range(rows.shape[0]):
        b = np.int64(X[rows[t], f])
        if b == missing_bin:
            missing = True
            continue
        if lo < 0 or b < lo:
            lo = b
        if b > hi:
            hi = b
    return lo, hi, missing


@cached_kernel()
def _constant(lo, hi, missing):
    """Whether a feature of node range lo, hi (_node_bin_range) is constant,
    as :mod:`gputree.backends.node_features` defines it."""
    return lo < 0 or (lo == hi and not missing)


@cached_kernel()
def soft_feature_limit(X, rows, starts, order, max_features, missing_bin, allowed):
    """scikit-learn's max_features soft limit (as
    :func:`gputree.backends.node_features` rules it, on the node's rows):
    allowed uint8 (k, F) INOUT gets, for each node whose first
    ``max_features`` features in ``order`` int32 (k, F) are all constant
    over its rows, the next ones up to and including the first that is not."""
    for j in range(order.shape[0]):
        node_rows = rows[starts[j]:starts[j + 1]]
        for r in range(order.shape[1]):
            f = order[j, r]
            if r >= max_features:
                allowed[j, f] = 1
            if not _constant(*_node_bin_range(X, node_rows, f, missing_bin)):
                break


@cached_kernel(parallel=True)
def level_best_splits(X, y, wfix, inv_w, rows, starts, allowed, draws, missing_bin, min_leaf,
                      min_wfix, out_value, out_bin, out_missing_left, out_parent):
    """Every (node, feature)'s best split of one level.

    X (n, F) bins IN; y float64 (n, O); wfix int64 (n,) fixed-point weights,
    inv_w their scale; rows int64 the level's candidate rows grouped by node,
    starts int64 (k + 1,) IN; allowed uint8 (k, F) IN; draws float64 (k, F)
    IN, the random threshold's draw in [0, 1) (extremely randomized trees:
    one threshold, in the node's range of bins, as
    :mod:`gputree.backends.node_features` places it; a constant feature has
    none) or -1 (every threshold); out_value float64
    (k, F) OUT: children's summed absolute deviation (+inf: no split);
    out_bin int64, out_missing_left uint8 (k, F) OUT; out_parent float64
    (k,) OUT: the node's own absolute deviation, by the same passes.
    """
    k, n_features = allowed.shape
    n_level = rows.shape[0]
    rank = np.empty((n_level, y.shape[1]), dtype=np.int64)
    sorted_y = np.empty((n_level, y.shape[1]))
    _node_ranks(y, rows, starts, rank, sorted_y)
    local_w = np.empty(n_level, dtype=np.int64)
    for t in range(n_level):
        local_w[t] = wfix[rows[t]]
    for task in numba.prange(k * (n_features + 1)):
        j, f = task // (n_features + 1), task % (n_features + 1) - 1
        s, e = starts[j], starts[j + 1]
        if f < 0:       # the node itself: all its rows in row order
            whole = np.zeros(e - s)
            m = e - s
            _prefix_abs_errors_all(rank[s:e], sorted_y[s:e], local_w[s:e], inv_w, whole)
            out_parent[j] = whole[m - 1]
            continue
        out_value[j, f], out_bin[j, f], out_missing_left[j, f] = np.inf, -1, 0
        if allowed[j, f] == 0:
            continue
        bins = np.empty(e - s, dtype=np.int64)
        nm = 0
        for t in range(e - s):
            bins[t] = X[rows[s + t], f]
            nm += bins[t] != missing_bin
        one_bin = -1
        if draws[j, f] >= 0.0:
            lo, hi, missing = _node_bin_range(X, rows[s:e], f, missing_bin)
            if _constant(lo, hi, missing):
                continue
            one_bin = lo if lo == hi else _random_bin(draws[j, f], lo, hi)
        value, b, ml = _feature_best_split(bins, nm, rank[s:e], sorted_y[s:e], local_w[s:e],
                                           inv_w, missing_bin, min_leaf, min_wfix, one_bin)
        out_value[j, f], out_bin[j, f], out_missing_left[j, f] = value, b, ml


@cached_kernel()
def _prefix_abs_errors_all(rank, sorted_y, wfix, inv_w, out):
    """out (m,) INOUT: += prefix absolute deviations of the rows in row
    order, summed over outputs (the last entry: the whole node's)."""
    m = rank.shape[0]
    seq = np.arange(m)
    tree_w = np.empty(m + 1, dtype=np.int64)
    tree_wy = np.empty(m + 1)
    weight_at = np.empty(m, dtype=np.int64)
    for o in range(rank.shape[1]):
        _prefix_abs_errors(seq, rank[:, o], sorted_y[:, o], wfix, inv_w, tree_w, tree_wy,
                           weight_at, out)


@cached_kernel()
def _split_bitsets(last_bin, missing_left, missing_bin, out):
    """out uint32 (k, BITSET_WORDS) OUT: bins 0 .. last_bin[j] go left, the
    missing bin too where missing_left[j]."""
    for j in range(last_bin.shape[0]):
        _add_bins_upto(out, j, last_bin[j])
        if missing_left[j]:
            _add_bin(out, j, missing_bin)


def grow_absolute_error(backend, data, stats, growth, rng, pool=None, held_row_bytes=0):
    """Grow one absolute-error regression tree (arguments as
    :func:`gputree.growth.levelwise.grow_tree`; ``stats``: the squared-error
    statistics of the fit with ``stats.targets`` float64 (n, O) attached;
    ``pool`` and ``held_row_bytes`` are unused: no histograms are built).
    Rows of weight zero (a bootstrap's out-of-bag rows) take no part in the
    split search, as scikit-learn drops them, but reach a leaf. Returns
    (TreeArrays, positions int32 (n_samples,) on the backend: every row's leaf)."""
    if np.any(data.is_categorical):
        raise ValueError("criterion='absolute_error' supports numerical features only; "
                         "one-hot encode the categorical features or set "
                         "categorical_features=None.")
    best_first = growth.best_first
    growth = _MedianGrowth(backend, data, stats, growth, rng)
    tree = growth.run_best_first() if best_first else growth.run()
    return tree, backend.asarray(growth.positions)


class _MedianGrowth:
    """Level-wise growth on the host with the exact median split search."""

    def __init__(self, backend, data, stats, growth, rng):
        self.backend, self.data, self.stats, self.growth, self.rng = (
            backend, data, stats, growth, rng)
        self.X = np.ascontiguousarray(backend.to_host(data.X_binned))
        host_stats = np.asarray(backend.to_host(stats.stats))
        self.wfix = np.ascontiguousarray(host_stats[:, 0])
        self.inv_w = float(stats.inv_scale[0])
        self.y = np.ascontiguousarray(stats.targets, dtype=FLOAT_DTYPE)
        self.host_stats = host_stats
        self.positions = np.zeros(self.X.shape[0], dtype=NODE_DTYPE)

    def run(self):
        growth, layout, inv = self.growth, self.stats.layout, self.stats.inv_scale
        root_totals = self.host_stats.sum(axis=0)
        table = NodeTable(root_totals)
        level_start, n_level, n_leaves = 0, 1, 1
        for depth in range(growth.max_depth + 1):
            level_totals = table.totals[level_start:level_start + n_level]
            impurity = self.node_summaries(level_start, n_level)[1]
            candidates = splittable(level_totals, impurity, depth, growth, layout, inv)
            if candidates.size == 0:
                table.record_level(*no_splits(n_level))
                break
            found = self.scan_level(level_start, candidates, level_totals)
            accept = accept_splits(found["gain"], level_totals[candidates], growth, layout,
                                    inv, root_totals, n_leaves)
            n_leaves += int(accept.sum())
            split_nodes = candidates[accept]
            feature, bitset, gain, missing_left = no_splits(n_level)
            for name, array in (("feature", feature), ("bitset", bitset), ("gain", gain),
                                ("missing_left", missing_left)):
                array[split_nodes] = found[name][accept]
            table.record_level(feature, bitset, gain, missing_left)
            if split_nodes.size == 0:
                break
            left_totals = self.partition(level_start, n_level, split_nodes, feature, bitset)
            table.add_children(level_start + split_nodes, left_totals, depth + 1)
            level_start, n_level = level_start + n_level, 2 * split_nodes.size
        return self._finish(table)

    def _finish(self, table):
        """The TreeArrays of the recorded ``table``, with the medians as
        values and the absolute-error impurities."""
        inputs = self.backend.upload_many({"layout": self.stats.layout,
                                            "inv": self.stats.inv_scale,
                                            "params": self.growth.criterion_params()})
        tree = finish_tree(self.backend, table, self.data, self.stats,
                           tuple(inputs[k] for k in ("layout", "inv", "params")))
        tree.value, tree.impurity = self.tree_summaries(tree.parent)
        return tree

    def run_best_first(self):
        """The tree grown best first (``max_leaf_nodes``), as
        :mod:`gputree.growth.bestfirst` grows histogram trees: the waiting
        leaf whose split removes most of the tree's impurity (the gain
        weighted by the node's weight share, scikit-learn's priority; ties:
        the lowest node id) splits next; node ids in creation order; each
        step scans its two new nodes (their random draws, left before
        right, when they are created)."""
        growth = self.growth
        root_totals = self.host_stats.sum(axis=0)
        table = NodeTable(root_totals)
        waiting, taken, depths = Waiting(), {}, [0]
        self._wait(table, 0, 1, 0, root_totals, waiting)
        n_leaves, budget = 1, growth.max_leaf_nodes or np.inf
        while len(waiting) and n_leaves < budget:
            node, split = waiting.pop()
            taken[node] = split
            n_leaves += 1
            first_child, depth = table.n_nodes, depths[node] + 1
            depths += [depth, depth]
            left_totals = self._split_rows(node, first_child, split["feature"], split["bitset"])
            table.add_children(np.array([node], dtype=NODE_DTYPE), left_totals[None], depth)
            self._wait(table, first_child, 2, depth, root_totals, waiting)
        feature, bitset, gain, missing_left = no_splits(table.n_nodes)
        for node, split in taken.items():
            feature[node], bitset[node] = split["feature"], split["bitset"]
            gain[node], missing_left[node] = split["gain"], split["missing_left"]
        table.record_level(feature, bitset, gain, missing_left)
        return self._finish(table)

    def _wait(self, table, first, count, depth, root_totals, waiting):
        """Scan the new nodes first .. first + count - 1 and put those whose
        split may be taken in ``waiting`` (:class:`gputree.growth.policy.Waiting`)."""
        growth, layout, inv = self.growth, self.stats.layout, self.stats.inv_scale
        totals = table.totals[first:first + count]
        impurity = self.node_summaries(first, count)[1]
        candidates = splittable(totals, impurity, depth, growth, layout, inv)
        if candidates.size == 0:
            return
        found = self.scan_level(first, candidates, totals)
        valid, priority = split_priority(found["gain"], totals[candidates], growth, layout,
                                         inv, root_totals)
        for i in np.flatnonzero(valid).tolist():
            waiting.push(first + int(candidates[i]), priority[i],
                         {name: found[name][i] for name in
                          ("feature", "bitset", "gain", "missing_left")})

    def _split_rows(self, node, first_child, feature, bitset):
        """Move the rows of leaf ``node`` to its children ``first_child``
        (left) and ``+ 1``; returns the left child's totals int64 (C,)."""
        rows = np.flatnonzero(self.positions == node)
        left = splitset.goes_left(np.broadcast_to(bitset, (rows.size, bitset.shape[0])),
                                  self.X[rows, feature])
        self.positions[rows] = np.where(left, first_child, first_child + 1)
        return self.host_stats[rows[left]].sum(axis=0)

    def scan_level(self, level_start, candidates, level_totals):
        """Host dict of the candidates' best splits: gain float64 (k,) (-inf:
        none), feature int32, bitset uint32 (k, BITSET_WORDS), missing_left uint8."""
        k, n_features = candidates.size, self.X.shape[1]
        node = self.positions - level_start
        in_candidate = np.zeros(max(int(candidates.max()) + 1, 1), dtype=bool)
        in_candidate[candidates] = True
        index_of = np.full(in_candidate.size, -1, dtype=np.int64)
        index_of[candidates] = np.arange(k)
        valid = (node >= 0) & (node < in_candidate.size) & (self.wfix > 0)
        valid[valid] = in_candidate[node[valid]]
        rows = np.flatnonzero(valid)
        which = index_of[node[rows]]
        rows = rows[np.argsort(which, kind="stable")]
        starts = np.concatenate([[0], np.cumsum(np.bincount(which, minlength=k))]).astype(np.int64)
        allowed, order = feature_order(self.rng, k, n_features, self.growth.max_features)
        draws = threshold_draws(self.rng, k, n_features, self.growth)
        if uses_soft_limit(self.growth, n_features):
            soft_feature_limit(self.X, rows, starts, order, self.growth.max_features,
                               self.data.missing_bin, allowed)
        value = np.empty((k, n_features))
        last_bin = np.empty((k, n_features), dtype=np.int64)
        missing_left = np.empty((k, n_features), dtype=np.uint8)
        parent = np.empty(k)
        min_wfix = int(np.ceil(self.growth.min_weight_leaf / self.inv_w))
        level_best_splits(self.X, self.y, self.wfix, self.inv_w, rows, starts,
                          allowed, np.full((k, n_features), -1.0) if draws is None else draws,
                          self.data.missing_bin,
                          self.growth.min_samples_leaf, min_wfix, value, last_bin,
                          missing_left, parent)
        # the first feature within TIE of the best
        near = value <= value.min(axis=1, keepdims=True) + TIE * parent[:, None]
        feature = np.argmax(near, axis=1).astype(np.int32)
        at = np.arange(k)
        best = value[at, feature]
        weight = (starts[1:] > starts[:-1]) * (level_totals[candidates, 0] * self.inv_w)
        n_out = self.y.shape[1]
        with np.errstate(invalid="ignore", divide="ignore"):
            # children never deviate more than their parent: clamp rounding
            gain = np.where(np.isfinite(best),
                            np.maximum(parent - best, 0.0) / (weight * n_out), -np.inf)
        bitset = np.zeros((k, BITSET_WORDS), dtype=BITSET_DTYPE)
        ml = missing_left[at, feature]
        _split_bitsets(np.maximum(last_bin[at, feature], 0), ml, self.data.missing_bin, bitset)
        return {"gain": gain, "feature": feature, "bitset": bitset, "missing_left": ml}

    def partition(self, level_start, n_level, split_nodes, feature, bitset):
        """Move the split nodes' rows to their children; returns the left
        children's totals int64 (n_split, n_channels)."""
        node = self.positions - level_start
        in_level = (node >= 0) & (node < n_level)
        child = np.full(n_level, -1, dtype=np.int64)
        child[split_nodes] = level_start + n_level + 2 * np.arange(split_nodes.size)
        rows = np.flatnonzero(in_level)
        rows = rows[child[node[rows]] >= 0]
        row_node = node[rows]
        bins = self.X[rows, feature[row_node]]
        left = splitset.goes_left(bitset[row_node], bins)
        self.positions[rows] = child[row_node] + np.where(left, 0, 1)
        left_rows = rows[left]
        pair = (self.positions[left_rows] - level_start - n_level) // 2
        totals = np.zeros((split_nodes.size, self.host_stats.shape[1]), dtype=np.int64)
        np.add.at(totals, pair, self.host_stats[left_rows])
        return totals

    def node_summaries(self, first, count):
        """(values float64 (count, O, 1), impurity float64 (count,)) of the
        nodes first .. first + count - 1, where the rows are now."""
        return self._summaries(self.positions, first + count, first)

    def tree_summaries(self, parent):
        """The same for every node of the finished tree (parent int32
        (n_nodes,)): each row counts at its leaf and at every ancestor."""
        groups, rows = [], []
        node = self.positions.astype(np.int64)
        at = np.arange(node.size)
        while node.size:      # one pass per depth, not per row
            groups.append(node)
            rows.append(at)
            up = parent[node].astype(np.int64)
            keep = up >= 0
            node, at = up[keep], at[keep]
        return self._summaries(np.concatenate(groups), parent.size, 0, np.concatenate(rows))

    def _summaries(self, groups, n_groups, first, rows=None):
        """Weighted medians and mean absolute deviations of the rows
        (``rows``, all when None) grouped by ``groups``, for groups first ..
        n_groups - 1."""
        y, w = self.y, self.wfix * self.inv_w
        if rows is not None:
            y, w = y[rows], w[rows]
        values = np.empty((n_groups - first, y.shape[1], 1))
        deviation = np.zeros(n_groups - first)
        total = np.bincount(groups, weights=w, minlength=n_groups)[first:]
        for o in range(y.shape[1]):
            median = grouped_weighted_median(np, y[:, o], w, groups, n_groups)
            values[:, o, 0] = median[first:]
            spread = w * np.abs(y[:, o] - np.nan_to_num(median)[groups])
            deviation += np.bincount(groups, weights=spread, minlength=n_groups)[first:]
        with np.errstate(invalid="ignore", divide="ignore"):
            impurity = np.where(total > 0, deviation / (total * y.shape[1]), 0.0)
        return values, impurity
