"""Locate gputree's CUDA C kernels, load them for a runtime, and launch them.

Owns the bridge between the CUDA backend and ``kernels/*.cu``: finding the
sources (shipped inside the package as ``gputree/kernels``, else the
repository's top-level ``kernels/``), compiling them into one module for a
runtime — ``"cupy"`` (``cupy.RawModule``, real GPU, cupy arrays) or
``"emulator"`` (:class:`~gputree.backends.cuda.emulator.EmulatedModule`, CPU,
numpy arrays) — and :class:`CudaKernels`, one typed wrapper per primitive that
validates arguments, picks the launch configuration and launches, identically
for both runtimes. Semantics of each primitive are in the kernel files.
"""
from __future__ import annotations

import functools
import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..._dtypes import (BITSET_DTYPE, BITSET_WORDS, FEATURE_DTYPE, NODE_DTYPE, STAT_DTYPE,
                       THRESHOLD_DTYPE, WORD_COUNT_DTYPE, WORD_START_DTYPE, X_BINNED_DTYPE,
                       X_BINNED_WIDE_DTYPE, X_DTYPE, bin_dtype)
from .row_partition import segments_from_positions

RUNTIMES = ("cupy", "emulator")
KERNEL_FILES = ("binning.cu", "histogram.cu", "partition.cu", "predict.cu", "row_partition.cu")
#: the histogram kernels (all give the same int64 sums):
#: "global" / "shared": build_histograms, every row read, accumulated in global
#: memory / in 48 KiB shared slices of (node, feature) histograms;
#: "node" / "node32": build_histograms_by_node, only the built nodes' rows
#: read (the row partition), one block per (node, rows chunk, feature group)
#: with the group's histograms in shared memory up to the device's opt-in
#: limit, in int64 / in int32 where the block's rows cannot overflow it;
#: "auto": "node" where the backend follows the row partition, else the
#: legacy rule ("shared" unless it needs more than max_shared_groups blocks)
HISTOGRAM_KERNELS = ("auto", "global", "shared", "node", "node32")
#: environment variable that picks the default histogram kernel
HISTOGRAM_KERNEL_ENV = "GPUTREE_HIST_KERNEL"
#: shared memory a block may opt in to on the emulator (Hopper's limit)
EMULATED_SHARED_OPTIN_BYTES = 227 * 1024
#: without opt-in a block gets at most this much dynamic shared memory
DEFAULT_SHARED_BYTES = 48 * 1024
#: shared bytes the by-node kernels keep for their static arrays
_STATIC_SHARED_BYTES = 1024
#: channels a narrow (int32) block can check: GT_NARROW_MAX_CHANNELS
NARROW_MAX_CHANNELS = 8
#: --fmad=false: no contraction into fused multiply-adds (same rounding as the host)
NVRTC_OPTIONS = ("--std=c++17", "--fmad=false")


def kernel_dir() -> Path:
    """Folder holding ``common.cuh`` and the ``.cu`` files."""
    package = Path(__file__).resolve().parents[2]
    for candidate in (package / "kernels", package.parent / "kernels"):
        if (candidate / "common.cuh").is_file():
            return candidate
    raise FileNotFoundError(f"gputree's CUDA C kernels were not found next to {package}")


def kernel_source() -> str:
    """All kernel files as one CUDA C text, quoted includes expanded once each
    (so a compile cache keyed on the text sees header changes too)."""
    from .emulator import expand_includes

    directory = kernel_dir()
    text = "\n".join((directory / name).read_text() for name in KERNEL_FILES)
    return expand_includes(text, [directory])


@functools.lru_cache(maxsize=None)
def load_module(runtime: str):
    """The compiled kernel module for ``runtime`` ("cupy" or "emulator"), cached."""
    if runtime == "cupy":
        import cupy

        return cupy.RawModule(code=kernel_source(), options=NVRTC_OPTIONS)
    if runtime == "emulator":
        from .emulator import EmulatedModule

        return EmulatedModule(kernel_source())
    raise ValueError(f"runtime must be one of {RUNTIMES}, got {runtime!r}")


def array_module(runtime: str):
    """cupy for "cupy", numpy for "emulator"."""
    if runtime == "cupy":
        import cupy

        return cupy
    return np


def _binned(xp, X_binned):
    """(X_binned as an F-order uint8 or uint16 array, kernel name suffix)."""
    wide = X_binned.dtype == X_BINNED_WIDE_DTYPE
    dtype = X_BINNED_WIDE_DTYPE if wide else X_BINNED_DTYPE
    return xp.asfortranarray(X_binned, dtype=dtype), "_u16" if wide else ""


def _require(array, name: str, dtype, ndim: int, order: str = "C"):
    """Raise ValueError unless ``array`` has ``dtype``, ``ndim`` and is contiguous
    in ``order`` ("C" or "F"); used for OUT/INOUT arrays that must not be copied."""
    flag = array.flags.c_contiguous if order == "C" else array.flags.f_contiguous
    if array.dtype != dtype or array.ndim != ndim or not flag:
        raise ValueError(f"{name} must be a {order}-contiguous {ndim}-d {np.dtype(dtype)} array, "
                         f"got {array.ndim}-d {array.dtype} (C={array.flags.c_contiguous}, "
                         f"F={array.flags.f_contiguous})")
    return array


@dataclass(frozen=True)
class NodeLaunch:
    """One launch of build_histograms_by_node: grid (x: slots' row chunks
    plus one spare block per slot, y: feature groups), the rows a block
    takes, the features of its shared slice, whether the slice is used
    (else global accumulation), whether its cells are int32, and its bytes."""
    grid: tuple
    rows_per_block: int
    features_per_group: int
    use_shared: bool
    narrow: bool
    shared_bytes: int


def plan_by_node(n_samples, n_features, n_bins, n_channels, n_build, *, shared_bytes,
                 max_blocks, min_rows, narrow=False):
    """The :class:`NodeLaunch` of a level: blocks of at least ``min_rows``
    rows, about ``max_blocks`` of them for all n_samples rows; as many
    features per block as ``shared_bytes`` holds (int32 cells when
    ``narrow`` and at most NARROW_MAX_CHANNELS channels, else int64); global
    accumulation when not even one feature's histogram fits."""
    narrow = bool(narrow) and n_channels <= NARROW_MAX_CHANNELS
    per_feature = n_bins * n_channels * np.dtype(np.int32 if narrow else STAT_DTYPE).itemsize
    features = min(n_features, shared_bytes // per_feature)
    use_shared = features >= 1
    if not use_shared:
        features, narrow = n_features, False
    rows = max(1, min_rows, math.ceil(n_samples / max(1, max_blocks)))
    grid = (math.ceil(n_samples / rows) + n_build, math.ceil(n_features / features))
    return NodeLaunch(grid, rows, features, use_shared, narrow,
                      features * per_feature if use_shared else 0)


def histogram_kernel_from_env():
    """The histogram kernel named by $GPUTREE_HIST_KERNEL (default "auto")."""
    return check_histogram_kernel(os.environ.get(HISTOGRAM_KERNEL_ENV, "auto"),
                                  f"${HISTOGRAM_KERNEL_ENV}")


def check_histogram_kernel(name, where="histogram_kernel"):
    """``name`` when it is one of HISTOGRAM_KERNELS, else a ValueError naming ``where``."""
    if name not in HISTOGRAM_KERNELS:
        raise ValueError(f"{where} must be one of {', '.join(HISTOGRAM_KERNELS)}, got {name!r}")
    return name


def device_limits(runtime: str):
    """(shared memory bytes a block may opt in to, multiprocessors) of the
    runtime's device (the emulator: Hopper's 227 KiB and 16)."""
    if runtime == "cupy":
        import cupy

        attributes = cupy.cuda.Device().attributes
        return attributes["MaxSharedMemoryPerBlockOptin"], attributes["MultiProcessorCount"]
    return EMULATED_SHARED_OPTIN_BYTES, 16


class CudaKernels:
    """Typed launchers of the CUDA C primitives for one runtime.

    Arrays are of the runtime's array module ``xp``; IN arrays are converted to
    the kernel's dtype/order when needed, OUT/INOUT arrays must already match.

    Parameters
    ----------
    runtime : "cupy" or "emulator"
    threads_per_block : int
        Block size of every launch.
    max_blocks : int
        Cap on a launch's blocks along its row axis (and tree axis); kernels
        grid-stride past it.
    shared_mem_bytes : int
        Dynamic shared memory a block of the row-walking histogram kernel may
        use (no opt-in: at most 48 KiB on a real GPU).
    histogram_kernel : one of HISTOGRAM_KERNELS
        Which histogram kernel builds a level (all give the same sums; see
        HISTOGRAM_KERNELS). Settable later.
    max_shared_groups : int
        The legacy rule: the row-walking kernel uses shared slices unless
        they would need more than this many blocks per row chunk (every such
        block rescans ``positions``).
    node_shared_bytes : int, optional
        Shared memory a by-node histogram block may use (default: the
        device's opt-in limit less a little for static arrays).
    node_max_blocks, node_min_rows : int, optional
        The by-node kernels take blocks of at least ``node_min_rows`` rows
        (default 4 x threads_per_block), about ``node_max_blocks`` for all
        rows (default 4 per multiprocessor).
    """

    def __init__(self, runtime: str, *, threads_per_block: int = 256, max_blocks: int = 4096,
                 shared_mem_bytes: int = DEFAULT_SHARED_BYTES, histogram_kernel: str = "auto",
                 max_shared_groups: int = 64, node_shared_bytes: int | None = None,
                 node_max_blocks: int | None = None, node_min_rows: int | None = None):
        self.runtime = runtime
        self.module = load_module(runtime)
        self.xp = array_module(runtime)
        self.threads_per_block = threads_per_block
        self.max_blocks = max_blocks
        self.shared_mem_bytes = shared_mem_bytes
        self.histogram_kernel = histogram_kernel
        self.max_shared_groups = max_shared_groups
        optin, multiprocessors = device_limits(runtime)
        self.node_shared_bytes = (optin - _STATIC_SHARED_BYTES if node_shared_bytes is None
                                  else node_shared_bytes)
        self.node_max_blocks = node_max_blocks or 4 * multiprocessors
        self.node_min_rows = node_min_rows or 4 * threads_per_block
        self._opted_in = {}

    @property
    def histogram_kernel(self):
        """The histogram kernel option (one of HISTOGRAM_KERNELS)."""
        return self._histogram_kernel

    @histogram_kernel.setter
    def histogram_kernel(self, name):
        self._histogram_kernel = check_histogram_kernel(name)

    @property
    def follows_row_partition(self):
        """Whether build_histograms can use a followed row partition."""
        return self.histogram_kernel in ("auto", "node", "node32")

    def histogram_variant(self, followed: bool):
        """The kernel a level is built with: "node" or "node32" (by node),
        "shared" or "global" (every row), or "rows" (the legacy rule picks
        shared or global). ``followed``: the row partition of the level is
        at hand."""
        if self.histogram_kernel == "auto":
            return "node" if followed else "rows"
        return self.histogram_kernel

    def _blocks(self, n_items: int, cap: int | None = None) -> int:
        """Blocks along x to cover n_items threads, at most ``cap`` (default max_blocks)."""
        return max(1, min(math.ceil(n_items / self.threads_per_block), cap or self.max_blocks))

    def _launch(self, name: str, grid, args, shared_mem: int = 0):
        function = self.module.get_function(name)
        if self.runtime == "cupy" and shared_mem > self._opted_in.get(name, DEFAULT_SHARED_BYTES):
            function.max_dynamic_shared_size_bytes = shared_mem  # the opt-in beyond 48 KiB
            self._opted_in[name] = shared_mem
        function(grid, (self.threads_per_block,), args, shared_mem=shared_mem)

    def map_to_bins(self, X, thresholds, is_categorical, missing_bin: int, out=None):
        """Bin raw features.

        X float64 (n_samples, n_features); thresholds float64 (n_features,
        n_thresholds) padded with +inf; is_categorical uint8 (n_features,);
        ``out`` optional (n_samples, n_features) F-order of
        ``bin_dtype(missing_bin + 1)``. Returns X_binned uint8 or uint16
        (n_samples, n_features), Fortran order.
        """
        xp = self.xp
        X = xp.ascontiguousarray(X, dtype=X_DTYPE)
        thresholds = xp.ascontiguousarray(thresholds, dtype=THRESHOLD_DTYPE)
        is_categorical = xp.ascontiguousarray(is_categorical, dtype=np.uint8)
        n_samples, n_features = X.shape
        dtype = bin_dtype(missing_bin + 1)
        if out is None:
            out = xp.empty((n_samples, n_features), dtype=dtype, order="F")
        _require(out, "out", dtype, 2, "F")
        if out.size:
            suffix = _binned(xp, out)[1]
            self._launch("map_to_bins" + suffix, (self._blocks(out.size),), (
                X, thresholds, is_categorical, out, np.int32(n_samples), np.int32(n_features),
                np.int32(thresholds.shape[1]), np.int32(missing_bin)))
        return out

    def _histogram_groups(self, n_build: int, n_features: int, n_bins: int, n_channels: int,
                          mode: str = "rows"):
        """(nodes_per_group, features_per_group, use_shared) for one launch of
        the row-walking kernel; ``mode`` "shared", "global" or "rows" (the
        legacy rule)."""
        slots = self.shared_mem_bytes // (n_bins * n_channels * np.dtype(STAT_DTYPE).itemsize)
        if mode != "global" and slots >= 1:
            features = min(n_features, slots)
            nodes = max(1, min(n_build, slots // features))
            n_groups = math.ceil(n_build / nodes) * math.ceil(n_features / features)
            if mode == "shared" or n_groups <= self.max_shared_groups:
                return nodes, features, True
        elif mode == "shared":
            raise ValueError(f"one feature's histogram ({n_bins} bins x {n_channels} channels) "
                             f"does not fit in {self.shared_mem_bytes} bytes of shared memory")
        return n_build, n_features, False

    def build_histograms(self, X_binned, stats, positions, level_start: int, node_to_build,
                         n_build: int, n_bins: int, out=None, segments=None):
        """Histograms of every node of a level that needs building, in one launch.

        X_binned uint8 or uint16 (n_samples, n_features) F-order; stats int64
        (n_samples, n_channels); positions int32 (n_samples,); node_to_build int32
        (n_level_nodes,) build slot of each level node or -1; ``out`` optional
        pre-zeroed int64 (n_build, n_features, n_bins, n_channels), added to;
        ``segments`` optional :class:`~.row_partition.RowSegments` of the
        level (the by-node kernels find them from positions without).
        Returns hist int64 (n_build, n_features, n_bins, n_channels).
        """
        xp = self.xp
        X_binned, suffix = _binned(xp, X_binned)
        stats = xp.ascontiguousarray(stats, dtype=STAT_DTYPE)
        positions = xp.ascontiguousarray(positions, dtype=NODE_DTYPE)
        node_to_build = xp.ascontiguousarray(node_to_build, dtype=NODE_DTYPE)
        (n_samples, n_features), n_channels = X_binned.shape, stats.shape[1]
        if out is None:
            out = xp.zeros((n_build, n_features, n_bins, n_channels), dtype=STAT_DTYPE)
        _require(out, "out", STAT_DTYPE, 4)
        if out.size == 0 or n_samples == 0:
            return out
        variant = self.histogram_variant(segments is not None)
        if variant in ("node", "node32"):
            if segments is None:
                segments = segments_from_positions(xp, positions, level_start,
                                                   node_to_build.shape[0])
            self._build_by_node(X_binned, suffix, stats, positions, segments, node_to_build,
                                n_build, n_bins, out, variant == "node32")
            return out
        nodes, features, shared = self._histogram_groups(n_build, n_features, n_bins, n_channels,
                                                         variant)
        y, z = math.ceil(n_features / features), math.ceil(n_build / nodes)
        grid = (self._blocks(n_samples, max(1, self.max_blocks // (y * z))), y, z)
        shared_mem = nodes * features * n_bins * n_channels * np.dtype(STAT_DTYPE).itemsize if shared else 0
        self._launch("build_histograms" + suffix, grid, (
            X_binned, stats, positions, node_to_build, out, np.int32(n_samples),
            np.int32(n_features), np.int32(n_channels), np.int32(n_bins), np.int32(level_start),
            np.int32(node_to_build.shape[0]), np.int32(n_build), np.int32(nodes),
            np.int32(features), np.int32(shared)), shared_mem)
        return out

    def plan_by_node(self, n_samples, n_features, n_bins, n_channels, n_build, narrow=False):
        """This configuration's :func:`plan_by_node` of a level."""
        return plan_by_node(n_samples, n_features, n_bins, n_channels, n_build,
                            shared_bytes=self.node_shared_bytes, max_blocks=self.node_max_blocks,
                            min_rows=self.node_min_rows, narrow=narrow)

    def _build_by_node(self, X_binned, suffix, stats, positions, segments, node_to_build,
                       n_build, n_bins, out, narrow):
        """build_histograms_by_node(32) of a level: plan the build slots'
        blocks (one launch and a scan), then the histograms (one launch)."""
        xp = self.xp
        (n_samples, n_features), n_channels = X_binned.shape, stats.shape[1]
        plan = self.plan_by_node(n_samples, n_features, n_bins, n_channels, n_build, narrow)
        n_level = node_to_build.shape[0]
        slots = xp.zeros((4, n_build), dtype=NODE_DTYPE)
        self._launch("plan_histogram_slots", (self._blocks(n_level),), (
            segments.begin, segments.end, node_to_build, slots, np.int32(n_level),
            np.int32(segments.level_start), np.int32(n_build), np.int32(plan.rows_per_block)))
        slot_block_end = xp.cumsum(slots[3], dtype=NODE_DTYPE)
        identity = segments.order is None
        order = slot_block_end if identity else segments.order  # unread for the identity
        name = "build_histograms_by_node" + ("32" if plan.narrow else "") + suffix
        self._launch(name, plan.grid, (
            X_binned, stats, positions, order, slots, slot_block_end, out, np.int32(n_samples),
            np.int32(n_features), np.int32(n_channels), np.int32(n_bins), np.int32(n_build),
            np.int32(plan.rows_per_block), np.int32(plan.features_per_group),
            np.int32(plan.use_shared), np.int32(identity)), plan.shared_bytes)

    def partition_rows(self, segments, positions, split_feature, left_child, next_start: int,
                       scan, new_order, next_begin, next_end):
        """Stable partition of the rows of a level's split nodes (after
        update_positions moved them): kernels/row_partition.cu.

        segments: the level's :class:`~.row_partition.RowSegments`;
        positions int32 (n_samples,) updated; split_feature, left_child int32
        (n_level,); scan OUT int32 (n_samples,) scratch; new_order OUT int32
        (n_samples,); next_begin, next_end OUT int32 (n_next,) the next
        level's segments (n_next = 2 n_level).
        """
        n_samples, n_level, n_next = positions.shape[0], split_feature.shape[0], next_begin.shape[0]
        identity = segments.order is None
        order = scan if identity else segments.order  # unread for the identity
        level = (order, segments.begin, segments.end, split_feature, left_child)
        rows = (np.int32(n_samples), np.int32(n_level), np.int32(identity))
        flags = new_order  # the flags live where the new order goes; the scan is read after
        grid = (self._blocks(n_samples),)
        self._launch("partition_flags", grid, (*level, positions, flags, *rows))
        self.xp.cumsum(flags, dtype=NODE_DTYPE, out=scan)
        self._launch("partition_scatter", grid, (*level, scan, new_order, *rows))
        self._launch("partition_segments", (self._blocks(n_level),), (
            *level, scan, next_begin, next_end, np.int32(n_level), np.int32(next_start),
            np.int32(n_next)))

    def _left_sets(self, sets):
        """The four arrays of a LeftSets (bitset, words, start, n_words) as
        the kernels take them: contiguous, of their dtypes."""
        xp = self.xp
        return (xp.ascontiguousarray(sets[0], dtype=BITSET_DTYPE).reshape(-1, BITSET_WORDS),
                xp.ascontiguousarray(sets[1], dtype=BITSET_DTYPE).reshape(-1),
                xp.ascontiguousarray(sets[2], dtype=WORD_START_DTYPE),
                xp.ascontiguousarray(sets[3], dtype=WORD_COUNT_DTYPE))

    def update_positions(self, X_binned, positions, level_start: int, split_feature,
                         split_sets, left_child):
        """Move the rows of split level nodes to their children, in place.

        X_binned uint8 or uint16 (n_samples, n_features) F-order; positions
        INOUT int32 (n_samples,); split_feature int32 (n_level_nodes,) (-1 =
        not split); split_sets the LeftSets (gputree.tree) of the
        n_level_nodes splits; left_child int32 (n_level_nodes,). Returns
        ``positions``.
        """
        xp = self.xp
        X_binned, suffix = _binned(xp, X_binned)
        _require(positions, "positions", NODE_DTYPE, 1)
        split_feature = xp.ascontiguousarray(split_feature, dtype=FEATURE_DTYPE)
        sets = self._left_sets(split_sets)
        left_child = xp.ascontiguousarray(left_child, dtype=NODE_DTYPE)
        if positions.size and split_feature.size:
            self._launch("update_positions" + suffix, (self._blocks(positions.size),), (
                X_binned, positions, split_feature, *sets, left_child,
                np.int32(positions.size), np.int32(level_start), np.int32(split_feature.size)))
        return positions

    def predict_leaves(self, X_binned, node_feature, node_sets, node_left, tree_roots, out=None):
        """Leaf reached by every row in every tree of a concatenated batch.

        X_binned uint8 or uint16 (n_samples, n_features) F-order; node_feature
        int32 (n_total_nodes,) (-1 = leaf); node_sets the LeftSets
        (gputree.tree) of the n_total_nodes nodes;
        node_left int32 (n_total_nodes,); tree_roots int32 (n_trees,); ``out``
        optional int32 (n_samples, n_trees). Returns leaves int32 (n_samples,
        n_trees): global node ids.
        """
        xp = self.xp
        X_binned, suffix = _binned(xp, X_binned)
        node_feature = xp.ascontiguousarray(node_feature, dtype=FEATURE_DTYPE)
        sets = self._left_sets(node_sets)
        node_left = xp.ascontiguousarray(node_left, dtype=NODE_DTYPE)
        tree_roots = xp.ascontiguousarray(tree_roots, dtype=NODE_DTYPE)
        n_samples, n_trees = X_binned.shape[0], tree_roots.size
        if out is None:
            out = xp.empty((n_samples, n_trees), dtype=NODE_DTYPE)
        _require(out, "out", NODE_DTYPE, 2)
        if out.size:
            grid = (self._blocks(n_samples), min(n_trees, self.max_blocks, 65535))
            self._launch("predict_leaves" + suffix, grid, (
                X_binned, node_feature, *sets, node_left, tree_roots, out,
                np.int32(n_samples), np.int32(n_trees)))
        return out


@functools.lru_cache(maxsize=None)
def get_kernels(runtime: str) -> CudaKernels:
    """The default-configured :class:`CudaKernels` of ``runtime`` (the
    histogram kernel from $GPUTREE_HIST_KERNEL), cached."""
    return CudaKernels(runtime, histogram_kernel=histogram_kernel_from_env())
