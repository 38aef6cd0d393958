"""The backend seam: what every device provides to the grower, forests and
boosting, and the parts shared by all devices.

A backend exposes an array module ``xp`` and these primitives (arrays in
``xp``; shapes and dtypes as in the CPU backend's kernels):

* ``map_to_bins(X, thresholds, is_categorical, missing_bin)`` -> X_binned
* ``build_histograms(X_binned, stats, positions, level_start, node_to_build,
  n_build, n_bins, out=None)`` -> hist int64 (n_build, n_features, n_bins,
  n_channels); with ``out`` (>= n_build rows, the built ones zeroed) the
  histograms are added into ``out``'s rows ``node_to_build`` and ``out`` is
  returned (a backend whose ``overwrites_built_rows`` is true writes those
  rows whatever they held); a backend whose ``uses_bin_counts`` is true also
  takes ``bin_counts=`` at the root when stats' last channel is 1 in every row
* ``subtract_histograms(parent_hist, parent_rows, hist, built_rows,
  derived_rows)``: ``hist[derived] = parent_hist[parent_rows] - hist[built]``;
  also in place (``parent_hist is hist`` and ``derived_rows`` equal to
  ``parent_rows``)
* ``find_best_splits(hist, ...)`` -> :class:`gputree.backends.scan.SplitInfo`
* ``scan_splits(hist, ...)``: the same scan, unreduced: every (node,
  feature)'s best split (``scan.empty_scan_outputs``' arrays)
* ``update_positions(X_binned, positions, level_start, split_feature,
  split_bitset, left_child)`` (in place)
* ``move_and_build_histograms(X_binned, positions, moves, stats,
  level_start, node_to_build, n_build, n_bins, out)``: ``update_positions``
  with ``moves`` (its last four arguments), then ``build_histograms`` (the
  base class calls the two; a backend may do both in one pass over the rows)
* ``predict_leaves(X_binned, node_feature, node_bitset, node_left,
  tree_roots)`` -> int32 (n_samples, n_trees)
* ``add_node_values(node_values, positions, out, first_column)``: out float64
  (n, W) INOUT, ``out[:, first_column:+V] += node_values[positions]`` (the
  training rows' update from their leaves)
* ``add_leaf_values(X_binned, node_feature, node_bitset, node_left,
  tree_roots, node_values, tree_columns, out)``: out float64 (n, W) INOUT,
  ``out[:, tree_columns[t] + v] += node_values[leaf of tree t, v]``, trees in
  order (the base class does it through ``predict_leaves``)
* ``node_summaries(totals, layout, inv, params, n_outputs, n_classes)`` ->
  (values float64 (n_nodes, n_outputs, n_classes), impurity float64 (n_nodes,))

Every copy between host and device goes through ``upload`` / ``download``
(one array) or ``upload_many`` / ``download_many`` (a dict of small arrays in
one copy); the CPU backend's are no-ops, the CUDA backend counts them.
"""
import numpy as np

from .._dtypes import FLOAT_DTYPE
from .._validation import to_numpy
from .formulas import make_criterion_functions, specialised


#: trees whose leaf ids are held at once by the default add_leaf_values
_TREES_PER_LAUNCH = 64


class Backend:
    """Shared host<->device helpers; subclasses set ``name``, ``xp``."""

    name = "base"
    xp = np
    #: array module whose device arrays are used in place (None: copy to host)
    device_xp = None
    #: memory order of binned X (n_samples, n_features) on this backend: "F"
    #: (a feature's bins contiguous, coalesced on a GPU) unless it says "C"
    binned_order = "F"
    #: whether build_histograms takes ``bin_counts`` (the rows in each bin
    #: of each feature, BinnedData.bin_counts) to save work at the root
    uses_bin_counts = False
    #: whether build_histograms overwrites the rows it builds in ``out``
    #: (the caller need not zero them first)
    overwrites_built_rows = False
    #: whether a fit may refill host arrays it gave the backend before (the
    #: statistics, the gradients they came from) with the next tree's (a
    #: backend that keeps what it was given, by identity, says no)
    statistics_refillable = True

    def asarray(self, array, dtype=None, order="C"):
        """Move a host (or device) array to this backend."""
        return self.xp.asarray(array, dtype=dtype, order=order)

    def to_host(self, array):
        """numpy copy (or the array itself) of a backend array."""
        return to_numpy(array)

    def upload(self, array, dtype=None, order="C"):
        """A host array on this backend (here: the array itself when it has
        the dtype and order already)."""
        return self.asarray(array, dtype=dtype, order=order)

    def download(self, array):
        """A backend array on the host (here: the array itself)."""
        return self.to_host(array)

    def upload_many(self, arrays):
        """dict name -> host array, all on this backend (one copy on a
        device; here the arrays themselves)."""
        return dict(arrays)

    def download_many(self, arrays):
        """dict name -> backend array, all on the host (one copy on a
        device; here the arrays themselves)."""
        return dict(arrays)

    def empty(self, shape, dtype, order="C"):
        """An uninitialised array for a buffer of a fit."""
        return self.xp.empty(shape, dtype=dtype, order=order)

    def check_fit_memory(self, n_samples, n_features, n_channels, n_bins, max_level_nodes,
                         held_row_bytes=0):
        """Raise MemoryError when a fit cannot fit on the device (host: no
        check); ``held_row_bytes``: bytes per row the caller keeps on the
        device beside the tree's own buffers."""

    def free_memory_bytes(self):
        """Memory (bytes) new buffers of a fit can take, or None when unknown
        (here: the host's available memory on Linux)."""
        try:
            with open("/proc/meminfo", encoding="ascii") as stream:
                fields = dict(line.split(":", 1) for line in stream)
            return int(fields["MemAvailable"].split()[0]) * 1024
        except (OSError, KeyError, ValueError):
            return None

    def move_and_build_histograms(self, X_binned, positions, moves, stats, level_start,
                                  node_to_build, n_build, n_bins, out):
        """update_positions(X_binned, positions, *moves), then
        build_histograms(X_binned, stats, positions, level_start, ...)."""
        self.update_positions(X_binned, positions, *moves)
        return self.build_histograms(X_binned, stats, positions, level_start, node_to_build,
                                     n_build, n_bins, out=out)

    def zero_rows(self, array, rows):
        """array[rows] = 0 (rows: int backend array of first-axis indices)."""
        array[rows] = 0

    def add_node_values(self, node_values, positions, out, first_column):
        """out[:, first_column:first_column + V] += node_values[positions];
        node_values float64 (n_nodes, V), positions int32 (n,) (backend)."""
        out[:, first_column:first_column + node_values.shape[1]] += node_values[positions]

    def add_leaf_values(self, X_binned, node_feature, node_bitset, node_left, tree_roots,
                        node_values, tree_columns, out):
        """Default: leaf ids of a block of trees at a time, then one gather
        per tree (node_values on the backend, tree_columns a host array)."""
        width = node_values.shape[1]
        for first in range(0, tree_roots.shape[0], _TREES_PER_LAUNCH):
            roots = tree_roots[first:first + _TREES_PER_LAUNCH]
            leaves = self.predict_leaves(X_binned, node_feature, node_bitset, node_left, roots)
            for t in range(roots.shape[0]):
                column = int(tree_columns[first + t])
                out[:, column:column + width] += node_values[leaves[:, t]]

    def zeros(self, shape, dtype):
        """A zeroed array for a large buffer kept over a fit (the histogram
        pool)."""
        return self.xp.zeros(shape, dtype=dtype)

    def row_zeros(self, n_rows, dtype, reuse=None):
        """A zeroed (n_rows,) array with one entry per training row (the
        grower's positions; a distributed backend keeps it on its workers).
        ``reuse``: an earlier result its holder no longer needs, zeroed in
        place when it has the shape and dtype (a fresh array's pages are
        faulted in on first touch: 730 faults per 750k int32 rows)."""
        if (reuse is not None and reuse.shape == (n_rows,)
                and reuse.dtype == np.dtype(dtype)):
            reuse.fill(0)
            return reuse
        return self.zeros((n_rows,), dtype)

    def take_columns(self, X_binned, columns):
        """Binned X (n, len(columns)), in :attr:`binned_order`, of the host int
        ``columns`` (boosting's colsample_bytree)."""
        return self.in_binned_order(X_binned[:, self.asarray(columns)])

    def in_binned_order(self, X_binned):
        """Binned X on this backend in its :attr:`binned_order` (a copy only
        where it is not)."""
        if self.binned_order == "C":
            return self.xp.ascontiguousarray(X_binned)
        return self.xp.asfortranarray(X_binned)

    def empty_summaries(self, n_nodes, n_outputs, n_classes):
        return (self.xp.zeros((n_nodes, n_outputs, n_classes), dtype=FLOAT_DTYPE),
                self.xp.zeros(n_nodes, dtype=FLOAT_DTYPE))


def node_summaries_kernel_body(jit, inline=None, measure=None, entry=None):
    """Compile ``summary(node, totals, layout, inv, params, OUT values, OUT
    impurity)``: leaf values (n_nodes, n_outputs, n_classes) and impurity of
    one node from its int64 channel totals (n_nodes, n_channels); ``inline``
    and ``measure`` as in make_criterion_functions; ``summary`` itself with
    ``entry`` (default ``jit``)."""
    crit = make_criterion_functions(jit, inline, measure)
    node_value, impurity = crit.node_value, crit.impurity

    @specialised(entry or jit, measure)
    def summary(node, totals, layout, inv, params, values, impurities):
        S = totals[node]
        for o in range(values.shape[1]):
            for k in range(values.shape[2]):
                values[node, o, k] = node_value(S, layout, inv, params, o, k)
        impurities[node] = impurity(S, layout, inv)

    return summary
