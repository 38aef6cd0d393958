"""The classic CART texts' tools on single trees: the misclassification
criterion (every split the brute-force best of its node) and error-rate cost-complexity
pruning (``ccp_risk="misclassification"``) against a brute-force search
over every pruned subtree."""
import itertools

import numpy as np
import pytest

import reference
from gputree import DecisionTreeClassifier


def _class_data(n=240, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.randint(0, 6, size=(n, 3)).astype(float)
    y = (X[:, 0] + (X[:, 1] > 2) + rng.randint(0, 2, n)) % 3
    w = rng.uniform(0.5, 2.0, n)
    return X, y, w


def test_misclassification_splits_are_the_brute_force_best():
    X, y, w = _class_data()
    model = DecisionTreeClassifier(criterion="misclassification", max_depth=3,
                                   device="cpu").fit(X, y, sample_weight=w)
    tree = model.tree_
    rows = model.decision_path(X).toarray().astype(bool).T
    assert np.sum(tree.feature >= 0) >= 3
    for node in np.flatnonzero(tree.feature >= 0):
        r = rows[node]
        gains = [reference.split_gain("misclassification", y[r], w[r], X[r, f] <= v, 1, 3)
                 for f in range(X.shape[1]) for v in np.unique(X[r, f])[:-1]]
        assert tree.gain[node] == pytest.approx(max(gains), rel=1e-9, abs=1e-12)
        majority = np.bincount(y[r].astype(int), weights=w[r], minlength=3)
        assert tree.impurity[node] == pytest.approx(1 - majority.max() / w[r].sum(), rel=1e-12)


def _subtree_options(tree, node, risk):
    """Every pruned subtree rooted at ``node``: (total leaf risk, leaves) pairs."""
    leaf = [(risk[node], 1)]
    left = tree.left_child[node]
    if left < 0:
        return leaf
    return leaf + [(rl + rr, nl + nr) for (rl, nl), (rr, nr) in itertools.product(
        _subtree_options(tree, left, risk), _subtree_options(tree, left + 1, risk))]


def _error_risk(model, X, y, w):
    """(sum over the fitted tree's leaves of its weighted misclassified
    share, from the rows themselves; number of leaves)."""
    leaves = model.apply(X)
    total = 0.0
    for leaf in np.unique(leaves):
        r = leaves == leaf
        total += w[r].sum() - np.bincount(y[r].astype(int), weights=w[r]).max()
    return total / w.sum(), model.get_n_leaves()


def test_error_rate_pruning_follows_the_brute_force_optimal_subtrees():
    """For every alpha between steps of the path, the tree pruned at alpha
    minimises R(T') + alpha |leaves(T')| over every pruned subtree T' of the
    full tree, with R the misclassified weight share (computed from the
    rows); the path's risks are those subtrees' risks."""
    X, y, w = _class_data(n=200, seed=3)
    params = dict(criterion="gini", max_leaf_nodes=9, device="cpu", ccp_risk="misclassification")
    full = DecisionTreeClassifier(**params).fit(X, y, sample_weight=w)
    rows = full.decision_path(X).toarray().astype(bool).T
    risk = np.array([(w[r].sum() - np.bincount(y[r].astype(int), weights=w[r]).max())
                     for r in rows]) / w.sum()
    options = _subtree_options(full.tree_, 0, risk)
    path = full.cost_complexity_pruning_path(X, y, sample_weight=w)
    assert len(path.ccp_alphas) >= 3
    ends = np.append(path.ccp_alphas[1:], path.ccp_alphas[-1] + 0.1)
    for alpha, risk_on_path in zip((path.ccp_alphas + ends) / 2, path.impurities):
        pruned = DecisionTreeClassifier(ccp_alpha=alpha, **params).fit(X, y, sample_weight=w)
        total, n_leaves = _error_risk(pruned, X, y, w)
        best = min(r + alpha * n for r, n in options)
        assert total + alpha * n_leaves == pytest.approx(best, rel=1e-9, abs=1e-12)
        assert risk_on_path == pytest.approx(total, rel=1e-9, abs=1e-12)


def test_error_rate_and_impurity_pruning_differ_and_bad_risk_is_refused():
    X, y, w = _class_data(n=200, seed=3)
    paths = [DecisionTreeClassifier(max_leaf_nodes=9, device="cpu", ccp_risk=risk)
             .cost_complexity_pruning_path(X, y, sample_weight=w).ccp_alphas
             for risk in ("impurity", "misclassification")]
    assert paths[0].shape != paths[1].shape or not np.allclose(*paths)
    with pytest.raises(ValueError, match="ccp_risk"):
        DecisionTreeClassifier(ccp_risk="error", device="cpu").fit(X, y)
