"""A batch of a forest's trees grown together, level by level: each
(tree, node) of the trees' same level is a node of one wide level, so that
the histograms, the split scan and the partition of a level are launched
once for all trees of the batch instead of once per tree.

The wide level is the trees' levels side by side, tree after tree; the
batch's rows are the training rows once per tree (row ``t * n + i`` is row
``i`` in tree ``t``, with tree ``t``'s statistics; binned X repeated), so
each (tree, node) has its own rows and the backend's primitives
(:mod:`gputree.growth.levelwise`'s) see one tree whose root level has one
node per tree. The children of the wide level's split nodes, in their
parents' order, are again the trees' next levels side by side. Every
decision taken on the host (which nodes may split, which splits are
accepted, the random feature subsets and thresholds, drawn from each tree's
own stream in the same order as one tree's growth draws them) is taken per
tree, so every tree is the tree :func:`gputree.growth.levelwise.grow_tree`
grows from the same statistics and stream.

The trees of a batch share the statistics' layout, inverse scales and
criterion parameters (the scan takes one of each); the caller groups them
(:func:`batch_key`).
"""
import copy

import numpy as np

from .._dtypes import NODE_DTYPE
from ..backends.splitset import left_sets
from .levelwise import (_max_level_nodes, _plan_histograms, _PreviousLevel, _scan_mask,
                        _TreeGrowth, level_splits)
from .policy import (NodeTable, accept_splits, counts_and_weights, finish_tree, no_splits,
                     splittable)


def batch_key(stats, growth):
    """What trees grown in one batch must share: bytes of the statistics'
    layout, inverse scales and the criterion parameters."""
    return (stats.layout.tobytes(), np.asarray(stats.inv_scale).tobytes(),
            growth.criterion_params().tobytes(), stats.stats.shape[1])


def batch_size(backend, n_trees, data, stats, growth, held_row_bytes=0):
    """How many of ``n_trees`` trees like the one of ``stats`` and
    ``growth`` to grow together on ``backend`` (its forest_batch_size)."""
    n_samples, n_features = data.X_binned.shape
    return backend.forest_batch_size(n_trees, n_samples, n_features, stats.stats.shape[1],
                                     data.n_bins, _max_level_nodes(n_samples, growth),
                                     held_row_bytes)


def grow_forest_batch(backend, data, stats, growths, rngs, pool, held_row_bytes=0):
    """Grow len(stats) trees together.

    backend : Backend; data : BinnedData; stats : list of criteria.Statistics
    (``.stats`` on the backend), one per tree, all of one :func:`batch_key`
    with ``growths`` (list of GrowthParams, level-wise, no constraints);
    rngs : list of numpy RandomState, each tree's feature-subset stream;
    pool : HistogramPool for the batch's wide levels; held_row_bytes : device
    bytes per row the caller keeps (memory check of one tree).
    Returns a list of (TreeArrays, positions int32 (n_samples,) on the
    backend: every row's leaf id in that tree).
    """
    n_samples, n_features = data.X_binned.shape
    max_level_nodes = _max_level_nodes(n_samples, growths[0])
    backend.check_fit_memory(n_samples, n_features, stats[0].stats.shape[1], data.n_bins,
                             max_level_nodes, held_row_bytes, n_trees=len(stats))
    pool.start_tree((n_features, data.n_bins, stats[0].stats.shape[1]),
                    len(stats) * max_level_nodes)
    return _BatchGrowth(backend, data, stats, growths, rngs, pool).run()


class _WideData:
    """The batch's binned data: X repeated once per tree, the rest the data's."""

    def __init__(self, data, X_binned):
        self.X_binned = X_binned
        for name in ("n_bins", "n_bins_non_missing", "is_categorical", "missing_bin"):
            setattr(self, name, getattr(data, name))


def _repeated(backend, X_binned, n_trees):
    """Binned X (n_trees * n, F) in the backend's order: X once per tree."""
    if n_trees == 1:
        return X_binned
    n = X_binned.shape[0]
    wide = backend.empty((n_trees * n, X_binned.shape[1]), X_binned.dtype,
                         order=backend.binned_order)
    for t in range(n_trees):
        wide[t * n:(t + 1) * n] = X_binned
    return wide


def _stacked(backend, arrays):
    """The (n, C) ``arrays`` one under the other (the array itself for one)."""
    if len(arrays) == 1:
        return arrays[0]
    n = arrays[0].shape[0]
    out = backend.empty((len(arrays) * n,) + arrays[0].shape[1:], arrays[0].dtype)
    for t, array in enumerate(arrays):
        out[t * n:(t + 1) * n] = array
    return out


class _Tree:
    """One tree's host state in the batch: its node table and current level."""

    def __init__(self, root_totals, impurity, growth, rng):
        self.table = NodeTable(root_totals)
        self.root_totals = root_totals
        self.impurity = impurity
        self.growth, self.rng = growth, rng
        self.level_start, self.n_level, self.n_leaves = 0, 1, 1
        self.candidates = None      # level-relative candidates of the level being scanned
        self.offset = 0             # the level's first node in the wide level


class _BatchGrowth(_TreeGrowth):
    """The growth of a batch of trees as one wide tree (see the module)."""

    def __init__(self, backend, data, stats, growths, rngs, pool):
        self.n_trees, self.tree_data, self.tree_stats = len(stats), data, stats
        self.n_samples = data.X_binned.shape[0]
        wide_stats = copy.copy(stats[0])
        wide_stats.totals = None
        wide_stats.stats = _stacked(backend, [s.stats for s in stats])
        wide_data = _WideData(data, _repeated(backend, data.X_binned, self.n_trees))
        super().__init__(backend, wide_data, wide_stats, growths[0], None, pool)
        # tree t's rows start at its root, wide node t
        self.positions.reshape(self.n_trees, self.n_samples)[:] = backend.xp.arange(
            self.n_trees, dtype=NODE_DTYPE)[:, None]
        backend.follow_batch(self.positions, self.n_trees)
        self.growths, self.rngs = growths, rngs
        self._level_trees = []      # the trees of the wide level being scanned

    def run(self):
        """list of (TreeArrays, positions int32 (n_samples,)) per tree."""
        layout, inv = self.stats.layout, self.stats.inv_scale
        root_totals, impurity = self._roots()
        trees = [_Tree(root_totals[t], impurity[t:t + 1], self.growths[t], self.rngs[t])
                 for t in range(self.n_trees)]
        wide_local = [np.zeros(self.n_trees, dtype=NODE_DTYPE)]
        wide_start, previous = 0, None
        for depth in range(self.growth.max_depth + 1):
            active = [tree for tree in trees if tree.n_level]
            level_totals, candidates = self._candidates(active, depth, layout, inv)
            if candidates.size == 0:
                break
            count, _ = counts_and_weights(level_totals, layout, inv)
            if previous is None:
                hist_row, plan = _plan_roots(level_totals.shape[0], candidates, self.pool)
            else:
                hist_row, plan = _plan_histograms(level_totals.shape[0], candidates, count,
                                                  previous, self.pool)
            self._level_trees = active
            found = self._scan_planned(wide_start, level_totals, candidates, hist_row, plan)
            split_nodes = self._record_trees(active, found, level_totals, depth, wide_start)
            if split_nodes.size == 0:
                break
            previous = _PreviousLevel(hist_row, split_nodes)
            wide_start += level_totals.shape[0]
            wide_local.append(np.concatenate(
                [tree.level_start + np.arange(tree.n_level, dtype=NODE_DTYPE)
                 for tree in trees if tree.n_level]))
        self._apply_partition()
        return self._finish(trees, np.concatenate(wide_local))

    def _roots(self):
        """Host totals int64 (n_trees, C) and impurity float64 (n_trees,) of
        the roots, with one download."""
        backend, xp = self.backend, self.backend.xp
        totals = []
        for s in self.tree_stats:
            if s.totals is not None:
                totals.append(backend.asarray(np.asarray(s.totals)))
            else:
                totals.append(xp.stack([s.stats[:, c].sum()
                                        for c in range(s.stats.shape[1])])[None, :])
        totals = xp.concatenate(totals)
        _, impurity = backend.node_summaries(totals, *self.criterion_inputs(),
                                             self.stats.n_outputs, self.stats.n_classes)
        roots = backend.download_many({"totals": totals, "impurity": impurity})
        return roots["totals"], roots["impurity"]

    def _candidates(self, active, depth, layout, inv):
        """The wide level's totals int64 (n_wide, C) and candidates (wide
        level-relative, ascending); a tree without candidates records its
        level and stops."""
        totals, candidates, offset = [], [], 0
        for tree in active:
            tree.offset = offset
            tree_totals = tree.table.totals[tree.level_start:
                                            tree.level_start + tree.n_level]
            tree.candidates = splittable(tree_totals, tree.impurity, depth, tree.growth,
                                         layout, inv)
            totals.append(tree_totals)
            candidates.append(offset + tree.candidates)
            offset += tree.n_level
        for tree in active:
            if tree.candidates.size == 0:
                tree.table.record_level(*no_splits(tree.n_level))
        return np.concatenate(totals), np.concatenate(candidates)

    def _scan_choices(self, candidates, rows):
        """Each tree's random choices, drawn from its own stream for its
        candidates as :func:`gputree.growth.levelwise._scan_mask` draws
        one tree's, placed at the candidates' histogram rows."""
        n_features, choices, first = self.data.X_binned.shape[1], {}, 0
        for tree in self._level_trees:
            k = tree.candidates.size
            if k == 0:
                continue
            tree_rows = rows[first:first + k]
            first += k
            drawn = _scan_mask(tree.rng, tree.candidates, tree_rows, tree.growth, n_features)
            for name, values in drawn.items():
                if name not in choices:
                    fill = -1 if name == "order" else 0
                    choices[name] = np.full((int(rows.max()) + 1, n_features), fill,
                                            dtype=values.dtype)
                choices[name][tree_rows] = values[tree_rows]
        return choices

    def _record_trees(self, active, found, level_totals, depth, wide_start):
        """Accept each tree's splits, record them in its node table, add
        its children; keep the wide level's splits for the partition.
        Returns the wide level-relative nodes that split (ascending)."""
        layout, inv = self.stats.layout, self.stats.inv_scale
        n_wide = level_totals.shape[0]
        features, bitsets, words, split_nodes, first = [], [], [], [], 0
        for tree in active:
            k = tree.candidates.size
            mine = {name: values[first:first + k] for name, values in found.items()
                    if name != "child_impurity"}
            child_impurity = found["child_impurity"].reshape(-1, 2)[first:first + k]
            first += k
            accept = accept_splits(mine["gain"], level_totals[tree.offset + tree.candidates],
                                   tree.growth, layout, inv, tree.root_totals, tree.n_leaves)
            tree_splits = tree.candidates[accept]
            feature, bitset, word, gain, missing_left = level_splits(
                mine, accept, tree_splits, tree.n_level, self.n_words)
            if k:
                tree.table.record_level(feature, left_sets(bitset, word), gain, missing_left)
            features.append(feature)
            bitsets.append(bitset)
            words.append(word)
            split_nodes.append(tree.offset + tree_splits)
            self._next_level(tree, tree_splits, mine, accept, child_impurity, depth)
        split_nodes = np.concatenate(split_nodes)
        if split_nodes.size:
            self._record_partition(np.concatenate(features),
                                   left_sets(np.concatenate(bitsets), np.concatenate(words)),
                                   split_nodes, wide_start, n_wide)
        return split_nodes

    @staticmethod
    def _next_level(tree, tree_splits, found, accept, child_impurity, depth):
        """Move ``tree`` to its next level: the children of its splits."""
        if tree_splits.size == 0:
            tree.n_level = 0
            return
        tree.impurity = child_impurity[accept].ravel()
        tree.n_leaves += int(accept.sum())
        tree.table.add_children(tree.level_start + tree_splits, found["left_sums"][accept],
                                depth + 1)
        tree.level_start, tree.n_level = tree.level_start + tree.n_level, 2 * tree_splits.size

    def _finish(self, trees, wide_local):
        """Each tree's TreeArrays and its rows' leaves (its own node ids)."""
        backend, n = self.backend, self.n_samples
        local = backend.empty(self.positions.shape, NODE_DTYPE)
        backend.xp.take(backend.upload(wide_local), self.positions, out=local)
        return [(finish_tree(backend, tree.table, self.tree_data, self.tree_stats[t],
                             self.criterion_inputs()), local[t * n:(t + 1) * n])
                for t, tree in enumerate(trees)]


def _plan_roots(n_wide, candidates, pool):
    """The histogram plan of the batch's roots (every root a candidate is
    built; :func:`gputree.growth.levelwise._plan_histograms`' result)."""
    hist_row = np.full(n_wide, -1, dtype=NODE_DTYPE)
    hist_row[candidates] = pool.take(candidates.size)
    none = np.empty(0, dtype=NODE_DTYPE)
    return hist_row, {"node_to_build": hist_row.copy(), "built_rows": none,
                      "parent_rows": none}
