"""The CPU's compiled best-first step (gputree/backends/cpu/bestfirst_step.py)
grows the trees of the general step (gputree/growth/bestfirst.py, a step of
backend primitives and numpy), field for field: ties of priority between
leaves, min_samples_leaf / min_child_weight / gamma,
max_depth with max_leaf_nodes, missing values, categorical subsets beyond
bin 255, several outputs."""
import numpy as np
import pytest

import gputree
from compiled_steps import assert_same_trees, fit_both, many_categories, regression_data
from gputree.backends.cpu import bestfirst_step


def _fit_both(monkeypatch, make, X, y):
    """(trees grown with the compiled step, trees grown with the general
    step, compiled steps taken)."""
    return fit_both(monkeypatch, make, X, y, bestfirst_step.BestFirstSteps, "step",
                    "best_first_steps")


def _boost(estimator, **params):
    settings = dict(n_estimators=4, grow_policy="lossguide", max_depth=None, device="cpu",
                    random_state=0, early_stopping=False)
    settings.update(params)
    return lambda: getattr(gputree, estimator)(**settings)


@pytest.mark.parametrize("params", [
    dict(max_leaf_nodes=31, min_samples_leaf=1),
    dict(max_leaf_nodes=40, min_samples_leaf=40),
    dict(max_leaf_nodes=25, min_child_weight=60.0, gamma=2.0),
    dict(max_leaf_nodes=50, max_depth=4, min_samples_leaf=1),
    dict(max_leaf_nodes=2),
    dict(max_leaf_nodes=200, min_samples_leaf=1, subsample=0.7),
])
def test_regression_trees_equal_the_general_steps(monkeypatch, params):
    X, y = regression_data()
    compiled, general, n_steps = _fit_both(monkeypatch, _boost("GradientBoostingRegressor",
                                                               **params), X, y)
    assert n_steps > 0
    assert_same_trees(compiled, general)
    if params.get("max_depth"):
        assert max(t.max_depth for t in compiled) == params["max_depth"]


def test_tied_priorities_split_the_older_leaf_first(monkeypatch):
    """Two halves (x0 = 0, 1) mirrored in y: their best splits tie, in the
    first tree and, with the leaf budget short of both, only one of a tied
    pair splits."""
    rng = np.random.RandomState(1)
    x1 = rng.randint(0, 40, 1000).astype(float)
    half = (x1 > 17).astype(float) + 0.25 * (x1 > 31)
    X = np.column_stack([np.repeat([0.0, 1.0], 1000), np.tile(x1, 2)])
    y = np.concatenate([half, -half])
    make = _boost("GradientBoostingRegressor", max_leaf_nodes=4, min_samples_leaf=1,
                  n_estimators=2)
    compiled, general, n_steps = _fit_both(monkeypatch, make, X, y)
    gains = compiled[0].gain[compiled[0].feature >= 0]
    assert np.unique(gains).size < gains.size          # a tie of priorities was decided
    assert n_steps > 0
    assert_same_trees(compiled, general)


def test_categorical_subsets_and_missing_values(monkeypatch):
    """A categorical feature of 700 categories (left sets past bin 255,
    words beyond the bitset) with missing values, classification."""
    X, y = many_categories()
    make = _boost("GradientBoostingClassifier", max_leaf_nodes=31, min_data_per_group=5,
                  cat_smooth=2.0)
    compiled, general, n_steps = _fit_both(monkeypatch, make, X, y)
    assert n_steps > 0
    assert any((t.cat_n_words > 0).any() for t in compiled)     # subsets past bin 255
    assert_same_trees(compiled, general)


def test_multiclass_trees_equal_the_general_steps(monkeypatch):
    X, y = regression_data(seed=3)
    classes = np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))
    compiled, general, n_steps = _fit_both(
        monkeypatch, _boost("GradientBoostingClassifier", max_leaf_nodes=9), X, classes)
    assert n_steps > 0
    assert_same_trees(compiled, general)


def test_a_pool_grown_during_the_tree(monkeypatch):
    """A histogram pool that reserves no rows up front grows while the
    steps hand its rows out (the last scan's outputs kept across)."""
    from gputree.growth import histogram_pool
    monkeypatch.setattr(histogram_pool, "_POOL_RESERVE_BYTES", 0)
    X, y = regression_data(seed=4)
    compiled, general, n_steps = _fit_both(
        monkeypatch, _boost("GradientBoostingRegressor", max_leaf_nodes=60,
                            min_samples_leaf=1), X, y)
    assert n_steps > 0
    assert_same_trees(compiled, general)
