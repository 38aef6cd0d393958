"""Level-wise trees of small data grown best first (gputree/growth/level_order.py)
are the level-wise grower's trees field for field, with the same leaf for
every row (the boosting's raw scores after each tree, bit for bit), across
losses (leaves refit from their rows too), outputs, missing values,
categories, weights (zeros among them), row sampling, depth and leaf
limits; the routing applies where it should and nowhere else; the level
order of a tree is a brute-force breadth-first walk's."""
import collections

import numpy as np
import pytest

import gputree
from compiled_steps import assert_same_trees, regression_data
from gputree.growth import grower, level_order


def _fit_both(monkeypatch, make, X, y, **fit_args):
    """(model grown in level order, its count of trees so grown, model
    grown level by level)."""
    calls = []
    grow = level_order.grow_in_level_order

    def counted(*args):
        calls.append(1)
        return grow(*args)
    with monkeypatch.context() as patch:
        patch.setattr(level_order, "grow_in_level_order", counted)
        routed = make().fit(X, y, **fit_args)
    with monkeypatch.context() as patch:
        patch.setattr(level_order, "applies", lambda *args: False)
        levels = make().fit(X, y, **fit_args)
    return routed, len(calls), levels


def _classification(n=2500, seed=1, n_classes=2):
    X, y = regression_data(n, seed)
    return X, np.digitize(y, np.quantile(y, np.linspace(0, 1, n_classes + 1)[1:-1]))


CASES = {
    "regression": ("GradientBoostingRegressor", {}, regression_data),
    "huber deep": ("GradientBoostingRegressor", {"loss": "huber", "max_depth": 9,
                                                  "min_samples_leaf": 1}, regression_data),
    "quantile (leaves refit from their rows)": ("GradientBoostingRegressor",
                                                {"loss": "quantile", "alpha": 0.8},
                                                regression_data),
    "absolute error": ("GradientBoostingRegressor", {"loss": "absolute_error"},
                       regression_data),
    "binary": ("GradientBoostingClassifier", {"max_depth": 4}, _classification),
    "three classes": ("GradientBoostingClassifier", {"max_depth": 5},
                      lambda: _classification(n_classes=3)),
    "subsample, lambda, gamma": ("GradientBoostingRegressor",
                                 {"subsample": 0.7, "reg_lambda": 2.0, "gamma": 0.01,
                                  "colsample_bytree": 0.6}, regression_data),
    "friedman_mse": ("GradientBoostingRegressor", {"criterion": "friedman_mse"},
                     regression_data),
    "alpha, hessian limit": ("GradientBoostingRegressor",
                             {"reg_alpha": 0.5, "min_child_weight": 3.0, "max_depth": 7},
                             regression_data),
}


@pytest.mark.parametrize("case", list(CASES))
def test_trees_grown_in_level_order_are_the_level_wise_ones(monkeypatch, case):
    name, params, data = CASES[case]
    X, y = data()
    rng = np.random.RandomState(5)
    weights = rng.uniform(0.2, 2.0, y.shape[0]) * (rng.rand(y.shape[0]) > 0.1)   # zeros too
    settings = dict(n_estimators=6, device="cpu", random_state=0, early_stopping=False,
                    learning_rate=0.3, **params)

    def make():
        return getattr(gputree, name)(**settings)
    routed, n_routed, levels = _fit_both(monkeypatch, make, X, y, sample_weight=weights)
    assert n_routed == len(routed._trees) > 0
    assert_same_trees(routed._trees, levels._trees)
    # the rows' leaves: every tree's update of the raw scores
    for a, b in zip(routed.staged_predict(X), levels.staged_predict(X)):
        np.testing.assert_array_equal(a, b)
    assert routed.train_score_.tobytes() == levels.train_score_.tobytes()


def test_ranker_and_categories_in_level_order(monkeypatch):
    """The ranker (per-query gradients) on a categorical column of few
    categories and a column with missing values."""
    import pandas as pd
    rng = np.random.RandomState(3)
    n = 1200
    X = pd.DataFrame({"c": pd.Categorical(rng.randint(0, 12, n)), "x": rng.normal(size=n)})
    X.loc[rng.rand(n) < 0.1, "x"] = np.nan
    y = np.clip(X["c"].cat.codes % 5 + rng.randint(-1, 2, n), 0, 4)
    group = np.full(n // 30, 30)

    def make():
        return gputree.GradientBoostingRanker(n_estimators=5, max_depth=5, device="cpu",
                                              early_stopping=False, random_state=0,
                                              min_samples_leaf=5)
    routed, n_routed, levels = _fit_both(monkeypatch, make, X, y, group=group)
    assert n_routed == 5
    assert_same_trees(routed._trees, levels._trees)
    assert routed.predict(X).tobytes() == levels.predict(X).tobytes()


@pytest.mark.parametrize("params, data_rows, expected", [
    ({}, 2000, True),
    ({}, level_order.MOST_ROWS + 1, False),                # large data: level by level
    ({"max_leaf_nodes": 8}, 2000, False),                   # a level-wise leaf budget
    ({"grow_policy": "lossguide", "max_depth": None}, 2000, False),    # best first anyway
    ({"extra_trees": True}, 2000, False),                   # thresholds drawn per node
    ({"monotonic_cst": [1, 0, 0, 0, 0]}, 2000, False),      # constrained
])
def test_which_trees_grow_in_level_order(monkeypatch, params, data_rows, expected):
    X, y = regression_data(data_rows, seed=2)
    routes = collections.Counter()
    chosen = grower.grow

    def counted(backend, data, stats, growth, *args, **kwargs):
        routes[level_order.applies(backend, data, stats, growth)] += 1
        return chosen(backend, data, stats, growth, *args, **kwargs)
    monkeypatch.setattr(grower, "grow", counted)
    import gputree.estimators.sampling as sampling
    monkeypatch.setattr(sampling, "grow", counted)
    gputree.GradientBoostingRegressor(n_estimators=2, device="cpu", early_stopping=False,
                                      random_state=0, **params).fit(X, y)
    assert set(routes) == {expected}


def _breadth_first(left_child):
    """Node ids of a breadth-first walk with a queue, one node at a time."""
    queue, order = collections.deque([0]), []
    while queue:
        node = queue.popleft()
        order.append(node)
        if left_child[node] >= 0:
            queue.extend([left_child[node], left_child[node] + 1])
    return order


def test_level_order_is_a_breadth_first_walk():
    rng = np.random.RandomState(0)
    for _ in range(50):
        # a random tree in creation order: a random leaf splits, children in pairs
        left_child, leaves = [-1], [0]
        for _ in range(rng.randint(0, 30)):
            node = leaves.pop(rng.randint(len(leaves)))
            left_child[node] = len(left_child)
            leaves += [len(left_child), len(left_child) + 1]
            left_child += [-1, -1]
        left_child = np.array(left_child, dtype=np.int32)
        assert level_order.level_order(left_child).tolist() == _breadth_first(left_child)
