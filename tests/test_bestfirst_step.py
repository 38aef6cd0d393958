"""The CPU's compiled best-first step (gputree/backends/cpu/bestfirst_step.py)
grows the trees of the general step (gputree/growth/bestfirst.py, a step of
backend primitives and numpy), field for field: ties of priority between
leaves, min_samples_leaf / min_child_weight / gamma,
max_depth with max_leaf_nodes, missing values; categorical subsets beyond
bin 255, several outputs and a histogram pool grown during the tree in
test_compiled_steps.py."""
import numpy as np
import pytest

from compiled_steps import assert_same_trees, boosting, fit_both, regression_data
from gputree.backends.cpu import bestfirst_step


def _fit_both(monkeypatch, make, X, y):
    """(trees grown with the compiled step, trees grown with the general
    step, compiled steps taken)."""
    return fit_both(monkeypatch, make, X, y, bestfirst_step.BestFirstSteps, "step",
                    "best_first_steps")


def _boost(estimator, **params):
    """Lossguide boosting (no depth limit unless ``params`` sets one)."""
    return boosting(estimator, **dict(dict(grow_policy="lossguide", max_depth=None), **params))


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
