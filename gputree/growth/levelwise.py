"""Level-wise tree growth: orchestration of the backend primitives.

Per level: one histogram pass for the nodes that must be built (the smaller
child of each split; the larger sibling is ``parent - smaller``), one split
scan for all candidate nodes, one partition pass that moves rows to their
child. The grower handles per-node arrays only; it never loops over samples.

Histograms live in the rows of a
:class:`gputree.growth.histogram_pool.HistogramPool`; a larger sibling's is
derived in its parent's row, so the memory of a level's histograms is reused
by the next level instead of being held alongside it. Which nodes split and
how the finished tree is assembled is :mod:`gputree.growth.policy`, shared
with the other growers.
"""
from dataclasses import dataclass

import numpy as np

from .._dtypes import NODE_DTYPE, extension_words
from ..backends.splitset import left_sets
from ..criteria import KIND_NEWTON, LAYOUT_COUNT_CHANNEL, LAYOUT_KIND, LAYOUT_N_OUTPUTS
from ..tree import LeftSets
from .histogram_pool import HistogramPool
from .policy import (NodeTable, accept_splits, counts_and_weights, feature_order, finish_tree,
                     no_splits, splittable, threshold_draws, uses_soft_limit)


def grow_tree(backend, data, stats, growth, rng, pool=None, held_row_bytes=0):
    """Grow one tree.

    backend : Backend;  data : BinnedData;  stats : criteria.Statistics with
    ``stats.stats`` already on the backend; growth : GrowthParams;
    rng : numpy RandomState for per-node feature subsets; pool :
    HistogramPool shared by the trees of a fit (None: one for this tree);
    held_row_bytes : device bytes per row the caller keeps during the fit
    (for the memory check).
    Returns (TreeArrays, positions) where positions int32 (n_samples,) on the
    backend holds every row's leaf id.
    """
    pool = start_tree(backend, data, stats, growth, pool, held_row_bytes)
    return _TreeGrowth(backend, data, stats, growth, rng, pool).run()


def split_words(data):
    """The words of a categorical split beyond its bitset on ``data``
    (BinnedData): enough for the feature with the most categories (0: no
    feature has over 256)."""
    return int(extension_words(data.n_bins_non_missing[data.is_categorical != 0])
               .max(initial=0))


def scans_directly(backend, data, growth):
    """Whether a tree's histograms and scan may skip the general plan
    (:meth:`_TreeGrowth._scan_planned`): a backend with host arrays whose
    histogram pass overwrites its rows and whose scan derives the larger
    child, and a tree of ``growth`` on ``data`` (BinnedData) with no
    constraints and nothing drawn (every feature, the best thresholds)."""
    n_features = data.X_binned.shape[1]
    return (backend.xp is np and backend.derives_in_scan
            and backend.overwrites_built_rows and growth.constraints is None
            and not growth.random_thresholds
            and not (growth.max_features and growth.max_features < n_features))


def start_tree(backend, data, stats, growth, pool, held_row_bytes):
    """Check that the tree fits in the backend's memory and start it in
    ``pool`` (None: a new HistogramPool), with rows for the most nodes a
    level can have; returns the pool."""
    n_samples, n_features = data.X_binned.shape
    max_level_nodes = _max_level_nodes(n_samples, growth)
    backend.check_fit_memory(n_samples, n_features, stats.n_channels, data.n_bins,
                             max_level_nodes, held_row_bytes)
    if pool is None:
        pool = HistogramPool(backend)
    pool.start_tree((n_features, data.n_bins, stats.n_channels), max_level_nodes)
    return pool


class _TreeGrowth:
    """The growth of one tree, level by level.

    The host keeps the bookkeeping (node table, pool rows, random feature
    subsets, which candidates split); the device keeps the rows and does the
    work. Copies between them do not depend on the number of nodes: per level
    one packed upload (the level's plan, with the previous level's splits for
    the partition) and one packed download (every candidate's best split and
    its children's impurity); per tree one upload of the tree's constants,
    one download of the root's totals, one upload and one download to
    summarise the nodes at the end, and one upload for the last partition.
    """

    def __init__(self, backend, data, stats, growth, rng, pool):
        self.backend, self.data, self.stats, self.growth = backend, data, stats, growth
        self.rng, self.pool = rng, pool
        self.positions = pool.row_positions(data.X_binned.shape[0])
        # constant for the whole tree: one copy
        self.constants = backend.upload_many({
            "n_bins_non_missing": data.n_bins_non_missing,
            "is_categorical": data.is_categorical, "layout": stats.layout,
            "inv": stats.inv_scale, "params": growth.criterion_params()})
        self.partition = {}      # host arrays of splits not yet applied to positions
        self.partition_start = 0
        self.n_words = split_words(data)
        # monotonic / interaction constraints: bounds and path features per node
        self.constrained = (growth.constraints.start_tree() if growth.constraints is not None
                            else None)

    def criterion_inputs(self):
        """(layout, inv, params) on the backend."""
        return tuple(self.constants[k] for k in ("layout", "inv", "params"))

    def run(self):
        """(TreeArrays, positions int32 (n_samples,) on the backend)."""
        growth, layout, inv = self.growth, self.stats.layout, self.stats.inv_scale
        root_totals, impurity = self._root()
        steps = self._compiled_levels(root_totals[0])
        if steps is not None:
            self._grow_compiled(steps, root_totals, impurity)
            return self.compiled_tree(steps), self.positions
        table = NodeTable(root_totals[0])
        level_start, n_level, previous, n_leaves = 0, 1, None, 1
        for depth in range(growth.max_depth + 1):
            level_totals = table.totals[level_start:level_start + n_level]
            candidates = splittable(level_totals, impurity, depth, growth, layout, inv)
            if candidates.size == 0:
                table.record_level(*no_splits(n_level))
                break
            hist_row, found = self._scan_level(level_start, level_totals, candidates, previous)
            accept = accept_splits(found["gain"], level_totals[candidates], growth, layout,
                                    inv, root_totals[0], n_leaves)
            n_leaves += int(accept.sum())
            split_nodes = candidates[accept]
            self._record_level(table, found, accept, split_nodes, level_start, n_level)
            if split_nodes.size == 0:
                break
            impurity = found["child_impurity"].reshape(-1, 2)[accept].ravel()
            table.add_children(level_start + split_nodes, found["left_sums"][accept], depth + 1)
            if self.constrained is not None:
                self.constrained.add_children(level_start + split_nodes,
                                              found["feature"][accept],
                                              self._values(table.totals[level_start + n_level:])
                                              .reshape(-1, 2))
            previous = _PreviousLevel(hist_row, split_nodes)
            level_start, n_level = level_start + n_level, 2 * split_nodes.size
        # the loop always ends by a break: at max_depth no node is splittable
        self._apply_partition()
        tree = finish_tree(self.backend, table, self.data, self.stats, self.criterion_inputs())
        if self.constrained is not None:
            self.constrained.clip_values(tree.value)
        return tree, self.positions

    def _compiled_levels(self, root_totals):
        """The backend's compiled levels for this tree
        (:meth:`gputree.backends.base.Backend.level_steps`) where the growth
        asks for them (``compiled_levels``), a level needs no plan of its own
        (:meth:`scans_directly`), the criterion is Newton's and no leaf
        budget applies, else None."""
        layout, growth = self.stats.layout, self.growth
        if (not growth.compiled_levels or not self.scans_directly()
                or layout[LAYOUT_KIND] != KIND_NEWTON or growth.max_leaf_nodes):
            return None
        limits = (growth.min_samples_split, 2 * growth.min_samples_leaf,
                  2 * growth.min_weight_leaf, growth.min_split_gain)
        # the last tree's steps, started again where the backend can
        steps = self.pool.kept_steps = self.backend.level_steps(
            root_totals.shape[0], self.data.X_binned.shape[1], self.n_words, limits,
            growth.max_depth, int(layout[LAYOUT_COUNT_CHANNEL]), int(layout[LAYOUT_N_OUTPUTS]),
            self.scan_constants(), self.pool.kept_steps)
        return steps

    def scans_directly(self):
        """Whether the histograms and the scan may skip the general plan
        (:meth:`_scan_planned`): :func:`scans_directly`."""
        return scans_directly(self.backend, self.data, self.growth)

    def scan_constants(self):
        """The split scan's constants of the tree (find_best_splits' arguments but
        the histograms and which features are scanned)."""
        constants = self.constants
        return (constants["n_bins_non_missing"], constants["is_categorical"],
                self.data.missing_bin, *self.criterion_inputs())

    def _grow_compiled(self, steps, root_totals, impurity):
        """The tree's levels, each one call of ``steps`` (the backend's
        :meth:`~gputree.backends.base.Backend.level_steps`) between the row
        move with the histogram pass and the scan: the general levels' calls
        in the same order, the same tree (:meth:`compiled_tree`)."""
        backend, pool, data = self.backend, self.pool, self.data
        X, stats, cells = data.X_binned, self.stats.stats, self._cells()
        pool.start_tree(steps.histogram_rows(pool.row_shape), pool.max_rows)
        row = -1
        if splittable(root_totals, impurity, 0, self.growth, self.stats.layout,
                      self.stats.inv_scale).size:
            row = int(pool.take(1)[0])
            pool.rows_to_zero()         # not zeroed: the histogram pass overwrites them
        steps.start_level(root_totals[0], row, pool)
        if row >= 0:
            none = np.empty(0, dtype=NODE_DTYPE)
            self._build(0, 1, {"node_to_build": np.array([row], dtype=NODE_DTYPE),
                               "zero_rows": none}, derive=False)
            steps.scan(pool.hist, row + 1, 1)
        level_start, n_level = 0, 1
        while True:
            n_split, n_scan, n_build, n_rows, _ = steps.level_step(pool).tolist()
            if n_split == 0:
                break
            feature, bitset, words, left_child = steps.level_splits(n_level)
            moves = (level_start, feature, left_sets(bitset, words), left_child)
            if n_scan == 0:
                backend.update_positions(X, self.positions, *moves)
                break
            level_start, n_level = level_start + n_level, 2 * n_split
            backend.move_and_build_histograms(X, self.positions, moves, stats, level_start,
                                              steps.node_to_build[:n_level], n_build,
                                              data.n_bins, pool.hist, **cells,
                                              built=steps.next_built(n_level))
            steps.scan(pool.hist, n_rows, n_scan)

    def compiled_tree(self, steps):
        """The TreeArrays of the tree the backend's compiled ``steps`` grew
        (:meth:`gputree.backends.base.Backend.level_steps` or
        ``best_first_steps``), :func:`gputree.growth.policy.finish_tree`'s
        assembled by them, with the rows they handed out of the pool
        counted there."""
        self.pool.reserve(0, steps.touched)
        values, impurity = self.backend.node_summaries(
            steps.grown_totals, *self.criterion_inputs(), self.stats.n_outputs,
            self.stats.n_classes)
        data = self.data
        return steps.tree(values, impurity, data.is_categorical, data.thresholds,
                          data.missing_bin)

    def _values(self, totals):
        """float64 (n_nodes,) output 0's value of nodes with host int64 ``totals``."""
        values, _ = self.backend.node_summaries(self.backend.upload(totals),
                                                *self.criterion_inputs(),
                                                self.stats.n_outputs, self.stats.n_classes)
        return self.backend.download_many({"values": values})["values"][:, 0, 0]

    def _root(self):
        """Host totals int64 (1, n_channels) and impurity float64 (1,) of the
        root, with one download."""
        stats, backend = self.stats.stats, self.backend
        totals = self.stats.totals       # summed where the statistics were built, or:
        if totals is None:
            # int64 column sums (exact in any order); one column at a time is 5x
            # faster in numpy than a reduction over axis 0 of the row-major array
            totals = backend.xp.stack([stats[:, c].sum()
                                       for c in range(stats.shape[1])])[None, :]
        _, impurity = backend.node_summaries(totals, *self.criterion_inputs(),
                                             self.stats.n_outputs, self.stats.n_classes)
        root = backend.download_many({"totals": totals, "impurity": impurity})
        return root["totals"], root["impurity"]

    def _scan_level(self, level_start, level_totals, candidates, previous):
        """Histograms and split scan of a level with one upload and one
        download: (hist_row int32 (n_level,), host dict of the candidates'
        best splits, see :meth:`_found`)."""
        layout, inv = self.stats.layout, self.stats.inv_scale
        count, _ = counts_and_weights(level_totals, layout, inv)
        hist_row, plan = _plan_histograms(level_totals.shape[0], candidates, count,
                                          previous, self.pool)
        return hist_row, self._scan_planned(level_start, level_totals, candidates, hist_row,
                                            plan)

    def _scan_planned(self, level_start, level_totals, candidates, hist_row, plan):
        """Build the histograms of ``plan`` (:func:`_plan_histograms`'s
        dict; ``hist_row`` int32 (n_level,) the nodes' pool rows) and scan
        the ``candidates``, with one upload and one download: the host dict
        of the candidates' best splits (:meth:`_found`)."""
        rows = hist_row[candidates]
        plan.update(self.partition, rows=rows, totals=level_totals[candidates],
                    zero_rows=self.pool.rows_to_zero(), **self._scan_choices(candidates, rows))
        if self.constrained is not None:
            plan["allowed"][rows] &= self.constrained.allowed(level_start + candidates)
            plan["scan_params"] = self.constrained.level_params(
                self.growth.criterion_params(), level_start + candidates, rows,
                plan["allowed"].shape[0])
        n_build = int(plan["node_to_build"].max()) + 1
        device = self.backend.upload_many(plan)
        # node_features reads the level's histograms before the scan: derive first
        choose = "order" in device or "draws" in device
        fuse = self.backend.derives_in_scan and not choose and plan["built_rows"].size > 0
        self._build(level_start, n_build, device, derive=not fuse)
        scan_params = device.get("scan_params", self.constants["params"])
        hist = self.pool.hist[:plan["allowed"].shape[0]]
        split_bin = None
        derive = ({"derive": (device["parent_rows"], device["built_rows"], self.pool.hist)}
                  if fuse else {})
        if choose:
            split_bin = self.backend.choose_node_features(
                hist, device["allowed"], device.get("order"), self.growth.max_features,
                device.get("draws"), self.constants["n_bins_non_missing"],
                self.constants["is_categorical"], self.data.missing_bin, self.constants["layout"])
        split = self.backend.find_best_splits(
            hist, self.constants["n_bins_non_missing"], self.constants["is_categorical"],
            device["allowed"], self.data.missing_bin, self.constants["layout"],
            self.constants["inv"], scan_params, split_bin=split_bin, **derive)
        return self.backend.download_many(self._found(split, device))

    def _scan_choices(self, candidates, rows):
        """The level's random choices by histogram row (:func:`_scan_mask`)."""
        return _scan_mask(self.rng, candidates, rows, self.growth, self.data.X_binned.shape[1])

    def _apply_partition(self):
        """Move the rows of the recorded splits' nodes to their children
        (after the last level; before, :meth:`_build` moves them)."""
        if not self.partition:
            return
        device = self.backend.upload_many(self.partition)
        self.backend.update_positions(self.data.X_binned, self.positions, self.partition_start,
                                      device["split_feature"], _split_sets(device),
                                      device["left_child"])
        self.partition = {}

    def _build(self, level_start, n_build, device, derive=True):
        """Zero the reused pool rows, apply the recorded splits to positions
        and build the planned histograms (``device``: the plan with the
        splits, uploaded), derive the larger siblings in their parents'
        rows (unless not ``derive``: the scan does, Backend.derives_in_scan)."""
        backend, hist = self.backend, self.pool.hist
        cells = self._cells()
        self._zero_reused(device)
        if self.partition:
            moves = (self.partition_start, device["split_feature"], _split_sets(device),
                     device["left_child"])
            self.partition = {}
            backend.move_and_build_histograms(self.data.X_binned, self.positions, moves,
                                              self.stats.stats, level_start,
                                              device["node_to_build"], n_build,
                                              self.data.n_bins, hist, **cells)
        else:
            counts = ({"bin_counts": self.data.bin_counts(backend)}
                      if level_start == 0 and self.stats.ones_last and backend.uses_bin_counts
                      else {})
            backend.build_histograms(self.data.X_binned, self.stats.stats, self.positions,
                                     level_start, device["node_to_build"], n_build,
                                     self.data.n_bins, out=hist, **counts, **cells)
        if derive:
            self._derive(device)

    def _cells(self):
        """The ``feature_bins`` keyword of the histogram primitives where the
        backend takes it (:attr:`gputree.backends.base.Backend.uses_feature_bins`)."""
        return ({"feature_bins": self.data.n_bins_non_missing}
                if self.backend.uses_feature_bins else {})

    def _zero_reused(self, device):
        """Zero the pool rows of the plan (``device``) that are reused, where
        the backend's histogram pass does not overwrite them."""
        if device["zero_rows"].size and not self.backend.overwrites_built_rows:
            self.backend.zero_rows(self.pool.hist, device["zero_rows"])

    def _derive(self, device):
        """The planned larger siblings, ``parent - built`` in their parents'
        pool rows (``device``: the uploaded plan)."""
        if device["built_rows"].size:
            hist = self.pool.hist
            self.backend.subtract_histograms(hist, device["parent_rows"], hist,
                                             device["built_rows"], device["parent_rows"],
                                             **self._cells())

    def _found(self, split, device):
        """What the host needs about the candidates (backend arrays, in the
        order of ``device["rows"]``): gain float64 (k,), feature int32 (k,),
        bitset uint32 (k, BITSET_WORDS), words uint32 (k, self.n_words) (a
        categorical split's bins from 256 on), missing_left uint8 (k,),
        left_sums int64 (k, n_channels) and child_impurity float64 (2k,), the
        (left, right) children's impurity (both the node itself where no
        split is valid)."""
        xp, rows, totals = self.backend.xp, device["rows"], device["totals"]
        gain, left = split.gain[rows], split.left_sums[rows]
        # (left, right) of each candidate in one array, filled in place (a
        # step's candidates are two: numpy's stack/where cost more than this)
        children = xp.empty((totals.shape[0], 2, totals.shape[1]), dtype=totals.dtype)
        children[:, 0] = left
        xp.subtract(totals, left, out=children[:, 1])
        xp.copyto(children, totals[:, None, :], where=~xp.isfinite(gain)[:, None, None])
        _, impurity = self.backend.node_summaries(children.reshape(-1, totals.shape[1]),
                                                  *self.criterion_inputs(),
                                                  self.stats.n_outputs, self.stats.n_classes)
        return {"gain": gain, "feature": split.feature[rows], "bitset": split.bitset[rows],
                "words": split.words[rows][:, :self.n_words],
                "missing_left": split.missing_left[rows], "left_sums": left,
                "child_impurity": impurity}

    def _record_level(self, table, found, accept, split_nodes, level_start, n_level):
        """Store the level's splits in the node table and keep them for the
        next partition."""
        feature, bitset, words, node_gain, missing_left = level_splits(
            found, accept, split_nodes, n_level, self.n_words)
        sets = left_sets(bitset, words)
        table.record_level(feature, sets, node_gain, missing_left)
        if split_nodes.size:
            self._record_partition(feature, sets, split_nodes, level_start, n_level)

    def _record_partition(self, feature, sets, split_nodes, level_start, n_level):
        """Keep the splits of level ``level_start`` (``feature`` int32
        (n_level,), their LeftSets ``sets``; ``split_nodes`` the
        level-relative nodes that split) for the next partition: their
        children are the next level, in the order of their parents."""
        left_child = np.full(n_level, -1, dtype=NODE_DTYPE)
        left_child[split_nodes] = level_start + n_level + 2 * np.arange(split_nodes.size)
        self.partition = {"split_feature": feature, "split_bitset": sets.bitset,
                          "split_words": sets.words, "split_start": sets.start,
                          "split_n_words": sets.n_words, "left_child": left_child}
        self.partition_start = level_start


def level_splits(found, accept, split_nodes, n_level, n_words):
    """A level's split arrays from the candidates' best splits ``found``
    (:meth:`_TreeGrowth._found`, host) of which ``accept`` split, as the
    level-relative ``split_nodes``: (feature int32 (n_level,), bitset uint32
    (n_level, BITSET_WORDS), words uint32 (n_level, n_words), gain float64
    (n_level,), missing_left uint8 (n_level,)); -1 / zeros elsewhere."""
    feature, bitset, node_gain, missing_left = no_splits(n_level)
    feature[split_nodes] = found["feature"][accept]
    bitset[split_nodes] = found["bitset"][accept]
    node_gain[split_nodes] = found["gain"][accept]
    missing_left[split_nodes] = found["missing_left"][accept]
    words = np.zeros((n_level, n_words), dtype=bitset.dtype)
    words[split_nodes] = found["words"][accept]
    return feature, bitset, words, node_gain, missing_left


def _max_level_nodes(n_samples, growth):
    """Upper bound on the nodes of one level (for memory estimates)."""
    by_depth = 2 ** min(growth.max_depth, 40)
    by_rows = max(1, n_samples // max(1, growth.min_samples_leaf))
    by_leaves = growth.max_leaf_nodes or by_rows
    return int(min(by_depth, by_rows, by_leaves))


def _split_sets(device):
    """The LeftSets of the recorded splits in the uploaded ``device`` dict."""
    return LeftSets(device["split_bitset"], device["split_words"], device["split_start"],
                    device["split_n_words"])


@dataclass
class _PreviousLevel:
    hist_row: np.ndarray       # int32 (n_level,): pool row of each node's histogram, or -1
    split_nodes: np.ndarray    # previous-level-relative nodes that split, in order


def _scan_mask(rng, candidates, rows, growth, n_features):
    """The level's random choices, by histogram row (max(rows) + 1 of them):
    ``allowed`` uint8 (rows, n_features), which (histogram row, feature)
    pairs the split scan tries; with the max_features soft limit ``order``
    int32 (rows, n_features), each candidate's features in drawn order (-1
    rows for the others); with random thresholds ``draws`` float64 (rows,
    n_features) (:func:`gputree.growth.policy.threshold_draws`).

    Feature subsets are drawn for the candidates (ascending), one after the
    other, as the other growers (:mod:`gputree.growth.median`,
    :mod:`gputree.growth.multiway`) draw them, then the thresholds: the
    random stream depends on the tree grown so far, not on the pool's row
    order nor on which sibling's histogram is built (the one with fewer
    rows), so a forest's tree, whose bootstrap rows are counted once, and a
    tree fitted on those rows repeated draw alike. Only candidates' rows
    (``rows``) are scanned; the other rows are all zeros and cost the scan
    nothing."""
    shape = (int(rows.max()) + 1, n_features)
    mask, order = feature_order(rng, candidates.size, n_features, growth.max_features)
    draws = threshold_draws(rng, candidates.size, n_features, growth)
    choices = {"allowed": np.zeros(shape, dtype=np.uint8)}
    choices["allowed"][rows] = mask
    if uses_soft_limit(growth, n_features):
        choices["order"] = np.full(shape, -1, dtype=np.int32)
        choices["order"][rows] = order
    if draws is not None:
        choices["draws"] = np.zeros(shape)
        choices["draws"][rows] = draws
    return choices


def _plan_histograms(n_level, candidates, count, previous, pool):
    """Host plan of a level's histograms in the pool: (hist_row int32
    (n_level,), the pool row of each node or -1; dict of int32 arrays
    node_to_build (n_level,), the build row of
    each node or -1, and built_rows, parent_rows (n_derived,): each derived
    sibling is ``parent - built`` in its parent's row).

    Level nodes come in sibling pairs (2j, 2j+1) whose parent is
    ``previous.split_nodes[j]`` (``previous`` None: the root, built alone).
    For each pair with a candidate, one histogram pass builds the child with
    fewer rows into a new row; a candidate sibling is then parent - built, in
    the parent's row. Rows of previous-level nodes that no child derives from
    are released first.
    """
    if previous is None:
        hist_row = pool.take(1)
        none = np.empty(0, dtype=NODE_DTYPE)
        return hist_row, {
            "node_to_build": hist_row.copy(), "built_rows": none, "parent_rows": none}
    pairs = np.unique(candidates // 2)
    left, right = 2 * pairs, 2 * pairs + 1
    left_smaller = count[left] <= count[right]
    smaller = np.where(left_smaller, left, right)
    larger = np.where(left_smaller, right, left)
    is_candidate = np.zeros(n_level, dtype=bool)
    is_candidate[candidates] = True
    derive = is_candidate[larger]
    parent_rows = previous.hist_row[previous.split_nodes[pairs[derive]]]
    pool.keep_only(parent_rows)
    hist_row = np.full(n_level, -1, dtype=NODE_DTYPE)
    hist_row[smaller] = pool.take(smaller.size)
    plan = {"node_to_build": hist_row.copy(), "built_rows": hist_row[smaller[derive]],
            "parent_rows": parent_rows.astype(NODE_DTYPE)}
    hist_row[larger[derive]] = parent_rows
    return hist_row, plan


