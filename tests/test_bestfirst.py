"""Best-first growth (gputree/growth/bestfirst.py): trees with max_leaf_nodes
are scikit-learn's exact best-first trees where the algorithms coincide
(features with fewer distinct values than bins, no tied gains); boosting's
grow_policy="lossguide" trees hold max_leaf_nodes leaves, take their splits
in the frontier's order, are the depthwise trees when the budget takes every
split, and round-trip through model files."""
import numpy as np
import pytest
from sklearn import datasets
from sklearn import tree as sktree

import gputree
import reference


def _pair(kind, **params):
    ours = {"clf": gputree.DecisionTreeClassifier, "reg": gputree.DecisionTreeRegressor}[kind]
    theirs = {"clf": sktree.DecisionTreeClassifier, "reg": sktree.DecisionTreeRegressor}[kind]
    return ours(device="cpu", random_state=0, **params), theirs(random_state=0, **params)


@pytest.mark.parametrize("params", [dict(max_leaf_nodes=2), dict(max_leaf_nodes=7),
                                    dict(max_leaf_nodes=25),
                                    dict(max_leaf_nodes=40, max_depth=4),
                                    dict(max_leaf_nodes=15, min_samples_leaf=8),
                                    dict(max_leaf_nodes=30, min_impurity_decrease=0.02)])
def test_regression_trees_are_scikit_learns_best_first_trees(params):
    rng = np.random.RandomState(0)
    X, y = reference.grid_data(rng)
    ours, theirs = _pair("reg", **params)
    reference.assert_same_tree(ours.fit(X, y), theirs.fit(X, y), X)
    assert ours.get_n_leaves() == theirs.get_n_leaves()


@pytest.mark.parametrize("criterion", ["gini", "entropy"])
@pytest.mark.parametrize("budget", [3, 9, 20])
def test_classification_trees_are_scikit_learns_best_first_trees(criterion, budget):
    rng = np.random.RandomState(2)
    X, y = reference.grid_classification(rng)
    w = reference.dyadic_weights(rng, len(y))
    ours, theirs = _pair("clf", criterion=criterion, max_leaf_nodes=budget)
    reference.assert_same_tree(ours.fit(X, y, sample_weight=w),
                               theirs.fit(X, y, sample_weight=w), X)


@pytest.mark.parametrize("name,budget", [("diabetes", 12), ("diabetes", 50), ("iris", 8),
                                         ("wine", 8), ("digits", 8), ("digits", 20)])
def test_bundled_dataset_trees_are_scikit_learns(name, budget):
    """scikit-learn's bundled datasets, binned losslessly (more bins than
    any feature has distinct values). Left out: breast_cancer, whose
    level-wise trees differ from scikit-learn's already (its float32 copy
    of X), and digits beyond 20 leaves (tied gains: pixel counts)."""
    X, y = getattr(datasets, f"load_{name}")(return_X_y=True)
    distinct = max(np.unique(X[:, j]).size for j in range(X.shape[1]))
    ours, theirs = _pair("reg" if name == "diabetes" else "clf", max_leaf_nodes=budget)
    ours.set_params(max_bins=max(255, distinct + 1))
    reference.assert_same_tree(ours.fit(X, y), theirs.fit(X, y), X)
    assert ours.get_n_leaves() == theirs.get_n_leaves() == budget


def _regression(n=600, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n, 5))
    X[rng.rand(n) < 0.05, 2] = np.nan
    y = np.sin(2 * X[:, 0]) + X[:, 1] ** 2 + 0.5 * np.nan_to_num(X[:, 2]) + rng.normal(0, 0.1, n)
    return X, y


def _boost(**params):
    return gputree.GradientBoostingRegressor(device="cpu", early_stopping=False, random_state=0,
                                             **params)


def _split_sets(tree, X_binned):
    """frozenset of (rows of the node as bytes, feature) of every split."""
    rows = reference_node_rows(tree, X_binned)
    return {(rows[i].tobytes(), int(tree.feature[i])) for i in np.flatnonzero(tree.feature >= 0)}


def reference_node_rows(tree, X_binned):
    """bool (n_nodes, n): which training rows reach each node (walked here,
    in numpy, from the tree's bitsets)."""
    n = X_binned.shape[0]
    reach = np.zeros((tree.node_count, n), dtype=bool)
    reach[0] = True
    for node in range(tree.node_count):
        f = tree.feature[node]
        if f < 0:
            continue
        bins = X_binned[:, f].astype(np.int64)
        word = tree.bitset[node][np.minimum(bins >> 5, tree.bitset.shape[1] - 1)]
        left = ((word >> (bins & 31).astype(np.uint32)) & 1).astype(bool)
        assert np.all(bins < 32 * tree.bitset.shape[1])
        child = tree.left_child[node]
        reach[child] = reach[node] & left
        reach[child + 1] = reach[node] & ~left
    return reach


@pytest.mark.parametrize("budget", [2, 5, 17])
def test_lossguide_trees_have_max_leaf_nodes_leaves(budget):
    X, y = _regression()
    model = _boost(n_estimators=3, grow_policy="lossguide", max_leaf_nodes=budget,
                   max_depth=None, min_samples_leaf=1).fit(X, y)
    assert [t.n_leaves for t in model._trees] == [budget] * 3


def test_lossguide_default_is_31_leaves_and_max_depth_still_bounds():
    X, y = _regression(2000)
    model = _boost(n_estimators=2, grow_policy="lossguide", max_depth=None,
                   min_samples_leaf=1).fit(X, y)
    assert [t.n_leaves for t in model._trees] == [31, 31]
    assert max(t.max_depth for t in model._trees) > 6      # grown past depthwise's depth
    shallow = _boost(n_estimators=2, grow_policy="lossguide", max_depth=3).fit(X, y)
    assert all(t.max_depth <= 3 and t.n_leaves <= 8 for t in shallow._trees)


@pytest.mark.parametrize("depth", [2, 4])
def test_lossguide_with_room_for_every_split_is_depthwise(depth):
    """With a budget of 2**depth leaves every split depthwise takes is taken
    best first too: the same splits, leaf values and predictions."""
    X, y = _regression()
    common = dict(n_estimators=4, max_depth=depth, min_samples_leaf=5, subsample=0.8)
    level = _boost(**common).fit(X, y)
    best = _boost(grow_policy="lossguide", max_leaf_nodes=2 ** depth, **common).fit(X, y)
    X_binned = np.asarray(level._bin_new_data(X).X_binned)
    for a, b in zip(level._trees, best._trees):
        assert a.n_leaves == b.n_leaves
        assert _split_sets(a, X_binned) == _split_sets(b, X_binned)
        np.testing.assert_array_equal(np.sort(a.value.ravel()), np.sort(b.value.ravel()))
    np.testing.assert_array_equal(level.predict(X), best.predict(X))


def test_lossguide_splits_follow_the_frontier_order():
    """Node ids are the order of the splits: a node split later than another
    that already existed has no larger gain (equal gains: the older node
    first), and the tree with one leaf fewer is this tree's first splits."""
    X, y = _regression(800, seed=3)
    trees = {k: _boost(n_estimators=1, grow_policy="lossguide", max_leaf_nodes=k,
                       max_depth=None, min_samples_leaf=1, learning_rate=1.0).fit(X, y)._trees[0]
             for k in (11, 12)}
    tree = trees[12]
    internal = np.flatnonzero(tree.feature >= 0)
    split_at = {node: tree.left_child[node] for node in internal}    # the split's order
    for a in internal:
        for b in internal:
            if b < split_at[a] and split_at[b] > split_at[a]:      # b waited while a split
                assert (tree.gain[b], -b) <= (tree.gain[a], -a)
    # the 11-leaf tree is the 12-leaf tree's first 10 splits
    smaller = trees[11]
    first = np.argsort([split_at[n] for n in internal])[:10]
    assert np.array_equal(smaller.feature[smaller.feature >= 0],
                          tree.feature[internal[first]][np.argsort(internal[first])])
    assert set(np.flatnonzero(smaller.feature >= 0)) == set(internal[first])


def test_lossguide_keeps_monotonic_and_interaction_constraints():
    X, y = _regression(800, seed=4)
    y = y + 2 * X[:, 3]
    model = _boost(n_estimators=5, grow_policy="lossguide", max_leaf_nodes=12, max_depth=None,
                   monotonic_cst=[0, 0, 0, 1, 0], interaction_cst=[[0, 1], [2, 3, 4]]).fit(X, y)
    grid = np.tile(X[:50], (1, 1))
    lo, hi = grid.copy(), grid.copy()
    lo[:, 3], hi[:, 3] = -2.0, 2.0
    assert np.all(model.predict(hi) >= model.predict(lo))
    for t in model._trees:
        assert t.n_leaves > 2
        for leaf in np.flatnonzero(t.feature < 0):
            path, node = set(), leaf
            while t.parent[node] >= 0:
                node = t.parent[node]
                path.add(int(t.feature[node]))
            assert path <= {0, 1} or path <= {2, 3, 4}


def test_lossguide_many_category_splits():
    """A categorical feature of 600 categories (LightGBM's search, variable
    left sets): best-first trees keep splitting it, and beat depth 2."""
    rng = np.random.RandomState(5)
    codes = rng.randint(0, 600, 6000)
    effect = rng.normal(size=600)
    X = np.column_stack([codes.astype(float), rng.normal(size=6000)])
    y = (effect[codes] + 0.3 * X[:, 1] + rng.normal(0, 0.5, 6000) > 0).astype(int)
    common = dict(n_estimators=10, categorical_features=[0], device="cpu",
                  early_stopping=False, random_state=0)
    best = gputree.GradientBoostingClassifier(grow_policy="lossguide", max_leaf_nodes=31,
                                              max_depth=None, **common).fit(X, y)
    shallow = gputree.GradientBoostingClassifier(max_depth=2, **common).fit(X, y)
    assert all(t.n_leaves == 31 for t in best._trees)
    assert best.score(X, y) > shallow.score(X, y)


def test_grow_policy_round_trips_through_model_files(tmp_path):
    X, y = _regression()
    model = _boost(n_estimators=3, grow_policy="lossguide", max_leaf_nodes=6,
                   max_depth=None).fit(X, y)
    path = tmp_path / "model.json"
    model.save_model(str(path))
    loaded = gputree.load_model(str(path))
    assert loaded.get_params()["grow_policy"] == "lossguide"
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))


def test_invalid_parameters_are_refused():
    X, y = _regression(100)
    with pytest.raises(ValueError, match="grow_policy"):
        _boost(grow_policy="leafwise").fit(X, y)
    with pytest.raises(ValueError, match="max_leaf_nodes"):
        _boost(grow_policy="lossguide", max_leaf_nodes=1).fit(X, y)
    with pytest.raises(ValueError, match="max_leaf_nodes"):
        gputree.DecisionTreeClassifier(multiway=True, criterion="entropy", max_leaf_nodes=5,
                                       device="cpu").fit(X, y > 0)
