"""``BinnedData``: binned features on a backend with their bin layout, and
the one way from encoded float X (dense or scipy.sparse) to it,
:func:`bin_with`."""
from dataclasses import dataclass, field

import numpy as np

from .._dtypes import bin_dtype
from ..backends import get_backend
from .adapters import check_sparse, is_sparse


@dataclass
class BinnedData:
    """Binned features on a backend plus the bin layout (host arrays)."""

    X_binned: object               # bin_dtype(n_bins) (n_samples, n_features), backend.binned_order
    n_bins: int
    n_bins_non_missing: np.ndarray  # int32 (n_features,)
    is_categorical: np.ndarray      # uint8 (n_features,)
    thresholds: np.ndarray          # float64 (n_features, max_bins): BinMapper.bin_thresholds_
    #: bin_counts once computed (backend array)
    counts: object = field(default=None, repr=False, compare=False)
    #: memory first (a Dataset's rows: data near the size of memory): the
    #: backend keeps no copy of X_binned for speed (Backend.keep_binned_lean)
    #: and boosting builds its statistics a block of rows at a time; row and
    #: column subsets inherit it
    lean: bool = field(default=False, compare=False)

    @property
    def missing_bin(self):
        return self.n_bins - 1

    def bin_counts(self, backend):
        """int64 (n_features, n_bins) backend array: the rows in each bin of
        each feature (the root's histogram of a channel of ones), computed
        on first use."""
        if self.counts is None:
            self.counts = backend.bin_counts(self.X_binned, self.n_bins)
        return self.counts

    def take_rows(self, backend, rows):
        """BinnedData of the given rows (host int indices), gathered on the device."""
        X = backend.in_binned_order(self.X_binned[backend.asarray(rows)])
        return BinnedData(X, self.n_bins, self.n_bins_non_missing, self.is_categorical,
                          self.thresholds).kept_lean(backend, self.lean)

    def take_columns(self, backend, columns):
        """BinnedData restricted to ``columns`` (sorted host int indices)."""
        counts = self.bin_counts(backend)[columns] if backend.uses_bin_counts else None
        return BinnedData(backend.take_columns(self.X_binned, columns), self.n_bins,
                          self.n_bins_non_missing[columns], self.is_categorical[columns],
                          self.thresholds[columns], counts).kept_lean(backend, self.lean)

    def kept_lean(self, backend, lean=True):
        """This BinnedData, marked :attr:`lean` (and X_binned kept lean on
        ``backend``) when ``lean``."""
        if lean:
            self.lean = True
            backend.keep_binned_lean(self.X_binned)
        return self


def bin_with(backend, mapper, X_float):
    """BinnedData of X_float (already encoded; dense or scipy.sparse) on ``backend``."""
    map_to_bins = map_sparse_to_bins if is_sparse(X_float) else _map_dense
    X_binned = map_to_bins(backend, X_float, mapper.bin_thresholds_,
                           mapper.is_categorical_.astype(np.uint8), mapper.missing_bin_)
    return BinnedData(X_binned, mapper.n_bins_, mapper.n_bins_non_missing_,
                      mapper.is_categorical_.astype(np.uint8), mapper.bin_thresholds_)


def _map_dense(backend, X, thresholds, is_categorical, missing_bin):
    return backend.map_to_bins(backend.asarray(X), backend.asarray(thresholds),
                               backend.asarray(is_categorical), missing_bin)


def map_sparse_to_bins(backend, X, thresholds, is_categorical, missing_bin):
    """bins (n_samples, n_features) of ``bin_dtype(missing_bin + 1)``, in
    ``backend``'s binned order, on ``backend``, of a
    sparse X: stored values through ``backend``'s own map_to_bins (on the
    host, one call per column), implicit zeros to the bin of 0.0; loops over
    features only."""
    X = check_sparse(X)
    cpu = get_backend("cpu")
    n_samples, n_features = X.shape
    is_categorical = np.asarray(is_categorical, dtype=np.uint8)
    zero_bins = cpu.map_to_bins(np.zeros((1, n_features)), thresholds, is_categorical,
                                missing_bin)[0]
    out = np.empty((n_samples, n_features), dtype=bin_dtype(missing_bin + 1), order="F")
    out[:] = zero_bins[None, :]
    for f in range(n_features):
        start, stop = X.indptr[f], X.indptr[f + 1]
        if stop > start:
            values = X.data[start:stop].reshape(-1, 1)
            out[X.indices[start:stop], f] = cpu.map_to_bins(
                values, thresholds[f:f + 1], is_categorical[f:f + 1], missing_bin)[:, 0]
    return backend.in_binned_order(backend.asarray(out, order="F"))

