"""The classic CART texts' tools on single trees: the misclassification
criterion (every split the brute-force best of its node), the refusal of
criterion="absolute_error" on histograms, and error-rate cost-complexity
pruning (``ccp_risk="misclassification"``) against a brute-force search
over every pruned subtree."""
import itertools

import numpy as np
import pytest

import reference
from gputree import DecisionTreeClassifier, DecisionTreeRegressor


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


def test_absolute_error_trees_are_refused_with_the_reason():
    X, y, _ = _class_data(n=30)
    with pytest.raises(ValueError, match="absolute_error.*median"):
        DecisionTreeRegressor(criterion="absolute_error", device="cpu").fit(X, y)
