"""Surrogate splits (gputree.surrogates): every node's ranked surrogates
equal a brute-force search on the raw values, a perfect surrogate makes a
missing split feature harmless, and rows with nothing to go by take the
majority side."""
import numpy as np
import pytest

from gputree import DecisionTreeClassifier, DecisionTreeRegressor


def _data(n=300, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.randint(0, 10, size=(n, 4)).astype(float)
    X[:, 1] = np.where(rng.rand(n) < 0.8, X[:, 0], rng.randint(0, 10, n))   # mimics feature 0
    X[:, 3] = 9 - X[:, 2] + (rng.rand(n) < 0.2)                            # mimics -feature 2
    y = (X[:, 0] > 4) * 2.0 + (X[:, 2] > 6) + rng.normal(scale=0.3, size=n)
    X[rng.rand(n) < 0.1, 2] = np.nan
    return X, y


def _brute_force(X, rows, go_left, primary, k):
    """[(agreement, feature, threshold, le)] of the best split per other
    feature, better than the majority rule, ranked; on the rows where both
    features are present."""
    found = []
    for f in range(X.shape[1]):
        both = rows & ~np.isnan(X[:, f])
        if f == primary or not both.any():
            continue
        majority = max(go_left[both].mean(), 1 - go_left[both].mean())
        best = None
        for v in np.unique(X[both, f])[:-1]:
            for le in (True, False):
                agree = np.mean(((X[both, f] <= v) == le) == go_left[both])
                if best is None or agree > best[0]:
                    best = (agree, f, v, le)
        if best is not None and best[0] > majority:
            found.append(best)
    return sorted(found, key=lambda c: (-c[0], c[1]))[:k]


@pytest.mark.parametrize("max_bins", [255, 1000])   # 8-bit and 16-bit bin codes
def test_surrogates_equal_a_brute_force_search(max_bins):
    X, y = _data()
    params = dict(max_depth=3, min_samples_leaf=5, device="cpu", random_state=0,
                  max_bins=max_bins)
    model = DecisionTreeRegressor(missing_strategy="surrogate", n_surrogates=2, **params).fit(X, y)
    plain = DecisionTreeRegressor(**params).fit(X, y)
    tree, sur = model.tree_, model.surrogates_
    np.testing.assert_array_equal(tree.feature, plain.tree_.feature)
    rows_of = plain.decision_path(X).toarray().astype(bool).T
    checked = 0
    for node in np.flatnonzero(tree.feature >= 0):
        primary = tree.feature[node]
        rows = rows_of[node] & ~np.isnan(X[:, primary])
        expected = _brute_force(X, rows, X[:, primary] <= tree.threshold[node], primary, 2)
        got = [f for f in sur.feature[node] if f >= 0]
        assert got == [e[1] for e in expected]
        np.testing.assert_allclose(sur.agreement[node, :len(got)], [e[0] for e in expected],
                                   rtol=1e-12)
        for s, (_, f, v, le) in enumerate(expected):
            threshold = model._bin_mapper.bin_thresholds_[f, sur.bin[node, s]]
            assert bool(sur.left_le[node, s]) == le
            both = rows & ~np.isnan(X[:, f])
            np.testing.assert_array_equal(X[both, f] <= threshold, X[both, f] <= v)
        checked += len(got)
    assert checked >= 3


@pytest.mark.parametrize("max_bins", [255, 1000])   # 1000: every one of 400 values has a bin
def test_a_perfect_surrogate_makes_a_missing_feature_harmless(max_bins):
    rng = np.random.RandomState(1)
    X = rng.uniform(0, 10, size=(400, 3))
    X[:, 1] = 3 * X[:, 0] + 1          # the same order as feature 0
    y = (X[:, 0] > 5).astype(int) ^ (X[:, 2] > 7)
    params = dict(max_depth=4, device="cpu", random_state=0, max_bins=max_bins)
    model = DecisionTreeClassifier(missing_strategy="surrogate", **params).fit(X, y)
    # feature 1 partitions rows as feature 0 does: ties go to feature 0
    assert 0 in model.tree_.feature and 1 not in model.tree_.feature
    blanked = X.copy()
    blanked[:, 0] = np.nan
    np.testing.assert_array_equal(model.predict(blanked), model.predict(X))
    default = DecisionTreeClassifier(**params).fit(X, y)
    assert np.any(default.predict(blanked) != default.predict(X))   # the test can fail


def test_rows_without_any_usable_feature_take_the_majority_side():
    X, y = _data()
    model = DecisionTreeRegressor(max_depth=3, missing_strategy="surrogate", n_surrogates=0,
                                  device="cpu").fit(X, y)
    tree = model.tree_
    node = 0
    while tree.left_child[node] >= 0:
        left = tree.left_child[node]
        node = left if tree.weighted_n_node_samples[left] >= tree.weighted_n_node_samples[
            left + 1] else left + 1
    assert model.apply(np.full((1, 4), np.nan))[0] == node


def test_bad_missing_strategy_is_refused():
    X, y = _data(n=40)
    with pytest.raises(ValueError, match="missing_strategy"):
        DecisionTreeRegressor(missing_strategy="impute", device="cpu").fit(X, y)
