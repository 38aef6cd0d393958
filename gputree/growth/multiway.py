"""Multiway splits (ID3 / C4.5): growth of a classification tree in which a
categorical feature splits a node into one child per category present there.

Level by level, on any backend: one histogram pass for the level's candidate
nodes, the split scan in multiway mode (``layout[LAYOUT_MULTIWAY]``,
:mod:`gputree.backends.scan`: a categorical feature's one candidate is its
m-way partition, scored from the histogram; numerical features keep their
binary threshold splits, scored by the same measure), then the choice of each
node's split on the host and the move of the rows to their children. Unlike
:mod:`gputree.growth.levelwise` (binary splits: the larger sibling's histogram is the
parent's minus the smaller's), every candidate's histogram is built from its
rows, and the host reads the chosen features' histograms (k, n_bins, C) to
know the children of each multiway split; ``max_depth`` counts a multiway
split as one level, and ``max_leaf_nodes`` and surrogate splits are refused.

* ``criterion="entropy"`` (ID3): the split of largest information gain.
* ``criterion="gain_ratio"`` (C4.5): the split of largest gain ratio (gain /
  entropy of the partition) among the candidates whose information gain is at
  least the average gain of the node's candidates with positive gain, less a
  relative 1e-9 (Quinlan's rule, which keeps a split with a tiny partition
  entropy from winning on a tiny gain); no split when no gain is positive.

Missing values, and categories absent from the node, go to the child of most
training weight (the lowest category on ties); at training the node's
missing rows join that child. A categorical feature is not tried again below
a multiway split on it (it is constant there). The finished tree is stored as
binary nodes (:mod:`gputree.tree` describes the chain a multiway split
becomes), so prediction, export and the scikit-learn ``tree_`` read it as
they read any tree.
"""
import numpy as np

from .._dtypes import (BITMAP_BINS, BITSET_WORDS, FLOAT_DTYPE, NODE_DTYPE, STAT_DTYPE,
                       WORD_COUNT_DTYPE, WORD_START_DTYPE, extension_words)
from ..backends import splitset
from ..criteria import LAYOUT_MULTIWAY, LAYOUT_SPLIT_INFO
from ..tree import TreeArrays, compact
from .policy import (accept_splits, counts_and_weights, feature_mask, real_thresholds,
                     splittable)

#: the criteria a multiway tree grows with
MULTIWAY_CRITERIA = ("entropy", "log_loss", "gain_ratio")
#: relative slack of C4.5's at-least-average test
AVERAGE_TOLERANCE = 1e-9


def check_multiway(estimator):
    """ValueError naming the parameter and the fix when ``multiway=True``
    meets options it does not support."""
    if estimator.multiway is not True:
        raise ValueError(f"multiway must be True or False, got {estimator.multiway!r}.")
    if estimator.criterion not in MULTIWAY_CRITERIA:
        raise ValueError(f"multiway=True needs criterion='entropy' (ID3) or 'gain_ratio' "
                         f"(C4.5), got criterion={estimator.criterion!r}.")
    if estimator.max_leaf_nodes is not None:
        raise ValueError("max_leaf_nodes is not supported with multiway=True (a multiway "
                         "split adds several leaves at once); use max_depth or "
                         "min_samples_leaf, or set max_leaf_nodes=None.")
    if estimator.missing_strategy != "default":
        raise ValueError("missing_strategy='surrogate' is not supported with multiway=True "
                         "(missing values go to the heaviest child); use "
                         "missing_strategy='default'.")
    if getattr(estimator, "splitter", "best") != "best":
        raise ValueError("splitter='random' is not supported with multiway=True (a multiway "
                         "split has no threshold to draw); use splitter='best'.")


def choose_splits(gain, info, ratio):
    """Each node's split from every feature's candidate (host arrays).

    gain float64 (n_nodes, n_features): the score (gain ratio or information
    gain), -inf where a feature has no split; info float64 (same shape): the
    information gain; ratio: apply C4.5's at-least-average-gain rule.
    Returns (feature int32 (n_nodes,), score float64 (n_nodes,), -inf where
    no candidate qualifies); ties go to the lowest feature.
    """
    score = gain.copy()
    if ratio:
        positive = np.isfinite(gain) & (info > 0.0)
        total = np.zeros(gain.shape[0], dtype=FLOAT_DTYPE)
        for f in range(gain.shape[1]):      # a fixed order: the same sum everywhere
            total += np.where(positive[:, f], info[:, f], 0.0)
        count = positive.sum(axis=1)
        average = np.where(count > 0, total / np.maximum(count, 1), np.inf)
        # C4.5's "gain >= average - epsilon": equal gains stay eligible
        # whatever the rounding of their mean
        floor = average - AVERAGE_TOLERANCE * np.abs(average)
        score[~(positive & (info >= floor[:, None]))] = -np.inf
    feature = np.argmax(score, axis=1).astype(np.int32)
    return feature, score[np.arange(score.shape[0]), feature]


class _Node:
    """One node of the multiway tree (host bookkeeping)."""

    def __init__(self, totals, depth, used):
        self.totals, self.depth, self.used = totals, depth, used
        self.feature, self.gain, self.children = -1, 0.0, []
        self.bitset, self.missing_left = None, 0   # binary splits
        self.child_bins = None                    # multiway: bin of each child


def grow_multiway(backend, data, stats, growth, rng, pool=None, held_row_bytes=0):
    """Grow one multiway tree (arguments as :func:`gputree.growth.levelwise.grow_tree`;
    ``pool`` and ``held_row_bytes`` unused: every candidate's histograms are
    built anew; ``growth.max_depth`` counts multiway splits as one level).
    Returns (TreeArrays, None)."""
    layout = stats.layout.copy()
    layout[LAYOUT_MULTIWAY] = 1
    growth_of = _Growth(backend, data, stats, growth, rng, layout)
    return growth_of.run(), None


class _Growth:
    """The growth of one multiway tree, level by level (host bookkeeping per
    node; rows and histograms on the backend)."""

    def __init__(self, backend, data, stats, growth, rng, layout):
        self.backend, self.data, self.stats, self.growth, self.rng = (
            backend, data, stats, growth, rng)
        self.layout, self.inv = layout, stats.inv_scale
        self.const = backend.upload_many({
            "n_bins_non_missing": data.n_bins_non_missing,
            "is_categorical": data.is_categorical, "layout": layout,
            "inv": stats.inv_scale, "params": growth.criterion_params()})
        self.positions = backend.row_zeros(data.X_binned.shape[0], NODE_DTYPE)

    def summaries(self, totals):
        """(values, impurity) host arrays of host int64 ``totals`` (n, C)."""
        c = self.const
        values, impurity = self.backend.node_summaries(
            self.backend.upload(totals), c["layout"], c["inv"], c["params"],
            self.stats.n_outputs, self.stats.n_classes)
        found = self.backend.download_many({"values": values, "impurity": impurity})
        return found["values"], found["impurity"]

    def run(self):
        root_totals = self.root_totals()
        nodes = [_Node(root_totals, 0, np.zeros(self.data.X_binned.shape[1], dtype=bool))]
        level_start, n_level = 0, 1
        while n_level:
            level = nodes[level_start:level_start + n_level]
            totals = np.stack([node.totals for node in level])
            candidates = splittable(totals, self.summaries(totals)[1], level[0].depth,
                                     self.growth, self.layout, self.inv)
            if candidates.size == 0:
                break
            feature, score, picked = self.scan_level(level_start, level, candidates)
            accept = accept_splits(score, totals[candidates], self.growth, self.layout,
                                    self.inv, root_totals, 0)
            children = _split_nodes(self.data, self.layout, self.inv, level,
                                    candidates[accept], feature[accept], score[accept],
                                    {k: v[accept] for k, v in picked.items()}, len(nodes))
            if not children:
                break
            self.move_rows(level_start, level, len(nodes))
            level_start, n_level = len(nodes), len(children)
            nodes.extend(children)
        return _chain_tree(nodes, self.data, self.layout, self.inv, self.summaries)

    def root_totals(self):
        """Host int64 (n_channels,): the statistics' column sums (summed
        where they were built, or here: exact in any order)."""
        if self.stats.totals is not None:
            return np.asarray(self.stats.totals[0])
        stats, xp = self.stats.stats, self.backend.xp
        return self.backend.download(xp.stack([stats[:, c].sum() for c in range(stats.shape[1])]))

    def scan_level(self, level_start, level, candidates):
        """Histograms and multiway scan of the candidates: (feature int32
        (k,), score float64 (k,), host dict of the chosen features' "hist"
        int64 (k, n_bins, C), "bitset" uint32 (k, BITSET_WORDS), "left"
        int64 (k, C))."""
        backend, data, const, k = self.backend, self.data, self.const, candidates.size
        backend.check_fit_memory(*data.X_binned.shape, self.stats.stats.shape[1], data.n_bins, k)
        node_to_build = np.full(len(level), -1, dtype=NODE_DTYPE)
        node_to_build[candidates] = np.arange(k)
        used = np.stack([level[i].used for i in candidates])
        allowed = feature_mask(self.rng, k, used.shape[1], self.growth.max_features) & ~used
        plan = backend.upload_many({"node_to_build": node_to_build,
                                    "allowed": allowed.astype(np.uint8)})
        hist = backend.build_histograms(data.X_binned, self.stats.stats, self.positions,
                                        level_start, plan["node_to_build"], k, data.n_bins)
        gain, _, bitset, left, info, _ = backend.scan_splits(
            hist, const["n_bins_non_missing"], const["is_categorical"], plan["allowed"],
            data.missing_bin, const["layout"], const["inv"], const["params"])
        found = backend.download_many({"gain": gain, "info": info})
        feature, score = choose_splits(found["gain"], found["info"],
                                       bool(self.layout[LAYOUT_SPLIT_INFO]))
        rows, chosen = backend.upload(np.arange(k)), backend.upload(feature)
        picked = backend.download_many({"hist": hist[rows, chosen],
                                        "bitset": bitset[rows, chosen],
                                        "left": left[rows, chosen]})
        return feature, score, picked

    def move_rows(self, level_start, level, first_child):
        """Rows of the level's split nodes move to their child: a per-bin
        child table (n_level, n_bins) gathered at each row's bin by the
        backend (:meth:`gputree.backends.base.Backend.move_by_child_table`)."""
        n_bins = self.data.n_bins
        feature = np.array([node.feature for node in level], dtype=np.int32)
        child_of = np.zeros((len(level), n_bins), dtype=NODE_DTYPE)
        for i, node in enumerate(level):     # a loop over nodes, never rows
            if node.feature >= 0:
                child_of[i] = _child_table(node, n_bins)
        self.positions = self.backend.move_by_child_table(
            self.data.X_binned, self.positions, level_start, feature, child_of)


def _child_table(node, n_bins):
    """int32 (n_bins,): the child id each bin's rows go to."""
    if node.child_bins is None:
        left = splitset.goes_left(node.bitset, np.arange(n_bins))
        return np.where(left, node.children[0], node.children[1]).astype(NODE_DTYPE)
    table = np.full(n_bins, node.children[-1], dtype=NODE_DTYPE)
    table[node.child_bins] = node.children
    return table


def _split_nodes(data, layout, inv, level, split_nodes, feature, score, picked, first_id):
    """Record the level's accepted splits on their nodes; returns the new
    children in order (their ids from ``first_id``)."""
    children = []
    for j, node_index in enumerate(split_nodes):
        node, f = level[node_index], int(feature[j])
        node.feature, node.gain = f, float(score[j])
        used = node.used
        if data.is_categorical[f]:
            totals, node.child_bins = _category_children(picked["hist"][j], data, layout, inv, f)
            used = used.copy()
            used[f] = True
        else:
            node.bitset, left = picked["bitset"][j], picked["left"][j]
            node.missing_left = int(splitset.goes_left(node.bitset, data.missing_bin))
            totals = [left, node.totals - left]
        node.children = list(range(first_id + len(children),
                                   first_id + len(children) + len(totals)))
        children.extend(_Node(t, node.depth + 1, used) for t in totals)
    return children


def _category_children(node_hist, data, layout, inv, f):
    """(children's totals, their bins int64 (m,)) of a multiway split whose
    feature's histogram is ``node_hist`` int64 (n_bins, C): one child per
    non-missing bin with rows, the heaviest (the lowest on ties, as the scan
    picks it) last, holding the missing rows too."""
    n_non_missing = int(data.n_bins_non_missing[f])
    count, weight = counts_and_weights(node_hist[:n_non_missing], layout, inv)
    heaviest = int(np.argmax(weight))
    bins = [int(b) for b in np.flatnonzero(count > 0) if b != heaviest] + [heaviest]
    totals = [node_hist[b].copy() for b in bins]
    totals[-1] += node_hist[data.missing_bin]
    return totals, np.asarray(bins, dtype=np.int64)


def _chain_tree(nodes, data, layout, inv, summaries):
    """TreeArrays of the grown nodes, each multiway split as a chain of
    binary nodes (:mod:`gputree.tree`), renumbered breadth-first."""
    arrays = {"feature": [], "bitset": [], "words": [], "left": [], "missing_left": [],
              "totals": [], "depth": [], "parent": [], "gain": [], "chain_link": []}

    def new_node(totals, depth, parent, link=0):
        for name, value in (("feature", -1), ("bitset", np.zeros(BITSET_WORDS, np.uint32)),
                            ("words", np.zeros(0, np.uint32)), ("left", -1),
                            ("missing_left", 0), ("totals", totals), ("depth", depth),
                            ("parent", parent), ("gain", 0.0), ("chain_link", link)):
            arrays[name].append(value)
        return len(arrays["feature"]) - 1

    def set_split(at, feature, bitset, missing_left, gain, left):
        arrays["feature"][at], arrays["bitset"][at] = feature, bitset
        arrays["missing_left"][at], arrays["gain"][at], arrays["left"][at] = (
            missing_left, gain, left)

    queue = [(0, new_node(nodes[0].totals, 0, -1))]
    for logical, at in queue:      # loops over nodes, never rows
        node = nodes[logical]
        if node.feature < 0:
            continue
        if node.child_bins is None:
            left = new_node(nodes[node.children[0]].totals, arrays["depth"][at] + 1, at)
            new_node(nodes[node.children[1]].totals, arrays["depth"][at] + 1, at)
            set_split(at, node.feature, node.bitset, node.missing_left, node.gain, left)
            queue += [(node.children[0], left), (node.children[1], left + 1)]
            continue
        remaining = node.totals.copy()
        for i, (child, b) in enumerate(zip(node.children[:-1], node.child_bins[:-1])):
            bitset = np.zeros(BITSET_WORDS, np.uint32)
            if b < BITMAP_BINS:
                bitset[b >> 5] = np.uint32(1) << np.uint32(b & 31)
            else:       # a category from bin 256 on: in the words beyond
                arrays["words"][at] = splitset.trimmed_words(splitset.words_of_bins(
                    [b], extension_words(b + 1)))
            depth = arrays["depth"][at] + 1
            left = new_node(nodes[child].totals, depth, at)
            remaining = remaining - nodes[child].totals
            last = i == len(node.children) - 2
            right = new_node(nodes[node.children[-1]].totals if last else remaining, depth, at,
                             0 if last else 1)
            set_split(at, node.feature, bitset, 0, node.gain if i == 0 else 0.0, left)
            queue.append((child, left))
            if last:
                queue.append((node.children[-1], right))
            at = right
    return compact(_tree_arrays(arrays, data, layout, inv, summaries))


def _tree_arrays(arrays, data, layout, inv, summaries):
    totals = np.stack(arrays["totals"]).astype(STAT_DTYPE)
    values, impurity = summaries(totals)
    count, weight = counts_and_weights(totals, layout, inv)
    feature = np.asarray(arrays["feature"], dtype=np.int32)
    bitset = np.stack(arrays["bitset"]).astype(np.uint32)
    n_words = np.asarray([w.size for w in arrays["words"]], dtype=WORD_COUNT_DTYPE)
    start = np.concatenate([[0], np.cumsum(n_words[:-1])]).astype(WORD_START_DTYPE)
    is_categorical = np.where(feature >= 0, data.is_categorical[np.maximum(feature, 0)],
                              0).astype(np.uint8)
    return TreeArrays(
        feature=feature, bitset=bitset, left_child=np.asarray(arrays["left"], NODE_DTYPE),
        threshold=real_thresholds(feature, bitset, is_categorical, data),
        missing_left=np.asarray(arrays["missing_left"], np.uint8),
        is_categorical=is_categorical, value=values, impurity=impurity,
        n_node_samples=np.rint(count).astype(np.int64),
        weighted_n_node_samples=weight.astype(FLOAT_DTYPE),
        gain=np.asarray(arrays["gain"], FLOAT_DTYPE),
        depth=np.asarray(arrays["depth"], np.int32),
        parent=np.asarray(arrays["parent"], NODE_DTYPE),
        chain_link=np.asarray(arrays["chain_link"], np.uint8),
        cat_words=np.concatenate(arrays["words"]).astype(np.uint32),
        cat_start=np.where(n_words > 0, start, 0).astype(WORD_START_DTYPE), cat_n_words=n_words)
