"""The CUDA C kernels (kernels/*.cu), run on the CPU emulator through the same
wrappers the CUDA backend uses, against plain-numpy references.

Every kernel is integer-valued, so results must equal the references exactly,
on several launch shapes: partial blocks, grids smaller than the data (grid
stride), odd block sizes, shared and global histogram accumulation.
"""
from collections import deque

import numpy as np
import pytest

from gputree._dtypes import BITSET_WORDS, MAX_NARROW_N_BINS, bin_dtype, extension_words
from gputree.backends.cuda import c_kernels as cuda_kernels
from gputree.backends.cuda.emulator import EmulatorUnavailableError
from gputree.tree import LeftSets

try:
    cuda_kernels.load_module("emulator")
except EmulatorUnavailableError as exc:  # pragma: no cover - depends on the machine
    pytest.skip(f"CUDA C emulator unavailable: {exc}", allow_module_level=True)

#: launch shapes: (threads_per_block, max_blocks)
LAUNCHES = [(256, 4096), (32, 3), (50, 2), (1024, 1)]


def kernels(threads_per_block=256, max_blocks=4096, **options):
    return cuda_kernels.CudaKernels("emulator", threads_per_block=threads_per_block,
                                    max_blocks=max_blocks, **options)


# ---------------------------------------------------------------- references

def ref_map_to_bins(X, thresholds, is_categorical, missing_bin):
    out = np.empty(X.shape, dtype=np.uint8 if missing_bin < 256 else np.uint16)
    for f, row in enumerate(thresholds):
        x = X[:, f]
        pos = np.searchsorted(row, x, side="left")
        if is_categorical[f]:
            hit = (pos < row.size) & (row[np.minimum(pos, row.size - 1)] == x)
            pos = np.where(hit, pos, missing_bin)
        out[:, f] = np.where(np.isnan(x), missing_bin, pos)
    return out


def ref_build_histograms(X_binned, stats, positions, level_start, node_to_build, n_build, n_bins):
    hist = np.zeros((n_build, X_binned.shape[1], n_bins, stats.shape[1]), dtype=np.int64)
    slot = ref_build_slots(positions, level_start, node_to_build)
    rows = slot >= 0
    for f in range(X_binned.shape[1]):
        np.add.at(hist[:, f], (slot[rows], X_binned[rows, f]), stats[rows])
    return hist


def ref_build_slots(positions, level_start, node_to_build):
    k = positions.astype(np.int64) - level_start
    inside = (k >= 0) & (k < node_to_build.size)
    return np.where(inside, node_to_build[np.where(inside, k, 0)], -1)


def ref_child(X_binned, rows, feature, sets, nodes, left):
    """Child of each of ``rows`` at split ``nodes`` of the LeftSets ``sets``
    (per-row feature, nodes and left child)."""
    b = X_binned[rows, feature].astype(np.int64)
    bitset = sets.bitset[nodes]
    bit = (bitset[np.arange(rows.size), np.minimum(b >> 5, 7)] >> (b & 31)) & 1
    # bins beyond the 256-bit bitmap: the range 256 .. word 8, and bin word 9
    high = (b <= bitset[:, 8]) | (b == bitset[:, 9])
    # ... and the node's words beyond: word j holds bins 256 + 32 j ..
    j = (b - 256) >> 5
    inside = (b >= 256) & (j < sets.n_words[nodes])
    word = sets.words[np.where(inside, sets.start[nodes] + j, 0)] if sets.words.size else 0
    high |= inside & (((word >> (b & 31)) & 1) == 1)
    return left + (1 - np.where(b < 256, bit, high).astype(np.int64))


def ref_update_positions(X_binned, positions, level_start, split_feature, split_sets, left_child):
    out = positions.copy()
    k = positions.astype(np.int64) - level_start
    inside = (k >= 0) & (k < split_feature.size)
    rows = np.flatnonzero(inside)
    rows = rows[split_feature[k[rows]] >= 0]
    kk = k[rows]
    out[rows] = ref_child(X_binned, rows, split_feature[kk], split_sets, kk, left_child[kk])
    return out


def ref_predict_leaves(X_binned, node_feature, node_sets, node_left, tree_roots):
    leaves = np.empty((X_binned.shape[0], tree_roots.size), dtype=np.int32)
    for t, root in enumerate(tree_roots):
        node = np.full(X_binned.shape[0], root, dtype=np.int64)
        rows = np.flatnonzero(node_feature[node] >= 0)
        while rows.size:
            at = node[rows]
            node[rows] = ref_child(X_binned, rows, node_feature[at], node_sets, at, node_left[at])
            rows = rows[node_feature[node[rows]] >= 0]
        leaves[:, t] = node
    return leaves


# ---------------------------------------------------------------- data

def random_thresholds(rng, n_features, n_thresholds, is_categorical):
    """Sorted thresholds (or category values) per feature, padded with +inf."""
    thresholds = np.full((n_features, n_thresholds), np.inf)
    for f in range(n_features):
        n_real = rng.integers(0, n_thresholds + 1)
        if is_categorical[f]:
            values = rng.choice(np.arange(2 * n_thresholds + 2), size=n_real, replace=False)
        else:
            values = np.unique(rng.normal(size=n_real).round(1))
        thresholds[f, :values.size] = np.sort(values)
    return thresholds


def random_features(rng, n_samples, thresholds, is_categorical):
    """Raw values hitting thresholds exactly, NaN, +-inf and unseen categories."""
    n_features, n_thresholds = thresholds.shape
    X = rng.normal(size=(n_samples, n_features)).round(1)
    finite = np.where(np.isfinite(thresholds), thresholds, 0.0)
    on_threshold = rng.random(X.shape) < 0.3
    X[on_threshold] = finite[np.nonzero(on_threshold)[1], rng.integers(0, max(n_thresholds, 1), on_threshold.sum())] \
        if n_thresholds else 0.0
    for f in np.flatnonzero(is_categorical):
        X[:, f] = np.where(rng.random(n_samples) < 0.5, X[:, f], rng.integers(0, 2 * n_thresholds + 4, n_samples))
    special = rng.choice([np.nan, np.inf, -np.inf], size=X.shape)
    return np.where(rng.random(X.shape) < 0.1, special, X)


def random_binned(rng, n_samples, n_features, n_bins):
    """uint8 codes up to 256 bins, uint16 beyond."""
    codes = rng.integers(0, n_bins, (n_samples, n_features))
    return np.asfortranarray(codes.astype(bin_dtype(n_bins)))


def random_level(rng, n_samples, level_start, n_level_nodes):
    """Positions inside and around a level (and -1 = finished rows)."""
    lo, hi = max(level_start - 3, -1), level_start + n_level_nodes + 3
    return rng.integers(lo, hi, n_samples).astype(np.int32)


def guarded(values, sentinel=0):
    """``values`` as a view with a valid-looking ``sentinel`` on each side, so a
    kernel reading one element out of bounds gives a wrong answer, not luck."""
    padded = np.full(values.size + 2, sentinel, dtype=values.dtype)
    padded[1:-1] = values
    return padded[1:-1]


def random_bitsets(rng, n_nodes, n_bins=MAX_NARROW_N_BINS):
    """Random LeftSets: bitmaps; with more than 256 bins, random range ends
    and extra bins (words 8 and 9) among the bins, 0 (none) for some nodes,
    and for about half the nodes random words beyond (bins 256 ..), from one
    to one more than the bins need (a bin past a node's words goes right);
    the words of the nodes in a shuffled order, each node's start into them."""
    words = rng.integers(0, 2**32, (n_nodes, BITSET_WORDS), dtype=np.uint64).astype(np.uint32)
    high = rng.integers(0, max(n_bins, 256), (n_nodes, 2)) * (rng.random((n_nodes, 2)) < 0.8)
    words[:, 8:] = np.where(high >= 256, high, 0) if n_bins > 256 else 0
    n_words = np.zeros(n_nodes, dtype=np.int32)
    if n_bins > 256:
        wanted = rng.integers(1, extension_words(n_bins) + 2, n_nodes)
        n_words = np.where(rng.random(n_nodes) < 0.5, wanted, 0).astype(np.int32)
    order = rng.permutation(n_nodes)
    start = np.zeros(n_nodes, dtype=np.int64)
    start[order] = np.concatenate([[0], np.cumsum(n_words[order])[:-1]])
    beyond = rng.integers(0, 2**32, int(n_words.sum()), dtype=np.uint64).astype(np.uint32)
    return LeftSets(words, beyond, start, n_words)


def random_forest(rng, n_trees, n_features, max_depth, n_bins=MAX_NARROW_N_BINS):
    """Concatenated breadth-first trees: right child = left child + 1."""
    feature, left, roots = [], [], []
    for _ in range(n_trees):
        roots.append(len(feature))
        feature.append(-1)
        left.append(-1)
        queue = deque([(roots[-1], 0)])
        while queue:
            node, depth = queue.popleft()
            if depth < max_depth and rng.random() < 0.8:
                feature[node], left[node] = rng.integers(n_features), len(feature)
                for _child in range(2):
                    queue.append((len(feature), depth + 1))
                    feature.append(-1)
                    left.append(-1)
    return (np.array(feature, np.int32), random_bitsets(rng, len(feature), n_bins),
            np.array(left, np.int32), np.array(roots, np.int32))


# ---------------------------------------------------------------- map_to_bins

@pytest.mark.parametrize("launch", LAUNCHES)
@pytest.mark.parametrize("max_bins, n_samples, n_features",
                         [(2, 1, 1), (16, 333, 4), (255, 1000, 3), (700, 800, 3)])
def test_map_to_bins_matches_reference(launch, max_bins, n_samples, n_features):
    rng = np.random.default_rng(max_bins + n_samples)
    is_categorical = (np.arange(n_features) % 2 == 1).astype(np.uint8)
    thresholds = random_thresholds(rng, n_features, max_bins - 1, is_categorical)
    X = random_features(rng, n_samples, thresholds, is_categorical)
    got = kernels(*launch).map_to_bins(X, thresholds, is_categorical, max_bins)
    assert got.flags.f_contiguous and got.dtype == (np.uint8 if max_bins <= 255 else np.uint16)
    np.testing.assert_array_equal(got, ref_map_to_bins(X, thresholds, is_categorical, max_bins))


def test_map_to_bins_special_values():
    thresholds = np.array([[-1.0, 0.0, 2.0, np.inf], [1.0, 3.0, 7.0, np.inf]])
    X = np.array([[np.nan, np.nan], [-np.inf, 3.0], [0.0, 4.0], [np.inf, 7.0], [2.0, -np.inf]])
    is_categorical = np.array([0, 1], np.uint8)
    got = kernels().map_to_bins(X, thresholds, is_categorical, 5)
    np.testing.assert_array_equal(got, ref_map_to_bins(X, thresholds, is_categorical, 5))
    assert got[0, 0] == got[0, 1] == 5  # NaN -> missing bin
    assert got[2, 1] == got[4, 1] == 5  # unseen categories -> missing bin


# ---------------------------------------------------------------- build_histograms

#: (threads_per_block, max_blocks, histogram_kernel, slots): slots = (node, feature)
#: histograms per block's shared slice, None for the default 48 KiB
HIST_LAUNCHES = [(256, 4096, "auto", None), (64, 5, "shared", 1), (96, 3, "shared", 5),
                 (32, 2, "global", None), (128, 7, "auto", 2)]


def histogram_kernels(n_bins, n_channels, threads_per_block, max_blocks, mode, slots):
    options = {} if slots is None else {"shared_mem_bytes": slots * n_bins * n_channels * 8}
    return kernels(threads_per_block, max_blocks, histogram_kernel=mode, **options)


def random_histogram_case(rng, n_samples, n_features, n_bins, n_channels, n_level_nodes):
    level_start = n_level_nodes - 1  # as for a complete breadth-first level
    node_to_build = np.full(n_level_nodes, -1, np.int32)
    built = rng.permutation(n_level_nodes)[: max(1, n_level_nodes // 2 + 1)]
    node_to_build[built] = np.arange(built.size)
    stats = rng.integers(-2**62, 2**62, (n_samples, n_channels))  # sums wrap: still exact
    return (random_binned(rng, n_samples, n_features, n_bins), stats,
            random_level(rng, n_samples, level_start, n_level_nodes), level_start,
            guarded(node_to_build), built.size, n_bins)


@pytest.mark.parametrize("launch", HIST_LAUNCHES)
@pytest.mark.parametrize("n_samples, n_features, n_bins, n_channels, n_level_nodes",
                         [(1, 1, 3, 1, 1), (700, 3, 256, 2, 4), (515, 7, 17, 3, 8),
                          (300, 2, 5, 12, 16), (400, 2, 1500, 2, 2)])
def test_build_histograms_matches_reference(launch, n_samples, n_features, n_bins, n_channels,
                                            n_level_nodes):
    rng = np.random.default_rng(n_samples * n_bins)
    case = random_histogram_case(rng, n_samples, n_features, n_bins, n_channels, n_level_nodes)
    got = histogram_kernels(n_bins, n_channels, *launch).build_histograms(*case)
    np.testing.assert_array_equal(got, ref_build_histograms(*case))


@pytest.mark.parametrize("launch", HIST_LAUNCHES[:3])
def test_histogram_bins_sum_to_node_totals(launch):
    rng = np.random.default_rng(7)
    case = random_histogram_case(rng, 900, 5, MAX_NARROW_N_BINS, 2, 8)
    X_binned, stats, positions, level_start, node_to_build, n_build, n_bins = case
    hist = histogram_kernels(n_bins, 2, *launch).build_histograms(*case)
    slot = ref_build_slots(positions, level_start, node_to_build)
    for j in range(n_build):
        totals = stats[slot == j].sum(axis=0)
        for f in range(X_binned.shape[1]):
            np.testing.assert_array_equal(hist[j, f].sum(axis=0), totals)


def test_build_histograms_adds_to_out():
    rng = np.random.default_rng(3)
    case = random_histogram_case(rng, 200, 2, 9, 2, 2)
    first = kernels().build_histograms(*case)
    again = kernels().build_histograms(*case, out=first.copy())
    np.testing.assert_array_equal(again, 2 * first)


def test_children_partition_the_parent():
    """Subtraction trick: parent - left child == right child, exactly."""
    rng = np.random.default_rng(11)
    n_samples, n_features, n_bins = 800, 4, 33
    k = kernels(64, 4)
    X_binned = random_binned(rng, n_samples, n_features, n_bins)
    stats = rng.integers(-1000, 1000, (n_samples, 3))
    positions = np.zeros(n_samples, np.int32)
    parent = k.build_histograms(X_binned, stats, positions, 0, np.array([0], np.int32), 1, n_bins)
    k.update_positions(X_binned, positions, 0, np.array([2], np.int32), random_bitsets(rng, 1),
                       np.array([1], np.int32))
    children = k.build_histograms(X_binned, stats, positions, 1, np.array([0, 1], np.int32), 2, n_bins)
    assert set(np.unique(positions)) <= {1, 2}
    np.testing.assert_array_equal(parent[0] - children[0], children[1])


def test_build_histograms_rejects_wrong_out():
    rng = np.random.default_rng(5)
    case = random_histogram_case(rng, 10, 2, 4, 1, 1)
    with pytest.raises(ValueError, match="out"):
        kernels().build_histograms(*case, out=np.zeros((1, 2, 4, 1), np.float64))


# ---------------------------------------------------------------- update_positions

@pytest.mark.parametrize("launch", LAUNCHES)
@pytest.mark.parametrize("n_samples, n_features, n_level_nodes, n_bins",
                         [(1, 1, 1, 256), (257, 3, 4, 256), (1000, 6, 32, 256),
                          (700, 3, 8, 3000)])
def test_update_positions_matches_reference(launch, n_samples, n_features, n_level_nodes,
                                            n_bins):
    rng = np.random.default_rng(n_samples + n_level_nodes)
    X_binned = random_binned(rng, n_samples, n_features, n_bins)
    level_start = n_level_nodes - 1
    positions = random_level(rng, n_samples, level_start, n_level_nodes)
    split_feature = guarded(rng.integers(-1, n_features, n_level_nodes).astype(np.int32))
    split_sets = random_bitsets(rng, n_level_nodes, n_bins)
    left_child = (level_start + n_level_nodes + 2 * np.arange(n_level_nodes)).astype(np.int32)
    args = (X_binned, positions, level_start, split_feature, split_sets, left_child)
    expected = ref_update_positions(*args)
    got = kernels(*launch).update_positions(*args)
    assert got is positions
    np.testing.assert_array_equal(got, expected)


# ---------------------------------------------------------------- predict_leaves

@pytest.mark.parametrize("launch", LAUNCHES)
@pytest.mark.parametrize("n_samples, n_trees, max_depth, n_bins",
                         [(1, 1, 0, 256), (300, 3, 4, 256), (1000, 7, 8, 256), (500, 3, 5, 2000)])
def test_predict_leaves_matches_reference(launch, n_samples, n_trees, max_depth, n_bins):
    rng = np.random.default_rng(n_samples + n_trees)
    n_features = 5
    X_binned = random_binned(rng, n_samples, n_features, n_bins)
    forest = random_forest(rng, n_trees, n_features, max_depth, n_bins)
    got = kernels(*launch).predict_leaves(X_binned, *forest)
    np.testing.assert_array_equal(got, ref_predict_leaves(X_binned, *forest))
    node_feature, _, _, roots = forest
    assert (node_feature[got] == -1).all()
    tree_end = np.append(roots[1:], node_feature.size)
    assert ((got >= roots) & (got < tree_end)).all()


def test_histogram_launch_falls_back_to_global_memory():
    """Too many shared slices, or one that does not fit, -> global accumulation."""
    auto = kernels(histogram_kernel="auto", max_shared_groups=4)
    assert auto._histogram_groups(2, 3, 16, 2)[2]  # one slice covers everything
    assert auto._histogram_groups(512, 100, 256, 2) == (512, 100, False)
    assert auto._histogram_groups(1, 1, 256, 25) == (1, 1, False)  # 51 KiB for one feature
    with pytest.raises(ValueError, match="does not fit"):
        kernels(histogram_kernel="shared")._histogram_groups(1, 1, 256, 25, "shared")
