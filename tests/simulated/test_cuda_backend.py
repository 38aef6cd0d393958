"""The CUDA backend's own properties on the simulated device: its numba
kernels agree with the CPU backend's, launches per level do not grow with the
number of nodes, and a fit that cannot fit in device memory says so."""
import numpy as np
import pytest

from gputree import DecisionTreeClassifier
from gputree.backends import get_backend
from gputree.criteria import GINI, SQUARED_ERROR, classification_statistics, regression_statistics
from gputree.growth.params import GrowthParams


def random_histograms(rng, n_nodes, n_features, n_bins, stats):
    """Histograms of random rows spread over nodes, with the CPU backend."""
    n = stats.stats.shape[0]
    X_binned = np.asfortranarray(rng.randint(0, n_bins, size=(n, n_features)).astype(np.uint8))
    positions = rng.randint(0, n_nodes, size=n).astype(np.int32)
    return get_backend("cpu").build_histograms(X_binned, stats.stats, positions, 0,
                                               np.arange(n_nodes, dtype=np.int32), n_nodes, n_bins)


@pytest.mark.parametrize("categorical", [False, True])
@pytest.mark.parametrize("make_stats", ["gini", "squared_error"])
def test_numba_scan_equals_cpu_scan(categorical, make_stats):
    rng = np.random.RandomState(0)
    n, n_nodes, n_features, n_bins = 300, 3, 3, 9
    if make_stats == "gini":
        stats = classification_statistics(rng.randint(0, 3, (n, 1)), 3, np.ones(n), GINI)
    else:
        stats = regression_statistics(rng.normal(size=(n, 1)), rng.uniform(0.5, 2, n),
                                      SQUARED_ERROR)
    hist = random_histograms(rng, n_nodes, n_features, n_bins, stats)
    args = (hist, np.full(n_features, n_bins - 1, np.int32),
            np.array([categorical, 0, categorical], np.uint8),
            np.ones((n_nodes, n_features), np.uint8), n_bins - 1, stats.layout,
            stats.inv_scale, GrowthParams(min_samples_leaf=5).criterion_params())
    cpu = get_backend("cpu").find_best_splits(*args)
    sim = get_backend("cuda-sim").find_best_splits(*args)
    assert np.isfinite(cpu.gain).all()
    for name in ("gain", "feature", "bitset", "missing_left", "left_sums"):
        assert np.array_equal(getattr(cpu, name), getattr(sim, name)), name


def launches_per_level(max_depth, n_samples):
    rng = np.random.RandomState(1)
    X = rng.normal(size=(n_samples, 3))
    y = (X[:, 0] + 0.3 * rng.normal(size=n_samples) > 0).astype(int)
    backend = get_backend("cuda-sim")
    backend.launches.clear()
    model = DecisionTreeClassifier(device="cuda-sim", max_depth=max_depth, max_bins=8).fit(X, y)
    levels = model.get_depth()
    counts = {name: count for name, count in backend.launches.items()}
    return counts, levels, model.tree_.node_count


def test_kernel_launches_per_level_do_not_grow_with_nodes():
    shallow, shallow_levels, shallow_nodes = launches_per_level(2, 200)
    deep, deep_levels, deep_nodes = launches_per_level(5, 200)
    assert deep_nodes > 4 * shallow_nodes
    for name in ("build_histograms", "find_best_splits", "update_positions"):
        # at most one launch of each primitive per level, whatever the node count
        assert shallow[name] <= shallow_levels
        assert deep[name] <= deep_levels
    assert sum(deep.values()) <= sum(shallow.values()) * deep_levels / shallow_levels + 4


def test_out_of_memory_is_a_clear_error():
    backend = get_backend("cuda-sim")
    backend.simulated_free_bytes = 10_000
    try:
        with pytest.raises(MemoryError, match=r"MiB of GPU memory.*max_bins.*device='cpu'"):
            DecisionTreeClassifier(device="cuda-sim", max_depth=3).fit(
                np.random.RandomState(0).normal(size=(500, 4)), np.arange(500) % 2)
    finally:
        backend.simulated_free_bytes = None


@pytest.mark.parametrize("n_bins,reg_alpha,min_child_weight", [(9, 0.0, 0.0), (600, 0.3, 2.0)])
def test_numba_newton_scan_equals_cpu_block_scan(n_bins, reg_alpha, min_child_weight):
    """Boosting's scan: the CPU's vectorized scan in blocks of candidates
    (more than one block with 600 bins) chooses the same splits, gains and
    left sums as the device's candidate-by-candidate scan, with empty
    bins, rows with missing values, L1 shrinkage, min_child_weight and ties
    (feature 1's histogram is its own mirror; feature 2 copies its rows)."""
    from gputree.criteria import newton_statistics
    rng = np.random.RandomState(n_bins)
    n, n_nodes, n_features = 4000, 3, 4
    g = np.round(rng.normal(size=(n, 1)), 2)
    stats = newton_statistics(g, rng.uniform(0.05, 0.25, (n, 1)), np.ones(n))
    codes = rng.randint(0, n_bins - 1, size=(n, n_features))
    codes[rng.rand(n) < 0.1, 0] = n_bins - 1                 # missing values
    codes[:, 3] = np.where(codes[:, 3] % 5 == 1, 0, codes[:, 3])   # empty bins
    codes[:, 2] = codes[:, 1]
    X_binned = np.asfortranarray(codes.astype(np.uint8 if n_bins <= 256 else np.uint16))
    positions = rng.randint(0, n_nodes, size=n).astype(np.int32)
    hist = get_backend("cpu").build_histograms(X_binned, stats.stats, positions, 0,
                                               np.arange(n_nodes, dtype=np.int32), n_nodes,
                                               n_bins)
    # feature 1 mirrored (no missing rows): candidate b and n_bins - 3 - b tie exactly
    hist[:, 1, :-1] += hist[:, 1, -2::-1]
    hist[:, 1, -1] = 0
    params = GrowthParams(min_samples_leaf=20, reg_alpha=reg_alpha,
                          min_weight_leaf=min_child_weight).criterion_params()
    args = (hist, np.full(n_features, n_bins - 1, np.int32), np.zeros(n_features, np.uint8),
            np.ones((n_nodes, n_features), np.uint8), n_bins - 1, stats.layout,
            stats.inv_scale, params)
    cpu = get_backend("cpu").scan_splits(*args)
    sim = get_backend("cuda-sim").scan_splits(*args)
    assert np.isfinite(cpu[0]).all()
    for got, expected in zip(cpu, sim):
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("rows, block_rows", [(1000, 64), (64, 64), (65, 64), (1, 64)])
def test_large_uploads_go_in_blocks_of_rows_from_a_memory_map(tmp_path, monkeypatch, rows,
                                                              block_rows):
    """A memory-mapped uint16 array (a Dataset's codes on disk) over the
    block size reaches the device in blocks of rows, equal to the host's."""
    from gputree.backends.cuda import backend as cuda_backend
    monkeypatch.setattr(cuda_backend, "UPLOAD_BLOCK_BYTES", block_rows * 7 * 2)
    codes = np.memmap(tmp_path / "codes", dtype=np.uint16, mode="w+", shape=(rows, 7))
    codes[:] = np.random.RandomState(rows).randint(0, 60000, size=(rows, 7))
    device = get_backend("cuda-sim")
    before = dict(device.transfers)
    out = device.upload(codes)
    assert np.array_equal(np.asarray(out), np.asarray(codes)) and out.dtype == np.uint16
    blocks = device.transfers["upload_blocks"] - before.get("upload_blocks", 0)
    assert device.transfers["upload"] - before.get("upload", 0) == 1
    assert blocks == (-(-rows // block_rows) if rows > block_rows else 1)
