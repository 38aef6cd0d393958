"""Sparse X (CSR / CSC): bins, trees and predictions identical to the dense
matrix of the same values; implicit entries are 0, stored NaN is missing."""
import numpy as np
import pytest
import scipy.sparse as sp

import gputree
from gputree.data.binned import bin_with
from gputree.backends import get_backend
from gputree.data.binning import BinMapper


def _sparse_data(seed=0, n=200):
    """Dense X with 80% zeros, stored NaNs, negative values and a column of
    category codes (0 included); targets of every kind."""
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n, 5)) * (rng.rand(n, 5) < 0.2)
    X[:, 3] = rng.randint(0, 4, n) * (rng.rand(n) < 0.5)
    X[rng.rand(n) < 0.05, 1] = np.nan
    signal = X[:, 0] - np.nan_to_num(X[:, 1]) + (X[:, 3] == 2)
    return X, signal


def _estimators():
    common = dict(device="cpu", random_state=0, categorical_features=[3])
    return [gputree.DecisionTreeClassifier(max_depth=5, **common),
            gputree.DecisionTreeRegressor(max_depth=5, **common),
            gputree.RandomForestClassifier(n_estimators=3, max_depth=4, **common),
            gputree.RandomForestRegressor(n_estimators=3, max_depth=4, **common),
            gputree.GradientBoostingClassifier(n_estimators=3, max_depth=3, **common),
            gputree.GradientBoostingRegressor(n_estimators=3, max_depth=3, **common)]


def _outputs(model, X):
    out = [model.predict(X)]
    if hasattr(model, "predict_proba"):
        out.append(model.predict_proba(X))
    return out


@pytest.mark.parametrize("index", range(6))
def test_fit_and_predict_on_csr_and_csc_equal_dense(index):
    X, signal = _sparse_data()
    estimator = _estimators()[index]
    y = np.digitize(signal, [-0.3, 0.4]) if hasattr(estimator, "predict_proba") else signal
    dense = type(estimator)(**estimator.get_params()).fit(X, y)
    for kind in (sp.csr_matrix, sp.csc_array):
        model = type(estimator)(**estimator.get_params()).fit(kind(X), y)
        for a, b in zip(dense.model_.trees, model.model_.trees):
            for name in ("feature", "bitset", "threshold", "value", "missing_left"):
                np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
        for X_pred in (X, sp.csr_matrix(X), sp.csc_matrix(X)):
            for p, q in zip(_outputs(dense, X), _outputs(model, X_pred)):
                assert p.tobytes() == q.tobytes()


def test_bins_of_sparse_equal_bins_of_dense_with_a_row_subsample():
    rng = np.random.RandomState(3)
    X = rng.normal(size=(500, 4)) * (rng.rand(500, 4) < 0.3)
    X[::17, 2] = np.nan
    X = X.astype(np.float32)
    cpu = get_backend("cpu")
    dense = BinMapper(16, subsample=100, random_state=1).fit(X)
    sparse = BinMapper(16, subsample=100, random_state=1).fit(sp.csr_matrix(X))
    np.testing.assert_array_equal(dense.bin_thresholds_, sparse.bin_thresholds_)
    np.testing.assert_array_equal(bin_with(cpu, dense, X).X_binned,
                                  bin_with(cpu, dense, sp.csc_matrix(X)).X_binned)


def test_implicit_zero_is_the_value_zero_and_stored_nan_is_missing():
    X = np.array([[0.0], [1.0], [np.nan], [2.0]] * 10)
    y = np.array([0, 1, 2, 1] * 10)
    model = gputree.DecisionTreeClassifier(device="cpu").fit(sp.csr_matrix(X), y)
    np.testing.assert_array_equal(model.predict(sp.csr_matrix(X)), y)
    # a row with no stored entry is predicted as 0.0, not as missing
    empty = sp.csr_matrix((1, 1))
    assert model.predict(empty)[0] == 0 and model.predict(np.array([[np.nan]]))[0] == 2


def test_pred_contrib_on_sparse_input_equals_dense():
    X, signal = _sparse_data(1)
    model = gputree.GradientBoostingRegressor(n_estimators=3, device="cpu").fit(X, signal)
    np.testing.assert_array_equal(model.predict(sp.csr_matrix(X), pred_contrib=True),
                                  model.predict(X, pred_contrib=True))


def test_complex_sparse_x_is_rejected():
    X, signal = _sparse_data()
    with pytest.raises(ValueError, match="Complex data"):
        gputree.DecisionTreeRegressor(device="cpu").fit(sp.csr_matrix(X.astype(complex)), signal)
