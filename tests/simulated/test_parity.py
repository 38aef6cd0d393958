"""The simulated CUDA device grows bit-identical trees to the CPU backend."""
import dataclasses

import numpy as np
import pytest

from gputree import DecisionTreeClassifier, DecisionTreeRegressor

from .datasets import classification, regression


def assert_same_tree(a, b):
    for field in dataclasses.fields(a):
        left, right = getattr(a, field.name), getattr(b, field.name)
        assert left.dtype == right.dtype, field.name
        assert np.array_equal(left, right, equal_nan=True), field.name


def fit_both(estimator_class, X, y, **params):
    cpu = estimator_class(device="cpu", **params).fit(X, y)
    sim = estimator_class(device="cuda-sim", **params).fit(X, y)
    return cpu, sim


@pytest.mark.parametrize("criterion", ["gini", "entropy", "gain_ratio"])
@pytest.mark.parametrize("seed", [0, 1])
def test_classifier_trees_identical(criterion, seed):
    X, y = classification(seed=seed, n_classes=3 if seed else 2)
    cpu, sim = fit_both(DecisionTreeClassifier, X, y, criterion=criterion, max_depth=4,
                        max_bins=16, random_state=seed)
    assert cpu.tree_.node_count > 3
    assert cpu.tree_.is_categorical.any() or seed  # categorical splits are exercised
    assert_same_tree(cpu.tree_, sim.tree_)
    assert np.array_equal(cpu.predict_proba(X), sim.predict_proba(X))
    assert np.array_equal(cpu.apply(X), sim.apply(X))


@pytest.mark.parametrize("criterion", ["squared_error", "poisson"])
def test_regressor_trees_identical(criterion):
    X, y = regression(seed=2)
    if criterion == "poisson":
        y = np.exp(y / 2)
    cpu, sim = fit_both(DecisionTreeRegressor, X, y, criterion=criterion, max_depth=4,
                        max_bins=16, min_samples_leaf=3)
    assert cpu.tree_.node_count > 3
    assert_same_tree(cpu.tree_, sim.tree_)
    assert np.array_equal(cpu.predict(X), sim.predict(X))


def test_weighted_feature_subsampled_trees_identical():
    X, y = classification(seed=3)
    weight = np.random.RandomState(3).uniform(0.1, 3.0, size=len(y))
    cpu = DecisionTreeClassifier(device="cpu", max_depth=4, max_features=2, max_bins=12,
                                 random_state=7).fit(X, y, sample_weight=weight)
    sim = DecisionTreeClassifier(device="cuda-sim", max_depth=4, max_features=2, max_bins=12,
                                 random_state=7).fit(X, y, sample_weight=weight)
    assert_same_tree(cpu.tree_, sim.tree_)


def test_multi_output_regression_identical():
    X, y = regression(seed=4)
    Y = np.column_stack([y, -2 * y + 1])
    cpu, sim = fit_both(DecisionTreeRegressor, X, Y, max_depth=3, max_bins=10)
    assert_same_tree(cpu.tree_, sim.tree_)


def _many_categories(seed, n=1500, n_categories=300):
    """A column of 300 categories (bins from 256 on in the splits' words;
    those have the lowest effect, so the left sets hold them)
    with an effect each, NaN for some rows, and a numerical column."""
    rng = np.random.RandomState(seed)
    codes = rng.randint(0, n_categories, n).astype(float)
    codes[rng.rand(n) < 0.05] = np.nan
    effect = rng.normal(size=n_categories)
    effect[256:] = -3.0     # the lowest keys: the left sets hold codes >= 256
    x1 = rng.normal(size=n)
    signal = np.where(np.isnan(codes), 0.0, effect[np.nan_to_num(codes).astype(int)]) + 0.5 * x1
    return np.column_stack([codes, x1]), signal


@pytest.mark.parametrize("search", ["exact", "lightgbm", "lightgbm-lossguide"])
def test_many_category_trees_identical(search):
    """Trees (CART's exact search) and boosting (both searches; LightGBM's
    also best first, with few categories read from each end of the sorted
    order, which the CPU selects instead of sorting them all) on 300
    categories: every tree field identical, words included."""
    from gputree import GradientBoostingRegressor
    X, signal = _many_categories(0)
    if search == "exact":
        cpu, sim = fit_both(DecisionTreeRegressor, X, signal, max_depth=2,
                            categorical_features=[0])
        trees = [(cpu.tree_, sim.tree_)]
    else:
        shape = (dict(grow_policy="lossguide", max_depth=None, max_leaf_nodes=5,
                      max_cat_threshold=6) if search == "lightgbm-lossguide"
                 else dict(max_depth=1))
        cpu, sim = fit_both(GradientBoostingRegressor, X, signal, n_estimators=2,
                            categorical_features=[0], early_stopping=False,
                            min_data_per_group=2, cat_smooth=1.0, **shape)
        trees = list(zip(cpu.model_.trees, sim.model_.trees))
    assert any(a.has_cat_words for a, _ in trees), "no split used the words: a weak test"
    for a, b in trees:
        assert_same_tree(a, b)
    assert np.array_equal(cpu.predict(X), sim.predict(X))
