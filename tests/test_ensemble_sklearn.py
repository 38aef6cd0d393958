"""The ensembles and trees inside scikit-learn: the estimator checks, trees as
base estimators of AdaBoost and Bagging, GridSearchCV over a Pipeline, and
pickling."""
import pickle

import numpy as np
import pytest
from sklearn.ensemble import AdaBoostClassifier, BaggingClassifier
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier as SkTree
from sklearn.utils.estimator_checks import (check_sample_weight_equivalence_on_dense_data,
                                            check_sample_weight_equivalence_on_sparse_data,
                                            parametrize_with_checks)

from gputree import (DecisionTreeClassifier, GradientBoostingClassifier,
                     GradientBoostingRegressor, RandomForestClassifier, RandomForestRegressor)

SMALL = [
    GradientBoostingClassifier(n_estimators=5, max_depth=3, device="cpu"),
    GradientBoostingRegressor(n_estimators=10, learning_rate=0.3, device="cpu"),
    RandomForestClassifier(n_estimators=5, device="cpu"),
    RandomForestRegressor(n_estimators=5, device="cpu"),
]

_BOOTSTRAP = ("a bootstrap draws rows uniformly, whatever their weight, so weights are "
              "not repetitions (as in scikit-learn's forests); see the bootstrap=False test")


def _expected_failures(estimator):
    if isinstance(estimator, (RandomForestClassifier, RandomForestRegressor)):
        return {"check_sample_weight_equivalence_on_dense_data": _BOOTSTRAP,
                "check_sample_weight_equivalence_on_sparse_data": _BOOTSTRAP}
    return {}


@parametrize_with_checks(SMALL, expected_failed_checks=_expected_failures)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


@pytest.mark.parametrize("forest", [RandomForestClassifier, RandomForestRegressor])
def test_forest_without_bootstrap_treats_weights_as_repetitions(forest):
    estimator = forest(n_estimators=3, bootstrap=False, device="cpu", random_state=0)
    check_sample_weight_equivalence_on_dense_data(forest.__name__, estimator)
    check_sample_weight_equivalence_on_sparse_data(forest.__name__, estimator)


def _stump_problem():
    """Integer features; a target that needs several stumps."""
    rng = np.random.RandomState(0)
    X = rng.randint(0, 10, size=(300, 3)).astype(float)
    y = ((X[:, 0] > 4) ^ (X[:, 1] > 6)).astype(int)
    return X, y


def test_stump_as_adaboost_base_estimator_matches_sklearn_stumps():
    """On integer features a gputree stump is scikit-learn's stump (weighted
    gini, exact thresholds), so SAMME reweights identically."""
    X, y = _stump_problem()
    ours = AdaBoostClassifier(DecisionTreeClassifier(max_depth=1, device="cpu"),
                              n_estimators=15, random_state=0).fit(X, y)
    theirs = AdaBoostClassifier(SkTree(max_depth=1), n_estimators=15, random_state=0).fit(X, y)
    np.testing.assert_allclose(ours.estimator_weights_, theirs.estimator_weights_, rtol=1e-9)
    np.testing.assert_array_equal(ours.predict(X), theirs.predict(X))
    single = DecisionTreeClassifier(max_depth=1, device="cpu").fit(X, y)
    assert ours.score(X, y) > single.score(X, y)


def test_stump_as_bagging_base_estimator():
    X, y = _stump_problem()
    stump = DecisionTreeClassifier(max_depth=1, device="cpu")
    # without resampling every member is the same stump
    same = BaggingClassifier(stump, n_estimators=4, bootstrap=False, random_state=0).fit(X, y)
    np.testing.assert_allclose(same.predict_proba(X),
                               DecisionTreeClassifier(max_depth=1, device="cpu")
                               .fit(X, y).predict_proba(X))
    bagged = BaggingClassifier(stump, n_estimators=8, random_state=0).fit(X, y)
    np.testing.assert_allclose(bagged.predict_proba(X).sum(axis=1), 1.0)
    assert bagged.score(X, y) > 0.6


@pytest.mark.parametrize("estimator, grid", [
    (GradientBoostingClassifier(n_estimators=10, learning_rate=0.5, min_samples_leaf=1,
                                device="cpu", random_state=0), {"max_depth": [1, 3]}),
    (RandomForestClassifier(n_estimators=8, device="cpu", random_state=0),
     {"max_depth": [1, 6]}),
])
def test_grid_search_over_a_pipeline_picks_the_deeper_trees(estimator, grid):
    X, y = _stump_problem()          # an XOR: depth-1 trees cannot learn it
    search = GridSearchCV(make_pipeline(StandardScaler(), estimator),
                          {f"{type(estimator).__name__.lower()}__{k}": v
                           for k, v in grid.items()}, cv=3).fit(X, y)
    best_depth = list(search.best_params_.values())[0]
    assert best_depth == max(list(grid.values())[0])
    assert search.best_score_ > 0.9


def test_grid_search_over_regressors():
    rng = np.random.RandomState(0)
    X = rng.uniform(size=(240, 3))
    y = np.sin(6 * X[:, 0]) + X[:, 1]
    for estimator in (GradientBoostingRegressor(n_estimators=20, learning_rate=0.3,
                                                min_samples_leaf=5, device="cpu"),
                      RandomForestRegressor(n_estimators=8, device="cpu", random_state=0)):
        search = GridSearchCV(estimator, {"max_depth": [1, 4]}, cv=3).fit(X, y)
        assert search.best_params_ == {"max_depth": 4}


@pytest.mark.parametrize("estimator", SMALL, ids=lambda e: type(e).__name__)
def test_pickle_round_trip_keeps_predictions(estimator):
    X, y = _stump_problem()
    fitted = estimator.set_params(random_state=0).fit(X, y)
    restored = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_array_equal(restored.predict(X), fitted.predict(X))
    if hasattr(fitted, "predict_proba"):
        np.testing.assert_array_equal(restored.predict_proba(X), fitted.predict_proba(X))
    if hasattr(fitted, "staged_predict"):
        for a, b in zip(restored.staged_predict(X), fitted.staged_predict(X)):
            np.testing.assert_array_equal(a, b)
