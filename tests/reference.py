"""Plain-numpy reference implementations of gputree's primitives, written for
clarity, not speed, and independent of the library's code: binning, histograms,
brute-force split search (every threshold, every category subset, both
missing directions), partition and prediction. The fast kernels must agree
with them exactly (gains to rounding).

Also the impurity formulas by hand (from rows, not from channel sums) and a
few data generators for which gputree and scikit-learn's exact trees coincide.
"""
import itertools

import numpy as np
from hypothesis import strategies as st

CLASSIFICATION = ("gini", "entropy", "log_loss", "gain_ratio", "misclassification")
REGRESSION = ("squared_error", "poisson")
CRITERIA = ("gini", "entropy", "gain_ratio", "squared_error", "poisson")


# --------------------------------------------------------------- primitives

def map_to_bins(X, thresholds, is_categorical, missing_bin):
    """uint8 (n, F) (uint16 from missing_bin 256 on): numerical x -> number of
    thresholds < x; categorical x -> index of its code in the row (unknown
    codes and NaN -> missing_bin)."""
    X = np.asarray(X, dtype=np.float64)
    out = np.empty(X.shape, dtype=np.uint8 if missing_bin < 256 else np.uint16)
    for f in range(X.shape[1]):
        row = thresholds[f]
        for i, x in enumerate(X[:, f]):
            if np.isnan(x):
                out[i, f] = missing_bin
            elif is_categorical[f]:
                hits = np.flatnonzero(row == x)
                out[i, f] = hits[0] if hits.size else missing_bin
            else:
                out[i, f] = int(np.sum(row < x))
    return out


def build_histograms(X_binned, stats, positions, level_start, node_to_build, n_build, n_bins):
    """int64 (n_build, F, n_bins, C): hist[slot, f, b] = sum of stats over the
    rows whose node (positions - level_start) maps to ``slot`` and whose
    feature f is in bin b."""
    n_samples, n_features = X_binned.shape
    hist = np.zeros((n_build, n_features, n_bins, stats.shape[1]), dtype=np.int64)
    for i in range(n_samples):
        k = positions[i] - level_start
        if 0 <= k < len(node_to_build) and node_to_build[k] >= 0:
            for f in range(n_features):
                hist[node_to_build[k], f, X_binned[i, f]] += stats[i]
    return hist


def bins_of(bitset, beyond=()):
    """Set of bins that go left under a split row (uint32 (10,)): the bits set
    in words 0..7, the bins 256 .. word 8 and the bin word 9 (0: none), and
    the bits set in the words beyond (``beyond``: bit b of word j is bin
    256 + 32 j + b)."""
    words = [int(w) for w in np.asarray(bitset, dtype=np.uint64)]
    bins = {w * 32 + b for w, word in enumerate(words[:8]) for b in range(32) if (word >> b) & 1}
    bins.update(range(256, words[8] + 1))
    bins.update(256 + 32 * j + b for j, word in enumerate(int(w) for w in beyond)
                for b in range(32) if (word >> b) & 1)
    return bins | ({words[9]} if words[9] else set())


def set_bins(sets, k):
    """bins_of split k of a LeftSets (gputree.tree)."""
    start, n = int(sets.start[k]), int(sets.n_words[k])
    return bins_of(sets.bitset[k], sets.words[start:start + n])


def update_positions(X_binned, positions, level_start, split_feature, split_sets, left_child):
    """New positions: a row of a split level node moves to its left child when
    its bin is in the split's left set (a LeftSets), else to the right child
    (left + 1)."""
    new = np.array(positions, copy=True)
    left_bins = [set_bins(split_sets, k) for k in range(len(split_feature))]
    for i in range(len(new)):
        k = positions[i] - level_start
        if 0 <= k < len(split_feature) and split_feature[k] >= 0:
            goes_left = X_binned[i, split_feature[k]] in left_bins[k]
            new[i] = left_child[k] + (0 if goes_left else 1)
    return new


def predict_leaves(tree, X_binned):
    """int (n,): the leaf each row reaches, walking ``tree`` (TreeArrays) node by node."""
    leaves = np.empty(X_binned.shape[0], dtype=np.int64)
    left_bins = [set_bins(tree.left_sets, k) for k in range(tree.node_count)]
    for i in range(X_binned.shape[0]):
        node = 0
        while tree.left_child[node] >= 0:
            goes_left = X_binned[i, tree.feature[node]] in left_bins[node]
            node = tree.left_child[node] + (0 if goes_left else 1)
        leaves[i] = node
    return leaves


# ----------------------------------------------------------------- criteria

def impurity(criterion, y, w, n_classes=None):
    """Impurity of the rows (y (n, n_outputs), weights w (n,)) by hand,
    averaged over outputs: gini 1 - sum p_k^2; entropy -sum p_k log2 p_k;
    misclassification 1 - max p_k;
    squared error weighted variance; poisson weighted mean half deviance."""
    y = np.asarray(y).reshape(len(w), -1)
    W = w.sum()
    per_output = []
    for o in range(y.shape[1]):
        if criterion in CLASSIFICATION:
            p = np.array([w[y[:, o] == k].sum() for k in range(n_classes)]) / W
            p = p[p > 0]
            per_output.append(1.0 - np.sum(p * p) if criterion == "gini"
                              else 1.0 - p.max() if criterion == "misclassification"
                              else -np.sum(p * np.log2(p)))
            continue
        mean = np.sum(w * y[:, o]) / W
        if criterion == "squared_error":
            per_output.append(np.sum(w * (y[:, o] - mean) ** 2) / W)
        else:
            ylogy = np.where(y[:, o] > 0, y[:, o] * np.log(np.where(y[:, o] > 0, y[:, o], 1) / mean), 0.0)
            per_output.append(np.sum(w * (ylogy - y[:, o] + mean)) / W)
    return float(np.mean(per_output))


def split_gain(criterion, y, w, go_left, min_samples_leaf=1, n_classes=None):
    """Weighted impurity decrease of sending rows ``go_left`` left (divided by
    the split information for gain_ratio); -inf when a child has fewer than
    min_samples_leaf rows of positive weight, no weight, or (poisson) a
    non-positive target sum."""
    y = np.asarray(y).reshape(len(w), -1)
    right = ~go_left
    for side in (go_left, right):
        if np.sum(w[side] > 0) < min_samples_leaf or w[side].sum() <= 0:
            return -np.inf
        if criterion == "poisson" and np.any((w[side, None] * y[side]).sum(axis=0) <= 0):
            return -np.inf
    W, WL, WR = w.sum(), w[go_left].sum(), w[right].sum()
    gain = (impurity(criterion, y, w, n_classes)
            - WL / W * impurity(criterion, y[go_left], w[go_left], n_classes)
            - WR / W * impurity(criterion, y[right], w[right], n_classes))
    if criterion == "gain_ratio":
        pl, pr = WL / W, WR / W
        gain /= -(pl * np.log2(pl) + pr * np.log2(pr))
    return gain


# ------------------------------------------------------------- split search

def candidate_partitions(column, n_non_missing, categorical, missing_bin):
    """Every way one feature can split the node's rows (binned ``column``):
    yields (left bins as a frozenset, go_left bool (n,)). Numerical: bins
    <= b for every b, missing on either side, and "all non-missing left";
    categorical: every non-empty subset of the present categories, missing
    on either side. Partitions that send every row one way are included
    (the gain rules them out)."""
    present = sorted(set(column[column != missing_bin].tolist()))
    has_missing = bool(np.any(column == missing_bin))
    if categorical:
        sides = [frozenset(s) for r in range(1, len(present) + 1)
                 for s in itertools.combinations(present, r)]
    else:
        sides = [frozenset(range(b + 1)) for b in range(n_non_missing)]
    for left in sides:
        for with_missing in ((False, True) if has_missing else (False,)):
            bins = left | {missing_bin} if with_missing else left
            yield bins, np.isin(column, list(bins))


def brute_force_splits(X_binned, y, w, criterion, n_bins_non_missing, is_categorical,
                       missing_bin, min_samples_leaf=1, n_classes=None):
    """All candidate splits of one node's rows: list of (gain, feature,
    left bins, go_left rows)."""
    found = []
    for f in range(X_binned.shape[1]):
        for bins, go_left in candidate_partitions(X_binned[:, f], n_bins_non_missing[f],
                                                  is_categorical[f], missing_bin):
            gain = split_gain(criterion, y, w, go_left, min_samples_leaf, n_classes)
            if np.isfinite(gain):
                found.append((gain, f, bins, go_left))
    return found


def best_gain_margin(candidates, rows):
    """(best candidate, gap to the best candidate that sends the ``rows``
    (bool mask, e.g. those of positive weight) differently)."""
    if not candidates:
        return None, np.inf
    best = max(candidates, key=lambda c: c[0])
    others = [c[0] for c in candidates if not np.array_equal(c[3][rows], best[3][rows])]
    return best, best[0] - max(others, default=-np.inf)


def missing_goes_left_when_unseen(go_left, w):
    """The documented rule when a node had no missing values: they follow the
    child with more rows of positive weight (right on ties, as scikit-learn's
    ``missing_go_to_left = n_left > n_right``)."""
    positive = w > 0
    return np.sum(positive & go_left) > np.sum(positive & ~go_left)


# ------------------------------------------------ random small datasets

@st.composite
def small_datasets(draw, max_rows=24):
    """Random small datasets: numerical and categorical features, NaNs, weights
    (zeros included), every criterion, a few min_samples_leaf values.
    Returns (X, categorical mask, y, w, criterion, max_bins, min_samples_leaf,
    n_classes or None)."""
    rng = np.random.RandomState(draw(st.integers(0, 2**31 - 1)))
    n = draw(st.integers(2, max_rows))
    n_features = draw(st.integers(1, 3))
    categorical = draw(st.lists(st.booleans(), min_size=n_features, max_size=n_features))
    max_bins = draw(st.sampled_from([3, 6, 255]))
    X = np.empty((n, n_features))
    for f, is_cat in enumerate(categorical):
        X[:, f] = (rng.randint(0, min(5, max_bins), n) if is_cat
                   else rng.randint(0, 8, n) * rng.uniform(0.1, 10))
    X[rng.rand(n, n_features) < draw(st.sampled_from([0.0, 0.25]))] = np.nan
    criterion = draw(st.sampled_from(CRITERIA))
    n_classes = draw(st.integers(2, 3)) if criterion in CLASSIFICATION else None
    if n_classes:
        y = rng.randint(0, n_classes, n)
    elif criterion == "poisson":
        y = rng.poisson(1.5, n).astype(float)
    else:
        y = rng.normal(0, 2, n).round(3)
    weights = draw(st.sampled_from(["unit", "integer", "float"]))
    w = {"unit": np.ones(n), "integer": rng.randint(0, 3, n).astype(float),
         "float": rng.uniform(0.2, 2.0, n)}[weights]
    w[0] = max(w[0], 1.0)
    if criterion == "poisson":
        y[0] = max(y[0], 1.0)
    msl = draw(st.sampled_from([1, 1, 2, 3]))
    return X, np.array(categorical), y, w, criterion, max_bins, msl, n_classes


def subset_scan_is_exact(criterion, n_classes, min_samples_leaf, any_categorical):
    """Sorting categories by the criterion's key and scanning prefixes finds the
    best subset for binary classification (gini, entropy) and squared error
    (Breiman); for multiclass, gain ratio, poisson or min_samples_leaf > 1 it
    is a heuristic, so only "no better than brute force" holds. Numerical
    thresholds are always scanned exhaustively."""
    if not any_categorical:
        return True
    if min_samples_leaf > 1:
        return False
    return criterion == "squared_error" or (criterion in ("gini", "entropy") and n_classes == 2)


# ------------------------------------------ data and scikit-learn helpers

def dyadic_weights(rng, n):
    """Weights k/16: sums are exact in float64 (pure nodes have impurity
    exactly 0 in scikit-learn too) while gains of different splits almost
    never tie."""
    return rng.randint(16, 64, n) / 16.0


def grid_data(rng, n=300, n_features=5, n_values=8):
    """Features with few distinct values (far fewer than max_bins), so that
    binned thresholds are exact, and a signal in the first three."""
    X = rng.randint(0, n_values, size=(n, n_features)) * rng.uniform(0.5, 3, n_features)
    signal = X[:, 0] - 0.5 * X[:, 1] + np.sin(X[:, 2]) + rng.normal(0, 1, n)
    return X, signal


def grid_classification(rng, n=300, n_features=5, n_values=8):
    X, signal = grid_data(rng, n, n_features, n_values)
    y = (signal > np.median(signal)).astype(int) + (signal > np.percentile(signal, 80))
    return X, y


def same_grouping(a, b):
    """True when two labelings of the same rows group them identically."""
    pairs = set(zip(np.asarray(a).tolist(), np.asarray(b).tolist()))
    return len(pairs) == len(set(np.asarray(a).tolist())) == len(set(np.asarray(b).tolist()))


def assert_same_tree(ours, theirs, X):
    """Same splits: predictions, leaf grouping, node count, node impurities."""
    a, b = ours.predict(X), theirs.predict(X)
    if a.dtype.kind == "f":
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    else:
        np.testing.assert_array_equal(a, b)
    if hasattr(theirs, "predict_proba") and theirs.n_outputs_ == 1:
        np.testing.assert_allclose(ours.predict_proba(X), theirs.predict_proba(X), atol=1e-12)
    assert same_grouping(ours.apply(X), theirs.apply(X))
    assert ours.tree_.node_count == theirs.tree_.node_count
    assert ours.get_depth() == theirs.get_depth() and ours.get_n_leaves() == theirs.get_n_leaves()
    # variances come from sums of squares: absolute rounding grows with the largest
    scale = max(1.0, float(np.max(theirs.tree_.impurity)))
    np.testing.assert_allclose(np.sort(ours.tree_.impurity), np.sort(theirs.tree_.impurity),
                               rtol=1e-9, atol=1e-12 * scale)
    np.testing.assert_allclose(np.sort(ours.tree_.weighted_n_node_samples),
                               np.sort(theirs.tree_.weighted_n_node_samples), rtol=1e-12)
