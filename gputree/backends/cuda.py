"""CUDA backend: device arrays (cupy), CUDA C kernels from ``kernels/`` for
binning, histograms, partition and prediction, and ``numba.cuda`` kernels for
the split scan and node summaries (the same scan code the CPU backend runs).

Binned data, statistics, positions and histograms stay on the device for the
whole fit; every primitive is one launch per level for all nodes of the level;
the host reads back only the per-level split decisions.

The simulated device (``device="cuda-sim"``) is this same backend with numpy
arrays in place of cupy arrays, the CPU emulator in place of the GPU for the
CUDA C kernels, and numba's CUDA simulator for the numba kernels. It needs
``NUMBA_ENABLE_CUDASIM=1`` in the environment before numba is first imported.
"""
import math
from collections import Counter

import numpy as np
from numba import cuda

from .._dtypes import FLOAT_DTYPE, NODE_DTYPE, STAT_DTYPE, X_DTYPE, bin_dtype
from .._validation import is_device_array, to_numpy
from .accounting import AllocationTracker, TransferCounter
from .scan import best_split_per_node, empty_scan_outputs, empty_scratch, make_split_scanner
from .base import Backend, node_summaries_kernel_body
from .cuda_compile import prepare
from .devmath import make_devmath
from .kernel_cache import cache_numba_cuda_kernels
from .transfer import pack_device, pack_host, unpack

_SCAN_THREADS_PER_BLOCK = 64
_SIMULATOR_HINT = (
    "device='cuda-sim' runs the numba.cuda kernels in numba's CUDA simulator, which must be "
    "switched on before numba is first imported: run with the environment variable "
    "NUMBA_ENABLE_CUDASIM=1 (e.g. `NUMBA_ENABLE_CUDASIM=1 python train.py`), or use "
    "device='cpu'.")


def create_cuda_backend(simulated):
    """The real (cupy) or simulated (numpy + emulator) CUDA backend."""
    if simulated:
        from numba import config
        if not config.ENABLE_CUDASIM:
            raise ValueError(_SIMULATOR_HINT)
        return CUDABackend("emulator")
    _require_gpu()
    prepare()
    return CUDABackend("cupy")


def _require_gpu():
    """Raise a ValueError that says what is missing for device='cuda'."""
    try:
        import cupy
    except ImportError as exc:
        raise ValueError("device='cuda' needs cupy, which is not installed: "
                         "pip install 'gputree[cuda]' (CUDA 12), or use device='cpu'.") from exc
    try:
        n_devices = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # no driver, no device
        raise ValueError(f"device='cuda' found no usable NVIDIA GPU ({exc}). Check the driver "
                         "with nvidia-smi, or use device='cpu'.") from exc
    if n_devices == 0:
        raise ValueError("device='cuda' found no NVIDIA GPU; use device='cpu'.")


# numba.cuda compiles lazily, at the first launch; the simulator swaps the
# module-level name ``cuda`` inside kernels, so kernels live at module level.
_scan = make_split_scanner(cuda.jit(device=True))
_summary = node_summaries_kernel_body(cuda.jit(device=True))
_devmath_one = make_devmath(cuda.jit(device=True)).apply_one
# compiled kernels kept on disk: a second process starts without compiling
_CACHE_KERNELS = cache_numba_cuda_kernels(__file__)


@cuda.jit(cache=_CACHE_KERNELS)
def _find_splits(hist, n_bins_non_missing, is_categorical, feature_allowed, missing_bin,
                 layout, inv, params, scratch_sums, scratch_keys, scratch_order,
                 scratch_prefix, scratch_gains,
                 out_gain, out_missing_left, out_bitset, out_left, out_info):
    """One thread per (node, feature), its scratch slot its own index;
    arguments as scan.make_split_scanner."""
    t = cuda.grid(1)
    if t < hist.shape[0] * hist.shape[1]:
        _scan(t, t, hist, hist.shape[1], n_bins_non_missing, is_categorical, feature_allowed,
              missing_bin, layout, inv, params, scratch_sums, scratch_keys, scratch_order,
              scratch_prefix, scratch_gains,
              out_gain, out_missing_left, out_bitset, out_left, out_info)


@cuda.jit(cache=_CACHE_KERNELS)
def _node_summaries(totals, layout, inv, params, values, impurity):
    """One thread per node: totals IN int64 (n_nodes, C); values, impurity OUT."""
    node = cuda.grid(1)
    if node < totals.shape[0]:
        _summary(node, totals, layout, inv, params, values, impurity)


@cuda.jit(cache=_CACHE_KERNELS)
def _devmath_kernel(code, x, out):
    """One thread per element: out[i] = f(x[i]), f = devmath.CODES[code];
    x IN float64 (n,), out OUT float64 (n,)."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = _devmath_one(code, x[i])


def apply_devmath(code, values):
    """devmath function ``code`` of a device array, elementwise (float64,
    same shape); the device half of :func:`gputree.backends.devmath.apply`."""
    import cupy
    values = cupy.ascontiguousarray(values, dtype=np.float64)
    out = cupy.empty_like(values)
    flat_in, flat_out = values.reshape(-1), out.reshape(-1)
    if flat_in.size:
        blocks = math.ceil(flat_in.size / _SCAN_THREADS_PER_BLOCK)
        _devmath_kernel[blocks, _SCAN_THREADS_PER_BLOCK](np.int64(code), flat_in, flat_out)
    return out


class CUDABackend(Backend):
    """The CUDA primitives on a runtime: "cupy" (a GPU) or "emulator" (CPU)."""

    def __init__(self, runtime):
        from .cuda_kernels import get_kernels
        self.runtime = runtime
        self.name = "cuda" if runtime == "cupy" else "cuda-sim"
        self.kernels = get_kernels(runtime)
        self.xp = self.kernels.xp
        self.device_xp = self.xp if runtime == "cupy" else None
        self.launches = Counter()
        #: every host<->device copy (see accounting.TransferCounter)
        self.transfers = TransferCounter()
        #: bytes held by the arrays allocated through upload/zeros/empty
        self.memory = AllocationTracker()
        #: free device memory to assume (bytes) in the simulated device, for tests
        self.simulated_free_bytes = None

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
        self.transfers.upload(host.nbytes)
        return self.memory.track(self.xp.array(host, order=order))

    def asarray(self, array, dtype=None, order="C"):
        return self.upload(array, dtype=dtype, order=order)

    def download(self, array):
        """A device array copied to the host (counted; the host waits)."""
        self.transfers.download(array.nbytes)
        host = to_numpy(array)
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
        return self.kernels.build_histograms(X_binned, stats, positions, level_start,
                                             node_to_build, n_build, n_bins, out=out)

    def subtract_histograms(self, parent_hist, parent_rows, hist, built_rows, derived_rows):
        self._count("subtract_histograms")
        hist[derived_rows] = parent_hist[parent_rows] - hist[built_rows]

    def update_positions(self, X_binned, positions, level_start, split_feature,
                         split_bitset, left_child):
        self._count("update_positions")
        self.kernels.update_positions(X_binned, positions, level_start, split_feature,
                                      split_bitset, left_child)

    def predict_leaves(self, X_binned, node_feature, node_bitset, node_left, tree_roots):
        self._count("predict_leaves")
        return self.kernels.predict_leaves(X_binned, node_feature, node_bitset, node_left,
                                           tree_roots)

    def find_best_splits(self, hist, n_bins_non_missing, is_categorical, feature_allowed,
                         missing_bin, layout, inv, params):
        self._count("find_best_splits")
        return best_split_per_node(self.xp, *self._scan(
            hist, n_bins_non_missing, is_categorical, feature_allowed, missing_bin,
            layout, inv, params))

    def scan_splits(self, hist, n_bins_non_missing, is_categorical, feature_allowed,
                    missing_bin, layout, inv, params):
        self._count("scan_splits")
        return self._scan(hist, n_bins_non_missing, is_categorical, feature_allowed,
                          missing_bin, layout, inv, params)

    def _scan(self, hist, n_bins_non_missing, is_categorical, feature_allowed,
              missing_bin, layout, inv, params):
        n_nodes, n_features, _, n_channels = hist.shape
        # categorical scratch for every thread, whatever the features: knowing
        # whether any is categorical would cost a device->host read per level
        outputs = empty_scan_outputs(self, n_nodes, n_features, n_channels)
        scratch = empty_scratch(self, n_nodes * n_features, n_channels, True)
        blocks = math.ceil(n_nodes * n_features / _SCAN_THREADS_PER_BLOCK)
        _find_splits[blocks, _SCAN_THREADS_PER_BLOCK](
                hist, n_bins_non_missing, is_categorical, feature_allowed,
                np.int64(missing_bin), layout, inv, params, *scratch, *outputs)
        return outputs

    def node_summaries(self, totals, layout, inv, params, n_outputs, n_classes):
        self._count("node_summaries")
        values = self.zeros((totals.shape[0], n_outputs, n_classes), FLOAT_DTYPE)
        impurity = self.zeros(totals.shape[0], FLOAT_DTYPE)
        blocks = max(1, math.ceil(totals.shape[0] / _SCAN_THREADS_PER_BLOCK))
        _node_summaries[blocks, _SCAN_THREADS_PER_BLOCK](totals, layout, inv, params,
                                                        values, impurity)
        return values, impurity

    def free_memory_bytes(self):
        """Free device memory (bytes), or None when unknown."""
        if self.runtime == "cupy":
            pool = self.xp.get_default_memory_pool()
            free, _ = self.xp.cuda.runtime.memGetInfo()
            return free + pool.free_bytes()
        return self.simulated_free_bytes

    def check_fit_memory(self, n_samples, n_features, n_channels, n_bins, max_level_nodes,
                         held_row_bytes=0):
        """Raise a clear error when a fit cannot fit in device memory; the
        estimate is kept in ``last_fit_estimate``."""
        needed = fit_memory_estimate(n_samples, n_features, n_channels, n_bins, max_level_nodes,
                                     held_row_bytes)
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
    * training: binned X, int64 statistics, int32 positions and
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
               + np.dtype(NODE_DTYPE).itemsize + held_row_bytes)
    histograms = 2 * max_level_nodes * n_features * n_bins * n_channels * stat
    per_node = n_features * _scan_bytes_per_thread(n_channels) + _NODE_RECORD_BYTES * n_channels
    return binning + n_samples * per_row + histograms + max_level_nodes * per_node


def _scan_bytes_per_thread(n_channels):
    """Bytes of the split scan's outputs and scratch per (node, feature)
    (categorical scratch included, as find_best_splits allocates it)."""
    arrays = (empty_scan_outputs(np, 1, 1, n_channels)
              + empty_scratch(np, 1, n_channels, True))
    return sum(a.nbytes for a in arrays)
