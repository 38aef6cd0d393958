"""Extremely randomized trees on the simulated CUDA device: the random
thresholds are drawn on the host and mapped onto the node's bins by the
device kernels (gputree.backends.node_features), so the CPU and the device
grow the same trees bit for bit; the max_features soft limit likewise."""
import numpy as np
import pytest

from gputree import (DecisionTreeRegressor, ExtraTreeClassifier, ExtraTreeRegressor,
                     ExtraTreesClassifier, GradientBoostingClassifier,
                     GradientBoostingRegressor)

from .datasets import classification, regression
from .test_parity import assert_same_tree


@pytest.mark.parametrize("criterion,max_features", [("gini", "sqrt"), ("entropy", None)])
def test_extra_tree_classifier_identical(criterion, max_features):
    X, y = classification(seed=5, n_classes=3)
    trees = [ExtraTreeClassifier(device=device, criterion=criterion, max_features=max_features,
                                 max_bins=16, random_state=3).fit(X, y).tree_
             for device in ("cpu", "cuda-sim")]
    assert trees[0].node_count > 7
    assert trees[0].is_categorical.any()      # random categorical cuts exercised
    assert_same_tree(*trees)


def test_extra_tree_regressor_with_weights_identical():
    X, y = regression(seed=6)
    weight = np.random.RandomState(6).uniform(0.2, 2.0, size=len(y))
    models = [ExtraTreeRegressor(device=device, max_depth=6, max_features=0.6, max_bins=12,
                                 random_state=1).fit(X, y, sample_weight=weight)
              for device in ("cpu", "cuda-sim")]
    assert_same_tree(models[0].tree_, models[1].tree_)
    assert np.array_equal(models[0].predict(X), models[1].predict(X))


def test_soft_max_features_identical():
    """Constant columns make the soft limit draw further features."""
    X, y = regression(seed=7)
    X = X.assign(k1=1.0, k2=2.0, k3=3.0)
    models = [DecisionTreeRegressor(device=device, max_depth=5, max_features=2, max_bins=10,
                                    random_state=4).fit(X, y)
              for device in ("cpu", "cuda-sim")]
    assert_same_tree(models[0].tree_, models[1].tree_)


def test_extra_trees_ensemble_identical():
    X, y = classification(seed=8)
    models = [ExtraTreesClassifier(n_estimators=3, max_depth=5, max_bins=16, random_state=2,
                                   device=device).fit(X, y) for device in ("cpu", "cuda-sim")]
    for cpu, sim in zip(models[0].estimators_, models[1].estimators_):
        assert_same_tree(cpu.tree_, sim.tree_)
    assert np.array_equal(models[0].predict_proba(X), models[1].predict_proba(X))


@pytest.mark.parametrize("cls", [GradientBoostingClassifier, GradientBoostingRegressor])
def test_boosting_extra_trees_identical(cls):
    X, y = (classification if cls is GradientBoostingClassifier else regression)(seed=9)
    params = dict(n_estimators=4, max_depth=3, max_bins=16, early_stopping=False,
                  extra_trees=True, random_state=5)
    cpu = cls(device="cpu", **params).fit(X, y)
    sim = cls(device="cuda-sim", **params).fit(X, y)
    assert np.array_equal(cpu.predict(X), sim.predict(X))
    for a, b in zip(cpu._trees, sim._trees):
        assert_same_tree(a, b)
