"""max_bins beyond 255: 16-bit bin codes, split sets past bin 255, exact
trees on features with up to 65535 distinct values.

Properties: agreement with scikit-learn's exact trees on 1000 distinct values
per feature; 16-bit codes grow the same models as 8-bit codes where the data
have at most 255 distinct values; the split-set rule on the host, in numba
and in a plain Python set agree; save/load round trips; clear errors.
"""
import dataclasses

import numpy as np
import pytest
from numba import njit
from sklearn import tree as sktree

import gputree
import reference
from gputree._dtypes import BITSET_WORDS, MAX_CATEGORIES
from gputree.backends import get_backend
from gputree.backends.splitset import goes_left, last_left_bin, left_bins, make_splitset
from gputree.growth.histogram_pool import HistogramPool

_jit_set = make_splitset(njit)


@njit
def _jit_goes_left(bitset, bins):
    out = np.empty(bins.shape[0], dtype=np.uint32)
    for i in range(bins.shape[0]):
        out[i] = _jit_set.goes_left(bitset, i, bins[i])
    return out


@njit
def _jit_build(lasts, extras, bitset):
    for k in range(lasts.shape[0]):
        _jit_set.add_bins_upto(bitset, k, lasts[k])
        if extras[k] >= 0:
            _jit_set.add_bin(bitset, k, extras[k])


def test_split_sets_hold_prefixes_and_one_extra_bin_at_any_width():
    """Sets "bins 0..t, plus bin m" built by the device helpers read back the
    same through the device rule, the host rule and left_bins, and equal the
    Python set; last_left_bin recovers t."""
    rng = np.random.RandomState(0)
    n_bins = 3000
    lasts = rng.randint(-1, n_bins - 1, 40)
    lasts[:4] = [0, 255, 256, n_bins - 2]
    extras = np.where(rng.rand(40) < 0.5, n_bins - 1, -1)
    bitset = np.zeros((40, BITSET_WORDS), dtype=np.uint32)
    _jit_build(lasts, extras, bitset)
    bins = np.arange(n_bins)
    for k in range(40):
        expected = set(range(lasts[k] + 1)) | ({extras[k]} if extras[k] >= 0 else set())
        row = np.broadcast_to(bitset[k], (n_bins, BITSET_WORDS)).copy()
        assert set(np.flatnonzero(_jit_goes_left(row, bins))) == expected
        assert set(np.flatnonzero(goes_left(bitset[k], bins))) == expected
        assert set(left_bins(bitset[k], n_bins)) == expected
        assert reference.bins_of(bitset[k]) == expected
    numerical = lasts >= 0
    np.testing.assert_array_equal(last_left_bin(bitset[numerical], n_bins - 1), lasts[numerical])


def _many_values(rng, n, n_distinct):
    """Features with n_distinct distinct values each, spread so every one occurs."""
    return np.stack([rng.permutation(np.resize(np.arange(n_distinct), n)) * 0.37 + j
                     for j in range(3)], axis=1)


@pytest.mark.parametrize("kind", ["reg", "clf"])
def test_trees_coincide_with_scikit_learn_on_1000_distinct_values(kind):
    rng = np.random.RandomState(1)
    X = _many_values(rng, 2000, 1000)
    signal = np.sin(X[:, 0] / 40) + X[:, 1] / 300 - (X[:, 2] > 200) + 0.3 * rng.normal(size=2000)
    params = dict(max_depth=7, min_samples_leaf=3)
    if kind == "reg":
        ours = gputree.DecisionTreeRegressor(max_bins=1024, device="cpu", **params)
        theirs = sktree.DecisionTreeRegressor(random_state=0, **params)
        ours.fit(X, signal), theirs.fit(X, signal)
    else:
        y = np.digitize(signal, np.quantile(signal, [0.3, 0.7]))
        w = reference.dyadic_weights(rng, len(y))
        ours = gputree.DecisionTreeClassifier(max_bins=1024, device="cpu", **params)
        theirs = sktree.DecisionTreeClassifier(random_state=0, **params)
        ours.fit(X, y, sample_weight=w), theirs.fit(X, y, sample_weight=w)
    assert ours._bin_mapper.n_bins_non_missing_.min() == 1000
    # splits past bin 255 happened (the words of the split sets beyond the bitmap)
    assert (ours.tree_.arrays.bitset[:, 8] > 0).any()
    reference.assert_same_tree(ours, theirs, X)


def _few_values(seed, n=600):
    """At most 200 distinct values per column, NaNs, a categorical column."""
    rng = np.random.RandomState(seed)
    X = np.column_stack([rng.randint(0, 200, n) * 0.5, rng.normal(size=n).round(1),
                         rng.randint(0, 7, n)]).astype(float)
    X[rng.rand(n) < 0.1, 0] = np.nan
    X[rng.rand(n) < 0.1, 1] = np.nan
    signal = np.nan_to_num(X[:, 0]) / 50 + np.nan_to_num(X[:, 1]) + (X[:, 2] == 3)
    return X, signal + 0.3 * rng.normal(size=n)


def _assert_same_models(narrow, wide, X):
    """The same trees (every field but the split sets' encoding, whose missing
    bin moves from bit 255 to the extra word) and bit-identical outputs."""
    trees = lambda m: [m.tree_.arrays] if hasattr(m, "tree_") else list(m._trees)  # noqa: E731
    assert any(t.node_count > 1 for t in trees(narrow))
    for a, b in zip(trees(narrow), trees(wide), strict=True):
        for field in dataclasses.fields(a):
            if field.name != "bitset":
                np.testing.assert_array_equal(getattr(a, field.name), getattr(b, field.name))
        for node in np.flatnonzero(a.feature >= 0):
            assert list(left_bins(a.bitset[node], 255)) == list(left_bins(b.bitset[node], 255))
    for name in ("predict", "predict_proba", "apply"):
        if hasattr(narrow, name):
            np.testing.assert_array_equal(getattr(narrow, name)(X), getattr(wide, name)(X))


@pytest.mark.parametrize("estimator, task, params", [
    (gputree.DecisionTreeClassifier, "clf", dict(max_depth=6)),
    (gputree.DecisionTreeRegressor, "reg", dict(max_depth=6)),
    (gputree.RandomForestRegressor, "reg", dict(n_estimators=4, max_depth=5)),
    (gputree.GradientBoostingClassifier, "clf", dict(n_estimators=5, max_depth=3,
                                                      early_stopping=False)),
])
def test_16_bit_codes_grow_the_8_bit_model_on_few_distinct_values(estimator, task, params):
    X, signal = _few_values(2)
    y = np.digitize(signal, np.quantile(signal, [0.3, 0.7])) if task == "clf" else signal
    fit = lambda bins: estimator(max_bins=bins, categorical_features=[2], device="cpu",  # noqa: E731
                                 random_state=0, **params).fit(X, y)
    narrow, wide = fit(255), fit(4096)
    assert narrow._bin_mapper.transform(X).dtype == np.uint8
    assert wide._bin_mapper.transform(X).dtype == np.uint16
    _assert_same_models(narrow, wide, X)


@pytest.mark.parametrize("estimator", [gputree.RandomForestRegressor,
                                       gputree.GradientBoostingRegressor])
def test_forests_and_boosting_fit_with_4096_bins(estimator):
    """On 3000 distinct values, 4096 bins hold every value: each tree's
    thresholds are midpoints between training values, and the first
    boosting round's training predictions equal an exact
    scikit-learn tree's on the gradients (the residuals from the mean)."""
    rng = np.random.RandomState(3)
    X = _many_values(rng, 3000, 3000)
    y = np.sin(X[:, 0] / 100) + 0.2 * rng.normal(size=3000)
    model = estimator(n_estimators=3, max_depth=4, max_bins=4096, device="cpu", random_state=0,
                      **(dict(early_stopping=False, reg_lambda=0.0, min_samples_leaf=1)
                         if "Boosting" in estimator.__name__ else {}))
    model.fit(X, y)
    for tree in model._trees:
        splits = tree.feature >= 0
        assert splits.any()
        values = X[:, tree.feature[splits]]
        below = np.where(values <= tree.threshold[splits], values, -np.inf).max(axis=0)
        above = np.where(values > tree.threshold[splits], values, np.inf).min(axis=0)
        np.testing.assert_allclose(tree.threshold[splits], (below + above) / 2, rtol=1e-12)
    assert (np.concatenate([t.bitset[:, 8] for t in model._trees]) > 0).any()
    if "Boosting" in estimator.__name__:
        first = next(model.staged_predict(X))
        exact = sktree.DecisionTreeRegressor(max_depth=4).fit(X, y - y.mean())
        np.testing.assert_allclose(first - y.mean(), model.learning_rate * exact.predict(X),
                                   rtol=1e-9, atol=1e-12)


def test_save_and_load_keep_16_bit_models_bit_identical(tmp_path):
    rng = np.random.RandomState(4)
    X = _many_values(rng, 1500, 700)
    X[rng.rand(1500) < 0.05, 0] = np.nan
    y = (np.nan_to_num(X[:, 0]) % 50 > 20).astype(int) ^ (X[:, 1] > 150)
    model = gputree.DecisionTreeClassifier(max_bins=1000, max_depth=8, device="cpu").fit(X, y)
    model.save_model(tmp_path / "wide.json")
    loaded = gputree.load_model(tmp_path / "wide.json")
    np.testing.assert_array_equal(loaded.tree_.arrays.bitset, model.tree_.arrays.bitset)
    assert (model.tree_.arrays.bitset[:, 8:] > 0).any()
    for name in ("predict_proba", "apply"):
        np.testing.assert_array_equal(getattr(model, name)(X), getattr(loaded, name)(X))


def test_sparse_input_and_contributions_with_16_bit_codes():
    """CSR input bins (map_sparse_to_bins, uint16) like the dense matrix; the
    TreeSHAP kernel walks 16-bit split sets: contributions sum to the raw
    prediction, row by row."""
    from scipy.sparse import csr_matrix
    rng = np.random.RandomState(5)
    X = _many_values(rng, 1200, 600)
    X[rng.rand(*X.shape) < 0.3] = 0.0
    y = np.sin(X[:, 0] / 30) + X[:, 2] / 200
    params = dict(max_bins=700, n_estimators=3, max_depth=4, early_stopping=False, device="cpu")
    dense = gputree.GradientBoostingRegressor(**params).fit(X, y)
    sparse = gputree.GradientBoostingRegressor(**params).fit(csr_matrix(X), y)
    np.testing.assert_array_equal(dense.predict(X), sparse.predict(csr_matrix(X)))
    assert (np.concatenate([t.bitset[:, 8] for t in dense._trees]) > 0).any()
    contrib = dense.predict(X[:50], pred_contrib=True)
    np.testing.assert_allclose(contrib.sum(axis=1), dense._raw_predict(X[:50]).ravel(),
                               rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("estimator", [gputree.DecisionTreeClassifier,
                                       gputree.RandomForestClassifier,
                                       gputree.GradientBoostingClassifier])
@pytest.mark.parametrize("max_bins", [1, 65536])
def test_max_bins_out_of_range_names_the_argument(estimator, max_bins):
    with pytest.raises(ValueError, match=r"max_bins must be \[2, 65535\]"):
        estimator(max_bins=max_bins, device="cpu").fit(np.arange(8.0)[:, None], [0, 1] * 4)


def test_more_than_65535_categories_is_an_error_whatever_max_bins():
    X = np.arange(MAX_CATEGORIES + 1, dtype=float)[:, None]
    model = gputree.DecisionTreeClassifier(max_bins=16, categorical_features=[0], device="cpu")
    with pytest.raises(ValueError, match=f"{MAX_CATEGORIES + 1} categories, more than "
                                         f"{MAX_CATEGORIES}.*Merge rare categories"):
        model.fit(X, np.arange(X.shape[0]) % 2)


def test_histograms_that_do_not_fit_raise_a_clear_memory_error(monkeypatch):
    backend = get_backend("cpu")
    monkeypatch.setattr(type(backend), "free_memory_bytes", lambda self: 2**20)
    pool = HistogramPool(backend)
    pool.start_tree((4, 65536, 2), 1)     # reserves the one row: 4 MiB, lazily mapped
    with pytest.raises(MemoryError, match=r"3 nodes x 4 features x 65536 bins.*max_bins"):
        pool.take(4)
