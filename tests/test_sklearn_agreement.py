"""Agreement with scikit-learn's exact trees where the algorithms coincide:
features with fewer distinct values than bins (thresholds are exact) and no
tied gains (continuous targets, or dyadic weights for classification). The
trees then hold the same splits: same predictions on the training rows, the
same grouping of rows into leaves, the same node count and node impurities,
and the same feature importances. On scikit-learn's bundled datasets the
held-out scores agree within 0.02 for the same hyper-parameters.

Held-out predictions are not compared row by row: where a node's rows leave a
gap between two distinct values, scikit-learn puts the threshold in the
middle of the gap and gputree right after the lower value (lowest bin wins
ties), so unseen values inside such gaps may go different ways.
"""
import numpy as np
import pytest
from sklearn import datasets
from sklearn import tree as sktree
from sklearn.model_selection import KFold, RepeatedKFold, RepeatedStratifiedKFold, cross_val_score

import gputree
import reference


def _pair(kind, **params):
    ours = {"clf": gputree.DecisionTreeClassifier, "reg": gputree.DecisionTreeRegressor}[kind]
    theirs = {"clf": sktree.DecisionTreeClassifier, "reg": sktree.DecisionTreeRegressor}[kind]
    return ours(device="cpu", random_state=0, **params), theirs(random_state=0, **params)


@pytest.mark.parametrize("params", [dict(), dict(min_samples_leaf=5), dict(max_depth=4),
                                    dict(min_samples_split=20, max_depth=6),
                                    dict(min_impurity_decrease=0.01)])
def test_regression_trees_coincide(params):
    rng = np.random.RandomState(0)
    X, y = reference.grid_data(rng)
    ours, theirs = _pair("reg", **params)
    reference.assert_same_tree(ours.fit(X, y), theirs.fit(X, y), X)


def test_poisson_trees_coincide():
    rng = np.random.RandomState(1)
    X, signal = reference.grid_data(rng)
    y = np.where(rng.rand(len(signal)) < 0.2, 0.0, rng.exponential(np.exp(signal / 4)))
    ours, theirs = _pair("reg", criterion="poisson", min_samples_leaf=3)
    reference.assert_same_tree(ours.fit(X, y), theirs.fit(X, y), X)


@pytest.mark.parametrize("criterion", ["gini", "entropy", "log_loss"])
@pytest.mark.parametrize("params", [dict(), dict(min_samples_leaf=5),
                                    dict(min_weight_fraction_leaf=0.02)])
def test_classification_trees_coincide(criterion, params):
    rng = np.random.RandomState(2)
    X, y = reference.grid_classification(rng)
    w = reference.dyadic_weights(rng, len(y))
    ours, theirs = _pair("clf", criterion=criterion, **params)
    reference.assert_same_tree(ours.fit(X, y, sample_weight=w), theirs.fit(X, y, sample_weight=w), X)


def test_multi_output_trees_coincide():
    rng = np.random.RandomState(3)
    X, signal = reference.grid_data(rng)
    Y = np.column_stack([signal, signal ** 2 / 5 + rng.normal(size=len(signal))])
    ours, theirs = _pair("reg", min_samples_leaf=2)
    reference.assert_same_tree(ours.fit(X, Y), theirs.fit(X, Y), X)
    labels = np.column_stack([(signal > 0).astype(int), (Y[:, 1] > 1).astype(int) + (signal > 2)])
    w = reference.dyadic_weights(rng, len(signal))
    ours, theirs = _pair("clf", min_samples_leaf=2)
    ours.fit(X, labels, sample_weight=w)
    theirs.fit(X, labels, sample_weight=w)
    reference.assert_same_tree(ours, theirs, X)
    for p, q in zip(ours.predict_proba(X), theirs.predict_proba(X)):
        np.testing.assert_allclose(p, q, atol=1e-12)


def test_string_labels_and_class_weight_coincide():
    rng = np.random.RandomState(4)
    X, y = reference.grid_classification(rng)
    labels = np.array(["low", "mid", "high"])[y]
    w = reference.dyadic_weights(rng, len(y))
    class_weight = {"low": 1.0, "mid": 2.5, "high": 0.75}    # dyadic: sums stay exact
    ours, theirs = _pair("clf", class_weight=class_weight, min_samples_leaf=3)
    reference.assert_same_tree(ours.fit(X, labels, sample_weight=w), theirs.fit(X, labels, sample_weight=w), X)
    np.testing.assert_array_equal(ours.classes_, theirs.classes_)


def test_feature_importances_coincide():
    rng = np.random.RandomState(5)
    X, y = reference.grid_classification(rng)
    w = reference.dyadic_weights(rng, len(y))
    ours, theirs = _pair("clf", min_samples_leaf=5)
    ours.fit(X, y, sample_weight=w)
    theirs.fit(X, y, sample_weight=w)
    reference.assert_same_tree(ours, theirs, X)
    np.testing.assert_allclose(ours.feature_importances_, theirs.feature_importances_, atol=1e-12)
    X, y = reference.grid_data(rng)
    ours, theirs = _pair("reg", max_depth=5)
    np.testing.assert_allclose(ours.fit(X, y).feature_importances_,
                               theirs.fit(X, y).feature_importances_, atol=1e-12)


def test_max_leaf_nodes_coincides_while_best_first_and_level_wise_agree():
    """Best-first (scikit-learn) and level-wise (gputree) growth pick the same
    splits when every split of a level beats every split of the next: here
    one strong feature per level."""
    rng = np.random.RandomState(6)
    X = rng.randint(0, 2, (400, 3)).astype(float)
    y = 100 * X[:, 0] + 10 * X[:, 1] + X[:, 2] + rng.normal(0, 0.01, 400)
    for budget in (2, 3, 5, 8):
        ours, theirs = _pair("reg", max_leaf_nodes=budget)
        reference.assert_same_tree(ours.fit(X, y), theirs.fit(X, y), X)


DATASETS = {
    "iris": [dict(max_depth=3), dict(min_samples_leaf=5)],
    "wine": [dict(max_depth=4), dict(min_samples_leaf=5)],
    "breast_cancer": [dict(max_depth=4), dict(min_samples_leaf=5)],
    "digits": [dict(max_depth=6, min_samples_leaf=3)],
    "diabetes": [dict(max_depth=3), dict(min_samples_leaf=20)],
}


@pytest.mark.parametrize("name,params", [(n, p) for n, ps in DATASETS.items() for p in ps],
                         ids=lambda v: str(v))
def test_bundled_datasets_score_within_two_points(name, params):
    X, y = getattr(datasets, f"load_{name}")(return_X_y=True)
    kind = "reg" if name == "diabetes" else "clf"
    splitter = RepeatedKFold if kind == "reg" else RepeatedStratifiedKFold
    cv = splitter(n_splits=5, n_repeats=2, random_state=0)
    ours, theirs = _pair(kind, **params)
    a = cross_val_score(ours, X, y, cv=cv).mean()
    b = cross_val_score(theirs, X, y, cv=cv).mean()
    assert abs(a - b) <= 0.02, (a, b)
    assert a > (0.2 if kind == "reg" else 0.7)      # the model learned something


def test_held_out_predictions_coincide_on_binary_features():
    """With 0/1 features there are no gaps between values, so held-out
    predictions coincide too (a pure-noise last feature avoids duplicate
    partitions by making every column distinct)."""
    rng = np.random.RandomState(7)
    X = rng.randint(0, 2, (600, 6)).astype(float)
    y = X @ np.array([4.0, -3.0, 2.0, 1.0, 0.5, 0.0]) + rng.normal(0, 0.3, 600)
    train, test = next(KFold(3, shuffle=True, random_state=0).split(X))
    ours, theirs = _pair("reg", min_samples_leaf=10)
    ours.fit(X[train], y[train])
    theirs.fit(X[train], y[train])
    reference.assert_same_tree(ours, theirs, X[train])
    np.testing.assert_allclose(ours.predict(X[test]), theirs.predict(X[test]), rtol=1e-12)
