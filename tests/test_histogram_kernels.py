"""The histogram kernel variants and the row partition (kernels/histogram.cu,
kernels/row_partition.cu), run on the CPU emulator against plain numpy.

Every variant must give the reference's int64 sums exactly, for every level
shape: one node, 2^k nodes, skewed node sizes, 8- and 16-bit bins, 1 to 3
channels; with one block or many per node, features in one shared slice or
in groups, in global memory, and (``node32``) in 32-bit cells where a block's
rows cannot overflow them and int64 where they can. The row partition kept
level by level must group every node's rows exactly as a stable sort of the
positions does.

The kernel-level tests run on the GPU (cupy) when GPUTREE_TEST_DEVICE=cuda,
else on the emulator; the row partition's on the emulator.
"""
import os

import numpy as np
import pytest

from gputree.backends.cuda import c_kernels
from gputree.backends.cuda.backend import CUDABackend
from gputree.backends.cuda.emulator import EmulatorUnavailableError
from gputree.backends.cuda.row_partition import segments_from_positions

from test_cuda_c_kernels import random_bitsets, ref_build_histograms, ref_update_positions

try:
    c_kernels.load_module("emulator")
except EmulatorUnavailableError as exc:  # pragma: no cover - depends on the machine
    pytest.skip(f"CUDA C emulator unavailable: {exc}", allow_module_level=True)

#: where the kernel-level tests run
RUNTIME = "cupy" if os.environ.get("GPUTREE_TEST_DEVICE") == "cuda" else "emulator"


def on_device(case):
    """A case's arrays on RUNTIME's device (numpy arrays as they are on the emulator)."""
    xp = c_kernels.array_module(RUNTIME)
    return tuple(xp.asarray(a, order="F" if a.ndim == 2 and a.flags.f_contiguous else "C")
                 if isinstance(a, np.ndarray) else a for a in case)


def on_host(array):
    return array.get() if hasattr(array, "get") else array

VARIANTS = ("global", "shared", "node", "node32")

#: by-node launch shapes: (threads_per_block, node_min_rows, node_max_blocks,
#: node_shared_bytes as a number of int64 feature histograms, None = 227 KiB)
NODE_LAUNCHES = [(256, None, None, None), (32, 7, 64, 1), (64, 50, 3, 2), (128, 1, 1000, 0)]


def kernels(variant, threads=256, min_rows=None, max_blocks=None, features=None, n_bins=1,
            n_channels=1):
    shared = None if features is None else features * n_bins * n_channels * 8
    return c_kernels.CudaKernels(RUNTIME, threads_per_block=threads, histogram_kernel=variant,
                                 node_min_rows=min_rows, node_max_blocks=max_blocks,
                                 node_shared_bytes=shared)


def level_case(rng, n_samples, n_features, n_bins, n_channels, node_sizes, stat_range):
    """A level of len(node_sizes) nodes whose rows are shuffled, with a few
    finished rows (-1) and rows of the previous level; half the nodes (at
    least one) are built, in random slots."""
    n_level = len(node_sizes)
    level_start = n_level - 1
    nodes = np.repeat(np.arange(n_level), node_sizes) + level_start
    positions = np.concatenate([nodes, np.full(n_samples - nodes.size, -1)])
    positions[rng.random(n_samples) < 0.05] = max(level_start - 1, -1)
    positions = rng.permutation(positions).astype(np.int32)
    node_to_build = np.full(n_level, -1, np.int32)
    built = rng.permutation(n_level)[:max(1, n_level // 2)]
    node_to_build[built] = rng.permutation(built.size)
    dtype = np.uint8 if n_bins <= 256 else np.uint16
    X = np.asfortranarray(rng.integers(0, n_bins, (n_samples, n_features)).astype(dtype))
    stats = rng.integers(-stat_range, stat_range + 1, (n_samples, n_channels))
    return X, stats, positions, level_start, node_to_build, built.size, n_bins


#: (n_samples, n_features, n_bins, n_channels, node sizes)
LEVELS = [(500, 3, 256, 2, [450]),                        # one node
          (700, 4, 17, 1, [80] * 8),                      # 2^3 nodes
          (900, 2, 9, 3, [20] * 32),                      # 2^5 nodes
          (1000, 3, 64, 2, [700, 3, 0, 150, 1, 90, 40, 5]),  # skewed, an empty node
          (600, 2, 1500, 2, [300, 250]),                  # 16-bit bins
          (400, 5, 3000, 1, [1, 380])]                    # 16-bit bins, skewed


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("n_samples, n_features, n_bins, n_channels, sizes", LEVELS)
def test_every_variant_equals_the_reference(variant, n_samples, n_features, n_bins, n_channels,
                                            sizes):
    rng = np.random.default_rng(n_samples + n_bins)
    case = level_case(rng, n_samples, n_features, n_bins, n_channels, sizes, 2**62)
    expected = ref_build_histograms(*case)
    launches = NODE_LAUNCHES if variant.startswith("node") else NODE_LAUNCHES[:1]
    for threads, min_rows, max_blocks, features in launches:
        k = kernels(variant, threads, min_rows, max_blocks, features, n_bins, n_channels)
        np.testing.assert_array_equal(on_host(k.build_histograms(*on_device(case))), expected)


@pytest.mark.parametrize("stat_range, expect_narrow", [(3, True), (2**40, False)])
@pytest.mark.parametrize("n_channels", [1, 2, 3])
def test_node32_equals_the_reference_with_narrow_and_wide_channels(stat_range, expect_narrow,
                                                                   n_channels):
    """Small statistics fit 32-bit cells; large ones cannot, and go to int64."""
    rng = np.random.default_rng(n_channels)
    case = level_case(rng, 3000, 3, 255, n_channels, [1200, 900, 400, 300], stat_range)
    X, stats = case[0], case[1]
    if n_channels > 1:  # one count channel beside the others: mixed within a block
        stats[:, -1] = 1
    k = kernels("node32", 64, 300, 4)
    plan = k.plan_by_node(X.shape[0], X.shape[1], 255, n_channels, case[5], narrow=True)
    assert plan.narrow and plan.use_shared
    assert plan.rows_per_block * stat_range < 2**31 or not expect_narrow
    np.testing.assert_array_equal(on_host(k.build_histograms(*on_device(case))),
                                  ref_build_histograms(*case))


def test_node32_on_the_overflow_boundary():
    """Rows whose |stats| sum to 2**31 - 1 stay in 32 bits; one more would
    overflow a 32-bit cell, and the sums are still exact."""
    for total in (2**31 - 1, 2**31, 2**31 + 5, -2**31 - 1, 2**45):
        n = 64
        stats = np.full((n, 1), total // n, np.int64)
        stats[0, 0] += total - stats.sum()
        positions = np.zeros(n, np.int32)
        X = np.zeros((n, 1), np.uint8, order="F")
        case = (X, stats, positions, 0, np.zeros(1, np.int32), 1, 2)
        got = on_host(kernels("node32", 32, 64, 1).build_histograms(*on_device(case)))
        np.testing.assert_array_equal(got, ref_build_histograms(*case))


def test_plan_by_node():
    plan = c_kernels.plan_by_node(7_040_000, 28, 256, 2, 1, shared_bytes=226 * 1024,
                                  max_blocks=528, min_rows=1024)
    assert plan.use_shared and plan.features_per_group == 28 and plan.grid[1] == 1
    assert plan.shared_bytes == 28 * 256 * 2 * 8 <= 226 * 1024
    assert plan.rows_per_block * (plan.grid[0] - 1) >= 7_040_000  # every row has a block
    narrow = c_kernels.plan_by_node(100, 28, 256, 3, 4, shared_bytes=48 * 1024, max_blocks=8,
                                    min_rows=1024, narrow=True)
    assert narrow.narrow and narrow.features_per_group == 16 and narrow.grid == (1 + 4, 2)
    wide = c_kernels.plan_by_node(100, 5, 65536, 3, 2, shared_bytes=227 * 1024, max_blocks=8,
                                  min_rows=1, narrow=True)
    assert not wide.use_shared and not wide.narrow and wide.features_per_group == 5
    assert not c_kernels.plan_by_node(10, 2, 4, 9, 1, shared_bytes=1024, max_blocks=1,
                                      min_rows=1, narrow=True).narrow  # > 8 channels


def test_histogram_kernel_option_and_environment(monkeypatch):
    with pytest.raises(ValueError, match="histogram_kernel must be one of"):
        kernels("fast")
    monkeypatch.setenv(c_kernels.HISTOGRAM_KERNEL_ENV, "nope")
    with pytest.raises(ValueError, match="GPUTREE_HIST_KERNEL must be one of"):
        c_kernels.histogram_kernel_from_env()
    monkeypatch.setenv(c_kernels.HISTOGRAM_KERNEL_ENV, "node32")
    assert c_kernels.histogram_kernel_from_env() == "node32"
    k = kernels("auto")
    assert k.histogram_variant(True) == "node" and k.histogram_variant(False) == "rows"
    k.histogram_kernel = "global"
    assert k.histogram_variant(True) == "global" and not k.follows_row_partition


# ---------------------------------------------------------------- row partition

def grow_levels(rng, backend, n_samples, n_features, n_bins, n_levels, n_channels=2):
    """Random levels numbered as grow_tree numbers them, through the
    backend's update_positions and build_histograms; yields (positions,
    level_start, n_level, segments followed, histograms, reference)."""
    X = np.asfortranarray(rng.integers(0, n_bins, (n_samples, n_features)).astype(np.uint8))
    stats = rng.integers(-2**40, 2**40, (n_samples, n_channels))
    positions = np.zeros(n_samples, np.int32)
    level_start, n_level = 0, 1
    for _ in range(n_levels):
        node_to_build = np.full(n_level, -1, np.int32)
        built = rng.permutation(n_level)[:max(1, (n_level + 1) // 2)]
        node_to_build[built] = np.arange(built.size)
        case = (X, stats, positions, level_start, node_to_build, built.size, n_bins)
        hist = backend.build_histograms(*case)
        partition = backend._partitions[id(positions)]
        yield positions, level_start, n_level, partition.segments, hist, ref_build_histograms(*case)
        split_feature = rng.integers(-1, n_features, n_level).astype(np.int32)
        split_feature[rng.integers(n_level)] = 0  # at least one split
        bitsets = random_bitsets(rng, n_level, n_bins)
        left_child = np.full(n_level, -1, np.int32)
        splits = np.flatnonzero(split_feature >= 0)
        left_child[splits] = level_start + n_level + 2 * np.arange(splits.size)
        expected = ref_update_positions(X, positions, level_start, split_feature, bitsets,
                                        left_child)
        backend.update_positions(X, positions, level_start, split_feature, bitsets, left_child)
        np.testing.assert_array_equal(positions, expected)
        level_start, n_level = level_start + n_level, 2 * splits.size


@pytest.mark.parametrize("variant", ["node", "node32"])
@pytest.mark.parametrize("n_samples, threads", [(1, 32), (600, 64), (2500, 256)])
def test_row_partition_follows_the_tree(variant, n_samples, threads):
    """At every level each node's rows are its segment of the partition, in
    ascending order (what a stable sort of the positions gives), and the
    histograms built from it equal the reference."""
    backend = CUDABackend("emulator", histogram_kernel=variant)
    backend.kernels = c_kernels.CudaKernels("emulator", threads_per_block=threads,
                                            histogram_kernel=variant, node_min_rows=16,
                                            node_max_blocks=8)
    rng = np.random.default_rng(n_samples)
    for positions, level_start, n_level, segments, hist, expected in grow_levels(
            rng, backend, n_samples, 4, 32, 6):
        assert segments is not None and segments.level_start == level_start
        np.testing.assert_array_equal(hist, expected)
        order = np.arange(n_samples) if segments.order is None else segments.order
        assert np.array_equal(np.sort(order), np.arange(n_samples))  # a permutation
        reference = segments_from_positions(np, positions, level_start, n_level)
        for k in range(n_level):
            rows = order[segments.begin[k]:segments.end[k]]
            np.testing.assert_array_equal(rows, np.flatnonzero(positions == level_start + k))
            np.testing.assert_array_equal(
                rows, reference.order[reference.begin[k]:reference.end[k]])


def test_row_partition_restarts_at_the_root_and_stops_when_not_followed():
    backend = CUDABackend("emulator", histogram_kernel="node")
    rng = np.random.default_rng(4)
    levels = list(zip(range(3), grow_levels(rng, backend, 300, 3, 16, 3)))
    positions = levels[-1][1][0]
    partition = backend._partitions[id(positions)]
    assert partition.level(0, 1) is None  # a level that is not the one followed
    X = np.zeros((300, 3), np.uint8, order="F")
    stats = np.ones((300, 1), np.int64)
    positions[:] = 0  # the next tree: the root starts over
    hist = backend.build_histograms(X, stats, positions, 0, np.zeros(1, np.int32), 1, 16)
    assert hist[0, :, 0, 0].tolist() == [300] * 3
    assert partition.segments.order is None and partition.segments.level_start == 0
    del positions, levels, partition
    assert not backend._partitions  # dropped with its positions
