"""The CPU's compiled level (gputree/backends/cpu/level_step.py) grows the
trees of the general level (gputree/growth/levelwise.py, its plan of
backend primitives and numpy), field for field: ties of gain between
features, min_samples_leaf / min_child_weight / gamma, max_depth, missing
values, categorical subsets beyond bin 255, several outputs, ranking, a
histogram pool grown during the tree."""
import dataclasses

import numpy as np
import pytest

import gputree
from compiled_steps import assert_same_trees, fit_both, many_categories, regression_data
from gputree.backends.cpu import level_step
from gputree.backends.cpu.backend import CPUBackend


def _fit_both(monkeypatch, make, X, y, **fit_args):
    """(trees grown with the compiled levels, trees grown with the general
    levels, compiled levels taken); the compiled levels asked for by every
    estimator (by default only the ranker asks)."""
    cls = type(make())
    growth_params = cls._growth_params
    monkeypatch.setattr(cls, "_growth_params", lambda self: dataclasses.replace(
        growth_params(self), compiled_levels=True))
    return fit_both(monkeypatch, make, X, y, level_step.LevelSteps, "level_step",
                    "level_steps", **fit_args)


def _boost(estimator, **params):
    settings = dict(n_estimators=4, device="cpu", random_state=0, early_stopping=False)
    settings.update(params)
    return lambda: getattr(gputree, estimator)(**settings)


@pytest.mark.parametrize("params", [
    dict(max_depth=6, min_samples_leaf=1),
    dict(max_depth=8, min_samples_leaf=40),
    dict(max_depth=7, min_child_weight=60.0, gamma=2.0),
    dict(max_depth=1),
    dict(max_depth=12, min_samples_leaf=1, subsample=0.7),
])
def test_regression_trees_equal_the_general_levels(monkeypatch, params):
    X, y = regression_data()
    compiled, general, n_levels = _fit_both(
        monkeypatch, _boost("GradientBoostingRegressor", **params), X, y)
    assert n_levels > 0
    assert_same_trees(compiled, general)
    assert max(t.max_depth for t in compiled) <= params["max_depth"]


def test_tied_gains_take_the_first_feature(monkeypatch):
    """Two copies of a feature tie in every node: the first is taken."""
    X, y = regression_data(seed=5)
    X = np.column_stack([X[:, 0], X[:, 0], X[:, 1]])
    compiled, general, n_levels = _fit_both(
        monkeypatch, _boost("GradientBoostingRegressor", max_depth=4), X, y)
    assert n_levels > 0
    assert not any((t.feature == 1).any() for t in compiled)
    assert_same_trees(compiled, general)


def test_categorical_subsets_and_missing_values(monkeypatch):
    """A categorical feature of 700 categories (left sets past bin 255,
    words beyond the bitset) with missing values, classification."""
    X, y = many_categories()
    make = _boost("GradientBoostingClassifier", max_depth=5, min_data_per_group=5,
                  cat_smooth=2.0)
    compiled, general, n_levels = _fit_both(monkeypatch, make, X, y)
    assert n_levels > 0
    assert any((t.cat_n_words > 0).any() for t in compiled)     # subsets past bin 255
    assert_same_trees(compiled, general)


def test_multiclass_trees_equal_the_general_levels(monkeypatch):
    X, y = regression_data(seed=3)
    classes = np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))
    compiled, general, n_levels = _fit_both(
        monkeypatch, _boost("GradientBoostingClassifier", max_depth=4), X, classes)
    assert n_levels > 0
    assert_same_trees(compiled, general)


def test_ranking_trees_equal_the_general_levels(monkeypatch):
    rng = np.random.RandomState(6)
    sizes = rng.randint(5, 30, 120)
    X = rng.normal(size=(sizes.sum(), 6))
    X[rng.rand(*X.shape) < 0.05] = np.nan
    labels = np.clip(np.round(np.nan_to_num(X[:, 0]) + rng.normal(0, 0.5, X.shape[0])), 0, 3)
    compiled, general, n_levels = _fit_both(
        monkeypatch, _boost("GradientBoostingRanker", max_depth=5), X, labels, group=sizes)
    assert n_levels > 0
    assert_same_trees(compiled, general)


def test_a_pool_grown_during_the_tree(monkeypatch):
    """A histogram pool that reserves no rows up front grows while the
    levels hand its rows out (the last scan's outputs kept across)."""
    from gputree.growth import histogram_pool
    monkeypatch.setattr(histogram_pool, "_POOL_RESERVE_BYTES", 0)
    X, y = regression_data(seed=4)
    compiled, general, n_levels = _fit_both(
        monkeypatch, _boost("GradientBoostingRegressor", max_depth=9, min_samples_leaf=1), X, y)
    assert n_levels > 0
    assert_same_trees(compiled, general)


def test_only_the_ranker_asks_for_the_compiled_levels(monkeypatch):
    """The classifier's and regressor's first fit does not compile the
    level kernel; the ranker's fits take it."""
    asked = []
    monkeypatch.setattr(CPUBackend, "level_steps", lambda self, *args: asked.append(1))
    X, y = regression_data(n=500)
    _boost("GradientBoostingRegressor", max_depth=3)().fit(X, y)
    _boost("GradientBoostingClassifier", max_depth=3)().fit(X, y > 0)
    assert not asked
    _boost("GradientBoostingRanker", max_depth=3)().fit(X, np.clip(np.round(y), 0, 3),
                                                        group=[100] * 5)
    assert asked
