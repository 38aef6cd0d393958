"""Minimal cost-complexity pruning: the path equals scikit-learn's where the
trees coincide, pruning at an alpha gives scikit-learn's pruned tree, and
every pruned tree is a breadth-first subtree of the full one whose total
leaf impurity is the path's."""
import numpy as np
import pytest
from sklearn import tree as sktree

import gputree
import reference


def _cases():
    rng = np.random.RandomState(0)
    X, y = reference.grid_data(rng, n=150)
    yield "reg", X, y, None, dict(min_samples_leaf=3)
    X, y = reference.grid_classification(rng, n=200)
    yield "clf", X, y, reference.dyadic_weights(rng, 200), dict(criterion="entropy")


def _estimators(kind, **params):
    if kind == "reg":
        return (gputree.DecisionTreeRegressor(device="cpu", random_state=0, **params),
                sktree.DecisionTreeRegressor(random_state=0, **params))
    return (gputree.DecisionTreeClassifier(device="cpu", random_state=0, **params),
            sktree.DecisionTreeClassifier(random_state=0, **params))


def _leaf_cost(tree):
    """Total leaf impurity weighted by the leaves' weight share."""
    w = tree.weighted_n_node_samples
    leaves = tree.feature < 0 if hasattr(tree, "bitset") else tree.children_left < 0
    return float(np.sum(w[leaves] / w[0] * tree.impurity[leaves]))


@pytest.mark.parametrize("kind,X,y,w,params", list(_cases()), ids=["regression", "classification"])
def test_path_and_pruned_trees_equal_scikit_learns(kind, X, y, w, params):
    ours, theirs = _estimators(kind, **params)
    a = ours.cost_complexity_pruning_path(X, y, w)
    b = theirs.cost_complexity_pruning_path(X, y, w)
    np.testing.assert_allclose(a.ccp_alphas, b.ccp_alphas, rtol=1e-9, atol=1e-14)
    np.testing.assert_allclose(a.impurities, b.impurities, rtol=1e-9, atol=1e-14)
    # prune between consecutive alphas (exact ties at an alpha are rounding-dependent)
    middles = (a.ccp_alphas[:-1] + a.ccp_alphas[1:]) / 2
    for i in np.unique(np.linspace(0, len(middles) - 1, 6).astype(int)):
        ours, theirs = _estimators(kind, ccp_alpha=middles[i], **params)
        ours.fit(X, y, w)
        theirs.fit(X, y, w)
        reference.assert_same_tree(ours, theirs, X)
        assert _leaf_cost(ours.tree_) == pytest.approx(a.impurities[i], rel=1e-9, abs=1e-14)


def test_pruned_trees_are_nested_subtrees_on_missing_and_categorical_data():
    rng = np.random.RandomState(1)
    n = 300
    X = np.column_stack([rng.normal(size=n), rng.randint(0, 6, n)]).astype(float)
    y = (X[:, 0] > 0).astype(int) ^ np.isin(X[:, 1], [1, 4]) ^ (rng.rand(n) < 0.1)
    X[rng.rand(n, 2) < 0.1] = np.nan
    make = lambda alpha: gputree.DecisionTreeClassifier(
        device="cpu", categorical_features=[1], ccp_alpha=alpha, random_state=0)
    path = make(0.0).cost_complexity_pruning_path(X, y)
    alphas, impurities = path.ccp_alphas, path.impurities
    assert alphas[0] == 0 and np.all(np.diff(alphas) >= 0) and np.all(np.diff(impurities) >= -1e-15)
    full = make(0.0).fit(X, y)
    previous = full
    for alpha in (alphas[:-1] + alphas[1:]) / 2:
        pruned = make(alpha).fit(X, y)
        # every step whose effective alpha is <= alpha is pruned (equal alphas together)
        impurity = impurities[np.searchsorted(alphas, alpha, side="right") - 1]
        assert _leaf_cost(pruned.tree_) == pytest.approx(impurity, rel=1e-9, abs=1e-15)
        # leaves of the pruned tree are unions of the previous tree's leaves
        pairs = set(zip(previous.apply(X).tolist(), pruned.apply(X).tolist()))
        assert len(pairs) == len(set(previous.apply(X).tolist()))
        # a pruned node keeps the value it had as an internal node
        full_path = full.decision_path(X).toarray().astype(bool)
        for leaf in np.flatnonzero(pruned.tree_.feature < 0):
            rows = pruned.apply(X) == leaf
            node = np.flatnonzero(np.all(full_path[rows], axis=0) & (full_path[~rows].sum(axis=0) == 0))
            np.testing.assert_allclose(pruned.tree_.value[leaf], full.tree_.value[node[0]])
        t = pruned.tree_
        internal = np.flatnonzero(t.left_child >= 0)
        assert np.all(np.diff(t.depth) >= 0)
        np.testing.assert_array_equal(t.parent[t.left_child[internal] + 1], internal)
        previous = pruned
    # the last effective alpha prunes the tree to its root
    assert make(alphas[-1]).fit(X, y).tree_.node_count == 1
    assert make(alphas[-1] * 0.999).fit(X, y).tree_.node_count > 1
