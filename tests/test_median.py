"""DecisionTreeRegressor(criterion="absolute_error") (gputree.growth.median):
agreement with scikit-learn's MAE trees, with a plain-numpy brute-force
grower (missing values, weights, min_samples_leaf), pruning by the
absolute-error impurity, and the refusals."""
import numpy as np
import pytest
from sklearn.tree import DecisionTreeRegressor as SkRegressor

from gputree import DecisionTreeClassifier, DecisionTreeRegressor
from gputree._dtypes import BITSET_RANGE_WORD

TIE = 1e-12       # as gputree.growth.median.TIE (ties: the first candidate wins)


def weighted_median(y, w):
    """scikit-learn's MAE median: the smallest target whose cumulative weight
    reaches half the total; the mean with the next where it is exactly half."""
    keep = w > 0
    y, w = y[keep], w[keep]
    order = np.argsort(y, kind="stable")
    y, cumulative = y[order], np.cumsum(w[order])
    at = int(np.searchsorted(2 * cumulative, cumulative[-1]))
    if 2 * cumulative[at] == cumulative[-1]:
        return (y[at] + y[at + 1]) / 2
    return y[at]


def deviation(y, w):
    return float(np.sum(w * np.abs(y - weighted_median(y, w)))) if y.size else 0.0


def candidates(x, y, w, min_leaf):
    """(children's deviation, last left value, missing_left) of every valid
    split of one feature, in the order gputree tries them."""
    missing = np.isnan(x)
    values = np.unique(x[~missing])
    found = []
    for v in values:
        for missing_left in (False, True):
            if missing_left and not missing.any():
                continue
            left = (x <= v) | (missing & missing_left)
            right_present = (~missing & (x > v)).any()
            if missing_left and not right_present:
                continue
            if left.sum() < min_leaf or (~left).sum() < min_leaf or (~left).sum() == 0:
                continue
            found.append((deviation(y[left], w[left]) + deviation(y[~left], w[~left]),
                          v, missing_left))
    return found


def reference_tree(X, y, w, max_depth, min_leaf, depth=0):
    """Nested dict: the brute-force absolute-error tree of the rows."""
    node = {"n": y.size, "value": weighted_median(y, w), "impurity": deviation(y, w) / w.sum()}
    if depth >= max_depth or y.size < 2 * min_leaf or node["impurity"] == 0.0:
        return node
    parent = deviation(y, w)
    per_feature = []
    for f in range(X.shape[1]):
        best = (np.inf, None, None)
        for value, v, ml in candidates(X[:, f], y, w, min_leaf):
            if value < best[0] - TIE * parent:
                best = (value, v, ml)
        per_feature.append(best)
    scores = np.array([b[0] for b in per_feature])
    if not np.isfinite(scores.min()):
        return node
    f = int(np.flatnonzero(scores <= scores.min() + TIE * parent)[0])
    _, v, ml = per_feature[f]
    x = X[:, f]
    left = (x <= v) | (np.isnan(x) & ml)
    if not np.isnan(x[w > 0]).any():
        # no missing values here: at predict they go to the child with more
        # rows (of positive weight), right on ties
        ml = np.sum(left & (w > 0)) > np.sum(~left & (w > 0))
    node.update(feature=f, last_value=v, missing_left=ml,
                left=reference_tree(X[left], y[left], w[left], max_depth, min_leaf, depth + 1),
                right=reference_tree(X[~left], y[~left], w[~left], max_depth, min_leaf,
                                     depth + 1))
    return node


def assert_matches_reference(tree, node, X, i=0):
    assert tree.n_node_samples[i] == node["n"]
    assert tree.value[i, 0, 0] == pytest.approx(node["value"], rel=1e-12, abs=1e-12)
    assert tree.impurity[i] == pytest.approx(node["impurity"], rel=1e-9, abs=1e-12)
    if "feature" not in node:
        assert tree.children_left[i] < 0
        return
    f = node["feature"]
    assert tree.feature[i] == f
    column = X[:, f]
    above = column[~np.isnan(column) & (column > node["last_value"])]
    # gputree's threshold: the midpoint to the next value of the whole column
    assert node["last_value"] < tree.threshold[i]
    assert above.size == 0 or tree.threshold[i] < above.min()
    assert bool(tree.missing_go_to_left[i]) == node["missing_left"]
    left = tree.children_left[i]
    assert_matches_reference(tree, node["left"], X, left)
    assert_matches_reference(tree, node["right"], X, tree.children_right[i])


def grid(seed, n=120, n_features=3, n_values=12, nan_share=0.0):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, n_values, (n, n_features)).astype(float)
    X[rng.random(X.shape) < nan_share] = np.nan
    y = (np.nan_to_num(X[:, 0], nan=3.0) * 0.3 - np.nan_to_num(X[:, -1], nan=5.0) * 0.2
         + rng.standard_exponential(n))
    return X, y, rng


@pytest.mark.parametrize("seed", range(4))
def test_tree_equals_the_brute_force_reference_with_nans_weights_and_min_leaf(seed):
    X, y, rng = grid(seed, nan_share=0.15)
    w = rng.integers(1, 4, y.size).astype(float) if seed % 2 else np.ones(y.size)
    min_leaf = 1 + seed % 3
    model = DecisionTreeRegressor(criterion="absolute_error", max_depth=4,
                                  min_samples_leaf=min_leaf, device="cpu")
    model.fit(X, y, sample_weight=None if seed % 2 == 0 else w)
    assert model.tree_.node_count > 7
    assert_matches_reference(model.tree_, reference_tree(X, y, w, 4, min_leaf), X)
    leaves = model.tree_.children_left < 0
    assert model.tree_.n_node_samples[leaves].min() >= min_leaf


def _sklearn_walk(ours, theirs, X, y, w, i=0, j=0, rows=None):
    """Compare node by node; where the two chose different splits, both
    must be optimal (a tie of absolute error, which is frequent): returns
    the number of such ties."""
    rows = np.arange(y.size) if rows is None else rows
    assert ours.n_node_samples[i] == theirs.n_node_samples[j]
    assert ours.value[i, 0, 0] == pytest.approx(theirs.value[j, 0, 0], rel=1e-12)
    assert ours.impurity[i] == pytest.approx(theirs.impurity[j], rel=1e-9, abs=1e-12)
    assert (ours.children_left[i] < 0) == (theirs.children_left[j] < 0)
    if ours.children_left[i] < 0:
        return 0
    go = [X[rows, t.feature[k]] <= t.threshold[k] for t, k in ((ours, i), (theirs, j))]
    if not np.array_equal(*go):
        ys, ws = y[rows], w[rows]
        a, b = (deviation(ys[g], ws[g]) + deviation(ys[~g], ws[~g]) for g in go)
        assert a == pytest.approx(b, rel=1e-9)
        return 1
    return (_sklearn_walk(ours, theirs, X, y, w, ours.children_left[i],
                          theirs.children_left[j], rows[go[0]])
            + _sklearn_walk(ours, theirs, X, y, w, ours.children_right[i],
                            theirs.children_right[j], rows[~go[0]]))


@pytest.mark.parametrize("seed", range(6))
def test_agrees_with_scikit_learn(seed):
    """Same medians, impurities and splits as scikit-learn's MAE tree,
    except where candidates tie exactly (scikit-learn tries the features in
    a random order): there both splits have the same children's deviation."""
    X, y, rng = grid(seed, n=150, n_features=1 + seed % 3, n_values=25)
    w = rng.integers(1, 4, y.size).astype(float) if seed % 2 else np.ones(y.size)
    params = dict(criterion="absolute_error", max_depth=5, min_samples_leaf=1 + seed % 3)
    ours = DecisionTreeRegressor(device="cpu", **params).fit(X, y, w)
    theirs = SkRegressor(random_state=0, **params).fit(X, y, w)
    ties = _sklearn_walk(ours.tree_, theirs.tree_, X, y, w)
    assert ties <= 3
    if ties == 0:
        np.testing.assert_allclose(ours.predict(X), theirs.predict(X), rtol=1e-12)


def test_pruning_uses_the_absolute_error_impurity():
    X, y, _ = grid(7)
    model = DecisionTreeRegressor(criterion="absolute_error", max_depth=5, device="cpu")
    path = model.cost_complexity_pruning_path(X, y)
    full = model.fit(X, y).tree_
    leaves = full.children_left < 0
    # the full tree's risk: the leaves' absolute deviations over the total weight
    total = sum(deviation(y[model.apply(X) == leaf], np.ones(y.size)[model.apply(X) == leaf])
                for leaf in np.flatnonzero(leaves))
    assert path.impurities[0] == pytest.approx(total / y.size, rel=1e-9)
    assert path.impurities[-1] == pytest.approx(deviation(y, np.ones(y.size)) / y.size)
    pruned = DecisionTreeRegressor(criterion="absolute_error", max_depth=5, device="cpu",
                                   ccp_alpha=path.ccp_alphas[-2]).fit(X, y)
    assert pruned.tree_.node_count == 3


def test_absolute_error_is_refused_for_classifiers_and_categorical_features():
    X, y, _ = grid(1)
    with pytest.raises(ValueError, match="criterion"):
        DecisionTreeClassifier(criterion="absolute_error").fit(X, y > 2)
    with pytest.raises(ValueError, match="categorical_features"):
        DecisionTreeRegressor(criterion="absolute_error", categorical_features=[2],
                              device="cpu").fit(X, y)


def test_exact_with_16_bit_bin_codes():
    """More than 256 bins per feature (16-bit codes, splits past bin 255)."""
    rng = np.random.default_rng(5)
    X = rng.integers(0, 600, (400, 2)).astype(float)
    X[rng.random(X.shape) < 0.1] = np.nan
    y = 3.0 * (np.nan_to_num(X[:, 0], nan=0.0) > 500) + rng.standard_exponential(400)
    model = DecisionTreeRegressor(criterion="absolute_error", max_depth=3, max_bins=1000,
                                  device="cpu").fit(X, y)
    assert np.any(model.tree_.arrays.bitset[:, BITSET_RANGE_WORD] > 0)  # a split past bin 255
    assert_matches_reference(model.tree_, reference_tree(X, y, np.ones(y.size), 3, 1), X)


@pytest.mark.parametrize("seed", range(3))
def test_rows_of_zero_weight_take_no_part_as_in_scikit_learn(seed):
    """scikit-learn drops rows of weight zero before growing (a forest's
    out-of-bag rows): they count for no min_samples_leaf and no split
    separates them alone; they still reach a leaf."""
    # one feature: no ties between features, so the whole trees are compared
    X, y, rng = grid(seed, n=200, n_features=1, n_values=25)
    w = rng.integers(0, 3, y.size).astype(float)        # a third of the rows weigh 0
    params = dict(criterion="absolute_error", max_depth=6, min_samples_leaf=3)
    ours = DecisionTreeRegressor(device="cpu", **params).fit(X, y, w)
    theirs = SkRegressor(random_state=0, **params).fit(X, y, w)
    assert ours.tree_.node_count > 15
    assert _sklearn_walk(ours.tree_, theirs.tree_, X, y, w) == 0
    kept = w > 0
    np.testing.assert_allclose(ours.predict(X[kept]), theirs.predict(X[kept]), rtol=1e-12)
    alone = DecisionTreeRegressor(device="cpu", **params).fit(X[kept], y[kept], w[kept])
    for name in ("children_left", "feature", "n_node_samples", "value", "impurity"):
        np.testing.assert_array_equal(getattr(ours.tree_, name), getattr(alone.tree_, name))


@pytest.mark.parametrize("seed", range(6))
def test_best_first_agrees_with_scikit_learn(seed):
    """max_leaf_nodes grows best first as scikit-learn's best-first builder
    (the leaf whose split removes most of the weighted impurity splits
    next): the same nodes, medians, impurities and splits, node by node,
    for every budget (the data of test_agrees_with_scikit_learn, where
    candidates may tie exactly: then both splits have the same deviation)."""
    X, y, rng = grid(seed, n=150, n_features=1 + seed % 3, n_values=25)
    w = rng.integers(1, 4, y.size).astype(float) if seed % 2 else np.ones(y.size)
    ties = 0
    for budget in (2, 3, 5, 8, 13):
        params = dict(criterion="absolute_error", max_leaf_nodes=budget,
                      min_samples_leaf=1 + seed % 3)
        ours = DecisionTreeRegressor(device="cpu", **params).fit(X, y, w)
        theirs = SkRegressor(random_state=0, **params).fit(X, y, w)
        assert ours.get_n_leaves() <= budget
        ties += _sklearn_walk(ours.tree_, theirs.tree_, X, y, w)
        if ties == 0:
            assert ours.get_n_leaves() == theirs.get_n_leaves()
            np.testing.assert_array_equal(ours.predict(X), theirs.predict(X))
    assert ties <= 2


@pytest.mark.parametrize("seed", range(3))
def test_best_first_without_a_budget_grows_the_level_wise_tree(seed):
    """With more leaves allowed than the tree has, best first splits every
    splittable node as level-wise growth does: the same leaves (rows,
    medians, impurities), numbered in creation order instead."""
    X, y, rng = grid(seed, nan_share=0.1)
    w = rng.integers(1, 4, y.size).astype(float)
    params = dict(criterion="absolute_error", max_depth=5, min_samples_leaf=2, device="cpu")
    level = DecisionTreeRegressor(**params).fit(X, y, w)
    best = DecisionTreeRegressor(max_leaf_nodes=10_000, **params).fit(X, y, w)
    assert best.get_n_leaves() == level.get_n_leaves() > 8
    np.testing.assert_array_equal(best.predict(X), level.predict(X))
    leaves = [t.children_left < 0 for t in (level.tree_, best.tree_)]
    for name in ("n_node_samples", "impurity"):
        np.testing.assert_array_equal(*(np.sort(getattr(t, name)[k])
                                        for t, k in zip((level.tree_, best.tree_), leaves)))
