"""The split scan against brute force: every threshold, every category subset,
both missing directions, for every criterion; planted splits are found; ties
go to the lowest feature and bin; the per-feature mask is respected."""
import numpy as np
import pytest
from hypothesis import given, settings

import reference
from gputree.data.binning import BinMapper
from gputree.criteria import CLASSIFICATION_CRITERIA, REGRESSION_CRITERIA, classification_statistics, regression_statistics
from gputree.growth.params import GrowthParams

CRITERIA = list(reference.CRITERIA)


class Node:
    """One node (the root) of a small dataset, binned, with its histogram."""

    def __init__(self, backend, X, is_categorical, y, w, criterion, max_bins=255,
                 min_samples_leaf=1, n_classes=None):
        self.backend, self.y, self.w, self.criterion = backend, y, w, criterion
        self.mapper = BinMapper(max_bins, is_categorical).fit(X, w)
        self.X_binned = self.mapper.transform(X, backend)
        self.n_classes = n_classes
        if criterion in CLASSIFICATION_CRITERIA:
            self.stats = classification_statistics(y[:, None], n_classes, w,
                                                   CLASSIFICATION_CRITERIA[criterion])
        else:
            self.stats = regression_statistics(y[:, None].astype(float), w,
                                               REGRESSION_CRITERIA[criterion])
        self.min_samples_leaf = min_samples_leaf
        self.params = GrowthParams(min_samples_leaf=min_samples_leaf).criterion_params()
        root = np.zeros(len(y), dtype=np.int32)
        self.hist = backend.build_histograms(self.X_binned, self.stats.stats, root, 0,
                                             np.zeros(1, np.int32), 1, self.mapper.n_bins_)

    def scan(self, allowed=None, hist=None):
        hist = self.hist if hist is None else hist
        n_features = self.X_binned.shape[1]
        if allowed is None:
            allowed = np.ones((hist.shape[0], n_features), dtype=np.uint8)
        return self.backend.find_best_splits(
            hist, self.mapper.n_bins_non_missing_, self.mapper.is_categorical_.astype(np.uint8),
            allowed, self.mapper.missing_bin_, self.stats.layout, self.stats.inv_scale,
            self.params)

    def brute_force(self, features=None):
        found = reference.brute_force_splits(
            self.X_binned, self.y, self.w, self.criterion, self.mapper.n_bins_non_missing_,
            self.mapper.is_categorical_, self.mapper.missing_bin_, self.min_samples_leaf,
            self.n_classes)
        return [c for c in found if features is None or c[1] in features]

    def goes_left(self, split, node=0):
        bins = reference.bins_of(split.bitset[node])
        return np.isin(self.X_binned[:, split.feature[node]], list(bins))

    def gain_of(self, go_left):
        return reference.split_gain(self.criterion, self.y, self.w, go_left,
                                    self.min_samples_leaf, self.n_classes)


def _close(a, b):
    return np.isclose(a, b, rtol=1e-7, atol=1e-9)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(case=reference.small_datasets())
def test_scan_equals_brute_force(backend, case):
    check_scan_against_brute_force(backend, case)


def check_scan_against_brute_force(backend, case):
    """The backend's best split of a random dataset's root vs brute force
    (also run on the simulated CUDA device, tests/simulated)."""
    X, categorical, y, w, criterion, max_bins, msl, n_classes = case
    node = Node(backend, X, categorical, y, w, criterion, max_bins, msl, n_classes)
    split = node.scan()
    positive = w > 0
    best, margin = reference.best_gain_margin(node.brute_force(), positive)
    gain = split.gain[0]
    if best is None:
        assert gain == -np.inf
        return
    assert np.isfinite(gain)
    go_left = node.goes_left(split)
    # our reported gain is the gain of our partition, by hand
    assert _close(gain, node.gain_of(go_left))
    # left sums are the exact sums of the rows sent left
    np.testing.assert_array_equal(split.left_sums[0], node.stats.stats[go_left].sum(axis=0))
    if reference.subset_scan_is_exact(criterion, n_classes, msl, categorical.any()):
        assert _close(gain, best[0])
        if margin > 1e-6 * (1 + abs(best[0])):
            np.testing.assert_array_equal(go_left[positive], best[3][positive])
    else:
        assert gain <= best[0] + 1e-9 * (1 + abs(best[0]))
    # a node without (positive-weight) missing values sends them to the larger child
    column = node.X_binned[:, split.feature[0]]
    if not np.any(positive & (column == node.mapper.missing_bin_)):
        assert bool(split.missing_left[0]) == reference.missing_goes_left_when_unseen(go_left, w)


@pytest.mark.parametrize("criterion", CRITERIA)
def test_planted_threshold_is_found(backend, criterion):
    rng = np.random.RandomState(0)
    n = 400
    X = rng.randint(0, 20, (n, 4)).astype(float)
    high = X[:, 2] > 12.5
    if criterion in CLASSIFICATION_CRITERIA:
        y, n_classes = high.astype(int), 2
    else:
        y, n_classes = np.where(high, 5.0, 1.0) + rng.uniform(0, 0.1, n), None
    node = Node(backend, X, [False] * 4, y, np.ones(n), criterion, n_classes=n_classes)
    split = node.scan()
    assert split.feature[0] == 2
    np.testing.assert_array_equal(node.goes_left(split), ~high)


@pytest.mark.parametrize("criterion", ["gini", "entropy", "squared_error"])
def test_planted_category_subset_is_found(backend, criterion):
    rng = np.random.RandomState(1)
    n = 600
    X = np.column_stack([rng.randint(0, 8, n), rng.normal(size=n)]).astype(float)
    member = np.isin(X[:, 0], [1, 3, 4, 6])
    noise = rng.rand(n) < 0.05
    if criterion == "squared_error":
        y, n_classes = np.where(member, 3.0, 0.0) + rng.normal(0, 0.1, n), None
    else:
        y, n_classes = (member ^ noise).astype(int), 2
    node = Node(backend, X, [True, False], y, np.ones(n), criterion, n_classes=n_classes)
    split = node.scan()
    assert split.feature[0] == 0 and split.missing_left[0] in (0, 1)
    go_left = node.goes_left(split)
    assert np.array_equal(go_left, member) or np.array_equal(go_left, ~member)


@pytest.mark.parametrize("nan_with_high", [True, False])
def test_missing_values_go_where_they_belong(backend, nan_with_high):
    rng = np.random.RandomState(2)
    n = 300
    x = rng.uniform(0, 10, n)
    y = (x > 5).astype(int)
    nan_rows = rng.rand(n) < 0.2
    y[nan_rows] = int(nan_with_high)
    x[nan_rows] = np.nan
    node = Node(backend, x[:, None], [False], y, np.ones(n), "gini", n_classes=2)
    split = node.scan()
    # left holds the low values, so missing goes left exactly when it is low
    assert split.missing_left[0] == (not nan_with_high)
    # the split is perfect: its gain is the whole parent impurity
    assert split.gain[0] == pytest.approx(reference.impurity("gini", y, np.ones(n), 2))


def test_ties_go_to_the_lowest_feature_then_the_lowest_bin(backend):
    rng = np.random.RandomState(3)
    n = 200
    signal = rng.randint(0, 6, n).astype(float)
    X = np.column_stack([rng.normal(size=n), signal, signal * 2, signal])
    y = (signal >= 3).astype(int)
    node = Node(backend, X, [False] * 4, y, np.ones(n), "gini", n_classes=2)
    split = node.scan()
    assert split.feature[0] == 1
    # a node whose rows sit in bins 0 and 5 only: thresholds 0..4 tie, 0 wins
    hist = node.hist.copy()
    hist[0, 1, 1:5] = 0
    hist[0, 1, 0] = node.hist[0, 1, :3].sum(axis=0)
    hist[0, 1, 5] = node.hist[0, 1, 3:6].sum(axis=0)
    allowed = np.array([[0, 1, 0, 0]], dtype=np.uint8)
    split = node.scan(allowed, hist)
    assert split.feature[0] == 1 and reference.bins_of(split.bitset[0]) - {node.mapper.missing_bin_} == {0}


def test_feature_mask_and_many_nodes_in_one_scan(backend):
    rng = np.random.RandomState(4)
    n = 300
    X = rng.randint(0, 10, (n, 3)).astype(float)
    y = X[:, 0] + 2 * X[:, 1] + rng.normal(0, 0.3, n)
    node = Node(backend, X, [False] * 3, y, np.ones(n), "squared_error")
    hist = np.concatenate([node.hist] * 3)
    allowed = np.array([[1, 1, 1], [1, 0, 1], [0, 0, 1]], dtype=np.uint8)
    split = node.scan(allowed, hist)
    for i, features in enumerate([{0, 1, 2}, {0, 2}, {2}]):
        best, _ = reference.best_gain_margin(node.brute_force(features), np.ones(n, bool))
        assert split.feature[i] == best[1] and _close(split.gain[i], best[0])
        np.testing.assert_array_equal(node.goes_left(split, i), best[3])
    assert split.feature[0] == 1   # the strongest feature when allowed


def test_no_valid_split_reports_minus_infinity(backend):
    X = np.array([[1.0], [1.0], [2.0], [2.0]])
    node = Node(backend, X, [False], np.array([0, 1, 0, 1]), np.ones(4), "gini",
                min_samples_leaf=3, n_classes=2)
    assert node.scan().gain[0] == -np.inf
    constant = Node(backend, np.ones((5, 1)), [False], np.arange(5.0), np.ones(5), "squared_error")
    assert constant.scan().gain[0] == -np.inf


def test_compiled_best_split_per_node_equals_numpy_argmax_reduction():
    """The CPU backend's compiled reduction of the scan's (node, feature)
    results picks what scan.best_split_per_node's argmax picks: the first
    maximum, ties to the lowest feature, -inf rows to feature 0, a NaN gain
    (numpy's argmax takes the first NaN) included."""
    from gputree.backends.cpu import split_scan
    from gputree.backends.scan import SplitInfo, best_split_per_node
    rng = np.random.default_rng(7)
    n_nodes, n_features = 40, 9
    gain = rng.integers(0, 4, (n_nodes, n_features)).astype(float)    # many ties
    gain[rng.random((n_nodes, n_features)) < 0.2] = -np.inf
    gain[3] = -np.inf
    gain[5, 6], gain[6, 0], gain[7, [2, 5]] = np.nan, np.nan, np.nan
    missing_left = rng.integers(0, 2, (n_nodes, n_features)).astype(np.uint8)
    bitset = rng.integers(0, 2**32, (n_nodes, n_features, 10)).astype(np.uint32)
    left = rng.integers(-2**40, 2**40, (n_nodes, n_features, 3))
    words = rng.integers(0, 2**32, (n_nodes, n_features, 2)).astype(np.uint32)
    expected = best_split_per_node(np, gain, missing_left, bitset, left, None, words)
    got = SplitInfo(*(np.empty_like(a) for a in (
        expected.gain, expected.feature, expected.bitset, expected.missing_left,
        expected.left_sums, expected.words)))
    split_scan.best_per_node(gain, missing_left, bitset, left, words, got.feature, got.gain,
                             got.missing_left, got.bitset, got.left_sums, got.words)
    for name in ("feature", "missing_left", "bitset", "left_sums", "words"):
        np.testing.assert_array_equal(getattr(got, name), getattr(expected, name), err_msg=name)
    np.testing.assert_array_equal(got.gain, expected.gain)     # NaN == NaN here
    assert got.feature[5] == 6 and got.feature[6] == 0 and got.feature[7] == 2
