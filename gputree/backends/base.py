"""The backend seam: the abstract :class:`Backend`, every primitive that the
growers, forests and boosting call identically on every device, declared
with its arrays' shapes and dtypes, and the parts shared by all devices.

A backend exposes an array module ``xp``; the arrays its primitives take and
return are ``xp`` arrays (host numpy arrays where a signature says host).
Every copy between host and device goes through ``upload`` / ``download``
(one array) or ``upload_many`` / ``download_many`` (a dict of small arrays in
one copy); the CPU backend's are no-ops, the CUDA backend counts them. A new
device is a subclass that implements every abstract method, registered in
:mod:`gputree.backends` (its ``_FACTORIES``).
"""
import abc

import numpy as np

from .._arrays import to_host
from .._dtypes import FLOAT_DTYPE, NODE_DTYPE, STAT_DTYPE
from .splitset import left_set


#: trees whose leaf ids are held at once by the default add_leaf_values
_TREES_PER_LAUNCH = 64


class Backend(abc.ABC):
    """What a device provides; subclasses set ``name``, ``xp`` and implement
    the abstract primitives."""

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
    #: whether build_histograms, move_and_build_histograms and
    #: subtract_histograms take ``feature_bins`` (int32 (F,), the data's
    #: n_bins_non_missing): they then write only each feature's bins 0 ..
    #: feature_bins[f]-1 and the missing bin, the cells rows can be in and
    #: the only ones the split scan and node_features read (the others
    #: may hold anything)
    uses_feature_bins = False
    #: whether find_best_splits takes ``derive`` (derived_rows, built_rows,
    #: source): the in-place subtraction ``hist[d] -= source[b]`` of
    #: subtract_histograms (on the cells of ``uses_feature_bins``), done by
    #: the scan itself, a (node, feature)'s cells just before it reads them
    derives_in_scan = False
    #: whether histogram channels beyond the statistics' columns count rows
    #: (1 per row): statistics then need not hold a count channel of ones
    #: (every weight one; ``out`` of build_histograms and
    #: move_and_build_histograms, the rows of build_node_histogram, have
    #: the channels)
    implicit_count_channel = False
    #: whether a forest grows several trees together on this backend
    #: (:mod:`gputree.growth.forest_batch`; :meth:`forest_batch_size` of them)
    grows_forest_batches = False

    # ------------------------------------------------------- the primitives
    @abc.abstractmethod
    def map_to_bins(self, X, thresholds, is_categorical, missing_bin):
        """Bin codes of X float32/float64 (n, F): thresholds float64 (F, T)
        padded with +inf, is_categorical uint8 (F,), missing_bin int (NaN
        and unseen categories go there). Returns ``bin_dtype(missing_bin +
        1)`` (n, F) in :attr:`binned_order`."""

    @abc.abstractmethod
    def build_histograms(self, X_binned, stats, positions, level_start, node_to_build, n_build,
                         n_bins, out=None):
        """Per-node histograms of the rows whose node is being built.

        X_binned (n, F) bins IN; stats int64 (n, C) IN; positions int32 (n,)
        IN, every row's node id; node_to_build int32 (n_level,) IN, the
        build row of level node ``positions - level_start``, or -1. Returns
        hist int64 (n_build, F, n_bins, C); with ``out`` (>= n_build rows,
        the built ones zeroed unless :attr:`overwrites_built_rows`) the
        histograms are added into ``out``'s rows and ``out`` is returned. A
        backend whose :attr:`uses_bin_counts` is true also takes
        ``bin_counts=`` at the root when stats' last channel is 1 in every
        row."""

    @abc.abstractmethod
    def subtract_histograms(self, parent_hist, parent_rows, hist, built_rows, derived_rows):
        """``hist[derived_rows] = parent_hist[parent_rows] - hist[built_rows]``
        (int64, exact; rows int32 (p,)); also in place (``parent_hist is
        hist`` and ``derived_rows`` equal to ``parent_rows``)."""

    @abc.abstractmethod
    def scan_splits(self, hist, n_bins_non_missing, is_categorical, feature_allowed, missing_bin,
                    layout, inv, params, split_bin=None):
        """Every (node, feature)'s best split, unreduced: the arrays of
        :func:`gputree.backends.scan.empty_scan_outputs`. hist int64
        (n_nodes, F, n_bins, C); n_bins_non_missing int32 (F,);
        is_categorical uint8 (F,); feature_allowed uint8 (n_nodes, F);
        layout int64 (LAYOUT_SIZE,), inv float64 (C,), params float64
        (PARAMS_SIZE,) or (n_nodes, PARAMS_SIZE); split_bin int32 (n_nodes,
        F), the one candidate of each (node, feature) (-1: all; None: all
        everywhere; :meth:`choose_node_features`)."""

    @abc.abstractmethod
    def find_best_splits(self, hist, n_bins_non_missing, is_categorical, feature_allowed,
                         missing_bin, layout, inv, params, split_bin=None):
        """The best split of every node (arguments as :meth:`scan_splits`),
        a :class:`gputree.backends.scan.SplitInfo` of per-node arrays; ties
        go to the lowest feature, then the lowest bin."""

    @abc.abstractmethod
    def choose_node_features(self, hist, feature_allowed, order, max_features, draws,
                             n_bins_non_missing, is_categorical, missing_bin, layout):
        """Decide from the histograms hist int64 (n_nodes, F, n_bins, C)
        which features and thresholds the scan tries
        (:mod:`gputree.backends.node_features`): with ``order`` int32
        (n_nodes, F) (each candidate's features in drawn order, -1 rows for
        the others; None: no soft limit), feature_allowed uint8 (n_nodes,
        F) INOUT gets the features beyond the first ``max_features`` up to
        the first not constant where those are all constant; with ``draws``
        float64 (n_nodes, F) in [0, 1) (None: the best splitter), returns
        split_bin int32 (n_nodes, F) for the scan and clears the allowed
        features that are constant; else returns None."""

    @abc.abstractmethod
    def update_positions(self, X_binned, positions, level_start, split_feature, split_sets,
                         left_child):
        """positions int32 (n,) INOUT: rows of level node k = positions -
        level_start move to ``left_child[k]`` (+1 when their bin is not in
        split k's left set: ``split_sets`` a :class:`gputree.tree.LeftSets`
        of n_level splits) where split_feature int32 (n_level,) is >= 0."""

    @abc.abstractmethod
    def predict_leaves(self, X_binned, node_feature, node_sets, node_left, tree_roots):
        """int32 (n, n_trees): every row's leaf in each tree, as ids into the
        trees' concatenated nodes (node_feature int32 (m,), node_sets a
        :class:`gputree.tree.LeftSets` of m nodes, node_left int32 (m,),
        tree_roots int32 (n_trees,): :func:`gputree.tree.concatenate_trees`)."""

    @abc.abstractmethod
    def node_summaries(self, totals, layout, inv, params, n_outputs, n_classes):
        """(values float64 (n_nodes, n_outputs, n_classes), impurity float64
        (n_nodes,)) of nodes with int64 channel totals (n_nodes, C)."""

    # ------------------------------------------ primitives with a default
    def asarray(self, array, dtype=None, order="C"):
        """Move a host (or device) array to this backend."""
        return self.xp.asarray(array, dtype=dtype, order=order)

    def to_host(self, array):
        """numpy copy (or the array itself) of a backend array."""
        return to_host(array)

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
                         held_row_bytes=0, n_trees=1):
        """Raise MemoryError when a fit cannot fit on the device (host: no
        check); ``held_row_bytes``: bytes per row the caller keeps on the
        device beside the tree's own buffers; ``n_trees``: trees grown
        together (:mod:`gputree.growth.forest_batch`)."""

    def free_memory_bytes(self):
        """Memory (bytes) new buffers of a fit can take, or None when unknown
        (here: the host's available memory on Linux)."""
        try:
            with open("/proc/meminfo", encoding="ascii") as stream:
                fields = dict(line.split(":", 1) for line in stream)
            return int(fields["MemAvailable"].split()[0]) * 1024
        except (OSError, KeyError, ValueError):
            return None

    def forest_batch_size(self, n_trees, n_samples, n_features, n_channels, n_bins,
                          max_level_nodes, held_row_bytes=0):
        """How many of a forest's ``n_trees`` trees to grow together (here:
        one, the forest grows tree after tree)."""
        return 1

    def follow_batch(self, positions, n_trees):
        """A batch of ``n_trees`` trees grown together starts: positions
        int32 (n_trees * n,) puts tree t's rows ``t * n ..`` at wide node t
        (:mod:`gputree.growth.forest_batch`). Here: nothing to prepare."""

    def move_and_build_histograms(self, X_binned, positions, moves, stats, level_start,
                                  node_to_build, n_build, n_bins, out):
        """update_positions(X_binned, positions, *moves), then
        build_histograms(X_binned, stats, positions, level_start, ...)."""
        self.update_positions(X_binned, positions, *moves)
        return self.build_histograms(X_binned, stats, positions, level_start, node_to_build,
                                     n_build, n_bins, out=out)

    def build_histograms_by_features(self, X_binned, stats, positions, level_start,
                                     node_to_build, n_build, n_bins, bounds, order, done,
                                     out=None):
        """build_histograms (hist int64 (n_build, F, n_bins, C): the first
        n_build rows of ``out`` (a buffer kept by the caller, any former
        contents) or a new array) in slices of the features: slice s holds
        features [bounds[s], bounds[s + 1]) (``bounds`` int64, ascending);
        ``done(s, hist)`` is called as soon as slice s's histograms are
        complete, for the slices of ``order`` in that order (so that a slice
        can travel while the next is built; the features of later slices
        may not be built yet). Returns hist. Here: the whole pass, then
        every ``done``."""
        hist = None
        if out is not None:
            hist = out[:n_build]
            if not self.overwrites_built_rows:
                hist[...] = 0
        hist = self.build_histograms(X_binned, stats, positions, level_start, node_to_build,
                                     n_build, n_bins, out=hist)
        for s in order:
            done(s, hist)
        return hist

    def start_row_partition(self, X_binned):
        """The rows of X_binned grouped by node for a best-first tree, all
        at the root (an object :meth:`split_node_rows` and
        :meth:`build_node_histogram` take), or None (the default): the
        backend moves rows through their positions only, with
        :meth:`move_and_build_histograms`."""
        return None

    #: whether :meth:`best_first_steps` gives compiled steps
    compiles_best_first = False

    def best_first_steps(self, n_channels, n_features, n_words, limits, budget, max_depth,
                         count_channel, n_outputs, scan):
        """The compiled steps of a best-first tree on a row partition, with
        the Newton criterion and nothing drawn or constrained (an object as
        :class:`gputree.backends.cpu.bestfirst_step.BestFirstSteps`, whose
        docstring says the arguments), or None (the default): the grower
        takes each step with the primitives."""
        return None

    def level_steps(self, n_channels, n_features, n_words, limits, max_depth, count_channel,
                    n_outputs, scan, reuse=None):
        """The compiled levels of a level-wise tree, with the Newton
        criterion, no leaf budget and nothing drawn or constrained (an
        object as :class:`gputree.backends.cpu.level_step.LevelSteps`, whose
        docstring says the arguments), or None (the default): the grower
        plans each level with the primitives. ``reuse``: the steps this
        backend handed out for the fit's last tree (or None), which it may
        start again for this one."""
        return None

    def split_node_rows(self, partition, X_binned, node, feature, split_sets):
        """Move the rows of ``node`` in ``partition`` (:meth:`start_row_partition`)
        to its children, the next two node ids: to the first the rows whose
        bin of ``feature`` is in the left set of ``split_sets`` (a
        :class:`gputree.tree.LeftSets` of one split), to the second the
        others. Only a backend with a row partition has it."""
        raise NotImplementedError(f"the {self.name!r} backend keeps no row partition")

    def partition_positions(self, partition, positions):
        """positions int32 (n,) OUT: every row's leaf in ``partition`` (the
        nodes not split). Only a backend with a row partition has it."""
        raise NotImplementedError(f"the {self.name!r} backend keeps no row partition")

    def build_node_histogram(self, partition, X_binned, stats, node, hist_row, hist,
                             feature_bins=None, n_bins=None):
        """hist[hist_row] OUT: the histogram (int64 (F, n_bins, C)) of the
        rows of ``node`` in ``partition`` (stats int64 (n, C) IN;
        ``feature_bins`` as :meth:`build_histograms`'; ``n_bins`` the binned
        data's bins, None: hist's). Only a backend with a row partition
        has it."""
        raise NotImplementedError(f"the {self.name!r} backend keeps no row partition")

    def split_and_build(self, partition, X_binned, stats, node, feature, bitset, words,
                        built_node, built_row, hist, feature_bins=None, n_bins=None):
        """:meth:`split_node_rows` of ``node`` by its split (``feature``,
        ``bitset`` uint32 (BITSET_WORDS,), ``words`` uint32 (m,) beyond it,
        trailing zeros allowed), then, where ``built_node`` >= 0,
        :meth:`build_node_histogram` of that node (one of the children) into
        ``hist``'s row ``built_row`` (``feature_bins``, ``n_bins`` as
        there): a best-first step's two calls. Only a backend with a row
        partition has it."""
        self.split_node_rows(partition, X_binned, node, feature, left_set(bitset, words))
        if built_node >= 0:
            self.build_node_histogram(partition, X_binned, stats, built_node, built_row, hist,
                                      feature_bins=feature_bins, n_bins=n_bins)

    def split_builder(self, partition, X_binned, stats, hist, feature_bins=None, n_bins=None):
        """:meth:`split_and_build` with a tree's arguments bound: a function
        (node, feature, bitset, words, built_node, built_row) of the rest,
        valid while ``partition``, ``stats`` and ``hist`` are the tree's
        arrays (a backend may prepare the call once, for every step)."""
        def split_and_build(node, feature, bitset, words, built_node, built_row):
            self.split_and_build(partition, X_binned, stats, node, feature, bitset, words,
                                 built_node, built_row, hist, feature_bins, n_bins)
        return split_and_build

    def zero_rows(self, array, rows):
        """array[rows] = 0 (rows: int backend array of first-axis indices)."""
        array[rows] = 0

    def add_node_values(self, node_values, positions, out, first_column):
        """out[:, first_column:first_column + V] += node_values[positions];
        node_values float64 (n_nodes, V), positions int32 (n,) (backend)."""
        out[:, first_column:first_column + node_values.shape[1]] += node_values[positions]

    def move_by_child_table(self, X_binned, positions, level_start, split_feature, child_of):
        """The rows of level node k = positions - level_start move to
        ``child_of[k, b]`` (b: their bin of ``split_feature[k]``) where
        split_feature[k] >= 0 (a multiway level's moves,
        :mod:`gputree.growth.multiway`); split_feature host int32 (n_level,),
        child_of host int32 (n_level, n_bins). Returns the positions int32
        (n,) (here a new array, from array operations of ``xp``: no loop
        over rows)."""
        xp = self.xp
        table = self.upload_many({"feature": split_feature, "child_of": child_of})
        relative = positions - level_start
        in_level = (relative >= 0) & (relative < split_feature.shape[0])
        relative = xp.where(in_level, relative, 0)
        row_feature = table["feature"][relative]
        moving = in_level & (row_feature >= 0)
        bins = X_binned[xp.arange(relative.shape[0]), xp.maximum(row_feature, 0)]
        moved = table["child_of"][relative, bins.astype(np.int64)]
        return xp.where(moving, moved, positions).astype(NODE_DTYPE)

    def add_leaf_values(self, X_binned, node_feature, node_sets, node_left, tree_roots,
                        node_values, tree_columns, out):
        """Default: leaf ids of a block of trees at a time, then one gather
        per tree (node_values on the backend, tree_columns a host array)."""
        width = node_values.shape[1]
        for first in range(0, tree_roots.shape[0], _TREES_PER_LAUNCH):
            roots = tree_roots[first:first + _TREES_PER_LAUNCH]
            leaves = self.predict_leaves(X_binned, node_feature, node_sets, node_left, roots)
            for t in range(roots.shape[0]):
                column = int(tree_columns[first + t])
                out[:, column:column + width] += node_values[leaves[:, t]]

    def query_terms(self, scores, queries, settings, g, h, ndcg):
        """Learning to rank, per query (:mod:`gputree.backends.lambdarank`):
        scores float64 (n,) IN; queries a lambdarank.QueryArrays and settings
        a lambdarank.RankSettings (arrays on this backend); g, h float64 (n,)
        OUT: LambdaMART gradients and hessians (when settings asks for them);
        ndcg float64 (n_queries,) OUT: NDCG@k of the scores. A backend
        without it cannot fit rankers."""
        raise NotImplementedError(f"the {self.name!r} backend does not compute ranking "
                                  "gradients: fit rankers on device 'cpu' or 'cuda'.")

    def zeros(self, shape, dtype):
        """A zeroed array for a large buffer kept over a fit (the histogram
        pool)."""
        return self.xp.zeros(shape, dtype=dtype)

    def bin_counts(self, X_binned, n_bins):
        """int64 (F, n_bins) backend array: the rows of binned X (n, F) in
        each bin of each feature, the root's histogram of a channel of ones."""
        n_samples = X_binned.shape[0]
        ones = self.xp.ones((n_samples, 1), dtype=STAT_DTYPE)
        return self.build_histograms(X_binned, ones, self.row_zeros(n_samples, NODE_DTYPE), 0,
                                     self.upload(np.zeros(1, dtype=NODE_DTYPE)), 1,
                                     n_bins)[0, :, :, 0]

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

    def keep_binned_lean(self, X_binned):
        """Binned X that must cost no more memory than it holds (a
        Dataset's codes: data near the size of memory): the backend keeps no
        other copy of it for speed (the CPU backend's column-order copy)."""

    def in_binned_order(self, X_binned):
        """Binned X on this backend in its :attr:`binned_order` (a copy only
        where it is not)."""
        if self.binned_order == "C":
            return self.xp.ascontiguousarray(X_binned)
        return self.xp.asfortranarray(X_binned)

    def empty_summaries(self, n_nodes, n_outputs, n_classes):
        return (self.xp.zeros((n_nodes, n_outputs, n_classes), dtype=FLOAT_DTYPE),
                self.xp.zeros(n_nodes, dtype=FLOAT_DTYPE))


