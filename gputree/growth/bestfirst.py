"""Best-first (leaf-wise) tree growth: the leaf whose split improves the
tree most splits next, until ``max_leaf_nodes`` leaves (scikit-learn's
best-first builder, LightGBM's leaf-wise growth, XGBoost's
``grow_policy="lossguide"``).

A step is a level of the level-wise grower (:mod:`gputree.growth.levelwise`)
of two nodes, the children of the leaf that splits, with the same backend
primitives: the rows of the leaf move to its children in the pass that
builds the histogram of the child with fewer rows, the other child's is
``parent - built`` in the parent's pool row, and the two children are
scanned; a child whose best split may be taken waits in the frontier with
its histogram in the pool. So every backend (CPU, CUDA, Dask) grows the
same tree, with no kernel of its own.

Priority: the split's weighted impurity decrease (:func:`gputree.growth.policy.split_priority`:
the node's gain times its weight share, scikit-learn's; for the Newton
criterion the gain, a loss reduction: LightGBM's and XGBoost's). Equal
priorities: the node created first splits first. The random draws (the
max_features subsets, then the random thresholds) are made for each
step's splittable children, left before right, when they are created: the
root first, then the children of every split in the order the splits are
taken, as scikit-learn draws them.

Node ids are creation order: the root 0, then the children of each split,
left then right, in the order the splits are taken.
"""
import numpy as np

from .._dtypes import BITSET_DTYPE, BITSET_WORDS, FLOAT_DTYPE, NODE_DTYPE
from ..backends.splitset import left_set, left_sets
from ..criteria import KIND_NEWTON, LAYOUT_COUNT_CHANNEL, LAYOUT_KIND, LAYOUT_N_OUTPUTS
from .levelwise import _TreeGrowth, start_tree
from .policy import (NodeTable, Waiting, counts_and_weights, finish_tree, split_priority,
                     splittable)


def grow_best_first(backend, data, stats, growth, rng, pool=None, held_row_bytes=0):
    """Grow one tree best first (arguments and result as
    :func:`gputree.growth.levelwise.grow_tree`); ``growth.max_leaf_nodes``
    leaves at most (0: until no leaf can split). The pool holds the
    histograms of the leaves waiting to split: at most ``max_leaf_nodes``
    rows, as a level of as many nodes."""
    pool = start_tree(backend, data, stats, growth, pool, held_row_bytes)
    return _BestFirstGrowth(backend, data, stats, growth, rng, pool).run()


class _BestFirstGrowth(_TreeGrowth):
    """The growth of one tree, a split at a time (host bookkeeping as
    :class:`gputree.growth.levelwise._TreeGrowth`; per split one packed
    upload and one download, as a level there)."""

    def run(self):
        """(TreeArrays, positions int32 (n_samples,) on the backend)."""
        root_totals, impurity = self._root()
        self.root_totals = root_totals[0]
        table = NodeTable(self.root_totals)
        self.waiting, self.hist_row = Waiting(), {}
        self.splits = {}     # node id -> its taken split
        self.depth = [0]     # node id -> depth
        # rows grouped by leaf (None: the backend moves rows by positions;
        # else the positions are written from it when the tree is grown)
        self.rows = self.backend.start_row_partition(self.data.X_binned)
        self.pending = None  # (node, split): the split taken whose rows have not moved
        self.to_build = None  # (node, pool row): the histogram the next build makes
        self.direct = self._scans_directly()
        steps = self._compiled_steps()
        if steps is None:
            self._step(table, 0, impurity, 0, None)
            self._grow(table)
        else:
            self._grow_compiled(steps, impurity)
        if self.rows is not None:
            self.backend.partition_positions(self.rows, self.positions)
        tree = (finish_tree(self.backend, table, self.data, self.stats, self.criterion_inputs())
                if steps is None else self.compiled_tree(steps))
        if self.constrained is not None:
            self.constrained.clip_values(tree.value)
        return tree, self.positions

    def _grow(self, table):
        """Split the waiting leaves, best first, one step at a time with
        the primitives (after the root's step); record the splits in
        ``table``."""
        n_leaves, budget = 1, self.growth.max_leaf_nodes or np.inf
        while len(self.waiting) and n_leaves < budget:
            node, split = self.waiting.pop()
            n_leaves += 1
            first_child = table.n_nodes
            depth = self.depth[node] + 1
            self.depth += [depth, depth]
            table.add_children(np.array([node], dtype=NODE_DTYPE), split["left_sums"][None],
                               depth)
            self._take(node, split, first_child)
            if self.constrained is not None:
                self.constrained.add_children(np.array([node]), split["feature"][None],
                                              self._values(table.totals[-2:]).reshape(-1, 2))
            self._step(table, first_child, split["child_impurity"], depth,
                       self.hist_row.pop(node))
        self._apply_partition()
        self._record(table)

    def _compiled_steps(self):
        """The backend's compiled steps for this tree
        (:meth:`gputree.backends.base.Backend.best_first_steps`) where the
        step is direct (:meth:`_scans_directly`) and the criterion Newton's
        (a node's priority its gain; its impurity unused), else None."""
        layout, growth = self.stats.layout, self.growth
        if not self.direct or layout[LAYOUT_KIND] != KIND_NEWTON:
            return None
        limits = (growth.min_samples_split, 2 * growth.min_samples_leaf,
                  2 * growth.min_weight_leaf, growth.min_split_gain)
        return self.backend.best_first_steps(
            self.root_totals.shape[0], self.data.X_binned.shape[1], self.n_words, limits,
            growth.max_leaf_nodes, growth.max_depth, int(layout[LAYOUT_COUNT_CHANNEL]),
            int(layout[LAYOUT_N_OUTPUTS]), self.scan_constants())

    def _grow_compiled(self, steps, impurity):
        """As :meth:`_grow` with the root's step, each step one call of
        ``steps`` (the backend's
        :meth:`~gputree.backends.base.Backend.best_first_steps`) between
        the row split, the histogram pass and the scan: the same calls in
        the same order, the same tree (:meth:`compiled_tree`), in the
        pool's rows of the steps' layout (``histogram_rows``); ``impurity``
        float64 (1,) the root's."""
        backend, pool = self.backend, self.pool
        X, stats, cells = self.data.X_binned, self.stats.stats, self._cells()
        pool.start_tree(steps.histogram_rows(pool.row_shape), pool.max_rows)
        row = -1
        if splittable(self.root_totals[None], impurity, 0, self.growth, self.stats.layout,
                      self.stats.inv_scale).size:
            row = int(pool.take(1)[0])
            pool.rows_to_zero()         # not zeroed: the histogram pass overwrites them
        steps.start_root(self.root_totals, row, pool)
        if row >= 0:
            none = np.empty(0, dtype=NODE_DTYPE)
            self._build(0, 1, {"node_to_build": np.array([row], dtype=NODE_DTYPE),
                               "zero_rows": none}, derive=False)
            steps.scan(pool.hist, row + 1, 1)
        n_bins, hist = self.data.n_bins, None

        def prepared():                     # the split and build of the pool's hist
            nonlocal hist, split_and_build
            if pool.hist is not hist:
                hist = pool.hist
                split_and_build = backend.split_builder(self.rows, X, stats, hist, **cells,
                                                        n_bins=n_bins)
            return split_and_build
        split_and_build = None
        while True:
            # steps.advance may take steps itself, their splits and scans too
            out, split_done = steps.advance(pool, prepared())
            node, n_scan, built_node, built_row, n_rows = out.tolist()
            if node < 0:
                break
            if split_done:
                prepared().build(built_node, built_row)
            else:
                prepared()(node, int(steps.best_feature[node]), steps.best_bitset[node],
                           steps.best_words[node], built_node if n_scan else -1, built_row)
            if n_scan:
                steps.scan(pool.hist, n_rows, n_scan)

    def _step(self, table, level_start, impurity, depth, parent_row):
        """Scan the new nodes ``level_start`` (and ``+ 1``, but for the
        root), whose parent's histogram is in pool row ``parent_row``
        (None: the root), and put those whose split may be taken in the
        frontier; their float64 ``impurity`` (n_level,)."""
        growth, layout, inv = self.growth, self.stats.layout, self.stats.inv_scale
        totals = table.totals[level_start:]        # the new nodes'
        candidates = splittable(totals, impurity, depth, growth, layout, inv)
        if candidates.size == 0:
            if parent_row is not None:
                self.pool.release([parent_row])
            self._apply_partition()
            return
        hist_row, plan = self._plan(totals, candidates, parent_row)
        found = self._scan_planned(level_start, totals, candidates, hist_row, plan)
        valid, priority = split_priority(found["gain"], totals[candidates], growth, layout, inv,
                                         self.root_totals)
        rows, kept = hist_row.tolist(), set()
        for i in np.flatnonzero(valid).tolist():
            child = int(candidates[i])
            kept.add(child)
            self.waiting.push(level_start + child, priority[i], {
                "feature": found["feature"][i], "bitset": found["bitset"][i],
                "words": found["words"][i], "gain": found["gain"][i],
                "missing_left": found["missing_left"][i], "left_sums": found["left_sums"][i],
                "child_impurity": found["child_impurity"][2 * i:2 * i + 2]})
            self.hist_row[level_start + child] = rows[child]
        drop = [row for i, row in enumerate(rows) if row >= 0 and i not in kept]
        if drop:
            self.pool.release(drop)

    def _plan(self, totals, candidates, parent_row):
        """The histograms of the step's nodes in the pool: (hist_row int32
        (n_level,), plan dict as :func:`gputree.growth.levelwise._plan_histograms`'s).
        The child with fewer rows is built in a new row (when a child is a
        candidate); the other, when a candidate, is derived in its parent's
        row, which is released otherwise."""
        none = np.empty(0, dtype=NODE_DTYPE)
        if parent_row is None:
            hist_row = self.pool.take(1)
            return hist_row, {"node_to_build": hist_row.copy(), "built_rows": none,
                              "parent_rows": none}
        count, _ = counts_and_weights(totals, self.stats.layout, self.stats.inv_scale)
        smaller = 0 if count[0] <= count[1] else 1
        larger = 1 - smaller
        derive = larger in candidates.tolist()
        if not derive:
            self.pool.release([parent_row])
        built = self.pool.take(1)
        row = int(built[0])
        self.to_build = (smaller, row)
        build = [-1, -1]
        build[smaller] = row
        plan = {"node_to_build": np.array(build, dtype=NODE_DTYPE), "built_rows": none,
                "parent_rows": none}
        if derive:
            plan["built_rows"] = built
            plan["parent_rows"] = np.array([parent_row], dtype=NODE_DTYPE)
            build[larger] = parent_row
        return np.array(build, dtype=NODE_DTYPE), plan

    def _scan_choices(self, candidates, rows):
        """As the level-wise grower's (:func:`gputree.growth.levelwise._scan_mask`);
        where nothing is drawn (every feature tried, the best thresholds),
        its ``allowed`` without its calls."""
        growth, n_features = self.growth, self.data.X_binned.shape[1]
        if growth.random_thresholds or (growth.max_features and growth.max_features < n_features):
            return super()._scan_choices(candidates, rows)
        allowed = np.zeros((max(rows.tolist()) + 1, n_features), dtype=np.uint8)
        allowed[rows] = 1
        return {"allowed": allowed}

    def _scans_directly(self):
        """Whether a step's histogram and scan may skip the level-wise
        grower's plan (:meth:`_scan_planned`): a backend with a row
        partition (and as :meth:`scans_directly`)."""
        return self.rows is not None and self.scans_directly()

    def _scan_planned(self, level_start, level_totals, candidates, hist_row, plan):
        """As the level-wise grower's; where :meth:`_scans_directly`, a
        step's (not the root's) with the same calls in the same order,
        without the packed copies, the plan's dict and the choices drawn
        (a step of a lossguide tree on the CPU: its plan cost more than
        its kernels)."""
        if not self.direct or self.pending is None:
            return super()._scan_planned(level_start, level_totals, candidates, hist_row,
                                         plan)
        backend, pool, constants = self.backend, self.pool, self.constants
        rows = hist_row[candidates]
        pool.rows_to_zero()             # not zeroed: the histogram pass overwrites them
        allowed = self._scan_choices(candidates, rows)["allowed"]
        self._apply_partition()
        child, row = self.to_build
        backend.build_node_histogram(self.rows, self.data.X_binned, self.stats.stats,
                                     level_start + child, row, pool.hist, **self._cells(),
                                     n_bins=self.data.n_bins)
        derive = ({"derive": (plan["parent_rows"], plan["built_rows"], pool.hist)}
                  if plan["built_rows"].size else {})
        split = backend.find_best_splits(
            pool.hist[:allowed.shape[0]], constants["n_bins_non_missing"],
            constants["is_categorical"], allowed, self.data.missing_bin, constants["layout"],
            constants["inv"], constants["params"], **derive)
        return self._found(split, {"rows": rows, "totals": level_totals[candidates]})

    def _take(self, node, split, first_child):
        """Record the split of leaf ``node`` (children ``first_child`` and
        ``+ 1``) and keep it for the next partition, as a split of the pair
        of siblings ``node`` belongs to (the root alone), the numbering of a
        level of the level-wise grower (which the CUDA backend's row
        partition follows)."""
        self.splits[node] = split
        if self.rows is not None:
            self.pending = (node, split)
            return
        start = node - (node + 1) % 2 if node else 0
        n_move = 2 if node else 1
        feature = np.full(n_move, -1, dtype=np.int32)
        bitset = np.zeros((n_move, BITSET_WORDS), dtype=BITSET_DTYPE)
        words = np.zeros((n_move, self.n_words), dtype=BITSET_DTYPE)
        left_child = np.full(n_move, -1, dtype=NODE_DTYPE)
        k = node - start
        feature[k], bitset[k], words[k] = split["feature"], split["bitset"], split["words"]
        left_child[k] = first_child
        sets = left_sets(bitset, words)
        self.partition = {"split_feature": feature, "split_bitset": sets.bitset,
                          "split_words": sets.words, "split_start": sets.start,
                          "split_n_words": sets.n_words, "left_child": left_child}
        self.partition_start = start

    def _apply_partition(self):
        """Move the rows of the split taken last to its children (in the
        row partition, where the backend keeps one)."""
        if self.pending is None:
            super()._apply_partition()
            return
        node, split = self.pending
        self.pending = None
        self.backend.split_node_rows(self.rows, self.data.X_binned, node, split["feature"],
                                     left_set(split["bitset"], split["words"]))

    def _build(self, level_start, n_build, device, derive=True):
        """As the level-wise grower's, but where the backend keeps a row
        partition: the split's rows move within it, the planned child's
        histogram is built from its rows alone."""
        if self.pending is None:
            super()._build(level_start, n_build, device, derive)
            return
        self._zero_reused(device)
        self._apply_partition()
        child, hist_row = self.to_build
        self.backend.build_node_histogram(self.rows, self.data.X_binned, self.stats.stats,
                                          level_start + child, hist_row, self.pool.hist,
                                          **self._cells(), n_bins=self.data.n_bins)
        if derive:
            self._derive(device)

    def _record(self, table):
        """The taken splits into the node table (one record of every node)."""
        n_nodes = table.n_nodes
        feature = np.full(n_nodes, -1, dtype=np.int32)
        bitset = np.zeros((n_nodes, BITSET_WORDS), dtype=BITSET_DTYPE)
        words = np.zeros((n_nodes, self.n_words), dtype=BITSET_DTYPE)
        gain = np.zeros(n_nodes, dtype=FLOAT_DTYPE)
        missing_left = np.zeros(n_nodes, dtype=np.uint8)
        for node, split in self.splits.items():
            feature[node], bitset[node], words[node] = (split["feature"], split["bitset"],
                                                         split["words"])
            gain[node], missing_left[node] = split["gain"], split["missing_left"]
        table.record_level(feature, left_sets(bitset, words), gain, missing_left)
