"""Histogram building: exact agreement with the numpy reference; every
feature's bins sum to the node totals; sibling subtraction equals building
by brute force, also in place in the parent's row; building adds into chosen
rows of a given array; fixed-point sums do not depend on row order; class
statistics of integer weights are built without a float one-hot copy."""
import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import reference
from gputree._dtypes import BITSET_WORDS
from gputree.tree import LeftSets
from gputree.criteria import GINI, SQUARED_ERROR, classification_statistics, regression_statistics
from gputree.fixed_point import fixed_point_scale, to_fixed_point


def _level(rng, n, n_features, n_bins, n_level, n_channels=3):
    """Random binned rows spread over a level of n_level nodes starting at 5
    (some rows finished: -1, some in an earlier level)."""
    X_binned = np.asfortranarray(rng.randint(0, n_bins, (n, n_features)).astype(np.uint8))
    stats = rng.randint(-2**40, 2**40, (n, n_channels)).astype(np.int64)
    positions = rng.randint(5, 5 + n_level, n).astype(np.int32)
    positions[rng.rand(n) < 0.1] = -1
    positions[rng.rand(n) < 0.1] = 2
    return X_binned, stats, positions


@settings(max_examples=20, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(1, 300), n_features=st.integers(1, 4),
       n_bins=st.integers(2, 256), n_level=st.integers(1, 12), n_channels=st.integers(1, 5))
def test_build_matches_reference_exactly(backend, seed, n, n_features, n_bins, n_level,
                                         n_channels):
    # any channel count: the CPU kernel has its own path for 3 channels
    rng = np.random.RandomState(seed)
    X_binned, stats, positions = _level(rng, n, n_features, n_bins, n_level, n_channels)
    node_to_build = np.full(n_level, -1, dtype=np.int32)
    chosen = rng.permutation(n_level)[:rng.randint(1, n_level + 1)]
    node_to_build[chosen] = np.arange(chosen.size)
    args = (X_binned, stats, positions, 5, node_to_build, chosen.size, n_bins)
    got = backend.build_histograms(*args)
    assert got.dtype == np.int64 and got.shape == (chosen.size, n_features, n_bins, n_channels)
    np.testing.assert_array_equal(got, reference.build_histograms(*args))
    # every feature's bins sum to the totals of the node's rows
    for slot, node in enumerate(chosen):
        totals = stats[positions == 5 + node].sum(axis=0)
        np.testing.assert_array_equal(got[slot].sum(axis=1),
                                      np.broadcast_to(totals, (n_features, n_channels)))


def _root_and_children(backend, rng, n=500, n_features=3, n_bins=17):
    """Random rows; the root's histogram; the root split on feature 1 (bins
    < 8 left) with rows moved to nodes 1, 2; both children's histograms."""
    X_binned, stats, _ = _level(rng, n, n_features, n_bins, 1)
    root = np.zeros(n, dtype=np.int32)
    parent = backend.build_histograms(X_binned, stats, root, 0, np.zeros(1, np.int32), 1, n_bins)
    bitset = np.zeros((1, BITSET_WORDS), dtype=np.uint32)
    bitset[0, 0] = (1 << 8) - 1
    positions = root.copy()
    backend.update_positions(X_binned, positions, 0, np.array([1], np.int32),
                             LeftSets.of_bitset(bitset).map(backend.asarray),
                             np.array([1], np.int32))
    children = backend.build_histograms(X_binned, stats, positions, 1,
                                        np.array([0, 1], np.int32), 2, n_bins)
    return X_binned, stats, positions, parent, children


def test_subtraction_equals_brute_force(backend):
    _, _, _, parent, children = _root_and_children(backend, np.random.RandomState(0))
    np.testing.assert_array_equal(parent[0] - children[0], children[1])
    # the backend's in-place subtraction derives the right child from the left
    derived = children.copy()
    derived[1] = 0
    backend.subtract_histograms(parent, np.array([0], np.int32), derived,
                                np.array([0], np.int32), np.array([1], np.int32))
    np.testing.assert_array_equal(derived, children)


def test_build_into_rows_of_out_and_derive_in_place(backend):
    rng = np.random.RandomState(2)
    n_features, n_bins = 3, 17
    X_binned, stats, positions, parent, children = _root_and_children(backend, rng)
    out = rng.randint(-9, 9, (5, n_features, n_bins, 3)).astype(np.int64)
    out[1], out[3] = parent[0], 0
    before = out.copy()
    # the left child (node 1) is built into row 3; the other rows stay as they were
    got = backend.build_histograms(X_binned, stats, positions, 1, np.array([3, -1], np.int32),
                                   4, n_bins, out=out)
    assert got is out
    np.testing.assert_array_equal(out[3], children[0])
    np.testing.assert_array_equal(out[[0, 1, 2, 4]], before[[0, 1, 2, 4]])
    # the right child is derived in the parent's own row
    parent_row = np.array([1], np.int32)
    backend.subtract_histograms(out, parent_row, out, np.array([3], np.int32), parent_row)
    np.testing.assert_array_equal(out[1], children[1])


def test_class_statistics_of_integer_weights_need_no_one_hot_copy():
    """A forest tree's statistics (bootstrap counts as weights) cost less
    than the statistics plus one float64 (n_samples, n_classes) one-hot copy."""
    rng = np.random.RandomState(3)
    n, n_classes = 100_000, 3
    y = rng.randint(0, n_classes, (n, 1)).astype(np.int32)
    counts = np.bincount(rng.randint(0, n, n), minlength=n).astype(np.float64)
    tracemalloc.start()
    try:
        statistics = classification_statistics(y, n_classes, counts, GINI)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < statistics.stats.nbytes + n * n_classes * 8
    # the channels: each row's count in its class channel, and the count channel
    expected = np.zeros((n, n_classes + 1), dtype=np.int64)
    expected[np.arange(n), y[:, 0]] = counts
    expected[:, n_classes] = counts > 0
    np.testing.assert_array_equal(statistics.stats, expected)


def test_fixed_point_sums_do_not_depend_on_row_order(backend):
    rng = np.random.RandomState(1)
    n = 2000
    X_binned = np.asfortranarray(rng.randint(0, 32, (n, 2)).astype(np.uint8))
    w = rng.uniform(0.1, 3.0, n)
    y_class = rng.randint(0, 3, (n, 1))
    cases = [(regression_statistics(rng.normal(1e3, 1e3, (n, 1)), w, SQUARED_ERROR), w),
             (classification_statistics(y_class, 3, w, GINI), w * (y_class[:, 0] == 0))]
    root, build = np.zeros(n, dtype=np.int32), np.zeros(1, np.int32)
    for statistics, channel0 in cases:
        stats = statistics.stats
        order = rng.permutation(n)
        a = backend.build_histograms(X_binned, stats, root, 0, build, 1, 33)
        b = backend.build_histograms(np.asfortranarray(X_binned[order]), stats[order],
                                     root, 0, build, 1, 33)
        np.testing.assert_array_equal(a, b)
        # scaled back, channel 0 holds the float sums (weights / class-0 weights)
        exact = np.bincount(X_binned[:, 0], weights=channel0, minlength=33)
        np.testing.assert_allclose(a[0, 0, :, 0] * statistics.inv_scale[0], exact,
                                   rtol=1e-12, atol=1e-12)


@settings(max_examples=30, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(1, 2000), magnitude=st.integers(-60, 60))
def test_fixed_point_scale_is_the_largest_safe_power_of_two_and_ignores_row_order(
        seed, n, magnitude):
    rng = np.random.RandomState(seed)
    values = rng.standard_cauchy((n, 1)) * 2.0 ** magnitude
    scale = fixed_point_scale(values)
    # the bound rounds n and max|value| up to powers of two, so that only
    # their exponents matter (and a power-of-two factor moves the scale exactly)
    bound = 2.0 ** np.ceil(np.log2(n)) * 2.0 ** np.frexp(np.abs(values).max())[1]
    assert scale * bound == 2.0 ** 61
    assert scale * n * np.abs(values).max() <= 2.0 ** 61
    assert fixed_point_scale(values[rng.permutation(n)]) == scale
    assert fixed_point_scale(values * 2.0 ** 700) == scale * 2.0 ** -700
    scaled, inv = to_fixed_point(values)
    # every partial sum fits in int64 and the rounding error is half a unit
    assert np.abs(scaled).sum(dtype=np.float64) <= 2.0 ** 61
    np.testing.assert_allclose(scaled[:, 0] * inv[0], values[:, 0], rtol=0, atol=0.5 * inv[0])
    # the same integers at any power-of-two scale in float64's normal range
    for power in (-900, 900):
        again, inv_again = to_fixed_point(values * 2.0 ** power)
        np.testing.assert_array_equal(again, scaled)
        assert inv_again[0] == inv[0] * 2.0 ** power


def test_feature_bins_write_only_the_cells_rows_can_be_in(backend):
    """With ``feature_bins`` a backend that uses them builds and derives
    each feature's non-missing bins and the missing bin exactly (as over
    every bin) and leaves every other cell as it was; enough rows that the
    CPU cuts a node into row blocks (private histograms added afterwards)."""
    if not backend.uses_feature_bins:
        return
    rng = np.random.RandomState(5)
    n, n_bins = 20_000, 17
    feature_bins = np.array([1, 4, 16, 9], dtype=np.int32)   # bins 0..k-1 and the missing bin
    X_binned = np.stack([rng.randint(0, k, n) for k in feature_bins], axis=1).astype(np.uint8)
    X_binned[rng.rand(n, 4) < 0.1] = n_bins - 1
    X_binned = np.ascontiguousarray(X_binned)
    stats = rng.randint(-2**40, 2**40, (n, 3)).astype(np.int64)
    positions = (rng.rand(n) < 0.3).astype(np.int32) + 1       # nodes 1 and 2
    build = np.array([0, -1], dtype=np.int32)
    full = backend.build_histograms(X_binned, stats, positions, 1, np.array([0, 1], np.int32),
                                    2, n_bins)
    parent = full[0] + full[1]
    out = rng.randint(-9, 9, (3, 4, n_bins, 3)).astype(np.int64)
    out[2] = parent
    before = out.copy()
    backend.build_histograms(X_binned, stats, positions, 1, build, 1, n_bins, out=out,
                             feature_bins=feature_bins)
    backend.subtract_histograms(out, np.array([2], np.int32), out, np.array([0], np.int32),
                                np.array([2], np.int32), feature_bins=feature_bins)
    touched = np.zeros((4, n_bins), dtype=bool)
    for f, k in enumerate(feature_bins):
        touched[f, :k] = touched[f, -1] = True
    np.testing.assert_array_equal(out[0][touched], full[0][touched])
    np.testing.assert_array_equal(out[2][touched], full[1][touched])
    np.testing.assert_array_equal(out[:, ~touched], before[:, ~touched])


def _mostly_constant(rng, n, n_bins, feature_bins):
    """Binned X (n, F) C order whose features hold their most frequent bin
    (a random one, the missing bin for feature 1, the only bin of a
    constant feature 0) in about 80% of the rows."""
    columns = []
    for f, k in enumerate(feature_bins):
        column = rng.randint(0, k, n)
        mode = n_bins - 1 if f == 1 else rng.randint(0, k)
        column[rng.rand(n) < 0.8] = mode
        column[rng.rand(n) < 0.05] = n_bins - 1
        columns.append(column)
    return np.ascontiguousarray(np.stack(columns, axis=1).astype(np.uint8))


@pytest.mark.parametrize("n_channels", [1, 2, 3, 4])
def test_mostly_constant_features_build_exactly_without_their_most_frequent_bin(backend,
                                                                                 n_channels):
    """Features whose values mostly lie in one bin (the CPU keeps them as
    sparse rows and recovers that bin from the node's total): the root (cut
    into row blocks: private histograms), a level of nodes each built in
    one piece and, with ``feature_bins``, only the cells rows can be in
    equal the reference exactly; other cells are left as they were. Any
    channel count (the CPU has its own loops for 2 and 3)."""
    rng = np.random.RandomState(11 + n_channels)
    n, n_bins = 20_000, 17
    feature_bins = np.array([1, 4, 16, 9, 2], dtype=np.int32)
    X_binned = _mostly_constant(rng, n, n_bins, feature_bins)
    if hasattr(backend, "binned"):
        assert backend.binned.sparse(X_binned, n_bins) is not None
    stats = rng.randint(-2**40, 2**40, (n, n_channels)).astype(np.int64)
    root = np.zeros(n, dtype=np.int32)
    args = (X_binned, stats, root, 0, np.zeros(1, np.int32), 1, n_bins)
    np.testing.assert_array_equal(backend.build_histograms(*args),
                                  reference.build_histograms(*args))
    positions = rng.randint(3, 7, n).astype(np.int32)
    build = np.array([2, -1, 0, 1], dtype=np.int32)
    args = (X_binned, stats, positions, 3, build, 3, n_bins)
    expected = reference.build_histograms(*args)
    np.testing.assert_array_equal(backend.build_histograms(*args), expected)
    out = rng.randint(-9, 9, (3, 5, n_bins, n_channels)).astype(np.int64)
    before = out.copy()
    backend.build_histograms(*args, out=out, feature_bins=feature_bins)
    touched = np.zeros((5, n_bins), dtype=bool)
    for f, k in enumerate(feature_bins):
        touched[f, :k] = touched[f, -1] = True
    np.testing.assert_array_equal(out[:, touched], expected[:, touched])
    np.testing.assert_array_equal(out[:, ~touched], before[:, ~touched])
    # one node of a few hundred rows (one piece: the CPU's pass without a plan)
    positions = np.where(rng.rand(n) < 0.02, 5, 4).astype(np.int32)
    args = (X_binned, stats, positions, 4, np.array([-1, 0], dtype=np.int32), 1, n_bins)
    np.testing.assert_array_equal(backend.build_histograms(*args),
                                  reference.build_histograms(*args))


@pytest.mark.parametrize("shape", [dict(max_depth=4),
                                   dict(grow_policy="lossguide", max_leaf_nodes=12)])
def test_boosting_on_mostly_constant_features_grows_the_trees_of_the_dense_pass(monkeypatch,
                                                                               shape):
    """A boosting fit whose features mostly hold one value (the CPU builds
    their histograms from sparse rows, the root's count channel copied from
    the bin counts; level by level, or best first: a node's rows at a
    time) grows the same trees, bit for bit, as with every value added."""
    import gputree
    from gputree.backends.cpu import sparse_rows
    rng = np.random.RandomState(3)
    X = rng.rand(3000, 12) * (rng.rand(3000, 12) < 0.2)
    X[:, 0] = np.round(X[:, 0] * 4)
    y = X[:, 0] + np.sin(6 * X[:, 1]) + rng.rand(3000) * 0.1
    fits = []
    for share in (sparse_rows.SPARSE_SHARE, -1.0):
        monkeypatch.setattr(sparse_rows, "SPARSE_SHARE", share)
        model = gputree.GradientBoostingRegressor(n_estimators=5, device="cpu",
                                                  min_samples_leaf=1, random_state=0, **shape)
        fits.append(model.fit(X, y).predict(X))
    np.testing.assert_array_equal(fits[0], fits[1])


@pytest.mark.parametrize("outside_share", [0.1, 0.39, 0.7])
def test_sparse_rows_from_the_backends_bin_counts_equal_a_bincount_per_column(outside_share):
    """The sparse rows made from the CPU backend's bin counts (its
    histogram pass) equal those of numpy's bincount of each column, and
    both equal a brute-force reference: each feature's most frequent bin
    (the lowest on ties), and None where more than SPARSE_SHARE of the
    values lie outside it."""
    from gputree.backends.cpu import sparse_rows
    from gputree.backends.cpu.backend import CPUBackend
    rng = np.random.RandomState(7)
    n, n_features, n_bins = 5000, 9, 16
    common = rng.randint(0, n_bins, size=n_features)
    common[1] = 0
    X = np.where(rng.rand(n, n_features) < outside_share,
                 rng.randint(0, n_bins, size=(n, n_features)), common).astype(np.uint8)
    X[:, 2] = np.arange(n) % 2 * 5           # a tie: bins 0 and 5 as frequent
    backend = CPUBackend()
    made = [sparse_rows.sparse_rows(X, n_bins),
            sparse_rows.sparse_rows(X, n_bins, bin_counts=lambda: backend._implicit_bin_counts(
                X, n_bins))]
    mode = np.array([np.argmax([(X[:, f] == b).sum() for b in range(n_bins)])
                     for f in range(n_features)])
    outside = X != mode
    if outside.sum() > sparse_rows.SPARSE_SHARE * X.size:
        assert made == [None, None]
        return
    for rows in made:
        np.testing.assert_array_equal(rows.mode, mode)
        for i in (0, 1, n // 2, n - 1):
            start, stop = rows.first[i], rows.first[i + 1]
            np.testing.assert_array_equal(rows.feature[start:stop], np.flatnonzero(outside[i]))
            np.testing.assert_array_equal(rows.bins[start:stop], X[i, outside[i]])
    for field in ("mode", "first", "feature", "bins"):
        np.testing.assert_array_equal(getattr(made[0], field), getattr(made[1], field))


@pytest.mark.parametrize("outside_share", [0.1, 0.7])
def test_bin_counts_with_and_without_sparse_rows_equal_a_bincount_per_column(outside_share):
    """The CPU backend's bin counts, on X with sparse rows (0.1: the counts
    of the sparse rows' decision) and without (0.7), the first call and a
    later one (the decision already made), equal a bincount per column."""
    from gputree.backends.cpu.backend import CPUBackend
    rng = np.random.RandomState(3)
    n, n_features, n_bins = 4000, 7, 12
    X = np.where(rng.rand(n, n_features) < outside_share,
                 rng.randint(0, n_bins, size=(n, n_features)), 4).astype(np.uint8)
    backend = CPUBackend()
    expected = [np.bincount(X[:, f], minlength=n_bins) for f in range(n_features)]
    for _ in range(2):
        np.testing.assert_array_equal(backend.bin_counts(X, n_bins), expected)
    assert (backend.binned.sparse(X, n_bins) is not None) == (outside_share < 0.4)
