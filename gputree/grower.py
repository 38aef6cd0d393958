"""Level-wise tree growth: orchestration of the backend primitives.

Per level: one histogram pass for the nodes that must be built (the smaller
child of each split; the larger sibling is ``parent - smaller``), one split
scan for all candidate nodes, one partition pass that moves rows to their
child. The grower handles per-node arrays only; it never loops over samples.

Histograms live in the rows of a :class:`HistogramPool`; a larger sibling's
is derived in its parent's row, so the memory of a level's histograms is
reused by the next level instead of being held alongside it.
"""
import math
from dataclasses import dataclass, field

import numpy as np

from ._dtypes import BITSET_DTYPE, BITSET_WORDS, FLOAT_DTYPE, NODE_DTYPE, STAT_DTYPE
from .backends.splitset import last_left_bin
from .backends.formulas import PARAM_REG_ALPHA
from .criteria import (IMPURITY_SQUARED_ERROR, KIND_CLASSIFICATION, KIND_NEWTON,
                       LAYOUT_COUNT_CHANNEL, LAYOUT_IMPURITY, LAYOUT_KIND, LAYOUT_N_OUTPUTS,
                       LAYOUT_PER_OUTPUT, LAYOUT_VALUE_OFFSET, LAYOUT_WEIGHT_CHANNEL,
                       PARAM_MIN_SAMPLES_LEAF, PARAM_MIN_WEIGHT_LEAF, PARAM_REG_LAMBDA,
                       PARAMS_SIZE)
from .tree import TreeArrays

#: relative tolerance of "pure" and of min_impurity_decrease, in units of
#: the node's own statistics (:func:`_impurity_unit`), never absolute
_PURE = np.finfo(np.float64).eps
#: a histogram pool reserves rows for the largest possible level up front when
#: they take at most this many bytes (the CPU maps pages only once written;
#: the CUDA backend's memory check counts them already); beyond, it doubles
_POOL_RESERVE_BYTES = 2 ** 30


@dataclass
class GrowthParams:
    """Stopping rules of one tree (resolved to absolute numbers)."""

    max_depth: int = 2 ** 31 - 1
    min_samples_split: int = 2
    min_samples_leaf: int = 1
    min_weight_leaf: float = 0.0
    min_impurity_decrease: float = 0.0
    max_features: int = 0          # features tried per node; 0 means all
    max_leaf_nodes: int = 0        # 0 means unlimited
    reg_lambda: float = 0.0        # boosting: L2 on leaf values
    min_split_gain: float = 0.0    # boosting: gamma
    reg_alpha: float = 0.0         # boosting: L1 on leaf values
    constraints: object = None     # boosting: constraints.TreeConstraints

    def criterion_params(self):
        params = np.zeros(PARAMS_SIZE, dtype=FLOAT_DTYPE)
        params[PARAM_MIN_SAMPLES_LEAF] = self.min_samples_leaf
        params[PARAM_MIN_WEIGHT_LEAF] = self.min_weight_leaf
        params[PARAM_REG_LAMBDA] = self.reg_lambda
        params[PARAM_REG_ALPHA] = self.reg_alpha
        return params


@dataclass
class BinnedData:
    """Binned features on a backend plus the bin layout (host arrays)."""

    X_binned: object               # bin_dtype(n_bins) (n_samples, n_features), backend.binned_order
    n_bins: int
    n_bins_non_missing: np.ndarray  # int32 (n_features,)
    is_categorical: np.ndarray      # uint8 (n_features,)
    thresholds: np.ndarray          # float64 (n_features, max_bins - 1)
    #: bin_counts once computed (backend array)
    counts: object = field(default=None, repr=False, compare=False)

    @property
    def missing_bin(self):
        return self.n_bins - 1

    def bin_counts(self, backend):
        """int64 (n_features, n_bins) backend array: the rows in each bin of
        each feature (the root's histogram of a channel of ones), computed
        on first use."""
        if self.counts is None:
            n_samples = self.X_binned.shape[0]
            ones = backend.xp.ones((n_samples, 1), dtype=STAT_DTYPE)
            self.counts = backend.build_histograms(
                self.X_binned, ones, backend.row_zeros(n_samples, NODE_DTYPE), 0,
                backend.upload(np.zeros(1, dtype=NODE_DTYPE)), 1, self.n_bins)[0, :, :, 0]
        return self.counts


class _NodeTable:
    """Host-side growing arrays describing every node created so far."""

    def __init__(self, root_totals):
        self.totals = [np.asarray(root_totals, dtype=STAT_DTYPE)[None, :]]
        self.depth = [np.zeros(1, dtype=np.int32)]
        self.parent = [np.full(1, -1, dtype=NODE_DTYPE)]
        self.feature, self.bitset, self.gain, self.missing_left = [], [], [], []

    def add_children(self, parents, left_totals, depth):
        right_totals = self.totals_all()[parents] - left_totals
        pairs = np.stack([left_totals, right_totals], axis=1).reshape(-1, left_totals.shape[1])
        self.totals.append(pairs)
        self.depth.append(np.full(pairs.shape[0], depth, dtype=np.int32))
        self.parent.append(np.repeat(parents, 2).astype(NODE_DTYPE))

    def record_level(self, feature, bitset, gain, missing_left):
        self.feature.append(feature)
        self.bitset.append(bitset)
        self.gain.append(gain)
        self.missing_left.append(missing_left)

    def totals_all(self):
        return np.concatenate(self.totals)

    @property
    def n_nodes(self):
        return sum(t.shape[0] for t in self.totals)


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
    n_samples, n_features = data.X_binned.shape
    max_level_nodes = _max_level_nodes(n_samples, growth)
    backend.check_fit_memory(n_samples, n_features, stats.stats.shape[1], data.n_bins,
                             max_level_nodes, held_row_bytes)
    if pool is None:
        pool = HistogramPool(backend)
    pool.start_tree((n_features, data.n_bins, stats.stats.shape[1]), max_level_nodes)
    return _TreeGrowth(backend, data, stats, growth, rng, pool).run()


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
        table = _NodeTable(root_totals[0])
        level_start, n_level, previous, n_leaves = 0, 1, None, 1
        for depth in range(growth.max_depth + 1):
            level_totals = table.totals_all()[level_start:level_start + n_level]
            candidates = _splittable(level_totals, impurity, depth, growth, layout, inv)
            if candidates.size == 0:
                table.record_level(*_no_splits(n_level))
                break
            hist_row, found = self._scan_level(level_start, level_totals, candidates, previous)
            accept = _accept_splits(found["gain"], level_totals[candidates], growth, layout,
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
                                              self._values(table.totals[-1]).reshape(-1, 2))
            previous = _PreviousLevel(hist_row, split_nodes)
            level_start, n_level = level_start + n_level, 2 * split_nodes.size
        # the loop always ends by a break: at max_depth no node is splittable
        self._apply_partition()
        tree = _finish(self.backend, table, self.data, self.stats, self.criterion_inputs())
        if self.constrained is not None:
            self.constrained.clip_values(tree.value)
        return tree, self.positions

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
        count, _ = _counts_and_weights(level_totals, layout, inv)
        hist_row, hist_nodes, plan = _plan_histograms(level_totals.shape[0], candidates, count,
                                                      previous, self.pool)
        rows = hist_row[candidates]
        plan.update(self.partition, rows=rows, totals=level_totals[candidates],
                    zero_rows=self.pool.rows_to_zero(),
                    allowed=_scan_mask(self.rng, hist_nodes, candidates, rows,
                                       self.data.X_binned.shape[1], self.growth.max_features))
        if self.constrained is not None:
            plan["allowed"][rows] &= self.constrained.allowed(level_start + candidates)
            plan["scan_params"] = self.constrained.level_params(
                self.growth.criterion_params(), level_start + candidates, rows,
                plan["allowed"].shape[0])
        n_build = int(plan["node_to_build"].max()) + 1
        device = self.backend.upload_many(plan)
        self._build(level_start, n_build, device)
        scan_params = device.get("scan_params", self.constants["params"])
        split = self.backend.find_best_splits(
            self.pool.hist[:plan["allowed"].shape[0]], self.constants["n_bins_non_missing"],
            self.constants["is_categorical"], device["allowed"], self.data.missing_bin,
            self.constants["layout"], self.constants["inv"], scan_params)
        return hist_row, self.backend.download_many(self._found(split, device))

    def _apply_partition(self):
        """Move the rows of the recorded splits' nodes to their children
        (after the last level; before, :meth:`_build` moves them)."""
        if not self.partition:
            return
        device = self.backend.upload_many(self.partition)
        self.backend.update_positions(self.data.X_binned, self.positions, self.partition_start,
                                      device["split_feature"], device["split_bitset"],
                                      device["left_child"])
        self.partition = {}

    def _build(self, level_start, n_build, device):
        """Zero the reused pool rows, apply the recorded splits to positions
        and build the planned histograms (``device``: the plan with the
        splits, uploaded), derive the larger siblings in their parents'
        rows."""
        backend, hist = self.backend, self.pool.hist
        if device["zero_rows"].size and not backend.overwrites_built_rows:
            backend.zero_rows(hist, device["zero_rows"])
        if self.partition:
            moves = (self.partition_start, device["split_feature"], device["split_bitset"],
                     device["left_child"])
            self.partition = {}
            backend.move_and_build_histograms(self.data.X_binned, self.positions, moves,
                                              self.stats.stats, level_start,
                                              device["node_to_build"], n_build,
                                              self.data.n_bins, hist)
        else:
            counts = ({"bin_counts": self.data.bin_counts(backend)}
                      if level_start == 0 and self.stats.ones_last and backend.uses_bin_counts
                      else {})
            backend.build_histograms(self.data.X_binned, self.stats.stats, self.positions,
                                     level_start, device["node_to_build"], n_build,
                                     self.data.n_bins, out=hist, **counts)
        if device["built_rows"].size:
            backend.subtract_histograms(hist, device["parent_rows"], hist, device["built_rows"],
                                        device["parent_rows"])

    def _found(self, split, device):
        """What the host needs about the candidates (backend arrays, in the
        order of ``device["rows"]``): gain float64 (k,), feature int32 (k,),
        bitset uint32 (k, BITSET_WORDS), missing_left uint8 (k,), left_sums
        int64 (k, n_channels) and child_impurity float64 (2k,), the (left,
        right) children's impurity (both the node itself where no split is
        valid)."""
        xp, rows, totals = self.backend.xp, device["rows"], device["totals"]
        gain, left = split.gain[rows], split.left_sums[rows]
        valid = xp.isfinite(gain)[:, None]
        children = xp.stack([xp.where(valid, left, totals),
                             xp.where(valid, totals - left, totals)], axis=1)
        _, impurity = self.backend.node_summaries(children.reshape(-1, totals.shape[1]),
                                                  *self.criterion_inputs(),
                                                  self.stats.n_outputs, self.stats.n_classes)
        return {"gain": gain, "feature": split.feature[rows], "bitset": split.bitset[rows],
                "missing_left": split.missing_left[rows], "left_sums": left,
                "child_impurity": impurity}

    def _record_level(self, table, found, accept, split_nodes, level_start, n_level):
        """Store the level's splits in the node table and keep them for the
        next partition."""
        feature, bitset, node_gain, missing_left = _no_splits(n_level)
        feature[split_nodes] = found["feature"][accept]
        bitset[split_nodes] = found["bitset"][accept]
        node_gain[split_nodes] = found["gain"][accept]
        missing_left[split_nodes] = found["missing_left"][accept]
        table.record_level(feature, bitset, node_gain, missing_left)
        if split_nodes.size:
            left_child = np.full(n_level, -1, dtype=NODE_DTYPE)
            left_child[split_nodes] = level_start + n_level + 2 * np.arange(split_nodes.size)
            self.partition = {"split_feature": feature, "split_bitset": bitset,
                              "left_child": left_child}
            self.partition_start = level_start


def _max_level_nodes(n_samples, growth):
    """Upper bound on the nodes of one level (for memory estimates)."""
    by_depth = 2 ** min(growth.max_depth, 40)
    by_rows = max(1, n_samples // max(1, growth.min_samples_leaf))
    by_leaves = growth.max_leaf_nodes or by_rows
    return int(min(by_depth, by_rows, by_leaves))


@dataclass
class _PreviousLevel:
    hist_row: np.ndarray       # int32 (n_level,): pool row of each node's histogram, or -1
    split_nodes: np.ndarray    # previous-level-relative nodes that split, in order


class HistogramPool:
    """The histograms of the nodes being grown: rows of one int64 array
    ``hist`` (capacity, n_features, n_bins, n_channels) on the backend.

    A larger child's histogram is derived in place, in its parent's row, so a
    level takes new rows only for the children it builds, once the rows of
    the nodes it no longer needs are released: a level holds its own
    histograms, not also a copy of the previous level's. Free rows are
    handed out lowest first, so the rows ever used, ``hist[:n_touched]``,
    stay few. The array starts with rows for the most nodes a level can have
    when that is at most ``_POOL_RESERVE_BYTES``; otherwise, when a level
    needs more rows than it has, it doubles and the used rows are copied.

    One pool can serve every tree of a fit (forests and boosting pass theirs
    to :func:`grow_tree`): the array is then allocated, and grows, about once
    per fit rather than once per tree; so are the rows' positions.
    """

    def __init__(self, backend):
        self.backend = backend
        self.row_shape = None
        self.positions = None

    def row_positions(self, n_samples):
        """Zeroed int32 (n_samples,) positions for the tree starting: one
        array reused by the pool's trees (a tree's positions serve its
        caller until the next tree starts)."""
        self.positions = self.backend.row_zeros(n_samples, NODE_DTYPE, reuse=self.positions)
        return self.positions

    def start_tree(self, row_shape, max_rows):
        """Release every row, for a tree whose histograms have ``row_shape``
        (n_features, n_bins, n_channels) and whose levels have at most
        ``max_rows`` nodes."""
        if row_shape != self.row_shape:
            self.row_shape = row_shape
            self.hist = self.backend.zeros((0,) + row_shape, STAT_DTYPE)
            self.in_use = np.zeros(0, dtype=bool)
            self.n_touched = 0
        self.in_use[:] = False
        self.to_zero = []
        self.max_rows = max_rows
        row_bytes = math.prod(row_shape) * np.dtype(STAT_DTYPE).itemsize
        if self.in_use.size < max_rows and max_rows * row_bytes <= _POOL_RESERVE_BYTES:
            self._grow(max_rows)

    def keep_only(self, rows):
        """Release every row except ``rows``."""
        self.in_use[:] = False
        self.in_use[rows] = True

    def take(self, n):
        """``n`` free rows, marked in use: int32 (n,), ascending. Rows that
        held a histogram before are zeroed by the caller, who gets them from
        :meth:`rows_to_zero`."""
        free = np.flatnonzero(~self.in_use)
        if free.size < n:
            _check_histogram_memory(self.backend, n - free.size, self.row_shape)
            self._grow(self.in_use.size + n - free.size)
            free = np.flatnonzero(~self.in_use)
        rows = free[:n].astype(NODE_DTYPE)
        self.to_zero.append(rows[rows < self.n_touched])
        self.in_use[rows] = True
        if n:
            self.n_touched = max(self.n_touched, int(rows[-1]) + 1)
        return rows

    def rows_to_zero(self):
        """int32 rows handed out by :meth:`take` since the last call that
        held a histogram before (they must be zeroed before building)."""
        rows = np.concatenate(self.to_zero) if self.to_zero else np.empty(0, NODE_DTYPE)
        self.to_zero = []
        return rows.astype(NODE_DTYPE)

    def _grow(self, n_rows):
        capacity = max(n_rows, min(2 * self.in_use.size, self.max_rows))
        hist = self.backend.zeros((capacity,) + self.row_shape, STAT_DTYPE)
        hist[:self.n_touched] = self.hist[:self.n_touched]
        self.hist = hist
        self.in_use = np.concatenate([self.in_use,
                                      np.zeros(capacity - self.in_use.size, dtype=bool)])


def _check_histogram_memory(backend, n_new_rows, row_shape):
    """Raise MemoryError, saying what to change, when ``n_new_rows`` more
    histograms of ``row_shape`` (n_features, n_bins, n_channels) int64 do not
    fit in the memory the backend reports free (unknown: no check)."""
    free = backend.free_memory_bytes()
    needed = n_new_rows * math.prod(row_shape) * np.dtype(STAT_DTYPE).itemsize
    if free is None or needed <= free:
        return
    n_features, n_bins, n_channels = row_shape
    raise MemoryError(
        f"The histograms of this tree level need {needed / 2**20:.0f} MiB more "
        f"({n_new_rows} nodes x {n_features} features x {n_bins} bins x {n_channels} "
        f"channels x 8 bytes) but {backend.name} has {free / 2**20:.0f} MiB free. Lower "
        "max_bins (histograms grow with it), limit max_depth / max_leaf_nodes, or raise "
        "min_samples_leaf.")


def _no_splits(n_level):
    return (np.full(n_level, -1, dtype=np.int32),
            np.zeros((n_level, BITSET_WORDS), dtype=BITSET_DTYPE),
            np.zeros(n_level, dtype=FLOAT_DTYPE), np.zeros(n_level, dtype=np.uint8))


def _counts_and_weights(totals, layout, inv):
    """Per-node (count, weight) float64 from int64 totals (host, vectorised)."""
    if layout[LAYOUT_KIND] == KIND_NEWTON:
        h = totals[:, 1:2 * layout[LAYOUT_N_OUTPUTS]:2] * inv[1:2 * layout[LAYOUT_N_OUTPUTS]:2]
        weight = h.min(axis=1)
    elif layout[LAYOUT_WEIGHT_CHANNEL] >= 0:
        c = layout[LAYOUT_WEIGHT_CHANNEL]
        weight = totals[:, c] * inv[c]
    else:
        weight = totals[:, :layout[LAYOUT_PER_OUTPUT]].sum(axis=1) * inv[0]
    c = layout[LAYOUT_COUNT_CHANNEL]
    count = totals[:, c].astype(FLOAT_DTYPE) if c >= 0 else weight
    return count, weight


def _splittable(totals, impurity, depth, growth, layout, inv):
    """Level-relative indices of nodes that may still split (int64)."""
    if depth >= growth.max_depth:
        return np.empty(0, dtype=np.int64)
    count, weight = _counts_and_weights(totals, layout, inv)
    ok = ((count >= growth.min_samples_split)
          & (count >= 2 * growth.min_samples_leaf)
          & (weight >= 2 * growth.min_weight_leaf))
    if layout[LAYOUT_KIND] != KIND_NEWTON:
        ok &= impurity > _PURE * _impurity_unit(totals, layout, inv)
    return np.flatnonzero(ok)


def _impurity_unit(totals, layout, inv):
    """float64 (n_nodes,): the size of a node's impurity's terms, so that
    tolerances scale with the data: 1 for classification (impurities are
    unitless), the mean of w*y**2 for squared error (its impurity is a
    difference of such terms), the mean of |w*y| + |w*y*log y| for poisson."""
    if layout[LAYOUT_KIND] == KIND_CLASSIFICATION:
        return np.ones(totals.shape[0], dtype=FLOAT_DTYPE)
    off, n_out = layout[LAYOUT_VALUE_OFFSET], layout[LAYOUT_N_OUTPUTS]
    _, weight = _counts_and_weights(totals, layout, inv)
    sums = np.abs(totals[:, off:off + 2 * n_out] * inv[off:off + 2 * n_out])
    squared = layout[LAYOUT_IMPURITY] == IMPURITY_SQUARED_ERROR
    terms = sums[:, 1::2] if squared else sums[:, 0::2] + sums[:, 1::2]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(weight > 0, terms.sum(axis=1) / (weight * n_out), 0.0)


def _accept_splits(gain, totals, growth, layout, inv, root_totals, n_leaves):
    """Which candidates split: valid gain, min_impurity_decrease (weighted as
    scikit-learn does) or gamma, then the max_leaf_nodes budget by weighted
    impurity decrease."""
    valid = np.isfinite(gain)
    # budget priority: what the split removes from the whole tree's impurity
    # (node gain weighted by the node's weight share, as scikit-learn's
    # best-first growth ranks splits); newton gains are loss reductions already
    decrease = np.where(valid, gain, 0.0)
    if layout[LAYOUT_KIND] == KIND_NEWTON:
        valid &= gain > growth.min_split_gain
    else:
        _, weight = _counts_and_weights(totals, layout, inv)
        _, root_weight = _counts_and_weights(root_totals[None, :], layout, inv)
        share = weight / root_weight[0]
        decrease = decrease * share
        tolerance = _PURE * _impurity_unit(totals, layout, inv) * share
        valid &= decrease + tolerance >= growth.min_impurity_decrease
    if growth.max_leaf_nodes:
        budget = max(growth.max_leaf_nodes - n_leaves, 0)
        order = np.argsort(-np.where(valid, decrease, -np.inf), kind="stable")
        keep = np.zeros_like(valid)
        keep[order[:budget]] = True
        valid &= keep
    return valid


def _feature_mask(rng, n_nodes, n_features, max_features):
    """uint8 (n_nodes, n_features): the random feature subset of each node."""
    if not max_features or max_features >= n_features:
        return np.ones((n_nodes, n_features), dtype=np.uint8)
    ranks = rng.random_sample((n_nodes, n_features)).argsort(axis=1)
    mask = np.zeros((n_nodes, n_features), dtype=np.uint8)
    np.put_along_axis(mask, ranks[:, :max_features], 1, axis=1)
    return mask


def _scan_mask(rng, hist_nodes, candidates, rows, n_features, max_features):
    """uint8 (max(rows) + 1, n_features): which (histogram row, feature)
    pairs the split scan tries. Feature subsets are drawn for every node
    that owns a histogram (``hist_nodes``, ascending), so the random stream
    does not depend on the pool's row order; only candidates' rows (``rows``)
    are scanned, the other rows are all zeros and cost the scan nothing."""
    drawn = _feature_mask(rng, hist_nodes.size, n_features, max_features)
    mask = np.zeros((int(rows.max()) + 1, n_features), dtype=np.uint8)
    mask[rows] = drawn[np.searchsorted(hist_nodes, candidates)]
    return mask


def _plan_histograms(n_level, candidates, count, previous, pool):
    """Host plan of a level's histograms in the pool: (hist_row int32
    (n_level,), the pool row of each node or -1; hist_nodes int64, ascending
    level-relative nodes that own a row: the candidates and the built
    children; dict of int32 arrays node_to_build (n_level,), the build row of
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
        return hist_row, np.zeros(1, dtype=np.int64), {
            "node_to_build": hist_row.copy(), "built_rows": none, "parent_rows": none}
    pairs = np.unique(candidates // 2)
    left, right = 2 * pairs, 2 * pairs + 1
    left_smaller = count[left] <= count[right]
    smaller = np.where(left_smaller, left, right)
    larger = np.where(left_smaller, right, left)
    owns = np.zeros(n_level, dtype=bool)
    owns[candidates] = True
    derive = owns[larger]
    owns[smaller] = True
    parent_rows = previous.hist_row[previous.split_nodes[pairs[derive]]]
    pool.keep_only(parent_rows)
    hist_row = np.full(n_level, -1, dtype=NODE_DTYPE)
    hist_row[smaller] = pool.take(smaller.size)
    plan = {"node_to_build": hist_row.copy(), "built_rows": hist_row[smaller[derive]],
            "parent_rows": parent_rows.astype(NODE_DTYPE)}
    hist_row[larger[derive]] = parent_rows
    return hist_row, np.flatnonzero(owns), plan


def _finish(backend, table, data, stats, criterion_inputs):
    """Assemble TreeArrays (host) from the node table; leaf values and
    impurity from the nodes' totals with one upload and one download
    (``criterion_inputs``: layout, inv, params on the backend)."""
    totals = table.totals_all()
    n_nodes = totals.shape[0]
    values, impurity = backend.node_summaries(backend.upload(totals), *criterion_inputs,
                                              stats.n_outputs, stats.n_classes)
    summaries = backend.download_many({"values": values, "impurity": impurity})
    feature = np.concatenate(table.feature)[:n_nodes]
    bitset = np.concatenate(table.bitset)[:n_nodes]
    parent = np.concatenate(table.parent)
    left_child = np.full(n_nodes, -1, dtype=NODE_DTYPE)
    # children are created in pairs, in the order their parents split
    first_children = np.flatnonzero(parent >= 0)[::2]
    left_child[parent[first_children]] = first_children
    internal = np.flatnonzero(feature >= 0)
    count, weight = _counts_and_weights(totals, stats.layout, stats.inv_scale)
    is_categorical = np.zeros(n_nodes, dtype=np.uint8)
    is_categorical[internal] = data.is_categorical[feature[internal]]
    return TreeArrays(
        feature=feature.astype(np.int32), bitset=bitset, left_child=left_child,
        threshold=_real_thresholds(feature, bitset, is_categorical, data),
        missing_left=np.concatenate(table.missing_left)[:n_nodes],
        is_categorical=is_categorical,
        value=summaries["values"], impurity=summaries["impurity"],
        n_node_samples=np.rint(count).astype(np.int64),
        weighted_n_node_samples=weight.astype(FLOAT_DTYPE),
        gain=np.concatenate(table.gain)[:n_nodes],
        depth=np.concatenate(table.depth), parent=parent)


def _real_thresholds(feature, bitset, is_categorical, data):
    """float64 (n_nodes,): x <= threshold goes left for numerical splits;
    NaN for leaves and categorical splits."""
    threshold = np.full(feature.shape[0], np.nan, dtype=FLOAT_DTYPE)
    numerical = np.flatnonzero((feature >= 0) & (is_categorical == 0))
    if numerical.size:
        last_bin = last_left_bin(bitset[numerical], data.missing_bin)
        padded = np.concatenate([data.thresholds, np.full((data.thresholds.shape[0], 1), np.inf)], axis=1)
        threshold[numerical] = padded[feature[numerical], last_bin]
    return threshold
