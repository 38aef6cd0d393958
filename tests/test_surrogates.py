"""Surrogate splits (gputree.growth.surrogates): every node's ranked surrogates
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


def _categorical_data(n=400, seed=0):
    """Feature 1 (categorical) mimics "x0 > 4", feature 3 (numerical) mimics
    the categorical split "x2 in {1, 3}"; both split features have NaNs."""
    rng = np.random.RandomState(seed)
    X = np.empty((n, 4))
    X[:, 0] = rng.randint(0, 10, n)
    X[:, 1] = np.where(X[:, 0] > 4, rng.choice([0, 3, 5], n), rng.choice([1, 2, 4], n))
    noise = rng.rand(n) < 0.15
    X[noise, 1] = rng.randint(0, 6, noise.sum())
    X[:, 2] = rng.randint(0, 5, n)
    in_13 = np.isin(X[:, 2], [1, 3])
    X[:, 3] = np.where(in_13 ^ (rng.rand(n) < 0.1), 5.0, 0.0) + rng.randint(0, 4, n)
    y = 2.0 * (X[:, 0] > 4) + 1.5 * in_13 + rng.normal(scale=0.3, size=n)
    X[rng.rand(n) < 0.1, 1] = np.nan
    X[rng.rand(n) < 0.1, 2] = np.nan
    return X, y


def _subsets(values):
    """Every subset (a tuple) of the distinct values."""
    values = list(values)
    return [tuple(v for i, v in enumerate(values) if mask >> i & 1)
            for mask in range(2 ** len(values))]


def _brute_force(X, rows, go_left, primary, k, categorical=()):
    """[(agreement, feature, rule)] of the best split per other feature,
    better than the majority rule, ranked; on the rows where both features
    are present. rule: (threshold, le) or the subset of categories going left."""
    found = []
    for f in range(X.shape[1]):
        both = rows & ~np.isnan(X[:, f])
        if f == primary or not both.any():
            continue
        majority = max(go_left[both].mean(), 1 - go_left[both].mean())
        best = None
        if f in categorical:
            candidates = [np.isin(X[both, f], subset) for subset in _subsets(np.unique(X[both, f]))]
        else:
            candidates = [(X[both, f] <= v) == le
                          for v in np.unique(X[both, f])[:-1] for le in (True, False)]
        for sends_left in candidates:
            agree = np.mean(sends_left == go_left[both])
            if best is None or agree > best[0]:
                best = (agree, f)
        if best is not None and best[0] > majority:
            found.append(best)
    return sorted(found, key=lambda c: (-c[0], c[1]))[:k]


def _sends_left(model, node, s, values):
    """Whether surrogate s of node sends these raw values (present) left."""
    f = model.surrogates_.feature[node, s]
    mapper = model._bin_mapper
    bins = np.arange(mapper.n_bins_non_missing_[f])
    words = model.surrogates_.sides[node, s, 0]
    left = (words[bins >> 5] >> (bins & 31).astype(np.uint32)) & 1 == 1
    return np.isin(values, mapper.bin_thresholds_[f, bins[left]])


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
        for s, (agreement, f) in enumerate(expected):
            both = rows & ~np.isnan(X[:, f])
            threshold = model._bin_mapper.bin_thresholds_[f, sur.bin[node, s]]
            sends_left = (X[both, f] <= threshold) == bool(sur.left_le[node, s])
            assert np.mean(sends_left == (X[both, primary] <= tree.threshold[node])) == agreement
        checked += len(got)
    assert checked >= 3


def test_categorical_surrogates_equal_a_brute_force_search():
    X, y = _categorical_data()
    params = dict(max_depth=3, min_samples_leaf=5, device="cpu", random_state=0,
                  categorical_features=[1, 2])
    model = DecisionTreeRegressor(missing_strategy="surrogate", n_surrogates=3, **params).fit(X, y)
    tree, sur = model.tree_, model.surrogates_
    rows_of = model.decision_path(X).toarray().astype(bool).T   # X has no NaN in feature 0
    kinds = set()
    for node in np.flatnonzero(tree.feature >= 0):
        primary = tree.feature[node]
        rows = rows_of[node] & ~np.isnan(X[:, primary])
        if tree.is_categorical[node]:
            go_left = np.isin(X[:, primary], tree.left_categories(node))
        else:
            go_left = X[:, primary] <= tree.threshold[node]
        expected = _brute_force(X, rows, go_left, primary, 3, categorical=(1, 2))
        got = [f for f in sur.feature[node] if f >= 0]
        assert got == [e[1] for e in expected]
        np.testing.assert_allclose(sur.agreement[node, :len(got)], [e[0] for e in expected],
                                   rtol=1e-12)
        for s, (agreement, f) in enumerate(expected):
            if f in (1, 2):
                both = rows & ~np.isnan(X[:, f])
                sends_left = _sends_left(model, node, s, X[both, f])
                np.testing.assert_allclose(np.mean(sends_left == go_left[both]), agreement,
                                           rtol=1e-12)
            kinds.add((bool(tree.is_categorical[node]), f in (1, 2)))
    assert {(False, True), (True, False)} <= kinds   # categorical as surrogate and as primary


def test_a_planted_categorical_surrogate_is_found_and_used():
    X, y = _categorical_data(n=600, seed=2)
    X[:, 2:] = 0.0                                   # only x0 (and its mimic x1) matter
    params = dict(max_depth=1, device="cpu", categorical_features=[1])
    model = DecisionTreeRegressor(missing_strategy="surrogate", **params).fit(X, y)
    assert model.tree_.feature[0] == 0 and model.surrogates_.feature[0, 0] == 1
    both = ~np.isnan(X[:, 1])
    go_left = X[both, 0] <= model.tree_.threshold[0]
    # the planted rule: categories {1, 2, 4} go with x0 <= 4
    planted = np.isin(X[both, 1], [1, 2, 4])
    assert model.surrogates_.agreement[0, 0] == pytest.approx(np.mean(planted == go_left))
    blanked = X.copy()
    blanked[:, 0] = np.nan
    expected = np.where(np.isin(X[:, 1], [1, 2, 4]), model.tree_.value[1, 0, 0],
                        model.tree_.value[2, 0, 0])
    np.testing.assert_array_equal(model.predict(blanked)[both], expected[both])
    default = DecisionTreeRegressor(**params).fit(X, y)
    error = np.mean((model.predict(blanked) - y) ** 2)
    assert error < 0.5 * np.mean((default.predict(blanked) - y) ** 2)


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


def test_surrogate_importances_equal_a_hand_computation_on_a_stump():
    """One split on x0 (rows with x0 present: none is missing in _data):
    x0 gets its squared-error decrease D, each surrogate feature D x its
    agreement (computed here from the raw values), normalised to sum 1."""
    X, y = _data()
    model = DecisionTreeRegressor(max_depth=1, missing_strategy="surrogate", n_surrogates=2,
                                  device="cpu").fit(X, y)
    tree, sur = model.tree_, model.surrogates_
    primary = tree.feature[0]
    go_left = X[:, primary] <= tree.threshold[0]
    decrease = len(y) * np.var(y) - go_left.sum() * np.var(y[go_left]) \
        - (~go_left).sum() * np.var(y[~go_left])
    expected = np.zeros(X.shape[1])
    expected[primary] = decrease
    for s in range(2):
        f = sur.feature[0, s]
        assert f >= 0 and f != primary
        both = ~np.isnan(X[:, f])
        threshold = model._bin_mapper.bin_thresholds_[f, sur.bin[0, s]]
        sends_left = (X[both, f] <= threshold) == bool(sur.left_le[0, s])
        expected[f] += decrease * np.mean(sends_left == go_left[both])
    np.testing.assert_allclose(model.surrogate_importances_, expected / expected.sum(),
                               rtol=1e-9)
    assert model.feature_importances_[sur.feature[0]].max() == 0   # only x0 splits


def test_surrogate_importances_sum_split_and_surrogate_credits_over_nodes():
    X, y = _categorical_data()
    model = DecisionTreeRegressor(max_depth=3, missing_strategy="surrogate", n_surrogates=2,
                                  categorical_features=[1, 2], device="cpu").fit(X, y)
    tree, sur = model.tree_, model.surrogates_
    credit = np.zeros(X.shape[1])
    for node in range(tree.node_count):           # a loop over nodes, by hand
        if tree.feature[node] < 0:
            continue
        kids = [tree.children_left[node], tree.children_right[node]]
        d = tree.weighted_n_node_samples[node] * tree.impurity[node] - sum(
            tree.weighted_n_node_samples[c] * tree.impurity[c] for c in kids)
        credit[tree.feature[node]] += d
        for s in range(2):
            if sur.feature[node, s] >= 0:
                credit[sur.feature[node, s]] += d * sur.agreement[node, s]
    np.testing.assert_allclose(model.surrogate_importances_, credit / credit.sum(), rtol=1e-9)
    without = DecisionTreeRegressor(max_depth=3, missing_strategy="surrogate", n_surrogates=0,
                                    categorical_features=[1, 2], device="cpu").fit(X, y)
    np.testing.assert_array_equal(without.surrogate_importances_,
                                  without.feature_importances_)
    with pytest.raises(AttributeError, match="missing_strategy='surrogate'"):
        DecisionTreeRegressor(max_depth=2, device="cpu").fit(X, y).surrogate_importances_


def test_exports_that_would_ignore_surrogates_refuse_them():
    from gputree.explain import shap_model
    X, y = _data()
    model = DecisionTreeRegressor(max_depth=2, missing_strategy="surrogate",
                                  device="cpu").fit(X, y)
    with pytest.raises(ValueError, match="pred_contrib=True.*surrogate"):
        model.predict(X, pred_contrib=True)
    with pytest.raises(ValueError, match="shap_model does not support surrogate"):
        shap_model(model)
    pytest.importorskip("treelite")
    with pytest.raises(ValueError, match="to_treelite does not support surrogate"):
        model.to_treelite()
    # the default strategy still exports
    DecisionTreeRegressor(max_depth=2, device="cpu").fit(X, y).predict(X, pred_contrib=True)
