"""Extremely randomized trees (splitter="random", ExtraTree*/ExtraTrees*,
boosting's extra_trees): the documented random-threshold rule against a
numpy reference, agreement with scikit-learn's ExtraTree where the two
algorithms coincide, and invariants. CPU and simulated-CUDA identity:
tests/simulated/test_extra_trees_simulated.py."""
import numpy as np
import pytest
import sklearn.ensemble
import sklearn.tree

from gputree import (DecisionTreeClassifier, ExtraTreeClassifier,
                     ExtraTreeRegressor, ExtraTreesClassifier, ExtraTreesRegressor,
                     GradientBoostingClassifier, GradientBoostingRanker,
                     GradientBoostingRegressor)
from gputree.data.training import seed_from


def _integer_data(seed, n=300, n_features=4, n_values=(3, 7, 12, 20)):
    """X int-valued float (n, F), feature f with n_values[f] distinct values
    (each its own bin: bin = rank of the value), binary and float targets."""
    rng = np.random.RandomState(seed)
    X = np.column_stack([rng.randint(0, k, n) for k in n_values[:n_features]]).astype(float)
    signal = X[:, 0] / n_values[0] - X[:, 1] / n_values[1] + rng.normal(0, 0.4, n)
    return X, (signal > np.median(signal)).astype(int), signal


def _gini_children(y, left):
    """Weighted gini of the two children (lower is better)."""
    total = 0.0
    for side in (left, ~left):
        p = np.bincount(y[side], minlength=2) / side.sum()
        total += side.sum() * (1.0 - np.sum(p * p))
    return total


def _squared_children(y, left):
    return sum(np.sum((y[s] - y[s].mean()) ** 2) for s in (left, ~left))


def _reference_root_split(X, y, random_state, children_score):
    """The root split of a tree with splitter="random" and every feature
    tried, from the documented rule (gputree.backends.node_features): the
    tree's RandomState gives the bin-edge seed first, then one draw u per
    feature; feature f's threshold is after bin lo + floor(u * (hi - lo)) of
    the node's lowest and highest bins lo, hi; the best of those wins (the
    lowest feature on ties). Returns (feature, rows going left)."""
    rng = np.random.RandomState(random_state)
    seed_from(rng)
    u = rng.random_sample((1, X.shape[1]))[0]
    best = None
    for f in range(X.shape[1]):
        ranks = np.unique(X[:, f], return_inverse=True)[1]
        lo, hi = 0, ranks.max()
        cut = lo + min(int(u[f] * (hi - lo)), hi - lo - 1)
        left = ranks <= cut
        score = children_score(y, left)
        if best is None or score < best[0]:
            best = (score, f, left)
    return best[1], best[2]


@pytest.mark.parametrize("random_state", range(6))
@pytest.mark.parametrize("task", ["classification", "regression"])
def test_root_split_follows_the_documented_random_threshold_rule(random_state, task):
    X, y_class, y_float = _integer_data(random_state)
    if task == "classification":
        model = ExtraTreeClassifier(max_features=None, max_depth=1, random_state=random_state,
                                    device="cpu").fit(X, y_class)
        feature, left = _reference_root_split(X, y_class, random_state, _gini_children)
    else:
        model = ExtraTreeRegressor(max_depth=1, random_state=random_state,
                                   device="cpu").fit(X, y_float)
        feature, left = _reference_root_split(X, y_float, random_state, _squared_children)
    assert model.tree_.feature[0] == feature
    leaves = model.apply(X)
    assert np.array_equal(leaves == model.tree_.children_left[0], left)


def test_random_thresholds_cover_the_node_range_uniformly_by_bin():
    """One feature of 6 values: over many random states the root threshold
    falls after each of bins 0..4 (never after the last) about equally."""
    X = np.repeat(np.arange(6.0), 10)[:, None]
    y = np.arange(60.0)
    counts = np.zeros(6, dtype=int)
    for seed in range(300):
        tree = ExtraTreeRegressor(max_depth=1, random_state=seed, device="cpu").fit(X, y).tree_
        counts[int(np.floor(tree.threshold[0]))] += 1
    assert counts[5] == 0
    assert counts[:5].min() >= 40     # 60 expected per bin; P(< 40) is about 0.002 each


@pytest.mark.parametrize("seed", range(4))
def test_binary_features_grow_scikit_learns_extra_tree(seed):
    """With 0/1 features every random threshold of a non-constant feature
    makes the same partition, so gputree's and scikit-learn's extra trees
    (every feature tried) choose the same splits."""
    rng = np.random.RandomState(seed)
    X = rng.randint(0, 2, size=(400, 6)).astype(float)
    y = (X[:, 0] + X[:, 1] * X[:, 2] + 0.7 * X[:, 3] + rng.normal(0, 0.8, 400) > 1.2)
    y = y.astype(int)
    params = dict(max_features=None, max_depth=3, random_state=seed)
    ours = ExtraTreeClassifier(device="cpu", **params).fit(X, y)
    theirs = sklearn.tree.ExtraTreeClassifier(**params).fit(X, y)
    assert ours.tree_.node_count == theirs.tree_.node_count
    assert np.array_equal(ours.predict_proba(X), theirs.predict_proba(X))
    grid = np.array(np.meshgrid(*[[0.0, 1.0]] * 6)).reshape(6, -1).T
    assert np.array_equal(ours.predict_proba(grid), theirs.predict_proba(grid))


def test_soft_max_features_keeps_drawing_past_constant_features():
    """scikit-learn's XOR test: with max_features=1 the best splitter still
    fits XOR exactly, drawing another feature where the first is constant."""
    X = np.array([[0, 0], [0, 1], [1, 0], [1, 1]] * 10, dtype=float)
    y = np.logical_xor(X[:, 0], X[:, 1]).astype(int)
    for seed in range(10):
        for splitter in ("best", "random"):
            model = DecisionTreeClassifier(max_features=1, splitter=splitter,
                                           random_state=seed, device="cpu").fit(X, y)
            assert model.score(X, y) == 1.0


def test_splitter_random_differs_from_best_and_repeats_with_its_seed():
    X, y, _ = _integer_data(0, n=500)
    best = DecisionTreeClassifier(random_state=0, device="cpu").fit(X, y).tree_
    random_a = DecisionTreeClassifier(splitter="random", random_state=0, device="cpu").fit(X, y)
    random_b = DecisionTreeClassifier(splitter="random", random_state=0, device="cpu").fit(X, y)
    random_c = DecisionTreeClassifier(splitter="random", random_state=1, device="cpu").fit(X, y)
    assert np.array_equal(random_a.tree_.threshold, random_b.tree_.threshold)
    assert not np.array_equal(random_a.tree_.threshold[:3], random_c.tree_.threshold[:3])
    assert (best.node_count != random_a.tree_.node_count
            or not np.array_equal(best.threshold, random_a.tree_.threshold))


def test_every_split_keeps_rows_on_both_sides():
    X, _, y = _integer_data(3, n=400)
    model = ExtraTreeRegressor(random_state=0, device="cpu").fit(X, y)
    tree = model.tree_
    internal = tree.children_left >= 0
    assert internal.sum() > 20
    assert np.all(tree.n_node_samples[tree.children_left[internal]] > 0)
    assert np.all(tree.n_node_samples[tree.children_right[internal]] > 0)
    # grown until a leaf's targets are equal or its rows are (nothing to split)
    leaves = model.apply(X)
    for leaf in np.unique(leaves):
        rows = leaves == leaf
        assert np.ptp(y[rows]) == 0 or np.all(np.ptp(X[rows], axis=0) == 0)


@pytest.mark.parametrize("ours,theirs", [
    (ExtraTreeClassifier, sklearn.tree.ExtraTreeClassifier),
    (ExtraTreeRegressor, sklearn.tree.ExtraTreeRegressor),
    (ExtraTreesClassifier, sklearn.ensemble.ExtraTreesClassifier),
    (ExtraTreesRegressor, sklearn.ensemble.ExtraTreesRegressor)])
def test_scikit_learns_parameters_and_defaults(ours, theirs):
    mine, sklearns = ours().get_params(), theirs().get_params()
    # scikit-learn's monotonic_cst aside, and ccp_alpha for the ensembles (as
    # RandomForest*, gputree's forests do not prune their trees)
    shared = set(sklearns) - {"monotonic_cst"} - ({"ccp_alpha"} if "n_estimators" in mine
                                                  else set())
    assert shared <= set(mine)
    differ = {k for k in shared if k != "criterion" and mine[k] != sklearns[k]}
    assert differ == set()


def test_ensemble_trees_see_every_row_and_differ():
    X, y, _ = _integer_data(1, n=200)
    forest = ExtraTreesClassifier(n_estimators=5, random_state=0, device="cpu").fit(X, y)
    assert not forest.bootstrap
    for tree in forest.estimators_:
        assert tree.splitter == "random"
        assert tree.tree_.n_node_samples[0] == len(y)
    thresholds = [t.tree_.threshold[0] for t in forest.estimators_]
    features = [t.tree_.feature[0] for t in forest.estimators_]
    assert len(set(zip(features, thresholds))) > 1


@pytest.mark.parametrize("cls", [GradientBoostingClassifier, GradientBoostingRegressor])
def test_boosting_extra_trees_changes_the_splits_and_still_learns(cls):
    X, y_class, y_float = _integer_data(2, n=400)
    y = y_class if cls is GradientBoostingClassifier else y_float
    params = dict(n_estimators=30, max_depth=3, early_stopping=False, random_state=0,
                  device="cpu")
    plain = cls(**params).fit(X, y)
    extra = cls(extra_trees=True, **params).fit(X, y)
    assert not np.array_equal(plain.predict(X), extra.predict(X))
    # the constant model's accuracy (majority class) or R^2 (0)
    baseline = max(y.mean(), 1 - y.mean()) if cls is GradientBoostingClassifier else 0.0
    assert extra.score(X, y) > baseline + 0.2


def test_ranker_takes_extra_trees():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(120, 3))
    y = (X[:, 0] > 0).astype(int) + (X[:, 1] > 1)
    params = dict(n_estimators=5, max_depth=2, min_samples_leaf=2, early_stopping=False,
                  random_state=0, device="cpu")
    plain = GradientBoostingRanker(**params).fit(X, y, group=[30] * 4)
    extra = GradientBoostingRanker(extra_trees=True, **params).fit(X, y, group=[30] * 4)
    assert not np.array_equal(plain.predict(X), extra.predict(X))


@pytest.mark.parametrize("cls,params", [
    (DecisionTreeClassifier, dict(splitter="rand")),
    (GradientBoostingClassifier, dict(extra_trees="yes")),
    (DecisionTreeClassifier, dict(splitter="random", multiway=True, criterion="gain_ratio"))])
def test_bad_parameters_are_named(cls, params):
    X, y, _ = _integer_data(0, n=60)
    name = "splitter" if "splitter" in params else "extra_trees"
    with pytest.raises(ValueError, match=name):
        cls(device="cpu", **params).fit(X, y)
