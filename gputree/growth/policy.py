"""What every grower shares about nodes and splits, on the host and per node
(never per row): the node table of a growing tree and best-first growth's
frontier of waiting leaves, which nodes may still
split and which splits are accepted (minimum sizes, impurity decrease,
``max_leaf_nodes``), the random feature subset of a node, and the assembly
of the finished :class:`gputree.tree.TreeArrays`."""
import heapq

import numpy as np

from .._dtypes import BITSET_DTYPE, BITSET_WORDS, FLOAT_DTYPE, NODE_DTYPE, STAT_DTYPE
from ..backends.splitset import last_left_bin
from ..criteria import (IMPURITY_SQUARED_ERROR, KIND_CLASSIFICATION, KIND_NEWTON,
                        LAYOUT_COUNT_CHANNEL, LAYOUT_IMPURITY, LAYOUT_KIND, LAYOUT_N_OUTPUTS,
                        LAYOUT_PER_OUTPUT, LAYOUT_VALUE_OFFSET, LAYOUT_WEIGHT_CHANNEL)
from ..tree import LeftSets, TreeArrays


#: relative tolerance of "pure" and of min_impurity_decrease, in units of
#: the node's own statistics (:func:`impurity_unit`), never absolute
_PURE = np.finfo(np.float64).eps


class Waiting:
    """The frontier of best-first growth (:mod:`.bestfirst`, and
    :mod:`.median`'s): leaves whose best split may be taken, by priority
    (highest first; equal: lowest node id), with what splitting needs."""

    def __init__(self):
        self.heap = []
        self.split = {}      # node id -> dict of its best split (host)

    def push(self, node, priority, split):
        heapq.heappush(self.heap, (-float(priority), int(node)))
        self.split[int(node)] = split

    def pop(self):
        """(node id, its split dict)."""
        _, node = heapq.heappop(self.heap)
        return node, self.split.pop(node)

    def __len__(self):
        return len(self.heap)


class NodeTable:
    """Host-side growing arrays describing every node created so far."""

    def __init__(self, root_totals):
        root = np.asarray(root_totals, dtype=STAT_DTYPE)
        # every node's totals in the first rows of a buffer that doubles
        # when full (a best-first step adds two nodes: no copy of every
        # node's totals each step); rows once written never change, so views
        # of :attr:`totals` stay valid
        self._buffer = np.empty((8, root.shape[0]), dtype=STAT_DTYPE)
        self._buffer[0] = root
        self._n_nodes = 1
        self.depth = [np.zeros(1, dtype=np.int32)]
        self.parent = [np.full(1, -1, dtype=NODE_DTYPE)]
        self.feature, self.bitset, self.gain, self.missing_left = [], [], [], []

    @property
    def totals(self):
        """int64 (n_nodes, C): every node's totals, in node order (a view)."""
        return self._buffer[:self._n_nodes]

    def add_children(self, parents, left_totals, depth):
        """Two children of each of ``parents`` (int (p,)), left then right,
        with the left ones' totals ``left_totals`` int64 (p, C), at ``depth``."""
        n, n_new = self._n_nodes, 2 * parents.shape[0]
        if n + n_new > self._buffer.shape[0]:
            buffer = np.empty((max(2 * self._buffer.shape[0], n + n_new),
                               self._buffer.shape[1]), dtype=STAT_DTYPE)
            buffer[:n] = self._buffer[:n]
            self._buffer = buffer
        new = self._buffer[n:n + n_new]
        new[0::2] = left_totals
        np.subtract(self._buffer[parents], left_totals, out=new[1::2])
        self._n_nodes = n + n_new
        self.depth.append(np.full(n_new, depth, dtype=np.int32))
        self.parent.append(np.repeat(parents.astype(NODE_DTYPE, copy=False), 2))

    def record_level(self, feature, bitset, gain, missing_left):
        """The level's splits: ``bitset`` their LeftSets (host), or a
        bitset alone (uint32 (n_level, BITSET_WORDS): no words beyond)."""
        self.feature.append(feature)
        self.bitset.append(bitset if isinstance(bitset, LeftSets)
                           else LeftSets.of_bitset(bitset))
        self.gain.append(gain)
        self.missing_left.append(missing_left)

    def left_sets(self, n_nodes):
        """The LeftSets of the first ``n_nodes`` nodes, level after level."""
        sets = self.bitset
        offsets = np.cumsum([0] + [s.words.shape[0] for s in sets])[:-1]
        return LeftSets(np.concatenate([s.bitset for s in sets])[:n_nodes],
                        np.concatenate([s.words for s in sets]),
                        np.concatenate([s.start + off for s, off in zip(sets, offsets)])[:n_nodes],
                        np.concatenate([s.n_words for s in sets])[:n_nodes])

    def totals_all(self):
        """int64 (n_nodes, C): every node's totals (the caller's to keep)."""
        return self.totals.copy()

    @property
    def n_nodes(self):
        return self._n_nodes


def no_splits(n_level):
    return (np.full(n_level, -1, dtype=np.int32),
            np.zeros((n_level, BITSET_WORDS), dtype=BITSET_DTYPE),
            np.zeros(n_level, dtype=FLOAT_DTYPE), np.zeros(n_level, dtype=np.uint8))


def counts_and_weights(totals, layout, inv):
    """Per-node (count, weight) float64 from int64 totals (host, vectorised)."""
    if layout[LAYOUT_KIND] == KIND_NEWTON and layout[LAYOUT_N_OUTPUTS] == 1:
        weight = totals[:, 1] * inv[1]      # the min below over one column, without its calls
    elif layout[LAYOUT_KIND] == KIND_NEWTON:
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


def splittable(totals, impurity, depth, growth, layout, inv):
    """Level-relative indices of nodes that may still split (int64)."""
    if depth >= growth.max_depth:
        return np.empty(0, dtype=np.int64)
    count, weight = counts_and_weights(totals, layout, inv)
    ok = ((count >= growth.min_samples_split)
          & (count >= 2 * growth.min_samples_leaf)
          & (weight >= 2 * growth.min_weight_leaf))
    if layout[LAYOUT_KIND] != KIND_NEWTON:
        ok &= impurity > _PURE * impurity_unit(totals, layout, inv)
    return np.flatnonzero(ok)


def impurity_unit(totals, layout, inv):
    """float64 (n_nodes,): the size of a node's impurity's terms, so that
    tolerances scale with the data: 1 for classification (impurities are
    unitless), the mean of w*y**2 for squared error (its impurity is a
    difference of such terms), the mean of |w*y| + |w*y*log y| for poisson."""
    if layout[LAYOUT_KIND] == KIND_CLASSIFICATION:
        return np.ones(totals.shape[0], dtype=FLOAT_DTYPE)
    off, n_out = layout[LAYOUT_VALUE_OFFSET], layout[LAYOUT_N_OUTPUTS]
    _, weight = counts_and_weights(totals, layout, inv)
    sums = np.abs(totals[:, off:off + 2 * n_out] * inv[off:off + 2 * n_out])
    squared = layout[LAYOUT_IMPURITY] == IMPURITY_SQUARED_ERROR
    terms = sums[:, 1::2] if squared else sums[:, 0::2] + sums[:, 1::2]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(weight > 0, terms.sum(axis=1) / (weight * n_out), 0.0)


def accept_splits(gain, totals, growth, layout, inv, root_totals, n_leaves):
    """Which candidates split: valid gain, min_impurity_decrease (weighted as
    scikit-learn does) or gamma, then the max_leaf_nodes budget by weighted
    impurity decrease."""
    valid, decrease = split_priority(gain, totals, growth, layout, inv, root_totals)
    if growth.max_leaf_nodes:
        budget = max(growth.max_leaf_nodes - n_leaves, 0)
        order = np.argsort(-np.where(valid, decrease, -np.inf), kind="stable")
        keep = np.zeros_like(valid)
        keep[order[:budget]] = True
        valid &= keep
    return valid


def split_priority(gain, totals, growth, layout, inv, root_totals):
    """(valid bool (k,), priority float64 (k,)) of candidates with best
    split ``gain`` float64 (k,) and int64 ``totals`` (k, C): whether the
    split may be taken (a finite gain, min_impurity_decrease weighted as
    scikit-learn weighs it, or boosting's gamma) and what it removes from
    the whole tree's impurity (the gain weighted by the node's weight share,
    scikit-learn's best-first priority; for the Newton criterion the gain
    itself, a loss reduction already: LightGBM's and XGBoost's)."""
    valid = np.isfinite(gain)
    # budget priority: what the split removes from the whole tree's impurity
    # (node gain weighted by the node's weight share, as scikit-learn's
    # best-first growth ranks splits); newton gains are loss reductions already
    decrease = np.where(valid, gain, 0.0)
    if layout[LAYOUT_KIND] == KIND_NEWTON:
        valid &= gain > growth.min_split_gain
    else:
        _, weight = counts_and_weights(totals, layout, inv)
        _, root_weight = counts_and_weights(root_totals[None, :], layout, inv)
        share = weight / root_weight[0]
        decrease = decrease * share
        tolerance = _PURE * impurity_unit(totals, layout, inv) * share
        valid &= decrease + tolerance >= growth.min_impurity_decrease
    return valid, decrease


def feature_mask(rng, n_nodes, n_features, max_features):
    """uint8 (n_nodes, n_features): the random feature subset of each node."""
    return feature_order(rng, n_nodes, n_features, max_features)[0]


def feature_order(rng, n_nodes, n_features, max_features):
    """(mask uint8 (n_nodes, n_features), the random feature subset of each
    node: its first ``max_features`` features in order; order int32
    (n_nodes, n_features), every node's features in a random order, or None
    when the subset is every feature: nothing drawn)."""
    if not max_features or max_features >= n_features:
        return np.ones((n_nodes, n_features), dtype=np.uint8), None
    order = rng.random_sample((n_nodes, n_features)).argsort(axis=1).astype(np.int32)
    mask = np.zeros((n_nodes, n_features), dtype=np.uint8)
    np.put_along_axis(mask, order[:, :max_features], 1, axis=1)
    return mask, order


def threshold_draws(rng, n_nodes, n_features, growth):
    """float64 (n_nodes, n_features) in [0, 1): each (node, feature)'s draw
    of its random threshold (:mod:`gputree.backends.node_features`), drawn
    after the nodes' feature subsets; None (nothing drawn) unless
    ``growth.random_thresholds``."""
    if not growth.random_thresholds:
        return None
    return rng.random_sample((n_nodes, n_features))


def uses_soft_limit(growth, n_features):
    """Whether the growth applies the max_features soft limit: asked for,
    and fewer features drawn than there are."""
    return growth.soft_max_features and 0 < growth.max_features < n_features


def finish_tree(backend, table, data, stats, criterion_inputs):
    """Assemble TreeArrays (host) from the node table; leaf values and
    impurity from the nodes' totals with one upload and one download
    (``criterion_inputs``: layout, inv, params on the backend)."""
    totals = table.totals_all()
    n_nodes = totals.shape[0]
    values, impurity = backend.node_summaries(backend.upload(totals), *criterion_inputs,
                                              stats.n_outputs, stats.n_classes)
    summaries = backend.download_many({"values": values, "impurity": impurity})
    feature = np.concatenate(table.feature)[:n_nodes]
    sets = table.left_sets(n_nodes)
    bitset = sets.bitset
    parent = np.concatenate(table.parent)
    left_child = np.full(n_nodes, -1, dtype=NODE_DTYPE)
    # children are created in pairs, in the order their parents split
    first_children = np.flatnonzero(parent >= 0)[::2]
    left_child[parent[first_children]] = first_children
    internal = np.flatnonzero(feature >= 0)
    count, weight = counts_and_weights(totals, stats.layout, stats.inv_scale)
    is_categorical = np.zeros(n_nodes, dtype=np.uint8)
    is_categorical[internal] = data.is_categorical[feature[internal]]
    return TreeArrays(
        feature=feature.astype(np.int32), bitset=bitset, left_child=left_child,
        threshold=real_thresholds(feature, bitset, is_categorical, data),
        missing_left=np.concatenate(table.missing_left)[:n_nodes],
        is_categorical=is_categorical,
        value=summaries["values"], impurity=summaries["impurity"],
        n_node_samples=np.rint(count).astype(np.int64),
        weighted_n_node_samples=weight.astype(FLOAT_DTYPE),
        gain=np.concatenate(table.gain)[:n_nodes],
        depth=np.concatenate(table.depth), parent=parent, cat_words=sets.words,
        cat_start=np.where(sets.n_words > 0, sets.start, 0), cat_n_words=sets.n_words)


def real_thresholds(feature, bitset, is_categorical, data):
    """float64 (n_nodes,): x <= threshold goes left for numerical splits;
    NaN for leaves and categorical splits."""
    threshold = np.full(feature.shape[0], np.nan, dtype=FLOAT_DTYPE)
    numerical = np.flatnonzero((feature >= 0) & (is_categorical == 0))
    if numerical.size:
        last_bin = last_left_bin(bitset[numerical], data.missing_bin)
        # a last left bin past the feature's thresholds (or -1, counted from
        # the end) is the inf of a padded column: indexed without a per-tree
        # copy of the thresholds with that column
        inside = (last_bin >= 0) & (last_bin < data.thresholds.shape[1])
        threshold[numerical] = np.where(
            inside, data.thresholds[feature[numerical], np.where(inside, last_bin, 0)], np.inf)
    return threshold
