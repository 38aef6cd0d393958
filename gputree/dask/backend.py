"""The distributed backend: the backend seam (:mod:`gputree.backends.base`)
of a Dask fit, whose rows stay on the workers. On the driver it holds the
fit's row partitions (:class:`gputree.dask.partitions.RowPartitions`: binned
X as :class:`gputree.dask.partitions.RemoteRows`, binned where it lives by
:mod:`gputree.dask.inputs`) until the workers' actors take them
(:class:`gputree.dask.worker_boosting.WorkerRowsBackend`, a subclass); on
each worker the grower runs over :class:`gputree.dask.peer_growth.PeerBackend`,
a subclass that reuses this class's node-level methods.

Node-sized work (split scan, node summaries, histogram subtraction) runs
with the CPU backend, which gives the same bits as every other backend.
Row-level primitives never run here: the driver holds nothing row-sized
(``build_histograms`` and ``update_positions`` raise; PeerBackend does them
on a worker's own rows). Each worker runs its tasks on its own backend
(``device``: "cpu", or "cuda"/"auto" on GPU workers, :func:`worker_backend`).
"""
import numba
import numpy as np

from .._threads import resolve_n_jobs
from ..backends import get_backend
from ..backends.base import Backend


class DistributedBackend(Backend):
    """Backend whose row arrays live on the workers of ``partitions``
    (:class:`gputree.dask.partitions.RowPartitions`); ``device`` is the
    backend each worker uses."""

    name = "dask"
    xp = np

    def __init__(self, partitions, device):
        self.partitions, self.device = partitions, device
        self.local = get_backend("cpu")

    # ------------------------------------------------------- node-level
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
        """Host X binned here (the workers bin their partitions themselves,
        :mod:`gputree.dask.inputs`)."""
        return self.local.map_to_bins(X, thresholds, is_categorical, missing_bin)

    def predict_leaves(self, X_binned, node_feature, node_sets, node_left, tree_roots):
        """int32 (n, n_trees) leaves of host rows (the workers predict
        their own rows, :mod:`gputree.dask.estimators`)."""
        return self.local.predict_leaves(X_binned, node_feature, node_sets, node_left,
                                         tree_roots)

    # -------------------------------------------------------- row-level
    def build_histograms(self, X_binned, stats, positions, level_start, node_to_build, n_build,
                         n_bins, out=None):
        raise _refused_here("build_histograms")

    def update_positions(self, X_binned, positions, level_start, split_feature, split_sets,
                         left_child):
        raise _refused_here("update_positions")


def _refused_here(primitive):
    """The error of a row-level primitive asked of the driver."""
    return TypeError(f"{primitive} runs on the rows of each worker "
                     "(gputree.dask.peer_growth.PeerBackend), never on the driver, which holds "
                     "nothing row-sized.")


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
