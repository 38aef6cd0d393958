"""BinMapper and the map_to_bins kernel: exact agreement with the numpy
reference, exact thresholds for few distinct values, quantile bins, the
missing bin, categorical codes, and zero-weight rows."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import reference
from gputree.data.binning import BinMapper


def _mixed_X(rng, n):
    """Columns: continuous, few distinct values, categorical codes; with NaN."""
    X = np.column_stack([rng.normal(size=n), rng.randint(0, 6, n) * 0.7,
                         rng.randint(0, 5, n).astype(float)])
    X[rng.rand(n, 3) < 0.1] = np.nan
    return X


@pytest.mark.parametrize("max_bins", [5, 7, 255])
def test_kernel_matches_reference_exactly(backend, max_bins):
    rng = np.random.RandomState(max_bins)
    X = _mixed_X(rng, 400)
    mapper = BinMapper(max_bins, is_categorical=[False, False, True]).fit(X)
    X_new = _mixed_X(rng, 300)
    X_new[:20, 2] = 9.0                    # a category unseen at fit
    X_new[20:25, 0] = [-np.inf, np.inf, 1e300, -1e300, 0.0]
    expected = reference.map_to_bins(X_new, mapper.bin_thresholds_, mapper.is_categorical_,
                                      mapper.missing_bin_)
    got = mapper.transform(X_new, backend)
    assert got.dtype == np.uint8
    assert got.flags.c_contiguous if backend.binned_order == "C" else got.flags.f_contiguous
    np.testing.assert_array_equal(got, expected)
    X32 = np.clip(X_new, -1e30, 1e30).astype(np.float32)   # float32 input is binned as is
    np.testing.assert_array_equal(mapper.transform(X32, backend), reference.map_to_bins(
        X32, mapper.bin_thresholds_, mapper.is_categorical_, mapper.missing_bin_))


@settings(max_examples=30, deadline=None, derandomize=True)
@given(values=st.lists(st.one_of(st.floats(-1e6, 1e6), st.just(np.nan)), min_size=1, max_size=60),
       max_bins=st.integers(2, 20))
def test_kernel_matches_reference_on_random_columns(backend, values, max_bins):
    X = np.array(values, dtype=np.float64)[:, None]
    mapper = BinMapper(max_bins).fit(X)
    np.testing.assert_array_equal(
        mapper.transform(X, backend),
        reference.map_to_bins(X, mapper.bin_thresholds_, [False], mapper.missing_bin_))


def test_few_distinct_values_get_one_bin_each_in_order(backend):
    rng = np.random.RandomState(0)
    distinct = np.sort(rng.uniform(-5, 5, 40))
    X = rng.choice(distinct, 500)[:, None]
    present = np.unique(X)
    mapper = BinMapper(255).fit(X)
    t = mapper.bin_thresholds_[0]
    k = present.size
    assert mapper.n_bins_non_missing_[0] == k
    # thresholds sit strictly between consecutive distinct values, the rest is +inf
    assert np.all(present[:-1] < t[:k - 1]) and np.all(t[:k - 1] < present[1:])
    assert np.all(np.isinf(t[k - 1:]))
    bins = mapper.transform(X, backend)[:, 0]
    np.testing.assert_array_equal(bins, np.searchsorted(present, X[:, 0]))


def test_huge_values_keep_separate_bins(backend):
    X = np.array([[-1.7e308], [1.0], [1.7e308], [1.7e308]])
    mapper = BinMapper(10).fit(X)
    bins = mapper.transform(X, backend)[:, 0]
    assert len(set(bins[:3].tolist())) == 3 and bins[2] == bins[3]


def test_many_distinct_values_make_quantile_bins(backend):
    rng = np.random.RandomState(1)
    X = rng.standard_exponential((20000, 1))
    mapper = BinMapper(16).fit(X)
    t = mapper.bin_thresholds_[0]
    assert mapper.n_bins_non_missing_[0] == 16 and np.all(np.diff(t) > 0)
    counts = np.bincount(mapper.transform(X, backend)[:, 0], minlength=17)
    assert counts[16] == 0                       # no missing values
    assert np.all(np.abs(counts[:16] / 20000 - 1 / 16) < 0.2 / 16)


def test_bins_are_monotone_in_the_value(backend):
    rng = np.random.RandomState(2)
    X = rng.standard_cauchy((3000, 1))
    bins = BinMapper(30).fit(X).transform(X, backend)[:, 0]
    order = np.argsort(X[:, 0], kind="stable")
    assert np.all(np.diff(bins[order].astype(int)) >= 0)


def test_missing_values_go_to_the_last_bin(backend):
    X = np.array([[np.nan, 1.0], [2.0, np.nan], [3.0, 1.0], [np.nan, 2.0]])
    mapper = BinMapper(5, is_categorical=[False, True]).fit(X)
    assert mapper.missing_bin_ == 5 and mapper.n_bins_ == 6
    bins = mapper.transform(X, backend)
    assert bins[0, 0] == bins[3, 0] == bins[1, 1] == 5
    assert bins[1, 0] < 5 and bins[0, 1] < 5


def test_all_missing_column_has_no_non_missing_bin(backend):
    X = np.array([[np.nan], [np.nan]])
    mapper = BinMapper(8).fit(X)
    assert mapper.n_bins_non_missing_[0] == 1
    assert np.all(mapper.transform(X, backend) == mapper.missing_bin_)


def test_categorical_codes_map_to_their_rank_and_unseen_to_missing(backend):
    X = np.array([[7.0], [2.0], [11.0], [2.0], [np.nan]])
    mapper = BinMapper(10, is_categorical=[True]).fit(X)
    assert mapper.n_bins_non_missing_[0] == 3
    new = np.array([[2.0], [7.0], [11.0], [3.0], [100.0], [np.nan]])
    np.testing.assert_array_equal(mapper.transform(new, backend)[:, 0], [0, 1, 2, 10, 10, 10])


@pytest.mark.parametrize("bad", [-1.0, 1.5])
def test_categorical_codes_must_be_non_negative_integers(bad):
    X = np.array([[0.0], [1.0], [bad]])
    with pytest.raises(ValueError, match="Categorical feature 0 .*non-negative integer"):
        BinMapper(10, is_categorical=[True]).fit(X)


def test_categories_not_max_bins_decide_a_categorical_features_bins(backend):
    """12 categories with max_bins=10: one bin per category, and the missing
    bin (shared by all features) after them; the numerical feature keeps
    at most max_bins bins."""
    rng = np.random.RandomState(0)
    X = np.column_stack([rng.permutation(np.repeat(np.arange(12.0) * 3, 5)), rng.normal(size=60)])
    X[::7] = np.nan
    mapper = BinMapper(10, is_categorical=[True, False]).fit(X)
    assert mapper.missing_bin_ == 12 and mapper.n_bins_ == 13
    assert mapper.n_bins_non_missing_[0] == 12 and mapper.n_bins_non_missing_[1] == 10
    binned = np.asarray(mapper.transform(X, backend))
    np.testing.assert_array_equal(binned[:, 0], np.where(np.isnan(X[:, 0]), 12, X[:, 0] // 3))
    assert (binned[np.isnan(X[:, 1]), 1] == 12).all()
    assert binned[~np.isnan(X[:, 1]), 1].max() == 9


@pytest.mark.parametrize("max_bins", [1, 65536])
def test_max_bins_out_of_range(max_bins):
    with pytest.raises(ValueError, match="max_bins must be in"):
        BinMapper(max_bins).fit(np.zeros((3, 1)))


def test_zero_weight_rows_do_not_shape_the_bins():
    rng = np.random.RandomState(3)
    X = np.column_stack([rng.randint(0, 30, 200) * 1.0, rng.randint(0, 4, 200)])
    w = rng.randint(0, 3, 200).astype(float)
    weighted = BinMapper(20, is_categorical=[False, True]).fit(X, w)
    dropped = BinMapper(20, is_categorical=[False, True]).fit(X[w > 0])
    np.testing.assert_array_equal(weighted.bin_thresholds_, dropped.bin_thresholds_)
    np.testing.assert_array_equal(weighted.n_bins_non_missing_, dropped.n_bins_non_missing_)


def test_subsample_is_seeded_and_used_for_quantiles():
    rng = np.random.RandomState(4)
    X = rng.normal(size=(5000, 1))
    a = BinMapper(32, subsample=1000, random_state=5).fit(X).bin_thresholds_
    b = BinMapper(32, subsample=1000, random_state=5).fit(X).bin_thresholds_
    c = BinMapper(32, subsample=1000, random_state=6).fit(X).bin_thresholds_
    full = BinMapper(32, subsample=None).fit(X).bin_thresholds_
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c) and not np.array_equal(a, full)
    # a 1000-row sample still gives quantiles close to the full data's
    assert np.max(np.abs(a[0, :31] - full[0, :31])) < 0.2


def test_default_random_state_gives_the_same_bins_on_more_rows_than_the_subsample():
    """random_state=None: the bin-edge subsample is drawn with a fixed seed, so
    two default fits on more rows than the subsample learn the same bins
    (and here the same tree), while two different seeds learn different bins."""
    from gputree import DecisionTreeRegressor
    rng = np.random.RandomState(0)
    X = rng.standard_normal((200_500, 1))
    y = X[:, 0] + rng.standard_normal(200_500)
    first, second = (DecisionTreeRegressor(max_depth=2, device="cpu").fit(X, y) for _ in range(2))
    assert np.array_equal(first._bin_mapper.bin_thresholds_, second._bin_mapper.bin_thresholds_)
    assert np.array_equal(first.tree_.threshold, second.tree_.threshold, equal_nan=True)
    seeded = [DecisionTreeRegressor(max_depth=2, device="cpu", random_state=s).fit(X, y)
              for s in (1, 2)]
    assert not np.array_equal(seeded[0]._bin_mapper.bin_thresholds_,
                              seeded[1]._bin_mapper.bin_thresholds_)


@pytest.mark.parametrize("categorical", [False, True])
def test_edges_found_on_threads_equal_those_found_serially(monkeypatch, categorical):
    """Columns shorter than THREADED_ROWS get their edges on the calling
    thread, longer ones on threads: the same thresholds and bins either way."""
    from gputree.data import binning
    rng = np.random.RandomState(5)
    X = rng.normal(size=(3000, 12))
    X[rng.rand(3000, 12) < 0.1] = np.nan
    X[:, 3] = rng.randint(0, 40, 3000)
    is_cat = np.arange(12) == 3 if categorical else None
    fitted = []
    for threaded_rows in (0, 10 ** 9):
        monkeypatch.setattr(binning, "THREADED_ROWS", threaded_rows)
        mapper = binning.BinMapper(max_bins=31, is_categorical=is_cat).fit(X)
        fitted.append((mapper.bin_thresholds_, mapper.n_bins_non_missing_, mapper.missing_bin_))
    np.testing.assert_array_equal(fitted[0][0], fitted[1][0])
    np.testing.assert_array_equal(fitted[0][1], fitted[1][1])
    assert fitted[0][2] == fitted[1][2]
