"""pred_contrib: TreeSHAP contributions equal brute-force Shapley values over
feature subsets, sum to the raw prediction, and agree with the shap package."""
import itertools
import math

import numpy as np
import pandas as pd
import pytest

import gputree
from gputree.explain import shap_model
from model_cases import cases, fitted


def _raw(model, X):
    """The raw prediction that contributions add up to, (n_samples, K)."""
    if hasattr(model, "decision_function"):
        raw = model.decision_function(X)
    elif hasattr(model, "predict_proba"):
        raw = model.predict_proba(X)
    else:
        raw = model.predict(X)
    if isinstance(model, gputree.GradientBoostingRegressor):
        raw = model._raw_predict(X)
    return np.asarray(raw).reshape(len(X), -1)


def _conditional(tree, x_bins, node, known):
    """E[tree value | features in ``known`` fixed to the row] with the
    training-weight split of the other features (the path-dependent value)."""
    if tree.feature[node] < 0:
        return tree.value[node].ravel()
    left = tree.left_child[node]
    f = tree.feature[node]
    if f in known:
        b = x_bins[f]
        goes_left = (tree.bitset[node, b // 32] >> (b % 32)) & 1
        return _conditional(tree, x_bins, left if goes_left else left + 1, known)
    w = tree.weighted_n_node_samples
    return (w[left] * _conditional(tree, x_bins, left, known)
            + w[left + 1] * _conditional(tree, x_bins, left + 1, known)) / w[node]


def _brute_force(model, X):
    """Shapley values of the path-dependent value function, every subset enumerated."""
    trees, columns, scale, baseline = model._contribution_layout()
    bins = np.asarray(model._bin_new_data(X).X_binned)
    n_features, width = bins.shape[1], baseline.shape[0]
    phi = np.zeros((len(X), width, n_features + 1))
    for r in range(len(X)):
        def value(subset):
            total = baseline.copy()
            for tree, c in zip(trees, columns):
                v = scale * _conditional(tree, bins[r], 0, set(subset))
                total[c:c + v.size] += v
            return total
        phi[r, :, n_features] = value(())
        for i in range(n_features):
            others = [f for f in range(n_features) if f != i]
            for size in range(n_features):
                weight = math.factorial(size) * math.factorial(n_features - size - 1) / \
                    math.factorial(n_features)
                for subset in itertools.combinations(others, size):
                    phi[r, :, i] += weight * (value(subset + (i,)) - value(subset))
    return phi[:, 0, :] if width == 1 else phi.reshape(len(X), -1)


@pytest.mark.parametrize("name", sorted(cases()))
def test_contributions_equal_brute_force_shapley_values_and_sum_to_the_raw_prediction(name):
    model, X = fitted(name)
    X = X.iloc[:12]
    contrib = model.predict(X, pred_contrib=True)
    np.testing.assert_allclose(contrib, _brute_force(model, X), rtol=1e-10, atol=1e-12)
    raw = _raw(model, X)
    per_output = contrib.reshape(len(X), raw.shape[1], -1)
    np.testing.assert_allclose(per_output.sum(axis=2), raw, rtol=1e-10, atol=1e-12)
    assert per_output.shape[2] == X.shape[1] + 1


def _numeric_data(seed=0, n=300):
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n, 4))
    X[rng.rand(n, 4) < 0.1] = np.nan
    signal = np.nan_to_num(X[:, 0]) - 2 * np.nan_to_num(X[:, 1], nan=1.0) + np.nan_to_num(X[:, 2]) ** 2
    return X, signal


@pytest.mark.parametrize("kind", ["boosting_regressor", "boosting_multiclass", "forest"])
def test_shap_tree_explainer_agrees_with_pred_contrib(kind):
    shap = pytest.importorskip("shap")
    X, signal = _numeric_data()
    options = dict(device="cpu", random_state=0, max_depth=4)
    if kind == "boosting_regressor":
        model = gputree.GradientBoostingRegressor(n_estimators=5, **options).fit(X, signal)
    elif kind == "boosting_multiclass":
        model = gputree.GradientBoostingClassifier(n_estimators=3, **options).fit(
            X, np.digitize(signal, [-1, 1]))
    else:
        model = gputree.RandomForestRegressor(n_estimators=4, **options).fit(X, signal)
    explainer = shap.TreeExplainer(shap_model(model))
    values = np.asarray(explainer.shap_values(X[:40], check_additivity=False))
    ours = model.predict(X[:40], pred_contrib=True)
    k = np.size(explainer.expected_value)
    ours = ours.reshape(40, k, X.shape[1] + 1)
    theirs = values.reshape(40, X.shape[1], k).transpose(0, 2, 1) if values.ndim == 3 \
        else values.reshape(40, 1, X.shape[1])
    np.testing.assert_allclose(ours[:, :, :-1], theirs, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(ours[0, :, -1], np.ravel(explainer.expected_value), rtol=1e-7)


def test_shap_model_refuses_categorical_splits():
    model, _ = fitted("tree_classifier")
    with pytest.raises(ValueError, match="categorical"):
        shap_model(model)
