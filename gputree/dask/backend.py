"""The distributed backend: the backend seam (:mod:`gputree.backends.base`)
over row partitions held by Dask workers, so that the one-machine grower
and forests run unchanged on the driver: the driver path of the
fits that the workers do not grow among themselves (trees and forests
with ``criterion="absolute_error"``). The other fits keep their rows on the
workers (:mod:`gputree.dask.worker_boosting`,
:mod:`gputree.dask.worker_forest`), whose peer growth reuses this class's
node-level methods (:class:`gputree.dask.peer_growth.PeerBackend`).

Row-sized arrays that the grower passes around are :class:`RemoteRows`:
binned X (n, n_features) and the positions (n,) stay on the workers. The
row-level primitives fan out, one task per partition on the worker that
holds it: ``build_histograms`` (each worker histograms its rows; the driver
adds the int64 histograms, exact in any order, so the sum is the
one-machine histogram), ``update_positions`` (the level's split decisions go
to every worker) and ``take_columns``. Node-sized work (split scan, node
summaries, histogram subtraction) runs on the driver with the CPU backend,
which gives the same bits as every other backend.

On this path per-row statistics are built on the driver, from targets and
weights that the driver holds (O(n) floats,
not X): each tree's
statistics go to the workers once, as per-partition slices, and each tree's
positions come back once. Each worker runs its tasks on its own backend
(``device``: "cpu", or "cuda"/"auto" on GPU workers).
"""
import numba
import numpy as np

from .._arrays import to_host
from .._threads import resolve_n_jobs
from ..backends import get_backend
from ..backends.base import Backend
from ..tree import LeftSets
from .partitions import RemoteRows


class DistributedBackend(Backend):
    """Backend whose row arrays live on the workers of ``partitions``
    (:class:`gputree.dask.partitions.RowPartitions`); ``device`` is the
    backend each worker uses."""

    name = "dask"
    xp = np
    #: _stats_parts sends a statistics array to the workers once, by identity
    statistics_refillable = False

    def __init__(self, partitions, device):
        self.partitions, self.device = partitions, device
        self.local = get_backend("cpu")
        self._stats = (None, None)     # (driver statistics, their per-partition futures)

    # ------------------------------------------------------ driver arrays
    def asarray(self, array, dtype=None, order="C"):
        if isinstance(array, RemoteRows):
            return array
        return np.asarray(array, dtype=dtype, order=order)

    def to_host(self, array):
        return array.gather() if isinstance(array, RemoteRows) else np.asarray(array)

    def zeros(self, shape, dtype):
        return np.zeros(shape, dtype=dtype)

    def row_zeros(self, n_rows, dtype, reuse=None):
        parts = self.partitions
        futures = parts.map(_worker_zeros, parts.sizes, dtype=np.dtype(dtype), device=self.device)
        return RemoteRows(parts, futures, (n_rows,), dtype)

    # ------------------------------------------------ node-level: the driver
    def subtract_histograms(self, *args):
        self.local.subtract_histograms(*args)

    def find_best_splits(self, *args, **kwargs):
        return self.local.find_best_splits(*args, **kwargs)

    def choose_node_features(self, *args):
        return self.local.choose_node_features(*args)

    def node_summaries(self, *args):
        return self.local.node_summaries(*args)

    def zero_rows(self, array, rows):
        self.local.zero_rows(array, rows)

    def scan_splits(self, *args, **kwargs):
        return self.local.scan_splits(*args, **kwargs)

    def map_to_bins(self, X, thresholds, is_categorical, missing_bin):
        """Host X binned on the driver (the workers bin their partitions
        themselves, :mod:`gputree.dask.inputs`)."""
        return self.local.map_to_bins(X, thresholds, is_categorical, missing_bin)

    def predict_leaves(self, X_binned, node_feature, node_sets, node_left, tree_roots):
        """int32 (n, n_trees) leaves of every row: host rows on the driver;
        rows held by the workers (:class:`RemoteRows`) where they live,
        gathered (a fit that continues fitted trees: their out-of-bag
        values)."""
        if not isinstance(X_binned, RemoteRows):
            return self.local.predict_leaves(X_binned, node_feature, node_sets, node_left,
                                             tree_roots)
        parts = self.partitions
        leaves = parts.gather(parts.map(
            _worker_leaves, X_binned.futures, node_feature=np.asarray(node_feature),
            node_sets=[np.asarray(a) for a in node_sets], node_left=np.asarray(node_left),
            tree_roots=np.asarray(tree_roots), device=self.device))
        return np.concatenate([to_host(part) for part in leaves])

    def add_node_values(self, node_values, positions, out, first_column):
        self.local.add_node_values(node_values, self.to_host(positions), out, first_column)

    # ------------------------------------------------- row-level: workers
    def build_histograms(self, X_binned, stats, positions, level_start, node_to_build, n_build,
                         n_bins, out=None):
        """Every partition's histograms, summed (int64, exact in any order)
        on each worker, then on the driver."""
        parts = self.partitions
        futures = parts.map(_worker_histograms, X_binned.futures, self._stats_parts(stats),
                            positions.futures, level_start=level_start,
                            node_to_build=np.asarray(node_to_build), n_build=n_build,
                            n_bins=n_bins, device=self.device)
        hists = parts.gather(parts.sum_per_worker(futures))
        if out is None:
            out, hists = hists[0].copy(), hists[1:]
        for hist in hists:
            # rows of out that are not built here get zeros: in place, no copy
            out[:n_build] += hist
        return out

    def update_positions(self, X_binned, positions, level_start, split_feature, split_sets,
                         left_child):
        """Every partition's positions moved to the children (new futures,
        the same RemoteRows)."""
        old = positions.futures
        positions.futures = self.partitions.map(
            _worker_positions, X_binned.futures, old, level_start=level_start,
            split_feature=np.asarray(split_feature), split_sets=[np.asarray(a) for a in split_sets],
            left_child=np.asarray(left_child), device=self.device)
        for future in old:
            future.release()

    def take_columns(self, X_binned, columns):
        futures = self.partitions.map(_worker_columns, X_binned.futures,
                                      columns=np.asarray(columns), device=self.device)
        return RemoteRows(self.partitions, futures, (X_binned.shape[0], len(columns)),
                          X_binned.dtype)

    def _stats_parts(self, stats):
        """Per-partition futures of the driver's statistics (n, C), sent
        once per statistics array (once per tree)."""
        held, futures = self._stats
        if held is not stats:
            parts = self.partitions
            futures = [parts.client.scatter(part, workers=[w] if w else None, hash=False)
                       for part, w in zip(parts.slices(np.ascontiguousarray(stats)),
                                          parts.workers)]
            self._stats = (stats, futures)
        return futures

    def release(self):
        """Drop the statistics held on the workers."""
        self._stats = (None, None)


def worker_backend(device):
    """The backend of a task on a worker (:func:`use_worker_threads` first)."""
    use_worker_threads()
    return get_backend(device)


def use_worker_threads():
    """gputree's kernels in this task run in as many parts as the worker has
    threads (its ``nthreads``; numba's thread count, which gputree._threads
    reads), not one per core of the machine: worker processes that
    share a machine would otherwise oversubscribe it (measured: 3 to 5 times
    slower histogram tasks with 2 workers on 2 cores)."""
    try:
        from distributed import get_worker
        threads = get_worker().state.nthreads
    except (ImportError, ValueError, AttributeError):
        threads = None
    if threads:
        numba.set_num_threads(resolve_n_jobs(threads))


def _worker_zeros(n_rows, dtype, device):
    return worker_backend(device).zeros((int(n_rows),), dtype)


def _worker_histograms(X_binned, stats, positions, level_start, node_to_build, n_build, n_bins,
                       device):
    """int64 (n_build, n_features, n_bins, n_channels) host histograms of one
    partition's rows."""
    backend = worker_backend(device)
    hist = backend.build_histograms(X_binned, backend.asarray(stats), positions, level_start,
                                    backend.asarray(node_to_build), n_build, n_bins)
    return backend.to_host(hist)


def _worker_positions(X_binned, positions, level_start, split_feature, split_sets, left_child,
                      device):
    backend = worker_backend(device)
    moved = positions.copy()
    backend.update_positions(X_binned, moved, level_start, backend.asarray(split_feature),
                             LeftSets(*split_sets).map(backend.asarray),
                             backend.asarray(left_child))
    return moved


def _worker_leaves(X_binned, node_feature, node_sets, node_left, tree_roots, device):
    """int32 (n_p, n_trees) leaves of one partition's rows (see
    :meth:`DistributedBackend.predict_leaves`)."""
    backend = worker_backend(device)
    return backend.predict_leaves(X_binned, backend.asarray(node_feature),
                                  LeftSets(*node_sets).map(backend.asarray),
                                  backend.asarray(node_left), backend.asarray(tree_roots))


def _worker_columns(X_binned, columns, device):
    return worker_backend(device).take_columns(X_binned, columns)
