"""Input adapters: every kind of ``X`` a user passes (numpy arrays and lists,
pandas columns through :mod:`gputree.data.encoder`, scipy.sparse matrices,
cupy arrays) checked and turned into the float arrays the binner reads, and
one column reader over all of them.

Sparse input: scipy.sparse CSR / CSC matrices (and arrays) are kept sparse
(CSC float64) and binned column by column without a dense float copy. An
implicit (unstored) entry is the value 0, not missing, as in scikit-learn; a
stored NaN is missing. Every stored value is binned by the same backend
kernel as dense input, and the implicit zeros of a column get the bin that
kernel gives 0.0, so the bins (and hence trees and predictions) are
identical to those of the dense matrix of the same values (see
:func:`gputree.data.binned.map_sparse_to_bins`). Memory: the matrix in CSC
form plus, while learning bins, one dense column (and the sampled rows of
one column) at a time.
"""
import sys

import numpy as np

from .._arrays import to_host
from .._dtypes import X_DTYPE


def is_dataframe(X):
    """True for pandas (and pandas-like) DataFrames."""
    return hasattr(X, "columns") and hasattr(X, "dtypes") and hasattr(X, "iloc")


def as_float_2d(X, name="X"):
    """Checked 2-D float array (float32 kept, anything else -> float64); a
    scipy.sparse X becomes a checked CSC float64 matrix (:func:`check_sparse`)."""
    if is_sparse(X):
        return check_sparse(X, name)
    if hasattr(X, "__cuda_array_interface__") and not isinstance(X, np.ndarray):
        X = to_host(X)
    try:
        array = np.asarray(X)
    except Exception as exc:  # ragged lists and similar
        raise ValueError(f"{name} could not be converted to an array: {exc}") from exc
    if np.iscomplexobj(array):
        raise ValueError(f"Complex data not supported in {name}; pass real numbers.")
    if array.ndim != 2:
        raise ValueError(
            f"Expected 2D array for {name}, got {array.ndim}D array instead "
            f"(shape {array.shape}). Reshape your data either using "
            f"{name}.reshape(-1, 1) if it has a single feature or "
            f"{name}.reshape(1, -1) if it contains a single sample.")
    if array.dtype.kind not in "fiub":
        try:
            array = array.astype(np.float64)
        except (TypeError, ValueError) as exc:
            # keep numpy's exception type: TypeError for objects such as dicts
            raise type(exc)(
                f"{name} has non-numeric values ({exc}). Encode text columns as "
                "numbers, or pass a pandas DataFrame with 'category' columns.") from exc
    if array.dtype not in (np.float32, np.float64):
        array = array.astype(np.float64)
    if array.shape[1] == 0:
        raise ValueError(f"Found array with 0 feature(s) (shape={array.shape}) "
                         "while a minimum of 1 is required.")
    if array.shape[0] == 0:
        raise ValueError(f"Found array with 0 sample(s) (shape={array.shape}) "
                         "while a minimum of 1 is required.")
    return array


def device_matrix(X, xp, name="X"):
    """A device array as a checked 2-D float array of ``xp`` (cupy), used in
    place: no host copy."""
    array = xp.asarray(X)
    if array.ndim != 2:
        raise ValueError(f"Expected 2D array for {name}, got {array.ndim}D array instead "
                         f"(shape {array.shape}).")
    if 0 in array.shape:
        raise ValueError(f"Found array with shape {array.shape}; {name} needs at least "
                         "1 sample and 1 feature.")
    if array.dtype.kind not in "fiub":
        raise TypeError(f"{name} has dtype {array.dtype}; pass real numbers.")
    if array.dtype not in (np.float32, np.float64):
        array = array.astype(np.float64)
    return array


def is_sparse(X):
    """True for scipy.sparse matrices and arrays. Without scipy.sparse
    loaded no object is one, so it is not imported to say so (its import
    was half of a fresh Dask worker's first task)."""
    sparse = sys.modules.get("scipy.sparse")
    return sparse is not None and sparse.issparse(X)


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
        if rows is None:
            return lambda f: to_host(X[:, f]).astype(X_DTYPE)
        sample = to_host(X[rows])      # in X's dtype: columns convert as they are read
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


