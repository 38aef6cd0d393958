"""Feature binning: ``BinMapper`` learns per-feature bin thresholds and maps raw
values to bin codes: uint8 up to 255 non-missing bins, uint16 beyond
(:func:`gputree._dtypes.bin_dtype`).

Numerical features get quantile thresholds computed from a seeded subsample
(midpoints between distinct values when there are fewer distinct values than
bins, so splits are exact): at most ``max_bins`` bins. Categorical features
get one bin per category code seen at fit, however many (up to
``MAX_CATEGORIES``, 65535): their categories, not ``max_bins``, decide their
bins. NaN, and categories unseen at fit, go to the missing bin, which is
always bin ``n_bins - 1`` with ``n_bins = max(max_bins, most categories of a
feature) + 1`` (every feature's bins share that range: a feature with many
categories widens every feature's histogram, see the README).
"""
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np

from .._dtypes import MAX_CATEGORIES, MAX_NON_MISSING_BINS, THRESHOLD_DTYPE
from ..backends import get_backend
from .adapters import column_reader

#: the column length from which the features' edges are found on threads
#: (a future per feature costs more than its sort below: LETOR's 300
#: columns of 3,005 values, 4.3 ms on the calling thread, 6.5-16 ms on two)
THREADED_ROWS = 1 << 14


class BinMapper:
    """Learn bin thresholds on ``X`` and transform ``X`` to bin codes.

    Parameters
    ----------
    max_bins : int, 2..65535
        Non-missing bins per numerical feature; one more bin holds missing
        values. Codes are uint8 up to 255 bins, uint16 beyond (twice the
        memory of the binned data; histograms grow with the bins). A
        categorical feature has one bin per category (up to 65535) whatever
        max_bins; the bins of all features then reach the most categories.
    is_categorical : bool array (n_features,) or None
        Which columns hold category codes (non-negative integers, NaN missing).
    subsample : int or None
        Rows used to find quantiles (default 200,000); None uses all rows.
    random_state : int
        Seed for the subsample.

    Attributes
    ----------
    bin_thresholds_ : float64 (n_features, missing_bin_)
        Per feature, ``x`` goes to bin ``searchsorted(row, x, 'left')``; rows
        are padded with +inf. For categorical features the row holds the
        sorted category codes and a value's bin is the index of its code.
    n_bins_non_missing_ : int32 (n_features,)
    is_categorical_ : bool (n_features,)
    missing_bin_ : int, ``max(max_bins, most categories of a feature)``
    n_bins_ : int, equal to ``missing_bin_ + 1``
    """

    def __init__(self, max_bins=255, is_categorical=None, subsample=200_000,
                 random_state=0):
        self.max_bins = max_bins
        self.is_categorical = is_categorical
        self.subsample = subsample
        self.random_state = random_state

    def fit(self, X, sample_weight=None):
        """X: float array (n_samples, n_features), NaN for missing, or a
        scipy.sparse matrix (implicit entries are 0).

        sample_weight: optional (n_samples,); rows of weight 0 do not shape
        the bins, so that a zero weight means the same as leaving the row out
        (their category codes are still checked).
        """
        n_samples, n_features = X.shape  # numpy, or a device array (host copies of samples)
        used = used_rows(n_samples, sample_weight)
        rows = self.sample_rows(used)
        sample = column_reader(X, rows)
        full = column_reader(X, None)
        is_cat = self._categorical_mask(n_features)

        def edges_of(f):
            # categories must be checked on all rows, not on the subsample
            if is_cat[f]:
                column = full(f)
                return category_edges(distinct_codes(column), distinct_codes(column[used]),
                                      f)
            return quantile_edges(sample(f), self.max_bins)

        return self.fit_edges(n_features, edges_of, n_samples if is_cat.any() else rows.size)

    def sample_rows(self, used):
        """Sorted int rows (of ``used``, sorted row indices) whose values
        shape the numerical bins: all of them, or ``subsample`` drawn with
        the seed. Depends only on ``used`` and the seed, so a cluster draws
        the same global rows (gputree.dask)."""
        ranks = self.sample_ranks(used.size)
        return used if ranks is None else used[ranks]

    def sample_ranks(self, n_used):
        """Sorted int64 ranks, among ``n_used`` rows, of those that
        :meth:`sample_rows` keeps, or None for all (the draw of
        ``rng.choice(used, ...)`` is that of ``rng.choice(used.size, ...)``
        taken from ``used``, so the rows need not be held)."""
        if self.subsample is None or n_used <= self.subsample:
            return None
        rng = np.random.RandomState(self.random_state)
        return np.sort(rng.choice(n_used, self.subsample, replace=False))

    def _categorical_mask(self, n_features):
        return (np.zeros(n_features, dtype=bool) if self.is_categorical is None
                else np.asarray(self.is_categorical, dtype=bool))

    def fit_edges(self, n_features, edges_of, n_rows=None):
        """Set the fitted attributes from ``edges_of(f)``: feature f's
        thresholds (float64, sorted) or category codes, found on threads
        where its columns hold ``n_rows`` (None: many) values or more
        (:data:`THREADED_ROWS`), else on the calling thread."""
        if not 2 <= self.max_bins <= MAX_NON_MISSING_BINS:
            raise ValueError(f"max_bins must be in [2, {MAX_NON_MISSING_BINS}], "
                             f"got {self.max_bins}.")
        is_cat = self._categorical_mask(n_features)
        if n_rows is not None and n_rows < THREADED_ROWS:
            all_edges = [edges_of(f) for f in range(n_features)]
        else:
            # numpy's sorts release the GIL: features in parallel threads
            with ThreadPoolExecutor(max(1, min(n_features, numba.get_num_threads()))) as pool:
                all_edges = list(pool.map(edges_of, range(n_features)))
        # missing_bin columns (n_bins - 1): numerical features use at most
        # max_bins - 1 of them, a categorical one a column per category
        missing_bin = max([self.max_bins] + [len(e) for e, c in zip(all_edges, is_cat) if c])
        thresholds = np.full((n_features, missing_bin), np.inf, dtype=THRESHOLD_DTYPE)
        n_non_missing = np.zeros(n_features, dtype=np.int32)
        for f, edges in enumerate(all_edges):
            thresholds[f, :len(edges)] = edges
            n_non_missing[f] = len(edges) + (0 if is_cat[f] else 1)
        self.bin_thresholds_ = thresholds
        self.n_bins_non_missing_ = n_non_missing
        self.is_categorical_ = is_cat
        self.missing_bin_ = missing_bin
        self.n_bins_ = missing_bin + 1
        return self

    def transform(self, X, backend=None):
        """Map X (n_samples, n_features) to bins (``bin_dtype(n_bins_)``), in
        the backend's ``binned_order``."""
        backend = backend or get_backend("cpu")
        return backend.map_to_bins(X, self.bin_thresholds_,
                                   self.is_categorical_.astype(np.uint8),
                                   self.missing_bin_)

    def fit_transform(self, X, backend=None):
        return self.fit(X).transform(X, backend)


def quantile_edges(column, max_bins):
    """Thresholds (float64, at most max_bins - 1) between non-missing values."""
    # sorted once: the distinct values are read off it (np.unique's own
    # steps), and np.percentile's selection is fast on sorted values
    values = np.sort(column[~np.isnan(column)])
    if values.size == 0:
        return np.empty(0, dtype=THRESHOLD_DTYPE)
    distinct = values[np.concatenate([[True], values[1:] != values[:-1]])]
    if distinct.size <= max_bins:
        midpoints = distinct[:-1] + (distinct[1:] - distinct[:-1]) / 2.0
        # midpoints of huge values may overflow to inf: keep the lower value
        return np.where(np.isfinite(midpoints), midpoints, distinct[:-1])
    percentiles = np.linspace(0, 100, max_bins + 1)[1:-1]
    edges = np.percentile(values, percentiles, method="midpoint")
    return np.unique(edges)


def used_rows(n_samples, sample_weight=None):
    """Sorted int rows that shape the bins: those of positive weight (all
    rows without weights)."""
    return (np.arange(n_samples) if sample_weight is None
            else np.flatnonzero(np.asarray(sample_weight) > 0))


def distinct_codes(column):
    """Sorted distinct non-missing values (float64) of a column."""
    return np.unique(column[~np.isnan(column)])


def category_edges(all_codes, used_codes, feature):
    """Sorted category codes (float64) of one categorical column: those seen
    in the rows that shape the bins (``used_codes``), at most MAX_CATEGORIES;
    every row's code (``all_codes``, both from :func:`distinct_codes`) is
    checked."""
    codes = all_codes
    bad = codes[(codes < 0) | (codes != np.round(codes))]
    if bad.size:
        raise ValueError(
            f"Categorical feature {feature} must hold non-negative integer "
            f"category codes (NaN for missing); found {bad[:3]}. "
            "Pass a pandas 'category' column or encode the categories as 0, 1, 2, ...")
    codes = used_codes
    if codes.size > MAX_CATEGORIES:
        raise ValueError(
            f"Categorical feature {feature} has {codes.size} categories, more than "
            f"{MAX_CATEGORIES} (categories take 16-bit codes). Merge rare categories, or "
            "treat the feature as numerical.")
    return codes.astype(THRESHOLD_DTYPE)
