"""``CUDABackend``: the backend primitives on a runtime, "cupy" (a GPU) or
"emulator" (the CPU), through the CUDA C kernels (:mod:`.c_kernels`) for
binning, histograms, partition and prediction and the ``numba.cuda``
kernels (:mod:`.numba_kernels`) for the split scan and node summaries (the
same scan code the CPU backend runs); and the fit's device memory estimate.

Binned data, statistics, positions and histograms stay on the device for the
whole fit; every primitive is one launch per level for all nodes of the level
(or a few: the row partition's); the host reads back only the per-level
split decisions. The backend follows each tree's positions with a row
partition (:mod:`.row_partition`), so that the histogram kernels read only
the rows of the nodes they build; which kernel builds is the ``histogram_kernel``
option (``$GPUTREE_HIST_KERNEL``; :data:`.c_kernels.HISTOGRAM_KERNELS`), which
kernel scans for splits the ``scan_kernel`` option (``$GPUTREE_SCAN_KERNEL``;
:data:`.numba_kernels.SCAN_KERNELS`).

The simulated device (``device="cuda-sim"``) is this same backend with numpy
arrays in place of cupy arrays, the CPU emulator in place of the GPU for the
CUDA C kernels, and numba's CUDA simulator for the numba kernels. It needs
``NUMBA_ENABLE_CUDASIM=1`` in the environment before numba is first imported.
"""
import math
import os
import weakref
from collections import Counter

import numpy as np

from ..._arrays import is_device_array, to_host
from ..._dtypes import FLOAT_DTYPE, NODE_DTYPE, STAT_DTYPE, X_DTYPE, bin_dtype
from ..base import Backend
from ..lambdarank import kernel_arguments
from ..node_features import ALL_CANDIDATES
from ..scan import best_split_per_node, empty_scan_outputs, empty_scratch
from . import numba_kernels
from .accounting import AllocationTracker, TransferCounter
from .c_kernels import CudaKernels, get_kernels
from .numba_kernels import (THREADS_PER_BLOCK, block_scan_threads, check_scan_kernel,
                            check_scan_threads, scan_kernel_for, scan_kernel_from_env)
from .row_partition import RowPartition
from .transfer import pack_device, pack_host, unpack


#: environment variable of the forest_batch option ("auto" or an int >= 1)
FOREST_BATCH_ENV = "GPUTREE_FOREST_BATCH"
#: trees grown together by forest_batch "auto" where free memory is unknown
AUTO_BATCH_UNKNOWN_MEMORY = 8


def check_forest_batch(value, where="forest_batch"):
    """``value`` as the forest_batch option ("auto" or an int >= 1), else a
    ValueError naming ``where``."""
    if value == "auto":
        return value
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = 0
    if isinstance(value, bool) or number < 1 or str(number) != str(value).strip():
        raise ValueError(f"{where} must be 'auto' or an int >= 1 (trees of a forest grown "
                         f"together), got {value!r}")
    return number


def forest_batch_from_env():
    """The forest_batch option of $GPUTREE_FOREST_BATCH (default "auto")."""
    return check_forest_batch(os.environ.get(FOREST_BATCH_ENV, "auto"), f"${FOREST_BATCH_ENV}")


class CUDABackend(Backend):
    """The CUDA primitives on a runtime: "cupy" (a GPU) or "emulator" (CPU).

    ``histogram_kernel``: one of :data:`.c_kernels.HISTOGRAM_KERNELS`, or
    None for ``$GPUTREE_HIST_KERNEL`` (default "auto"); it can be changed
    later through ``kernels.histogram_kernel``. ``scan_kernel``: one of
    :data:`.numba_kernels.SCAN_KERNELS`, or None for
    ``$GPUTREE_SCAN_KERNEL`` (default "auto"); settable later.
    ``scan_threads``: threads per block of the block scan (a power of two
    up to numba_kernels.BLOCK_SCAN_MAX_THREADS), None for
    :func:`.numba_kernels.block_scan_threads` of the histograms' bins.
    ``forest_batch``: trees of a forest grown together, "auto" (as many as
    fit in free memory) or an int >= 1; from ``$GPUTREE_FOREST_BATCH``
    (default "auto"), settable later.
    """

    #: a forest grows forest_batch_size trees together (growth.forest_batch)
    grows_forest_batches = True

    def __init__(self, runtime, histogram_kernel=None, scan_kernel=None):
        self.runtime = runtime
        self.name = "cuda" if runtime == "cupy" else "cuda-sim"
        self.kernels = (get_kernels(runtime) if histogram_kernel is None
                        else CudaKernels(runtime, histogram_kernel=histogram_kernel))
        #: id(positions) -> RowPartition of every positions array followed
        self._partitions = {}
        self.xp = self.kernels.xp
        self.device_xp = self.xp if runtime == "cupy" else None
        self.launches = Counter()
        #: every host<->device copy (see accounting.TransferCounter)
        self.transfers = TransferCounter()
        #: bytes held by the arrays allocated through upload/zeros/empty
        self.memory = AllocationTracker()
        #: free device memory to assume (bytes) in the simulated device, for tests
        self.simulated_free_bytes = None
        self.scan_kernel = scan_kernel_from_env() if scan_kernel is None else scan_kernel
        self.scan_threads = None
        self.forest_batch = forest_batch_from_env()
        #: the trees a batch of the last forest fit grew together
        self.last_forest_batch = None

    @property
    def forest_batch(self):
        """Trees of a forest grown together: "auto" or an int >= 1."""
        return self._forest_batch

    @forest_batch.setter
    def forest_batch(self, value):
        self._forest_batch = check_forest_batch(value)

    @property
    def scan_kernel(self):
        """The split scan kernel option (one of numba_kernels.SCAN_KERNELS)."""
        return self._scan_kernel

    @scan_kernel.setter
    def scan_kernel(self, name):
        self._scan_kernel = check_scan_kernel(name)

    @property
    def scan_threads(self):
        """Threads per block of the block scan, None for the default."""
        return self._scan_threads

    @scan_threads.setter
    def scan_threads(self, threads):
        self._scan_threads = check_scan_threads(threads)

    def _count(self, name):
        self.launches[name] += 1

    def _on_device(self, array):
        return self.runtime == "cupy" and is_device_array(array)

    def upload(self, array, dtype=None, order="C"):
        """A host array copied to the device (counted); a device array as it
        is (converted on the device where dtype or order differ). On the
        simulated device every call is a counted copy."""
        if self._on_device(array):
            return self.xp.asarray(array, dtype=dtype, order=order)
        host = np.asarray(array, dtype=dtype, order=order)
        step = _upload_rows(host)
        self.transfers.upload(host.nbytes, blocks=-(-host.shape[0] // step) if step else 1)
        if not step:
            return self.memory.track(self.xp.array(host, order=order))
        device = self.xp.empty(host.shape, dtype=host.dtype)
        for start in range(0, host.shape[0], step):
            _copy_rows(device[start:start + step], host[start:start + step])
        return self.memory.track(device)

    def asarray(self, array, dtype=None, order="C"):
        return self.upload(array, dtype=dtype, order=order)

    def download(self, array):
        """A device array copied to the host (counted; the host waits)."""
        self.transfers.download(array.nbytes)
        host = to_host(array)
        return np.array(host, copy=True) if host is array else host

    def to_host(self, array):
        return self.download(array)

    def upload_many(self, arrays):
        """dict name -> host array, on the device with one copy (views of one
        packed buffer)."""
        buffer, spec = pack_host(arrays)
        return unpack(self.upload(buffer), spec)

    def download_many(self, arrays):
        """dict name -> device array, on the host with one copy (packed on
        the device first)."""
        buffer, spec = pack_device(self.xp, arrays)
        return unpack(self.download(buffer), spec)

    def zeros(self, shape, dtype, order="C"):
        return self.memory.track(self.xp.zeros(shape, dtype=dtype, order=order))

    def empty(self, shape, dtype, order="C"):
        return self.memory.track(self.xp.empty(shape, dtype=dtype, order=order))

    def map_to_bins(self, X, thresholds, is_categorical, missing_bin):
        self._count("map_to_bins")
        out = self.empty(X.shape, bin_dtype(missing_bin + 1), order="F")
        return self.kernels.map_to_bins(X, thresholds, is_categorical, missing_bin, out=out)

    def build_histograms(self, X_binned, stats, positions, level_start, node_to_build,
                         n_build, n_bins, out=None):
        self._count("build_histograms")
        segments = self._row_segments(positions, level_start, node_to_build.shape[0])
        return self.kernels.build_histograms(X_binned, stats, positions, level_start,
                                             node_to_build, n_build, n_bins, out=out,
                                             segments=segments)

    def _row_segments(self, positions, level_start, n_level):
        """The followed row partition's segments of the level, or None. A
        tree's root (level 0, one node) starts following ``positions``."""
        if not self.kernels.follows_row_partition:
            return None
        partition = self._partitions.get(id(positions))
        if level_start == 0 and n_level == 1:
            if partition is None:
                partition = self._follow(positions)
            if partition is not None:
                partition.start_tree()
        return None if partition is None else partition.level(level_start, n_level)

    def _follow(self, positions):
        """A RowPartition of ``positions``, dropped with it (None when the
        array takes no weak reference)."""
        key = id(positions)
        try:
            partition = RowPartition(self, positions)
            weakref.finalize(positions, self._partitions.pop, key, None)
        except TypeError:
            return None
        self._partitions[key] = partition
        return partition

    def follow_batch(self, positions, n_trees):
        """Start following ``positions`` int32 (n_trees * n,) of a batch of
        trees grown together, tree t's rows ``t * n ..`` at its root, wide
        node t (:mod:`gputree.growth.forest_batch`)."""
        if not self.kernels.follows_row_partition:
            return
        partition = self._partitions.get(id(positions)) or self._follow(positions)
        if partition is not None:
            partition.start_tree(n_trees)

    def forest_batch_size(self, n_trees, n_samples, n_features, n_channels, n_bins,
                          max_level_nodes, held_row_bytes=0):
        """Trees of a forest grown together: the ``forest_batch`` option, or
        for "auto" the most that fit in the free device memory
        (:func:`forest_batch_size`; unknown free memory: at most
        AUTO_BATCH_UNKNOWN_MEMORY); kept in ``last_forest_batch``."""
        if self.forest_batch != "auto":
            size = max(1, min(n_trees, self.forest_batch, max_batch_rows(n_samples)))
        elif self.free_memory_bytes() is None:
            size = max(1, min(n_trees, AUTO_BATCH_UNKNOWN_MEMORY, max_batch_rows(n_samples)))
        else:
            size = forest_batch_size(self.free_memory_bytes(), n_trees, n_samples, n_features,
                                     n_channels, n_bins, max_level_nodes, held_row_bytes)
        self.last_forest_batch = size
        return size

    def subtract_histograms(self, parent_hist, parent_rows, hist, built_rows, derived_rows):
        self._count("subtract_histograms")
        hist[derived_rows] = parent_hist[parent_rows] - hist[built_rows]

    def update_positions(self, X_binned, positions, level_start, split_feature,
                         split_sets, left_child):
        self._count("update_positions")
        self.kernels.update_positions(X_binned, positions, level_start, split_feature,
                                      split_sets, left_child)
        partition = self._partitions.get(id(positions))
        if partition is not None:
            partition.record_split(level_start, split_feature, left_child)

    def predict_leaves(self, X_binned, node_feature, node_sets, node_left, tree_roots):
        self._count("predict_leaves")
        return self.kernels.predict_leaves(X_binned, node_feature, node_sets, node_left,
                                           tree_roots)

    def find_best_splits(self, hist, n_bins_non_missing, is_categorical, feature_allowed,
                         missing_bin, layout, inv, params, split_bin=None):
        self._count("find_best_splits")
        return best_split_per_node(self.xp, *self._scan(
            hist, n_bins_non_missing, is_categorical, feature_allowed, missing_bin,
            layout, inv, params, split_bin))

    def scan_splits(self, hist, n_bins_non_missing, is_categorical, feature_allowed,
                    missing_bin, layout, inv, params, split_bin=None):
        self._count("scan_splits")
        return self._scan(hist, n_bins_non_missing, is_categorical, feature_allowed,
                          missing_bin, layout, inv, params, split_bin)

    def _scan(self, hist, n_bins_non_missing, is_categorical, feature_allowed,
              missing_bin, layout, inv, params, split_bin):
        n_nodes, n_features, n_bins, n_channels = hist.shape
        if split_bin is None:
            split_bin = self.empty((n_nodes, n_features), np.int32)
            split_bin.fill(ALL_CANDIDATES)
        # categorical scratch for every thread, whatever the features: knowing
        # whether any is categorical would cost a device->host read per level
        outputs = empty_scan_outputs(self, n_nodes, n_features, n_channels, n_bins)
        scratch = empty_scratch(self, n_nodes * n_features, n_channels, True, n_bins)
        n_tasks = n_nodes * n_features
        by_block = scan_kernel_for(self.scan_kernel, self.runtime) == "block"
        arguments = (hist, n_bins_non_missing, is_categorical, feature_allowed, split_bin,
                     np.int64(missing_bin), layout, inv, params)
        # which tasks are boosting's is on the device (layout, params):
        # the block kernel takes those, the thread kernel the others
        if by_block and n_tasks:
            threads = self.scan_threads or block_scan_threads(n_bins)
            numba_kernels._find_splits_by_block[n_tasks, threads](*arguments, *outputs)
        blocks = math.ceil(n_tasks / THREADS_PER_BLOCK)
        numba_kernels._find_splits[blocks, THREADS_PER_BLOCK](
                *arguments, np.int64(by_block), self.empty(0, np.int64), *scratch, *outputs)
        return outputs

    def choose_node_features(self, hist, feature_allowed, order, max_features, draws,
                             n_bins_non_missing, is_categorical, missing_bin, layout):
        self._count("choose_node_features")
        n_nodes, n_features = feature_allowed.shape
        if order is not None:
            blocks = max(1, math.ceil(n_nodes / THREADS_PER_BLOCK))
            numba_kernels._soft_feature_limit[blocks, THREADS_PER_BLOCK](
                hist, order, np.int64(max_features), n_bins_non_missing, np.int64(missing_bin),
                layout, feature_allowed)
        if draws is None:
            return None
        split_bin = self.empty((n_nodes, n_features), np.int32)
        blocks = max(1, math.ceil(n_nodes * n_features / THREADS_PER_BLOCK))
        numba_kernels._random_split_bins[blocks, THREADS_PER_BLOCK](
            hist, draws, n_bins_non_missing, np.int64(missing_bin), is_categorical, layout,
            feature_allowed, split_bin)
        return split_bin

    def node_summaries(self, totals, layout, inv, params, n_outputs, n_classes):
        self._count("node_summaries")
        values = self.zeros((totals.shape[0], n_outputs, n_classes), FLOAT_DTYPE)
        impurity = self.zeros(totals.shape[0], FLOAT_DTYPE)
        blocks = max(1, math.ceil(totals.shape[0] / THREADS_PER_BLOCK))
        numba_kernels._node_summaries[blocks, THREADS_PER_BLOCK](totals, layout, inv, params,
                                                        values, impurity)
        return values, impurity

    def query_terms(self, scores, queries, settings, g, h, ndcg):
        self._count("query_terms")
        n_queries = ndcg.shape[0]
        if n_queries:
            blocks = math.ceil(n_queries / THREADS_PER_BLOCK)
            numba_kernels._query_terms[blocks, THREADS_PER_BLOCK](
                *kernel_arguments(scores, queries, settings, g, h, ndcg))

    def free_memory_bytes(self):
        """Free device memory (bytes), or None when unknown."""
        if self.runtime == "cupy":
            pool = self.xp.get_default_memory_pool()
            free, _ = self.xp.cuda.runtime.memGetInfo()
            return free + pool.free_bytes()
        return self.simulated_free_bytes

    def check_fit_memory(self, n_samples, n_features, n_channels, n_bins, max_level_nodes,
                         held_row_bytes=0, n_trees=1):
        """Raise a clear error when a fit (of ``n_trees`` trees grown
        together) cannot fit in device memory; the estimate is kept in
        ``last_fit_estimate``."""
        needed = forest_batch_bytes(n_trees, n_samples, n_features, n_channels, n_bins,
                                    max_level_nodes, held_row_bytes)
        self.last_fit_estimate = needed
        free = self.free_memory_bytes()
        if free is not None and needed > free:
            raise MemoryError(
                f"This fit needs about {needed / 2**20:.0f} MiB of GPU memory but only "
                f"{free / 2**20:.0f} MiB are free. Lower max_bins (histogram size grows with "
                "it), limit max_depth / max_leaf_nodes (nodes per level), train on fewer rows, "
                "or use device='cpu'.")


#: bytes per node and channel of the split records, totals and summaries
#: kept beside the scan (generous: a few int64/float64 per channel)
_NODE_RECORD_BYTES = 256


def fit_memory_estimate(n_samples, n_features, n_channels, n_bins, max_level_nodes,
                        held_row_bytes=0):
    """Bytes a fit holds on the device at most: binning plus training (the
    memory pool may keep what binning freed).

    * binning: X as given (at most 8 bytes a value), X as float64 for the
      kernel, binned X;
    * training: binned X, int64 statistics, int32 positions, the row
      partition's three int32 arrays (:mod:`.row_partition`) and
      ``held_row_bytes`` per row (what the caller keeps: boosting's targets,
      raw scores, gradients...); the histogram pool (up to
      ``max_level_nodes`` rows, twice while it grows); the split scan's
      outputs and scratch for ``max_level_nodes`` nodes; the per-node
      summaries and split records.
    """
    stat = np.dtype(STAT_DTYPE).itemsize
    cells = n_samples * n_features
    code = np.dtype(bin_dtype(n_bins)).itemsize
    binning = cells * (2 * np.dtype(X_DTYPE).itemsize + code)
    per_row = (n_features * code + n_channels * stat
               + 4 * np.dtype(NODE_DTYPE).itemsize + held_row_bytes)
    histograms = 2 * max_level_nodes * n_features * n_bins * n_channels * stat
    per_node = (n_features * _scan_bytes_per_thread(n_channels, n_bins)
                + _NODE_RECORD_BYTES * n_channels)
    return binning + n_samples * per_row + histograms + max_level_nodes * per_node


def forest_batch_bytes(n_trees, n_samples, n_features, n_channels, n_bins, max_level_nodes,
                       held_row_bytes=0):
    """Bytes a fit of a forest holds on the device at most while it grows
    ``n_trees`` trees together (:mod:`gputree.growth.forest_batch`):
    :func:`fit_memory_estimate` of one tree; for a batch, the batch's copy of
    the first tree's binned X and statistics and its rows' leaves; for each
    further tree its rows (binned X repeated, its statistics twice: its own
    and the batch's copy, its positions, leaves and row partition,
    ``held_row_bytes``) and its level's histograms and scan."""
    one = fit_memory_estimate(n_samples, n_features, n_channels, n_bins, max_level_nodes,
                              held_row_bytes)
    if n_trees == 1:
        return one
    code = np.dtype(bin_dtype(n_bins)).itemsize
    stat = np.dtype(STAT_DTYPE).itemsize
    node = np.dtype(NODE_DTYPE).itemsize
    per_row = n_features * code + 2 * n_channels * stat + 5 * node + held_row_bytes
    histograms = 2 * max_level_nodes * n_features * n_bins * n_channels * stat
    per_node = (n_features * _scan_bytes_per_thread(n_channels, n_bins)
                + _NODE_RECORD_BYTES * n_channels)
    per_tree = n_samples * per_row + histograms + max_level_nodes * per_node
    batch = n_samples * (n_features * code + n_channels * stat + node)
    return one + batch + (n_trees - 1) * per_tree


def forest_batch_size(budget_bytes, n_trees, n_samples, n_features, n_channels, n_bins,
                      max_level_nodes, held_row_bytes=0):
    """The most trees, 1 to ``n_trees``, whose :func:`forest_batch_bytes`
    is within ``budget_bytes`` (1 when not even two are) and whose rows
    together the kernels can index (:func:`max_batch_rows`)."""
    sizes = (n_samples, n_features, n_channels, n_bins, max_level_nodes, held_row_bytes)
    two = forest_batch_bytes(2, *sizes)
    per_tree = forest_batch_bytes(3, *sizes) - two
    if budget_bytes < two:
        return 1
    return int(max(1, min(n_trees, 2 + (budget_bytes - two) // per_tree,
                          max_batch_rows(n_samples))))


def max_batch_rows(n_samples):
    """The most trees of ``n_samples`` rows a batch can hold: the kernels
    index a batch's rows (a tree's rows once per tree) with int32."""
    return max(1, (2 ** 31 - 1) // max(1, n_samples))


def _scan_bytes_per_thread(n_channels, n_bins):
    """Bytes of the split scan's outputs and scratch per (node, feature) on
    histograms of ``n_bins`` bins (categorical scratch included, one slot
    per bin, as find_best_splits allocates it)."""
    arrays = (empty_scan_outputs(np, 1, 1, n_channels, n_bins)
              + empty_scratch(np, 1, n_channels, True, n_bins))
    return sum(a.nbytes for a in arrays)


#: host arrays of more bytes than this go to the device in blocks of rows of
#: about this size (a Dataset's codes in a memory-mapped file are read from
#: disk block by block, never whole in host memory)
UPLOAD_BLOCK_BYTES = 64 << 20


def _upload_rows(host):
    """Rows per block of ``host``'s upload (numpy array, any dtype), or 0
    for one copy (small, 0-d or not C-contiguous)."""
    if host.nbytes <= UPLOAD_BLOCK_BYTES or host.ndim == 0 or not host.flags.c_contiguous:
        return 0
    return max(1, UPLOAD_BLOCK_BYTES // max(1, host.nbytes // host.shape[0]))


def _copy_rows(device_rows, host_rows):
    """Copy host rows into a C-contiguous block of device rows (cupy's
    ``set``; a numpy array on the simulated device)."""
    if hasattr(device_rows, "set"):
        device_rows.set(host_rows)
    else:
        device_rows[...] = host_rows
