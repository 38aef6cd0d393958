"""From Dask collections to training material on the workers: encode each
partition as the one-machine estimator encodes X, learn the bins once for the
whole collection, bin each partition where it lives.

The bins are those the one-machine :class:`gputree.data.binning.BinMapper`
learns on the concatenated data: the rows that shape them (positive weight)
and the subsample among them are chosen by global row index with the same
seeded draw (:meth:`BinMapper.sample_rows`, on the driver: an O(n) index
vector), each worker returns the values of its sampled rows and the
distinct category codes of its categorical columns, and the driver computes
the edges with the one-machine functions: the "bins from row chunks" code of
:mod:`gputree.data.chunks`, which a chunked :class:`gputree.Dataset` uses too. At most ``BinMapper.subsample``
(200,000) rows of X come to the driver, never the whole of it.
"""
import numpy as np

from .._dtypes import MAX_NON_MISSING_BINS, X_DTYPE, bin_dtype
from ..data.binned import BinnedData
from ..data.binning import BinMapper, used_rows
from ..data.chunks import chunk_summary, edges_from
from ..data.encoder import FeatureEncoder
from ..data.training import TrainingInputs
from ..data.validation import check_int, check_sample_weight
from .backend import DistributedBackend, worker_backend
from .partitions import RemoteRows, RowPartitions


def is_dask_collection(X):
    """True for dask arrays, dataframes and series."""
    try:
        import dask
    except ImportError:
        return False
    return dask.is_dask_collection(X)


def is_dask_frame(X):
    return is_dask_collection(X) and hasattr(X, "columns") and hasattr(X, "dtypes")


def row_blocks(X, name="X"):
    """Delayed row blocks of a 2-D dask array or a dask DataFrame, in order
    (an array's columns are joined into one chunk)."""
    if is_dask_frame(X):
        unknown = [c for c in X.columns
                   if str(X[c].dtype) == "category" and not X[c].cat.known]
        if unknown:
            raise ValueError(f"{name} has category columns {unknown} whose categories are "
                             f"unknown to Dask; call {name} = {name}.categorize() first, so "
                             "that every partition codes categories alike.")
        return list(X.to_delayed())
    if not is_dask_collection(X) or getattr(X, "ndim", None) != 2:
        raise TypeError(f"{name} must be a 2-D dask.array or a dask.dataframe.DataFrame, got "
                        f"{type(X).__name__}; for data in memory use the gputree estimators.")
    if np.isnan(X.shape[1]):
        raise ValueError(f"{name} has an unknown number of columns; call "
                         f"{name}.compute_chunk_sizes() first.")
    return list(X.rechunk({1: -1}).to_delayed()[:, 0])


def fit_encoder(X, categorical_features):
    """FeatureEncoder fitted on the collection's layout (no data computed)."""
    encoder = FeatureEncoder(categorical_features)
    sample = X._meta_nonempty if is_dask_frame(X) else np.zeros((1, X.shape[1]))
    encoder.fit_transform(sample)
    return encoder


def encode_part(part, encoder, device):
    """One partition as the estimator encodes X: float array (n_p, F), on
    the worker's device for cupy partitions."""
    if part.shape[0] == 0:
        return np.empty((0, encoder.n_features_in_), dtype=X_DTYPE)
    return encoder.transform(part, device_xp=worker_backend(device).device_xp)


def gather_vector(partitions, v, name):
    """A dask (or host) vector of one entry per row on the driver, checked
    against the rows of X (numpy)."""
    if v is None:
        return None
    if is_dask_collection(v):
        v = partitions.client.compute(v).result()
    v = np.asarray(getattr(v, "to_numpy", lambda: v)())
    if v.shape[0] != partitions.n_rows:
        raise ValueError(f"{name} has {v.shape[0]} rows but X has {partitions.n_rows}; pass "
                         f"{name} with one entry per row of X, in the same order.")
    return v


def bin_partitions(partitions, encoder, max_bins, device, seed, sample_weight):
    """TrainingInputs whose binned X stays on the workers (RemoteRows);
    ``partitions`` hold the encoded float partitions, dropped here."""
    max_bins = check_int(max_bins, "max_bins", 2, MAX_NON_MISSING_BINS)
    weight = check_sample_weight(sample_weight, partitions.n_rows)
    mapper = BinMapper(max_bins, encoder.is_categorical_, random_state=seed)
    used = used_rows(partitions.n_rows, sample_weight)
    summaries = partitions.gather(partitions.map(
        chunk_summary, partitions.parts, partitions.local_rows(mapper.sample_rows(used)),
        partitions.local_rows(used), is_categorical=encoder.is_categorical_))
    mapper.fit_edges(encoder.n_features_in_, edges_from(summaries, max_bins))
    binned = partitions.map(_bin_part, partitions.parts, thresholds=mapper.bin_thresholds_,
                            is_categorical=mapper.is_categorical_.astype(np.uint8),
                            missing_bin=mapper.missing_bin_, device=device)
    backend = DistributedBackend(partitions, device)
    X_binned = RemoteRows(partitions, binned, (partitions.n_rows, encoder.n_features_in_),
                          bin_dtype(mapper.n_bins_))
    partitions.wait(binned)
    partitions.replace_parts(binned)   # the float partitions are no longer needed
    data = BinnedData(X_binned, mapper.n_bins_, mapper.n_bins_non_missing_,
                      mapper.is_categorical_.astype(np.uint8), mapper.bin_thresholds_)
    return TrainingInputs(backend, encoder, mapper, data, weight)


def _bin_part(X_float, thresholds, is_categorical, missing_bin, device):
    backend = worker_backend(device)
    return backend.map_to_bins(backend.asarray(X_float), backend.asarray(thresholds),
                               backend.asarray(is_categorical), missing_bin)


def encoded_partitions(client, X, encoder, device):
    """RowPartitions of X's encoded float partitions (sizes computed, so
    unknown chunk sizes are fine)."""
    return RowPartitions.compute(client, row_blocks(X), encode_part, encoder, device)
