"""The CPU's compiled level (gputree/backends/cpu/level_step.py) grows the
trees of the general level (gputree/growth/levelwise.py, its plan of
backend primitives and numpy), field for field: ties of gain between
features, min_samples_leaf / min_child_weight / gamma, max_depth, missing
values, ranking; categorical subsets beyond bin 255, several outputs and a
histogram pool grown during the tree in test_compiled_steps.py."""
import dataclasses

import numpy as np
import pytest

from compiled_steps import assert_same_trees, boosting, fit_both, regression_data
from gputree.backends.cpu import level_step
from gputree.backends.cpu.backend import CPUBackend
from gputree.growth import level_order


def _fit_both(monkeypatch, make, X, y, **fit_args):
    """(trees grown with the compiled levels, trees grown with the general
    levels, compiled levels taken); the compiled levels asked for by every
    estimator (by default only the ranker asks)."""
    monkeypatch.setattr(level_order, "applies", lambda *args: False)   # small data: steps
    cls = type(make())
    growth_params = cls._growth_params
    monkeypatch.setattr(cls, "_growth_params", lambda self: dataclasses.replace(
        growth_params(self), compiled_levels=True))
    return fit_both(monkeypatch, make, X, y, level_step.LevelSteps, "level_step",
                    "level_steps", **fit_args)


_boost = boosting


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



def test_only_the_ranker_asks_for_the_compiled_levels(monkeypatch):
    """The classifier's and regressor's first fit does not compile the
    level kernel; the ranker's fits take it."""
    asked = []
    monkeypatch.setattr(level_order, "applies", lambda *args: False)   # small data: steps
    monkeypatch.setattr(CPUBackend, "level_steps", lambda self, *args: asked.append(1))
    X, y = regression_data(n=500)
    _boost("GradientBoostingRegressor", max_depth=3)().fit(X, y)
    _boost("GradientBoostingClassifier", max_depth=3)().fit(X, y > 0)
    assert not asked
    _boost("GradientBoostingRanker", max_depth=3)().fit(X, np.clip(np.round(y), 0, 3),
                                                        group=[100] * 5)
    assert asked
