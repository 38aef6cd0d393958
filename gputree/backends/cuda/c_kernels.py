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
from pathlib import Path

import numpy as np

from ..._dtypes import (BITSET_DTYPE, BITSET_WORDS, FEATURE_DTYPE, NODE_DTYPE, STAT_DTYPE,
                       THRESHOLD_DTYPE, WORD_COUNT_DTYPE, WORD_START_DTYPE, X_BINNED_DTYPE,
                       X_BINNED_WIDE_DTYPE, X_DTYPE, bin_dtype)

RUNTIMES = ("cupy", "emulator")
KERNEL_FILES = ("binning.cu", "histogram.cu", "partition.cu", "predict.cu")
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
        Dynamic shared memory a histogram block may use; at most 48 KiB on a
        real GPU (no opt-in to more is made).
    histogram_mode : "auto", "shared" or "global"
        Where histogram blocks accumulate: a shared-memory slice per block
        (flushed to global memory with atomics) or global memory directly.
        "auto" uses shared memory unless the slices would need more than
        ``max_shared_groups`` blocks per row chunk (every such block rescans
        ``positions``).
    max_shared_groups : int
        See ``histogram_mode``.
    """

    def __init__(self, runtime: str, *, threads_per_block: int = 256, max_blocks: int = 4096,
                 shared_mem_bytes: int = 48 * 1024, histogram_mode: str = "auto",
                 max_shared_groups: int = 64):
        if histogram_mode not in ("auto", "shared", "global"):
            raise ValueError(f"histogram_mode must be auto, shared or global, got {histogram_mode!r}")
        self.runtime = runtime
        self.module = load_module(runtime)
        self.xp = array_module(runtime)
        self.threads_per_block = threads_per_block
        self.max_blocks = max_blocks
        self.shared_mem_bytes = shared_mem_bytes
        self.histogram_mode = histogram_mode
        self.max_shared_groups = max_shared_groups

    def _blocks(self, n_items: int, cap: int | None = None) -> int:
        """Blocks along x to cover n_items threads, at most ``cap`` (default max_blocks)."""
        return max(1, min(math.ceil(n_items / self.threads_per_block), cap or self.max_blocks))

    def _launch(self, name: str, grid, args, shared_mem: int = 0):
        self.module.get_function(name)(grid, (self.threads_per_block,), args, shared_mem=shared_mem)

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

    def _histogram_groups(self, n_build: int, n_features: int, n_bins: int, n_channels: int):
        """(nodes_per_group, features_per_group, use_shared) for one histogram launch."""
        slots = self.shared_mem_bytes // (n_bins * n_channels * np.dtype(STAT_DTYPE).itemsize)
        if self.histogram_mode != "global" and slots >= 1:
            features = min(n_features, slots)
            nodes = max(1, min(n_build, slots // features))
            n_groups = math.ceil(n_build / nodes) * math.ceil(n_features / features)
            if self.histogram_mode == "shared" or n_groups <= self.max_shared_groups:
                return nodes, features, True
        elif self.histogram_mode == "shared":
            raise ValueError(f"one feature's histogram ({n_bins} bins x {n_channels} channels) "
                             f"does not fit in {self.shared_mem_bytes} bytes of shared memory")
        return n_build, n_features, False

    def build_histograms(self, X_binned, stats, positions, level_start: int, node_to_build,
                         n_build: int, n_bins: int, out=None):
        """Histograms of every node of a level that needs building, in one launch.

        X_binned uint8 or uint16 (n_samples, n_features) F-order; stats int64
        (n_samples, n_channels); positions int32 (n_samples,); node_to_build int32
        (n_level_nodes,) build slot of each level node or -1; ``out`` optional
        pre-zeroed int64 (n_build, n_features, n_bins, n_channels), added to.
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
        nodes, features, shared = self._histogram_groups(n_build, n_features, n_bins, n_channels)
        y, z = math.ceil(n_features / features), math.ceil(n_build / nodes)
        grid = (self._blocks(n_samples, max(1, self.max_blocks // (y * z))), y, z)
        shared_mem = nodes * features * n_bins * n_channels * np.dtype(STAT_DTYPE).itemsize if shared else 0
        self._launch("build_histograms" + suffix, grid, (
            X_binned, stats, positions, node_to_build, out, np.int32(n_samples),
            np.int32(n_features), np.int32(n_channels), np.int32(n_bins), np.int32(level_start),
            np.int32(node_to_build.shape[0]), np.int32(n_build), np.int32(nodes),
            np.int32(features), np.int32(shared)), shared_mem)
        return out

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
    """The default-configured :class:`CudaKernels` of ``runtime``, cached."""
    return CudaKernels(runtime)
