"""Boosting controls (gputree.estimators.boosting with gputree.growth.constraints,
gputree.estimators.custom_objective, gputree._threads and the quantile and Huber
losses): reg_alpha against a brute-force minimiser, quantile and Huber
against scikit-learn's GradientBoostingRegressor, the custom objective
against scikit-learn's tree, eval_metric scores against staged predictions,
monotone and interaction constraints as invariants, n_jobs leaving results
unchanged, and clear errors for bad input."""
import numba
import numpy as np
import pytest
from scipy.optimize import minimize_scalar
from sklearn.ensemble import GradientBoostingRegressor as SkGBR
from sklearn.tree import DecisionTreeRegressor as SkTree

from gputree import (DecisionTreeClassifier, GradientBoostingClassifier,
                     GradientBoostingRegressor, RandomForestRegressor)

from test_boosting import FAST, _integer_data


def _data(n=300, seed=0, n_features=4):
    """Integer features (12 values: binning is exact) and a noisy target."""
    X, latent, _ = _integer_data(n, seed, n_features)
    return X, latent


def _leaf_paths(tree):
    """For every leaf, the set of features split on from the root to it."""
    paths = []
    for leaf in np.flatnonzero(tree.is_leaf):
        features, node = set(), tree.parent[leaf]
        while node >= 0:
            features.add(int(tree.feature[node]))
            node = tree.parent[node]
        paths.append(features)
    return paths


@pytest.mark.parametrize("reg_alpha", [0.0, 3.0, 40.0])
def test_reg_alpha_stump_equals_the_brute_force_minimiser(reg_alpha):
    """One squared-error round, depth 1, learning_rate 1: the tree must pick
    the threshold whose two leaves, each at the minimiser of
    sum (r - v)**2 / 2 + lambda v**2 / 2 + alpha |v| (found numerically),
    give the lowest total objective, and predict base + that minimiser."""
    rng = np.random.RandomState(1)
    x = rng.randint(0, 8, size=40).astype(float)
    y = 2.0 * (x > 3) + rng.normal(size=40)
    lam = 1.0
    r = y - y.mean()

    def leaf(rows):
        f = lambda v: 0.5 * np.sum((r[rows] - v) ** 2) + 0.5 * lam * v * v + reg_alpha * abs(v)
        best = minimize_scalar(f, bounds=(-10, 10), method="bounded", options={"xatol": 1e-12})
        return best.x, best.fun

    options = []
    for t in np.unique(x)[:-1]:
        (vl, fl), (vr, fr) = leaf(x <= t), leaf(x > t)
        options.append((fl + fr, t, vl, vr))
    _, t, vl, vr = min(options)
    model = GradientBoostingRegressor(n_estimators=1, max_depth=1, learning_rate=1.0,
                                      reg_lambda=lam, reg_alpha=reg_alpha, min_samples_leaf=1,
                                      min_child_weight=0.0, **FAST).fit(x[:, None], y)
    expected = y.mean() + np.where(x <= t, vl, vr)
    np.testing.assert_allclose(model.predict(x[:, None]), expected, atol=1e-7)
    if reg_alpha == 40.0:   # both leaves shrunk to zero: no effect
        np.testing.assert_allclose(model.predict(x[:, None]), y.mean())


@pytest.mark.parametrize("loss", ["quantile", "huber"])
def test_quantile_and_huber_match_sklearn_gradient_boosting(loss):
    """With lambda = 0 and hessians 1 the tree fits the negative gradient as
    scikit-learn's friedman_mse tree does; leaves are refit as scikit-learn
    refits them (weighted percentiles: unit weights passed to both)."""
    X, y = _data()
    w = np.ones(y.shape[0])
    params = dict(n_estimators=6, learning_rate=0.5, max_depth=2, alpha=0.73)
    ours = GradientBoostingRegressor(loss=loss, min_samples_leaf=1, reg_lambda=0.0,
                                     min_child_weight=0.0, **params, **FAST).fit(X, y, w)
    sk = SkGBR(loss=loss, random_state=0, **params).fit(X, y, sample_weight=w)
    np.testing.assert_allclose(ours.predict(X), sk.predict(X), atol=1e-9)


def test_quantile_predictions_cover_the_requested_share():
    X, y = _data(n=400)
    for alpha in (0.2, 0.8):
        model = GradientBoostingRegressor(loss="quantile", alpha=alpha, n_estimators=40,
                                          max_depth=2, **FAST).fit(X, y)
        assert abs(np.mean(y <= model.predict(X)) - alpha) < 0.08


def test_custom_objective_stump_is_sklearns_tree():
    """A squared-error objective given as a callable: raw scores start at 0,
    so one round with learning_rate 1 and lambda 0 is the depth-1
    regression tree of y."""
    X, y = _data()
    seen = {}

    def squared(y_true, raw):
        seen["args"] = (y_true.copy(), raw.copy())
        return raw - y_true, np.ones_like(raw)

    ours = GradientBoostingRegressor(loss=squared, n_estimators=1, max_depth=1,
                                     learning_rate=1.0, reg_lambda=0.0, min_samples_leaf=1,
                                     min_child_weight=0.0, **FAST).fit(X, y)
    np.testing.assert_array_equal(seen["args"][0], y)
    np.testing.assert_array_equal(seen["args"][1], np.zeros_like(y))
    sk = SkTree(max_depth=1).fit(X, y)
    np.testing.assert_allclose(ours.predict(X), sk.predict(X), atol=1e-10)


def test_eval_metric_scores_the_staged_validation_predictions():
    X, y = _data(n=400)
    X_val, y_val = _data(n=100, seed=1)
    mae = lambda y_true, y_pred, w: float(np.average(np.abs(y_true - y_pred), weights=w))
    model = GradientBoostingRegressor(n_estimators=5, eval_metric=mae,
                                      **{**FAST, "early_stopping": True}).fit(
        X, y, eval_set=(X_val, y_val))
    staged = [np.abs(y_val - p).mean() for p in model.staged_predict(X_val)]
    np.testing.assert_allclose(-model.validation_score_[1:], staged, rtol=1e-12)


def test_eval_metric_drives_early_stopping_and_sees_probabilities():
    X, y = _data(n=200)
    labels = (y > 0).astype(int)
    calls = []

    def flat(y_true, y_pred, w):
        calls.append(y_pred)
        return ("flat", 1.0, True)

    model = GradientBoostingClassifier(n_estimators=50, n_iter_no_change=3, eval_metric=flat,
                                       **{**FAST, "early_stopping": True}).fit(
        X, labels, eval_set=(X[:50], labels[:50]))
    assert model.n_iter_ == 3
    assert all(p.shape == (50,) and np.all((p > 0) & (p < 1)) for p in calls)


def test_monotonic_constraints_give_monotone_predictions():
    rng = np.random.RandomState(0)
    X = rng.uniform(0, 10, size=(400, 3))
    y = np.sin(X[:, 0]) + X[:, 0] * 0.3 - np.cos(X[:, 1]) - 0.2 * X[:, 1] + X[:, 2] \
        + rng.normal(scale=0.5, size=400)
    grid = np.linspace(0, 10, 60)
    base = rng.uniform(0, 10, size=(30, 3))

    def steps(model, feature):
        rows = np.repeat(base, grid.size, axis=0)
        rows[:, feature] = np.tile(grid, base.shape[0])
        return np.diff(model.predict(rows).reshape(base.shape[0], grid.size), axis=1)

    params = dict(n_estimators=30, max_depth=4, min_samples_leaf=5, **FAST)
    free = GradientBoostingRegressor(**params).fit(X, y)
    assert steps(free, 0).min() < 0 and steps(free, 1).max() > 0   # the test can fail
    model = GradientBoostingRegressor(monotonic_cst=[1, -1, 0], colsample_bytree=0.67,
                                      **params).fit(X, y)
    assert steps(model, 0).min() >= 0 and steps(model, 1).max() <= 0
    clf = GradientBoostingClassifier(monotonic_cst={0: -1}, **params).fit(X, y > 1)
    proba = clf.predict_proba(np.column_stack([grid, np.full(60, 5.0), np.full(60, 5.0)]))
    assert np.all(np.diff(proba[:, 1]) <= 0)


def test_interaction_constraints_hold_on_every_path():
    X, y = _data(n_features=5)
    y = y + X[:, 2] * X[:, 3] * 0.1 + X[:, 4]
    groups = [{0, 1}, {1, 2, 3}]
    model = GradientBoostingRegressor(n_estimators=10, max_depth=4, min_samples_leaf=2,
                                      interaction_cst=groups, **FAST).fit(X, y)
    allowed = groups + [{4}]   # features in no group form one more group
    paths = [p for tree in model._trees for p in _leaf_paths(tree)]
    assert all(any(p <= g for g in allowed) for p in paths)
    assert any(len(p) > 1 for p in paths)
    free = GradientBoostingRegressor(n_estimators=10, max_depth=4, min_samples_leaf=2,
                                     **FAST).fit(X, y)
    assert not all(any(p <= g for g in allowed)
                   for tree in free._trees for p in _leaf_paths(tree))


def test_n_jobs_sets_threads_during_fit_restores_them_and_changes_nothing():
    X, y = _data()
    inside = []

    def squared(y_true, raw):
        inside.append(numba.get_num_threads())
        return raw - y_true, np.ones_like(raw)

    before = numba.get_num_threads()
    one = GradientBoostingRegressor(loss=squared, n_estimators=3, n_jobs=1, **FAST).fit(X, y)
    assert set(inside) == {1} and numba.get_num_threads() == before
    every = GradientBoostingRegressor(loss=squared, n_estimators=3, n_jobs=-1, **FAST).fit(X, y)
    np.testing.assert_array_equal(one.predict(X), every.predict(X))
    forests = [RandomForestRegressor(n_estimators=3, n_jobs=j, random_state=0,
                                     device="cpu").fit(X, y).predict(X) for j in (1, 2)]
    np.testing.assert_array_equal(*forests)
    trees = [DecisionTreeClassifier(n_jobs=j, random_state=0, device="cpu").fit(X, y > 0)
             .predict_proba(X) for j in (1, 2)]
    np.testing.assert_array_equal(*trees)


@pytest.mark.parametrize("params, match", [
    ({"monotonic_cst": [1, 0]}, "monotonic_cst"),
    ({"monotonic_cst": [2, 0, 0, 0]}, "monotonic_cst"),
    ({"interaction_cst": [{0, 9}]}, "interaction_cst"),
    ({"interaction_cst": "some"}, "interaction_cst"),
    ({"reg_alpha": -1.0}, "reg_alpha"),
    ({"n_jobs": 0}, "n_jobs"),
    ({"eval_metric": "mae"}, "eval_metric"),
    ({"loss": "quantile", "alpha": 1.5}, "alpha"),
    ({"loss": lambda y, raw: (raw[:5], raw[:5])}, "shape"),
    ({"loss": lambda y, raw: raw}, "pair"),
])
def test_bad_controls_are_rejected_by_name(params, match):
    X, y = _data(n=60)
    with pytest.raises(ValueError, match=match):
        GradientBoostingRegressor(n_estimators=2, **{**FAST, **params}).fit(X, y)


def test_monotonic_cst_is_refused_for_multiclass():
    X, y = _data(n=90)
    with pytest.raises(ValueError, match="multiclass"):
        GradientBoostingClassifier(n_estimators=2, monotonic_cst=[1, 0, 0, 0],
                                   **FAST).fit(X, np.digitize(y, [-1, 1]))
