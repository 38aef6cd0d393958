"""From Dask collections to training material on the workers: encode each
partition as the one-machine estimator encodes X, learn the bins once for the
whole collection, bin each partition where it lives.

The bins are those the one-machine :class:`gputree.data.binning.BinMapper`
learns on the concatenated data: the rows that shape them (positive weight)
and the subsample among them are chosen by global row index with the same
seeded draw (:meth:`BinMapper.sample_rows`, made on one worker: it permutes
the ranks of the used rows, an O(n) temporary the driver never holds), each worker returns the values of its sampled rows and the
distinct category codes of its categorical columns, and the driver computes
the edges with the one-machine functions: the "bins from row chunks" code of
:mod:`gputree.data.chunks`, which a chunked :class:`gputree.Dataset` uses too. At most ``BinMapper.subsample``
(200,000) rows of X come to the driver, never the whole of it.
"""
import numpy as np

from .._dtypes import MAX_NON_MISSING_BINS, X_DTYPE, bin_dtype
from ..data.binned import BinnedData
from ..data.binning import BinMapper
from ..data.chunks import chunk_summary, edges_from, local_rows
from ..data.encoder import FeatureEncoder
from ..data.training import TrainingInputs
from ..data.validation import check_int
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


def bin_partitions(partitions, encoder, max_bins, device, seed, targets, mapper=None):
    """TrainingInputs whose binned X stays on the workers (RemoteRows);
    ``partitions`` hold the encoded float partitions, dropped here.
    ``targets``: the fit's checked :class:`gputree.dask.targets.WorkerTargets`
    (the rows of positive weight shape the bins; the weights stay on the
    workers). ``mapper``: the fit's bins where already learned (a fit
    continued after a lost worker), else learned here."""
    max_bins = check_int(max_bins, "max_bins", 2, MAX_NON_MISSING_BINS)
    parts = targets.weights.parts if targets.weights else None
    if mapper is None:
        mapper = _learned_bins(partitions, encoder, max_bins, seed, parts, targets.positive)
    backend, data = binned_with(partitions, mapper, device)
    return TrainingInputs(backend, encoder, mapper, data)


def _learned_bins(partitions, encoder, max_bins, seed, weight_parts, n_used):
    """The fitted BinMapper of the partitions (see the module docstring);
    ``weight_parts``: per-partition weights or None, ``n_used``: int (p,)
    each partition's rows of positive weight."""
    mapper = BinMapper(max_bins, encoder.is_categorical_, random_state=seed)
    ranks = sampled_ranks(partitions, mapper, n_used)
    sizes = [used if part is None else part.size for part, used in zip(ranks, n_used)]
    summaries = _gathered_summaries(partitions, partitions.map(
        _part_summary, partitions.parts, weight_parts or [None] * len(partitions.parts), ranks,
        is_categorical=encoder.is_categorical_), sizes)
    mapper.fit_edges(encoder.n_features_in_, edges_from(summaries, max_bins))
    return mapper


def binned_with(partitions, mapper, device):
    """(DistributedBackend, BinnedData whose X stays on the workers): the
    encoded float partitions binned with the fitted ``mapper`` where they
    live (a fresh fit's bins, or a warm-started fit's first ones)."""
    bin_new_partitions(partitions, mapper, device)
    backend = DistributedBackend(partitions, device)
    X_binned = RemoteRows(partitions, partitions.parts,
                          (partitions.n_rows, mapper.bin_thresholds_.shape[0]),
                          bin_dtype(mapper.n_bins_))
    data = BinnedData(X_binned, mapper.n_bins_, mapper.n_bins_non_missing_,
                      mapper.is_categorical_.astype(np.uint8), mapper.bin_thresholds_)
    return backend, data


def sampled_ranks(partitions, mapper, n_used):
    """Per partition, the local ranks (int64, sorted) among its rows of
    positive weight (``n_used``: int (p,) their counts) of the rows that
    shape the bins, or None each for all: the one-machine draw
    (:meth:`BinMapper.sample_ranks` over the concatenated used rows), made on
    the worker of the first partition, whose permutation of every rank (8
    bytes a row) stays there; only the sampled ranks reach the driver."""
    offsets = np.concatenate([[0], np.cumsum(n_used)]).astype(np.int64)
    worker = partitions.workers[0]
    future = partitions.client.submit(_sampled_ranks, mapper, offsets, pure=False,
                                      workers=[worker] if worker else None,
                                      allow_other_workers=True)
    ranks = partitions.gather([future])[0]
    return [None] * len(partitions.parts) if ranks is None else ranks


def _sampled_ranks(mapper, offsets):
    ranks = mapper.sample_ranks(int(offsets[-1]))
    return None if ranks is None else local_rows(ranks, offsets)


def _gathered_summaries(partitions, futures, sizes):
    """The partitions' chunk summaries as one summary (the sampled values
    joined in row order, each categorical feature's code lists): gathered
    one at a time into one array, so the sample is held once. ``sizes``:
    int (p,) the sampled rows of each."""
    sample, codes, row = None, {}, 0
    for future, size in zip(futures, sizes):
        values, part_codes = partitions.gather([future])[0]
        future.release()
        if sample is None:
            sample = np.empty((int(np.sum(sizes)), values.shape[1]), dtype=values.dtype)
        sample[row:row + size] = values
        row += size
        for f, pair in part_codes.items():
            codes.setdefault(f, ([], []))
            codes[f][0].append(pair[0])
            codes[f][1].append(pair[1])
    return [(sample, {f: (np.concatenate(a), np.concatenate(b))
                      for f, (a, b) in codes.items()})]


def bin_new_partitions(partitions, mapper, device):
    """Bin the encoded float partitions with the fitted ``mapper`` where
    they live; ``partitions`` then hold the binned ones."""
    binned = partitions.map(_bin_part, partitions.parts, thresholds=mapper.bin_thresholds_,
                            is_categorical=mapper.is_categorical_.astype(np.uint8),
                            missing_bin=mapper.missing_bin_, device=device)
    partitions.wait(binned)
    partitions.replace_parts(binned)   # the float partitions are no longer needed


def _part_summary(X_float, weight, ranks, is_categorical):
    """chunk_summary of one partition: the rows of positive ``weight`` (all
    rows for None) shape the bins, of which ``ranks`` (local int64, None:
    all) are sampled."""
    used = (np.arange(X_float.shape[0]) if weight is None
            else np.flatnonzero(np.asarray(weight) > 0))
    return chunk_summary(X_float, used if ranks is None else used[ranks], used,
                         is_categorical=is_categorical)


def _bin_part(X_float, thresholds, is_categorical, missing_bin, device):
    backend = worker_backend(device)
    return backend.map_to_bins(backend.asarray(X_float), backend.asarray(thresholds),
                               backend.asarray(is_categorical), missing_bin)


def encoded_partitions(client, X, encoder, device):
    """RowPartitions of X's encoded float partitions (sizes computed, so
    unknown chunk sizes are fine)."""
    return RowPartitions.compute(client, row_blocks(X), encode_part, encoder, device)
