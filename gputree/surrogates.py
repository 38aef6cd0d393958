"""Surrogate splits (CART): for every split of a fitted tree, a ranked list of
splits on other features that best mimic it, used at predict time when a
row's split feature is missing.

Fit (:func:`fit_surrogates`): the training rows are walked down the tree one
depth at a time; at every internal node, the rows whose split feature is
present are sent left or right by the split. For every other numerical
feature ``f`` and threshold bin ``t``, a surrogate "bins <= t go left" (or its
reverse, "bins > t go left") agrees with the split on the weight of those rows
it sends the same way; its **agreement** is that weight over the weight of the
rows where ``f`` is present too. Each feature's best threshold and direction
is a candidate (ties: lowest bin, then "<= t left"); candidates that do no
better than sending every row to the node's majority side are dropped (CART's
rule) and the rest are ranked by agreement (ties: lowest feature). The
per-(node, feature, bin) weights of rows going each way are two histograms
built with ``np.bincount`` per feature: a pass over the rows per depth, no
Python loop over samples.

Predict (:func:`apply_surrogates`): a row whose split feature is missing takes
the first surrogate whose feature is present, else the node's majority
direction (the child with more training weight). The walk runs on the host,
one depth at a time, vectorised over rows.

Training rows themselves are routed as the tree was grown (missing values go
the learned default direction); surrogates only change prediction.
"""
from dataclasses import dataclass

import numpy as np

from ._dtypes import FEATURE_DTYPE, FLOAT_DTYPE
from .backends.splitset import goes_left


@dataclass
class Surrogates:
    """Surrogate splits of one tree; ``k`` = n_surrogates.

    feature      int32   (n_nodes, k) surrogate feature, -1 where none
    bin          int32   (n_nodes, k) threshold bin t
    left_le      uint8   (n_nodes, k) 1: bins <= t go left; 0: bins > t go left
    agreement    float64 (n_nodes, k) share of rows sent as the split sends them
    majority_left uint8  (n_nodes,)   1 when the left child has more weight
    """

    feature: np.ndarray
    bin: np.ndarray
    left_le: np.ndarray
    agreement: np.ndarray
    majority_left: np.ndarray


def _goes_left(tree, nodes, bins):
    """bool: whether rows with ``bins`` at ``nodes`` go left (the bitset)."""
    return goes_left(tree.bitset[nodes], bins)


def fit_surrogates(tree, X_binned, weight, n_bins_non_missing, is_categorical, missing_bin,
                   n_surrogates):
    """Surrogates of ``tree`` from its training rows: X_binned uint8 or uint16
    (n_samples, n_features) host; weight float64 (n_samples,); bin layout as
    in :class:`gputree.grower.BinnedData`."""
    n_nodes, k = tree.node_count, n_surrogates
    result = Surrogates(np.full((n_nodes, k), -1, dtype=FEATURE_DTYPE),
                        np.zeros((n_nodes, k), dtype=np.int32),
                        np.zeros((n_nodes, k), dtype=np.uint8),
                        np.zeros((n_nodes, k), dtype=FLOAT_DTYPE),
                        _majority_left(tree))
    node = np.zeros(X_binned.shape[0], dtype=np.int64)
    for _ in range(tree.max_depth):
        rows = np.flatnonzero(tree.left_child[node] >= 0)
        if rows.size == 0 or k == 0:
            break
        nd = node[rows]
        bins = X_binned[rows, tree.feature[nd]].astype(np.int64)
        left = _goes_left(tree, nd, bins)
        present = bins != missing_bin
        _fill_level(result, tree, X_binned, weight, rows[present], nd[present], left[present],
                    n_bins_non_missing, is_categorical, missing_bin)
        node[rows] = tree.left_child[nd] + (~left)
    return result


def _majority_left(tree):
    majority = np.zeros(tree.node_count, dtype=np.uint8)
    internal = np.flatnonzero(tree.left_child >= 0)
    left = tree.left_child[internal]
    w = tree.weighted_n_node_samples
    majority[internal] = w[left] >= w[left + 1]
    return majority


def _fill_level(result, tree, X_binned, weight, rows, nodes, left, n_bins_non_missing,
                is_categorical, missing_bin):
    """Surrogates of the nodes of one depth from their rows with the split
    feature present (``left``: bool, the split's direction)."""
    if rows.size == 0:
        return
    level_nodes, slot = np.unique(nodes, return_inverse=True)
    n_slots, n_features = level_nodes.size, X_binned.shape[1]
    best = np.full((n_slots, n_features), -np.inf)
    best_bin = np.zeros((n_slots, n_features), dtype=np.int32)
    best_le = np.zeros((n_slots, n_features), dtype=np.uint8)
    w_left, w_right = weight[rows] * left, weight[rows] * ~left
    for f in range(n_features):
        if is_categorical[f] or n_bins_non_missing[f] < 2:
            continue
        index = slot * missing_bin + np.minimum(X_binned[rows, f], missing_bin)
        keep = X_binned[rows, f] != missing_bin
        size = n_slots * missing_bin
        cum_l = np.bincount(index[keep], w_left[keep], size).reshape(n_slots, -1).cumsum(axis=1)
        cum_r = np.bincount(index[keep], w_right[keep], size).reshape(n_slots, -1).cumsum(axis=1)
        total_l, total_r = cum_l[:, -1:], cum_r[:, -1:]
        total = np.where(total_l + total_r > 0, total_l + total_r, 1.0)
        last = n_bins_non_missing[f] - 1          # thresholds t < last split the feature
        agree = np.concatenate([cum_l + total_r - cum_r, cum_r + total_l - cum_l], axis=1)
        agree = np.concatenate([agree[:, :last], agree[:, missing_bin:missing_bin + last]],
                               axis=1) / total
        choice = np.argmax(agree, axis=1)
        found = agree[np.arange(n_slots), choice]
        majority = np.maximum(total_l, total_r)[:, 0] / total[:, 0]
        useful = (found > majority) & (tree.feature[level_nodes] != f)
        best[:, f] = np.where(useful, found, -np.inf)
        best_bin[:, f] = choice % last
        best_le[:, f] = choice < last
    order = np.argsort(-best, axis=1, kind="stable")[:, :result.feature.shape[1]]
    m = order.shape[1]
    taken = np.take_along_axis(best, order, axis=1)
    valid = np.isfinite(taken)
    result.feature[level_nodes, :m] = np.where(valid, order, -1)
    result.bin[level_nodes, :m] = np.take_along_axis(best_bin, order, axis=1)
    result.left_le[level_nodes, :m] = np.take_along_axis(best_le, order, axis=1)
    result.agreement[level_nodes, :m] = np.where(valid, taken, 0.0)


def apply_surrogates(tree, surrogates, X_binned, missing_bin):
    """int64 (n_samples,) leaf of every row of X_binned (uint8 or uint16 (n, F), host):
    the split where its feature is present, else the first surrogate whose
    feature is present, else the majority direction."""
    node = np.zeros(X_binned.shape[0], dtype=np.int64)
    for _ in range(tree.max_depth):
        rows = np.flatnonzero(tree.left_child[node] >= 0)
        if rows.size == 0:
            break
        nd = node[rows]
        bins = X_binned[rows, tree.feature[nd]].astype(np.int64)
        undecided = bins == missing_bin
        left = np.where(undecided, surrogates.majority_left[nd].astype(bool),
                        _goes_left(tree, nd, bins))
        for s in range(surrogates.feature.shape[1]):
            feature = surrogates.feature[nd, s]
            values = X_binned[rows, np.maximum(feature, 0)]
            usable = undecided & (feature >= 0) & (values != missing_bin)
            below = values <= surrogates.bin[nd, s]
            left = np.where(usable, below == surrogates.left_le[nd, s].astype(bool), left)
            undecided &= ~usable
        node[rows] = tree.left_child[nd] + (~left)
    return node
