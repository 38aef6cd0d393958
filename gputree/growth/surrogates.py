"""Surrogate splits (CART): for every split of a fitted tree, a ranked list of
splits on other features that best mimic it, used at predict time when a
row's split feature is missing.

Fit (:func:`fit_surrogates`): the training rows are walked down the tree one
depth at a time; at every internal node, the rows whose split feature is
present are sent left or right by the split (numerical or categorical: its
bitset). For every other numerical
feature ``f`` and threshold bin ``t``, a surrogate "bins <= t go left" (or its
reverse, "bins > t go left") agrees with the split on the weight of those rows
it sends the same way; its **agreement** is that weight over the weight of the
rows where ``f`` is present too. Each feature's best threshold and direction
is a candidate (ties: lowest bin, then "<= t left"). For a categorical
feature the candidate is the best category subset, found exactly: agreement
is a sum over categories, so each category goes to the side most of its
weight went (ties: the node's majority side); a category without rows in the
node gives no direction (the next surrogate decides, as in rpart). Candidates that do no
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

from .._dtypes import BITSET_DTYPE, FEATURE_DTYPE, FLOAT_DTYPE
from ..backends.splitset import nodes_go_left


@dataclass
class Surrogates:
    """Surrogate splits of one tree; ``k`` = n_surrogates.

    feature      int32   (n_nodes, k) surrogate feature, -1 where none
    bin          int32   (n_nodes, k) numerical: threshold bin t; -1 categorical
    left_le      uint8   (n_nodes, k) numerical: 1: bins <= t go left; 0: bins > t
    agreement    float64 (n_nodes, k) share of rows sent as the split sends them
    majority_left uint8  (n_nodes,)   1 when the left child has more weight
    sides        uint32  (n_nodes, k, 2, missing_bin // 32 + 1) bitsets of the bins the
                         surrogate sends left ([..., 0, :]) and right ([..., 1, :]);
                         a bin in neither (missing, or a category without
                         rows in the node) gives no direction
    """

    feature: np.ndarray
    bin: np.ndarray
    left_le: np.ndarray
    agreement: np.ndarray
    majority_left: np.ndarray
    sides: np.ndarray


def _goes_left(tree, nodes, bins):
    """bool: whether rows with ``bins`` at ``nodes`` go left (their left sets)."""
    return nodes_go_left(tree, nodes, bins)


def _has_bit(bitsets, bins):
    """bool (n,): bit ``bins[i]`` (int64 (n,)) of bitsets[i] (uint32 (n, n_words))."""
    words = bitsets[np.arange(bins.size), bins >> 5]
    return ((words >> (bins & 31).astype(np.uint32)) & 1).astype(bool)


def surrogate_importances(tree, surrogates, internal, decrease, n_features):
    """float64 (n_features,) CART's surrogate-aware variable importance, not
    normalised: every split (``internal`` int64 (m,), its weighted impurity
    decrease ``decrease`` float64 (m,)) credits its feature with the decrease
    and each of its surrogates' features with the decrease times that
    surrogate's agreement. (rpart weighs by the *adjusted* agreement, (agree -
    majority) / (1 - majority); gputree uses the agreement itself, which the
    model stores.) A feature that is both split and surrogate at one node is
    impossible: a surrogate's feature differs from its split's."""
    credit = np.bincount(tree.feature[internal], weights=decrease, minlength=n_features)
    features = surrogates.feature[internal]
    used = features >= 0
    weights = decrease[:, None] * surrogates.agreement[internal]
    return credit + np.bincount(features[used], weights=weights[used], minlength=n_features)


def refuse_surrogates(estimator, what):
    """Raise for ``what`` (an export or explanation that sends missing values
    the default way) on an estimator whose prediction uses surrogate splits."""
    if getattr(estimator, "surrogates_", None) is not None:
        raise ValueError(f"{what} does not support surrogate splits: it would send missing "
                         "values the learned default way and so disagree with predict. Refit "
                         "with missing_strategy='default' to use it.")


def sent_bins(words, n_bins):
    """int64 ascending: the bins < ``n_bins`` set in one side bitmap of
    ``Surrogates.sides`` (uint32 (missing_bin // 32 + 1,))."""
    bins = np.arange(n_bins)
    return bins[_has_bit(np.broadcast_to(words, (n_bins, words.shape[-1])), bins)]


def fit_surrogates(tree, X_binned, weight, n_bins_non_missing, is_categorical, missing_bin,
                   n_surrogates):
    """Surrogates of ``tree`` from its training rows: X_binned uint8 or uint16
    (n_samples, n_features) host; weight float64 (n_samples,); bin layout as
    in :class:`gputree.data.binned.BinnedData`."""
    n_nodes, k = tree.node_count, n_surrogates
    result = Surrogates(np.full((n_nodes, k), -1, dtype=FEATURE_DTYPE),
                        np.zeros((n_nodes, k), dtype=np.int32),
                        np.zeros((n_nodes, k), dtype=np.uint8),
                        np.zeros((n_nodes, k), dtype=FLOAT_DTYPE),
                        _majority_left(tree),
                        np.zeros((n_nodes, k, 2, missing_bin // 32 + 1), dtype=BITSET_DTYPE))
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
    sides = {}      # categorical feature -> bool (n_slots, 2, missing_bin): bins sent left, right
    w_left, w_right = weight[rows] * left, weight[rows] * ~left
    for f in range(n_features):
        if n_bins_non_missing[f] < 2:
            continue
        index = slot * missing_bin + np.minimum(X_binned[rows, f], missing_bin)
        keep = X_binned[rows, f] != missing_bin
        size = n_slots * missing_bin
        hist_l = np.bincount(index[keep], w_left[keep], size).reshape(n_slots, -1)
        hist_r = np.bincount(index[keep], w_right[keep], size).reshape(n_slots, -1)
        if is_categorical[f]:
            found, majority, sides[f] = _category_subsets(
                hist_l, hist_r, result.majority_left[level_nodes] == 1)
            best_bin[:, f] = -1
        else:
            found, majority, best_bin[:, f], best_le[:, f] = _thresholds(
                hist_l, hist_r, n_bins_non_missing[f])
        useful = (found > majority) & (tree.feature[level_nodes] != f)
        best[:, f] = np.where(useful, found, -np.inf)
    order = np.argsort(-best, axis=1, kind="stable")[:, :result.feature.shape[1]]
    m = order.shape[1]
    taken = np.take_along_axis(best, order, axis=1)
    valid = np.isfinite(taken)
    result.feature[level_nodes, :m] = np.where(valid, order, -1)
    result.bin[level_nodes, :m] = np.take_along_axis(best_bin, order, axis=1)
    result.left_le[level_nodes, :m] = np.take_along_axis(best_le, order, axis=1)
    result.agreement[level_nodes, :m] = np.where(valid, taken, 0.0)
    _fill_bitsets(result, level_nodes, m, sides, n_bins_non_missing, missing_bin)


def _shares(agreeing, total_l, total_r):
    """(agreeing, majority) weights as shares of the slot's weight (rows of
    agreeing and total_l, total_r: slots)."""
    total = np.where(total_l + total_r > 0, total_l + total_r, 1.0)
    return agreeing / total, np.maximum(total_l, total_r) / total


def _thresholds(hist_l, hist_r, n_non_missing):
    """Best numerical surrogate per slot from the weights going left/right
    per bin float64 (n_slots, missing_bin): (agreement share, majority
    share, bin, le)."""
    cum_l, cum_r = hist_l.cumsum(axis=1), hist_r.cumsum(axis=1)
    total_l, total_r = cum_l[:, -1:], cum_r[:, -1:]
    last = n_non_missing - 1          # thresholds t < last split the feature
    width = hist_l.shape[1]
    agree = np.concatenate([cum_l + total_r - cum_r, cum_r + total_l - cum_l], axis=1)
    agree, majority = _shares(np.concatenate([agree[:, :last], agree[:, width:width + last]],
                                             axis=1), total_l, total_r)
    choice = np.argmax(agree, axis=1)
    return agree[np.arange(agree.shape[0]), choice], majority[:, 0], choice % last, choice < last


def _category_subsets(hist_l, hist_r, majority_left):
    """Best categorical surrogate per slot: every category goes where most
    of its weight goes (exact: agreement is a sum over categories of the
    weight each sends the split's way); ties go the node's majority side,
    categories without weight in the node give no direction. Returns
    (agreement share, majority share, bool (n_slots, 2, n_bins) bins sent
    left, right)."""
    held = hist_l + hist_r > 0
    to_left = held & ((hist_l > hist_r) | ((hist_l == hist_r) & majority_left[:, None]))
    found, majority = _shares(np.maximum(hist_l, hist_r).sum(axis=1), hist_l.sum(axis=1),
                              hist_r.sum(axis=1))
    return found, majority, np.stack([to_left, held & ~to_left], axis=1)


def _fill_bitsets(result, level_nodes, n_chosen, sides, n_bins_non_missing, missing_bin):
    """result.sides of the nodes' first ``n_chosen`` surrogates (``sides``:
    the categorical features' bins sent left and right per node)."""
    bins = np.arange(missing_bin)
    for j in range(n_chosen):
        features = result.feature[level_nodes, j]
        threshold = result.bin[level_nodes, j][:, None]
        le = result.left_le[level_nodes, j][:, None] == 1
        present = (bins[None, :] < n_bins_non_missing[features][:, None]) & (
            features[:, None] >= 0)
        to_left = present & ((bins[None, :] <= threshold) == le)
        side = np.stack([to_left, present & ~to_left], axis=1)
        for f, categorical in sides.items():
            side[features == f] = categorical[features == f]
        words = np.zeros((features.size, 2, result.sides.shape[-1] * 32), dtype=bool)
        words[:, :, :missing_bin] = side
        result.sides[level_nodes, j] = _pack(words)


def _pack(bits):
    """uint32 (..., n_bits // 32) from bool (..., n_bits), bit b of word w = bin 32 w + b."""
    weights = np.uint32(1) << np.arange(32, dtype=np.uint32)
    shaped = bits.reshape(bits.shape[:-1] + (-1, 32)).astype(np.uint32)
    return (shaped * weights).sum(axis=-1, dtype=np.uint32)


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
            values = X_binned[rows, np.maximum(feature, 0)].astype(np.int64)
            to_left = _has_bit(surrogates.sides[nd, s, 0], values)
            usable = undecided & (feature >= 0) & (to_left | _has_bit(surrogates.sides[nd, s, 1],
                                                                      values))
            left = np.where(usable, to_left, left)
            undecided &= ~usable
        node[rows] = tree.left_child[nd] + (~left)
    return node
