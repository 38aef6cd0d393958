"""A tree (a boosting round's, a forest's or a single one) grown by every
worker at once, the workers talking only to each other: the one-machine
grower runs on each worker's :class:`gputree.dask.worker_rows.WorkerRows`
over a :class:`PeerBackend`.

Per level, a worker builds the histograms of its rows, reduce-scatters them
by feature among the workers and scans its features
(:mod:`gputree.dask.sliced_histograms`); the workers then exchange their
slices' best splits (each sends its own to every peer) and each merges them
into the same one-machine choice (:func:`merge_splits`); a forest's
``max_features`` soft limit is decided from their exchanged constant-feature
flags first (:mod:`gputree.dask.sliced_features`), and random thresholds
(extremely randomized trees) by each worker for its features, from their
histograms alone. Every worker thus
makes the same decisions from the same node-sized data, with the same random
generator (sent with the tree), and grows the same tree, which it applies to
its own rows: the driver makes one call per tree and no level waits for it.

A multiway tree (:mod:`gputree.growth.multiway`) asks for a level's whole
histograms (``build_histograms`` without a pool): every worker builds those
of its rows and they are summed among the workers, each sending its own to
every peer (:meth:`gputree.dask.sliced_histograms.SlicedHistograms.all_reduce`),
so that each holds the one-machine histograms, scans them and reads the
chosen features' on the host; the level's rows then move on each worker
(``move_by_child_table``).

The grower's row-level primitives on a worker refer to its rows by name
(:class:`WorkerArray`) and to the workers' sliced histogram pool
(:class:`WorkerHistograms`); the histograms a level builds, the siblings it
derives and the scan are recorded and done together at
:meth:`PeerBackend.find_best_splits`. Node-level work runs on the CPU
backend, as on one machine.
"""
import numpy as np

from .backend import DistributedBackend
from .sliced_histograms import merge_splits


class WorkerArray:
    """A row-sized array held by every worker's actor under ``name`` ("X",
    "columns", "stats", "positions"): only its shape (global rows) and
    dtype here."""

    def __init__(self, name, shape, dtype):
        self.name, self.shape, self.dtype = name, tuple(shape), np.dtype(dtype)

    @property
    def ndim(self):
        return len(self.shape)


class WorkerHistograms:
    """The grower's histogram pool (n_rows, F, n_bins, C) int64, held by the
    workers, each the rows of its slice of the features
    (:mod:`gputree.dask.sliced_histograms`): only its shape here. Its views
    are the pool itself, and copying into it is the workers' (their pools
    keep their rows when they grow)."""

    def __init__(self, shape):
        self.shape, self.dtype = tuple(shape), np.dtype(np.int64)

    def __getitem__(self, key):
        return self

    def __setitem__(self, key, value):
        pass


class PeerBackend(DistributedBackend):
    """The backend of the grower on a worker (see the module docstring):
    ``rows`` is the worker's :class:`WorkerRows`, ``device`` its backend."""

    #: the workers overwrite the pool rows they build
    overwrites_built_rows = True

    def __init__(self, rows, device):
        super().__init__(None, device)
        self.rows = rows
        self._zero = False
        self._pending, self._derive, self._tag = None, None, 0
        self._choice = None

    def row_zeros(self, n_rows, dtype, reuse=None):
        self._zero = True      # zeroed by the tree's first level (or :meth:`finish`)
        return WorkerArray("positions", (n_rows,), dtype)

    def zeros(self, shape, dtype):
        """The histogram pool (the fit's only 4-d buffer) on the workers."""
        if len(shape) == 4:
            return WorkerHistograms(shape)
        return super().zeros(shape, dtype)

    def build_histograms(self, X_binned, stats, positions, level_start, node_to_build, n_build,
                         n_bins, out=None):
        if out is None:     # a whole level's histograms (multiway growth)
            return self._summed_histograms(X_binned, level_start, node_to_build, n_build,
                                           n_bins)
        return self._record(X_binned, None, level_start, node_to_build, n_bins, out)

    def move_and_build_histograms(self, X_binned, positions, moves, stats, level_start,
                                  node_to_build, n_build, n_bins, out):
        return self._record(X_binned, _host_moves(moves), level_start, node_to_build, n_bins,
                            out)

    def _record(self, X_binned, moves, level_start, node_to_build, n_bins, out):
        """The level's build into the workers' pool ``out``, kept for
        :meth:`find_best_splits`."""
        if not isinstance(out, WorkerHistograms):
            raise TypeError("the workers build histograms into their pool only")
        self._pending = (X_binned.name, moves, int(level_start),
                         np.asarray(node_to_build), int(n_bins))
        return out

    def subtract_histograms(self, parent_hist, parent_rows, hist, built_rows, derived_rows):
        if not isinstance(hist, WorkerHistograms):
            return super().subtract_histograms(parent_hist, parent_rows, hist, built_rows,
                                               derived_rows)
        # the grower derives in place: the parent's row becomes the sibling's
        self._derive = (np.asarray(parent_rows), np.asarray(built_rows))

    def choose_node_features(self, hist, feature_allowed, order, max_features, draws,
                             n_bins_non_missing, is_categorical, missing_bin, layout):
        """The soft limit of ``max_features`` (``order``) and the random
        thresholds (``draws``), decided by the workers at
        :meth:`find_best_splits` (:meth:`SlicedHistograms.limit`,
        :meth:`SlicedHistograms.draw`); None here."""
        if not isinstance(hist, WorkerHistograms):
            return super().choose_node_features(hist, feature_allowed, order, max_features,
                                                draws, n_bins_non_missing, is_categorical,
                                                missing_bin, layout)
        self._choice = (None if order is None else np.asarray(order), int(max_features),
                        None if draws is None else np.asarray(draws))
        return None

    def find_best_splits(self, hist, n_bins_non_missing, is_categorical, feature_allowed,
                         missing_bin, layout, inv, params, split_bin=None):
        """The level's recorded work and the split scan of this worker's
        features; the best of every worker's splits, exchanged among them
        (see the module docstring)."""
        if not isinstance(hist, WorkerHistograms):
            return super().find_best_splits(hist, n_bins_non_missing, is_categorical,
                                            feature_allowed, missing_bin, layout, inv, params,
                                            split_bin=split_bin)
        x_name, moves, level_start, node_to_build, n_bins = self._pending
        none = np.empty(0, dtype=node_to_build.dtype)
        derive = self._derive or (none, none)
        self._pending, self._derive = None, None
        choice, self._choice = self._choice, None
        zero, self._zero = self._zero, False
        self._tag += 1
        scan = (int(feature_allowed.shape[0]), np.asarray(n_bins_non_missing),
                np.asarray(is_categorical), np.asarray(feature_allowed), missing_bin,
                np.asarray(layout), np.asarray(inv), np.asarray(params))
        own = self.rows.level_splits(self._tag, x_name, zero, moves, level_start,
                                     node_to_build, n_bins, derive, scan, choice)
        sliced = self.rows.sliced
        return merge_splits([own] if sliced.whole else
                            sliced.exchange(("splits", self._tag), own))

    def update_positions(self, X_binned, positions, level_start, split_feature, split_sets,
                         left_child):
        """The tree's last splits, applied to the worker's positions."""
        zero, self._zero = self._zero, False
        self.rows.move(X_binned.name, zero, _host_moves((level_start, split_feature,
                                                         split_sets, left_child)))

    def _summed_histograms(self, X_binned, level_start, node_to_build, n_build, n_bins):
        """Host int64 (n_build, F, n_bins, C): the one-machine histograms of
        the level, every worker's summed on every worker (an all-reduce:
        :meth:`WorkerRows.summed_histograms`)."""
        zero, self._zero = self._zero, False
        self._tag += 1
        return self.rows.summed_histograms(("summed", self._tag), X_binned.name, zero,
                                           int(level_start), np.asarray(node_to_build),
                                           int(n_build), int(n_bins))

    def move_by_child_table(self, X_binned, positions, level_start, split_feature, child_of):
        """A multiway level's moves, applied to the worker's positions."""
        zero, self._zero = self._zero, False
        self.rows.move_by_child_table(X_binned.name, zero, int(level_start),
                                      np.asarray(split_feature), np.asarray(child_of))
        return positions

    def finish(self, x_name):
        """After a tree: its positions zeroed where no level did it (a
        tree of one leaf)."""
        if self._zero:
            self._zero = False
            self.rows.move(x_name, True, None)

    def take_columns(self, X_binned, columns):
        self.rows.take_columns(np.asarray(columns))
        return WorkerArray("columns", (X_binned.shape[0], len(columns)), X_binned.dtype)


def _host_moves(moves):
    start, feature, sets, left = moves
    return (int(start), np.asarray(feature), sets.map(np.asarray), np.asarray(left))
