"""Sparse input: scipy.sparse CSR / CSC matrices (and arrays) as ``X`` for
fit and predict, binned column by column without a dense float copy.

An implicit (unstored) entry is the value 0, not missing, as in
scikit-learn; a stored NaN is missing. Every stored value is binned by the
same backend kernel as dense input, and the implicit zeros of a column get
the bin that kernel gives 0.0, so the bins (and hence trees and
predictions) are identical to those of the dense matrix of the same values.
Memory: the matrix in CSC form plus, while learning bins, one dense column
(and the sampled rows of one column) at a time.
"""
import numpy as np

from ._dtypes import X_DTYPE, bin_dtype


def is_sparse(X):
    """True for scipy.sparse matrices and arrays."""
    try:
        from scipy.sparse import issparse
    except ImportError:  # pragma: no cover
        return False
    return issparse(X)


def check_sparse(X, name="X"):
    """CSC float64 version (no copy when it already is one) of a sparse X (n_samples, n_features),
    checked like dense input."""
    if X.ndim != 2:
        raise ValueError(f"Expected 2D sparse {name}, got shape {X.shape}.")
    if 0 in X.shape:
        raise ValueError(f"Found sparse {name} with shape {X.shape}; at least 1 sample and "
                         "1 feature are required.")
    if X.dtype.kind == "c":
        raise ValueError(f"Complex data not supported in {name}; pass real numbers.")
    if X.dtype.kind not in "fiub":
        raise TypeError(f"sparse {name} has dtype {X.dtype}; pass real numbers.")
    X = X.tocsc()
    if X.dtype != X_DTYPE:
        X = X.astype(X_DTYPE)
    X.sum_duplicates()          # canonical: sorted indices, one entry per cell
    return X


def column_reader(X, rows):
    """f -> float64 (len(rows),) values of column ``f`` at ``rows`` (sorted
    int indices; None: all rows), for dense (host) or sparse X."""
    if not is_sparse(X):
        from ._validation import to_numpy
        if rows is None:
            return lambda f: to_numpy(X[:, f]).astype(X_DTYPE)
        sample = to_numpy(X[rows])      # in X's dtype: columns convert as they are read
        return lambda f: sample[:, f].astype(X_DTYPE)
    X = check_sparse(X)
    index = None if rows is None else np.full(X.shape[0], -1, dtype=np.int64)
    if index is not None:
        index[rows] = np.arange(len(rows))
    n_out = X.shape[0] if rows is None else len(rows)

    def column(f):
        start, stop = X.indptr[f], X.indptr[f + 1]
        out = np.zeros(n_out, dtype=X_DTYPE)
        where = X.indices[start:stop] if index is None else index[X.indices[start:stop]]
        kept = where >= 0
        out[where[kept]] = X.data[start:stop][kept]
        return out
    return column


def map_sparse_to_bins(backend, X, thresholds, is_categorical, missing_bin):
    """bins (n_samples, n_features) of ``bin_dtype(missing_bin + 1)``, in
    ``backend``'s binned order, on ``backend``, of a
    sparse X: stored values through ``backend``'s own map_to_bins (on the
    host, one call per column), implicit zeros to the bin of 0.0; loops over
    features only."""
    from .backends import get_backend
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
