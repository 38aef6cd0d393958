"""Level-wise growth: the partition and prediction kernels agree with the
numpy reference; children partition their parent; every split is the
brute-force best split of its node's rows; stopping rules hold; the tree's
arrays have fixed-width dtypes; histograms take one level's memory, and a
histogram pool shared by trees grows the same trees."""
import functools

import numpy as np
import pytest
from hypothesis import given, settings

import reference
from gputree._dtypes import BITSET_WORDS, bin_dtype, extension_words
from gputree.backends.base import Backend
from gputree.data.binning import BinMapper
from gputree.criteria import CLASSIFICATION_CRITERIA, REGRESSION_CRITERIA, classification_statistics, regression_statistics
from gputree.growth import histogram_pool
from gputree.data.binned import BinnedData
from gputree.growth.params import GrowthParams
from gputree.growth.histogram_pool import HistogramPool
from gputree.growth.levelwise import grow_tree
from gputree.tree import LeftSets, concatenate_trees


def _grow(backend, X, y, criterion="squared_error", w=None, categorical=None, seed=0,
          max_bins=255, n_classes=None, pool=None, **growth):
    w = np.ones(len(y)) if w is None else w
    categorical = np.zeros(X.shape[1], bool) if categorical is None else np.asarray(categorical)
    mapper = BinMapper(max_bins, categorical).fit(X, w)
    X_binned = mapper.transform(X, backend)
    data = BinnedData(X_binned, mapper.n_bins_, mapper.n_bins_non_missing_,
                      categorical.astype(np.uint8), mapper.bin_thresholds_)
    if criterion in CLASSIFICATION_CRITERIA:
        stats = classification_statistics(y.reshape(len(y), -1), n_classes or int(y.max()) + 1, w,
                                          CLASSIFICATION_CRITERIA[criterion])
    else:
        stats = regression_statistics(y.reshape(len(y), -1).astype(float), w,
                                      REGRESSION_CRITERIA[criterion])
    tree, positions = grow_tree(backend, data, stats, GrowthParams(**growth),
                                np.random.RandomState(seed), pool)
    return tree, positions, data


def _node_rows(tree, X_binned):
    """bool (n_nodes, n_samples): which rows pass through each node (reference walk)."""
    rows = np.zeros((tree.node_count, X_binned.shape[0]), dtype=bool)
    rows[0] = True
    for node in range(tree.node_count):          # breadth-first: parents come first
        left = tree.left_child[node]
        if left >= 0:
            go_left = np.isin(X_binned[:, tree.feature[node]],
                              list(reference.set_bins(tree.left_sets, node)))
            rows[left] = rows[node] & go_left
            rows[left + 1] = rows[node] & ~go_left
    return rows


def _regression_data(seed, n=240, n_features=3):
    rng = np.random.RandomState(seed)
    X = rng.randint(0, 7, (n, n_features)) * rng.uniform(0.5, 2, n_features)
    X[rng.rand(n, n_features) < 0.1] = np.nan
    y = np.nan_to_num(X[:, 0]) - np.nan_to_num(X[:, 1]) ** 1.5 + rng.normal(0, 0.5, n)
    return X, y


@pytest.mark.parametrize("n_bins", [256, 5000])
def test_update_positions_matches_reference(backend, n_bins):
    """8-bit codes, and 16-bit codes whose split sets use the words for bins
    beyond 255 (range end, extra bin) and, for some splits, words beyond the
    bitset (categories from bin 256 on)."""
    rng = np.random.RandomState(0)
    n, n_features, n_level = 1000, 4, 6
    X_binned = np.asfortranarray(rng.randint(0, n_bins, (n, n_features)).astype(bin_dtype(n_bins)))
    positions = rng.randint(3, 3 + n_level, n).astype(np.int32)
    positions[:50] = -1
    split_feature = rng.randint(-1, n_features, n_level).astype(np.int32)
    bitset = rng.randint(0, 2**32, (n_level, BITSET_WORDS), dtype=np.uint64).astype(np.uint32)
    bitset[:, 8:] = rng.randint(256, n_bins, (n_level, 2)) if n_bins > 256 else 0
    n_words = (rng.randint(0, extension_words(n_bins) + 1, n_level) * (rng.rand(n_level) < 0.6)
               if n_bins > 256 else np.zeros(n_level, int)).astype(np.int32)
    start = np.concatenate([[0], np.cumsum(n_words)[:-1]]).astype(np.int64)
    words = rng.randint(0, 2**32, n_words.sum(), dtype=np.uint64).astype(np.uint32)
    sets = LeftSets(bitset, words, start, n_words)
    left_child = (20 + 2 * np.arange(n_level)).astype(np.int32)
    expected = reference.update_positions(X_binned, positions, 3, split_feature, sets, left_child)
    backend.update_positions(X_binned, positions, 3, split_feature, sets.map(backend.asarray),
                             left_child)
    np.testing.assert_array_equal(positions, expected)


def test_predict_leaves_matches_reference_for_several_trees(backend):
    X, y = _regression_data(1)
    trees = [_grow(backend, X, y, max_depth=d)[0] for d in (2, 4)]
    X_binned = _grow(backend, X, y, max_depth=1)[2].X_binned
    feature, bitset, left, roots = concatenate_trees(trees)
    leaves = backend.predict_leaves(X_binned, feature, bitset, left, roots) - roots
    for t, tree in enumerate(trees):
        np.testing.assert_array_equal(leaves[:, t], reference.predict_leaves(tree, X_binned))


def _bitset_of(bins):
    bits = np.zeros(256, dtype=np.uint8)
    bits[list(bins)] = 1
    words = np.zeros(BITSET_WORDS, dtype=np.uint32)    # words 8, 9: bins >= 256 (none here)
    words[:8] = np.packbits(bits, bitorder="little").view(np.uint32)
    return words


def test_predict_leaves_on_every_kind_of_split_set(backend):
    """Random trees whose "goes left" sets are prefixes of bins (numerical
    splits), prefixes plus one more bin (missing left), all bins, sets not
    starting at bin 0 and arbitrary subsets (categorical): every row's leaf
    equals a plain walk that looks each bin up in the set."""
    rng = np.random.RandomState(7)
    n, n_features, n_trees = 500, 3, 6
    X_binned = np.asfortranarray(rng.randint(0, 256, (n, n_features)).astype(np.uint8))
    X_binned[rng.rand(n, n_features) < 0.1] = 255
    kinds = [lambda: range(rng.randint(0, 255)), lambda: [*range(rng.randint(0, 200)), 255],
             lambda: [*range(rng.randint(0, 100)), rng.randint(150, 256)], lambda: range(256),
             lambda: range(rng.randint(1, 50), rng.randint(60, 256)),
             lambda: np.flatnonzero(rng.rand(256) < 0.5)]
    feature, bitset, left, roots = [], [], [], []
    for _ in range(n_trees):
        roots.append(len(feature))
        frontier = [len(feature)]
        feature.append(-1), left.append(-1), bitset.append(_bitset_of([]))
        for depth in range(4):
            next_frontier = []
            for node in frontier:
                if rng.rand() < 0.8:
                    feature[node], left[node] = rng.randint(n_features), len(feature)
                    bitset[node] = _bitset_of(kinds[rng.randint(len(kinds))]())
                    for _child in range(2):
                        next_frontier.append(len(feature))
                        feature.append(-1), left.append(-1), bitset.append(_bitset_of([]))
            frontier = next_frontier
    feature, left = np.array(feature, np.int32), np.array(left, np.int32)
    bitset, roots = np.array(bitset, np.uint32), np.array(roots, np.int32)
    got = backend.predict_leaves(X_binned, feature, LeftSets.of_bitset(bitset), left, roots)
    for t, root in enumerate(roots):
        for i in range(n):
            node = root
            while feature[node] >= 0:
                b = X_binned[i, feature[node]]
                goes_left = (bitset[node, b >> 5] >> (b & 31)) & 1
                node = left[node] + (0 if goes_left else 1)
            assert got[i, t] == node


@pytest.mark.parametrize("implementation", ["backend", "default"])
def test_add_leaf_values_adds_each_trees_leaf_values_in_tree_order(backend, implementation):
    """The backend's kernel and the seam's default (through predict_leaves)."""
    X, y = _regression_data(5)
    trees = [_grow(backend, X, y, max_depth=d, seed=d)[0] for d in (0, 1, 3, 5)]
    X_binned = _grow(backend, X, y, max_depth=1)[2].X_binned
    rng = np.random.RandomState(0)
    values = [rng.normal(size=(t.node_count, 2)) for t in trees]
    columns = np.array([0, 2, 1, 0], dtype=np.int32)
    start = rng.normal(size=(X.shape[0], 4))
    expected = start.copy()
    for tree, value, column in zip(trees, values, columns):
        expected[:, column:column + 2] += value[reference.predict_leaves(tree, X_binned)]
    feature, sets, left, roots = concatenate_trees(trees)
    out = backend.asarray(start)
    add = backend.add_leaf_values if implementation == "backend" else functools.partial(
        Backend.add_leaf_values, backend)
    add(X_binned, backend.asarray(feature), sets.map(backend.asarray),
        backend.asarray(left), backend.asarray(roots),
        backend.asarray(np.concatenate(values)), columns, out)
    # same additions in the same order: bit for bit
    np.testing.assert_array_equal(backend.to_host(out), expected)


@pytest.mark.parametrize("criterion,seed", [("squared_error", 2), ("gini", 3), ("poisson", 4)])
def test_every_split_is_the_brute_force_best_of_its_node(backend, criterion, seed):
    X, y = _regression_data(seed)
    if criterion == "gini":
        y = (y > np.median(y)).astype(int)
    elif criterion == "poisson":
        y = np.exp(y / 4).round(2)
    tree, positions, data = _grow(backend, X, y, criterion, max_depth=4)
    X_binned = data.X_binned
    rows = _node_rows(tree, X_binned)
    n_classes = 2 if criterion == "gini" else None
    ones = np.ones(len(y), dtype=bool)
    checked = 0
    for node in np.flatnonzero(tree.feature >= 0):
        r = rows[node]
        candidates = reference.brute_force_splits(
            X_binned[r], y[r], np.ones(r.sum()), criterion, data.n_bins_non_missing,
            data.is_categorical, data.missing_bin, 1, n_classes)
        best, margin = reference.best_gain_margin(candidates, ones[r])
        assert tree.gain[node] == pytest.approx(best[0], rel=1e-7, abs=1e-9)
        if margin > 1e-6 * (1 + abs(best[0])):
            np.testing.assert_array_equal(rows[tree.left_child[node]][r], best[3])
            checked += 1
    assert checked >= 3


@settings(max_examples=30, deadline=None, derandomize=True)
@given(case=reference.small_datasets(max_rows=40))
def test_grown_trees_equal_brute_force_on_random_data(backend, case):
    """Every split is the best of its node's rows (so level histograms, built or
    subtracted, are right) and every splittable leaf has no valid split."""
    X, categorical, y, w, criterion, max_bins, msl, n_classes = case
    tree, positions, data = _grow(backend, X, y, criterion, w=w, categorical=categorical,
                                  max_bins=max_bins, n_classes=n_classes, max_depth=3,
                                  min_samples_leaf=msl)
    rows = _node_rows(tree, data.X_binned)
    positive = w > 0
    np.testing.assert_array_equal(positions, reference.predict_leaves(tree, data.X_binned))
    exact = reference.subset_scan_is_exact(criterion, n_classes, msl, categorical.any())
    for node in range(tree.node_count):
        r = rows[node]
        assert tree.n_node_samples[node] == np.sum(positive[r])
        candidates = reference.brute_force_splits(
            data.X_binned[r], y[r], w[r], criterion, data.n_bins_non_missing,
            categorical, data.missing_bin, msl, n_classes)
        best, margin = reference.best_gain_margin(candidates, positive[r])
        if tree.left_child[node] < 0:
            splittable = tree.depth[node] < 3 and tree.impurity[node] > 1e-9
            assert not (splittable and exact and best is not None)
            continue
        gain = tree.gain[node]
        assert gain <= best[0] + 1e-9 * (1 + abs(best[0]))
        if exact:
            assert gain == pytest.approx(best[0], rel=1e-7, abs=1e-9)
            if margin > 1e-6 * (1 + abs(best[0])):
                left = rows[tree.left_child[node]][r]
                np.testing.assert_array_equal(left[positive[r]], best[3][positive[r]])


def test_children_partition_the_parent_and_leaves_hold_their_rows(backend):
    X, y = _regression_data(5)
    w = np.random.RandomState(5).randint(0, 4, len(y)).astype(float)
    tree, positions, data = _grow(backend, X, y, w=w, max_depth=5)
    X_binned = data.X_binned
    rows = _node_rows(tree, X_binned)
    internal = np.flatnonzero(tree.feature >= 0)
    left = tree.left_child[internal]
    np.testing.assert_array_equal(rows[left] | rows[left + 1], rows[internal])
    assert not np.any(rows[left] & rows[left + 1])
    np.testing.assert_array_equal(tree.n_node_samples[internal],
                                  tree.n_node_samples[left] + tree.n_node_samples[left + 1])
    # node statistics are those of the node's rows
    np.testing.assert_array_equal(tree.n_node_samples, (rows & (w > 0)).sum(axis=1))
    np.testing.assert_allclose(tree.weighted_n_node_samples, rows @ w)
    mean = (rows @ (w * y)) / (rows @ w)
    np.testing.assert_allclose(tree.value[:, 0, 0], mean, rtol=1e-12)
    # the returned positions are the leaves, and every row is in exactly one leaf
    np.testing.assert_array_equal(positions, reference.predict_leaves(tree, X_binned))
    assert np.all(rows[tree.feature < 0].sum(axis=0) == 1)


def test_tree_layout_and_fixed_width_dtypes(backend):
    X, y = _regression_data(6)
    tree, _, _ = _grow(backend, X, y, max_depth=6)
    expected = {"feature": np.int32, "left_child": np.int32, "bitset": np.uint32,
                "threshold": np.float64, "missing_left": np.uint8, "is_categorical": np.uint8,
                "value": np.float64, "impurity": np.float64, "n_node_samples": np.int64,
                "weighted_n_node_samples": np.float64, "gain": np.float64,
                "depth": np.int32, "parent": np.int32}
    for name, dtype in expected.items():
        assert getattr(tree, name).dtype == dtype, name
    internal = np.flatnonzero(tree.left_child >= 0)
    left = tree.left_child[internal]
    # breadth-first numbering, right child = left + 1, parents and depths consistent
    assert np.all(np.diff(tree.depth) >= 0) and np.all(left > internal)
    np.testing.assert_array_equal(tree.parent[left], internal)
    np.testing.assert_array_equal(tree.parent[left + 1], internal)
    np.testing.assert_array_equal(tree.depth[left], tree.depth[internal] + 1)
    assert np.all(tree.feature[tree.left_child < 0] == -1)


@pytest.mark.parametrize("growth", [dict(max_depth=3), dict(min_samples_leaf=7),
                                    dict(min_samples_split=40),
                                    dict(min_weight_leaf=30.0)])
def test_stopping_rules_hold(backend, growth):
    X, y = _regression_data(7, n=400)
    w = np.random.RandomState(7).uniform(0.5, 1.5, len(y))
    tree, _, _ = _grow(backend, X, y, w=w, **growth)
    leaves, internal = tree.feature < 0, tree.feature >= 0
    assert tree.max_depth <= growth.get("max_depth", 99)
    assert np.all(tree.n_node_samples[leaves] >= growth.get("min_samples_leaf", 1))
    assert np.all(tree.weighted_n_node_samples[leaves] >= growth.get("min_weight_leaf", 0))
    assert np.all(tree.n_node_samples[internal] >= growth.get("min_samples_split", 2))
    assert tree.node_count > 3


def test_max_leaf_nodes_keeps_the_best_splits_of_a_level_wise_tree(backend):
    X, y = _regression_data(8, n=400)
    full, _, data = _grow(backend, X, y, max_depth=8)
    X_binned = data.X_binned
    full_rows = _node_rows(full, X_binned)
    full_splits = {(full_rows[i].tobytes(), full.feature[i]) for i in np.flatnonzero(full.feature >= 0)}
    for budget in (2, 5, 12):
        tree, _, _ = _grow(backend, X, y, max_depth=8, max_leaf_nodes=budget)
        assert tree.n_leaves == min(budget, full.n_leaves)
        rows = _node_rows(tree, X_binned)
        internal = np.flatnonzero(tree.feature >= 0)
        # every split is one of the unlimited tree's (same rows, same feature)
        assert {(rows[i].tobytes(), tree.feature[i]) for i in internal} <= full_splits
        # where the budget ran out, no node left unsplit would have removed more
        # impurity (gain x node weight) than a split that was kept
        last = tree.depth[internal].max()
        at_last = internal[tree.depth[internal] == last]
        kept = tree.gain[at_last] * tree.weighted_n_node_samples[at_last]
        unsplit = [full.gain[j] * full.weighted_n_node_samples[j]
                   for j in np.flatnonzero((full.feature >= 0) & (full.depth == last))
                   if not any(np.array_equal(full_rows[j], rows[i]) for i in internal)]
        assert max(unsplit, default=-np.inf) <= kept.min() * (1 + 1e-12)


def test_feature_subsets_depend_only_on_the_seed(backend):
    X, y = _regression_data(9)
    full = _grow(backend, X, y, max_depth=5)[0]
    trees = [_grow(backend, X, y, max_depth=5, max_features=1, seed=s)[0] for s in range(6)]
    again = _grow(backend, X, y, max_depth=5, max_features=1, seed=0)[0]
    np.testing.assert_array_equal(trees[0].feature, again.feature)
    np.testing.assert_array_equal(trees[0].bitset, again.bitset)
    # one random feature per node: roots vary with the seed, never beat the best split
    assert len({t.feature[0] for t in trees}) > 1
    assert all(t.gain[0] <= full.gain[0] + 1e-12 for t in trees)


def test_histograms_of_a_level_reuse_their_parents_rows(backend):
    """A full tree of depth 6 needs at most 2**5 histogram rows (its deepest
    built level, derived children in their parents' rows), not that level
    plus the one above it (16 + 32)."""
    rng = np.random.RandomState(10)
    X = rng.uniform(size=(4000, 3))
    y = X[:, 0] + 0.1 * X[:, 1]
    pool = HistogramPool(backend)
    tree, _, _ = _grow(backend, X, y, max_depth=6, pool=pool)
    assert tree.node_count == 2 ** 7 - 1          # every node above depth 6 split
    assert pool.n_touched <= 2 ** 5


@pytest.mark.parametrize("reserve", [True, False])
def test_trees_sharing_a_pool_equal_trees_with_their_own(backend, monkeypatch, reserve):
    """One pool serves trees of different depths and channel counts (rows
    reused and zeroed again; without the up-front reservation, the array
    grown mid-tree; one positions array, zeroed for each tree) and they
    come out as with a pool each, rows in the same leaves."""
    if not reserve:
        monkeypatch.setattr(histogram_pool, "_POOL_RESERVE_BYTES", 0)
    X, y = _regression_data(11, n=600)
    w = np.random.RandomState(11).randint(0, 3, len(y)).astype(float)
    y_class = (y > np.median(y)).astype(int)
    fits = [dict(y=y, max_depth=2), dict(y=y, w=w, max_depth=7, max_features=2, seed=3),
            dict(y=y_class, criterion="gini", max_depth=4), dict(y=y, w=w, max_depth=5)]
    pool = HistogramPool(backend)
    held = []
    for fit in fits:
        shared, positions, _ = _grow(backend, X, pool=pool, **fit)
        held.append(positions)
        alone, alone_positions, _ = _grow(backend, X, **fit)
        np.testing.assert_array_equal(positions, alone_positions)
        for name, value in vars(alone).items():
            if isinstance(value, np.ndarray):
                np.testing.assert_array_equal(getattr(shared, name), value, err_msg=name)
    assert all(positions is held[0] for positions in held)


def test_prediction_leaves_numbas_vectorizer_setting_as_it_was(backend):
    """The tree walk compiles without the loop vectorizer; the process-wide
    setting must come back, also when the walk raises."""
    import numba
    before = numba.config.LOOP_VECTORIZE
    X, y = _regression_data(3)
    tree, _, data = _grow(backend, X, y, max_depth=2)
    feature, bitset, left, roots = concatenate_trees([tree])
    backend.predict_leaves(data.X_binned, feature, bitset, left, roots)
    assert numba.config.LOOP_VECTORIZE == before
    with pytest.raises(Exception):    # numba cannot type a 1-D X inside the walk
        backend.predict_leaves(data.X_binned[:, 0], feature, bitset, left, roots)
    assert numba.config.LOOP_VECTORIZE == before


@pytest.mark.parametrize("implementation", ["backend", "default"])
def test_add_node_values_adds_each_rows_node_value(backend, implementation):
    rng = np.random.RandomState(4)
    values = rng.normal(size=(9, 2))
    positions = rng.randint(0, 9, 300).astype(np.int32)
    start = rng.normal(size=(300, 5))
    expected = start.copy()
    expected[:, 2:4] += values[positions]
    add = backend.add_node_values if implementation == "backend" else functools.partial(
        Backend.add_node_values, backend)
    add(values, positions, start, 2)
    np.testing.assert_array_equal(start, expected)


@pytest.mark.parametrize("implementation", ["backend", "default"])
def test_zero_rows_zeroes_those_rows_only(backend, implementation):
    rng = np.random.RandomState(5)
    hist = rng.randint(1, 9, (6, 4, 5, 3)).astype(np.int64)
    expected = hist.copy()
    rows = np.array([4, 1], np.int32)
    expected[rows] = 0
    zero = backend.zero_rows if implementation == "backend" else functools.partial(
        Backend.zero_rows, backend)
    zero(hist, rows)
    np.testing.assert_array_equal(hist, expected)


@pytest.mark.parametrize("case", ["boosting_colsample", "extra_trees", "forest_missing"])
def test_feature_bins_grow_the_trees_of_every_bin(backend, monkeypatch, case):
    """Histograms over each feature's bins alone (the CPU backend's
    uses_feature_bins) grow the very trees that histograms over every bin
    grow: sparse, low-cardinality and constant features, missing values,
    and a histogram pool reused by trees on other column subsets (cells
    outside a feature's bins keep an earlier tree's sums, never read)."""
    import dataclasses

    import gputree
    rng = np.random.RandomState(3)
    n = 600
    X = rng.randint(0, 4, (n, 12)) * (rng.rand(n, 12) < 0.3)      # sparse, few values
    X = np.column_stack([X, rng.rand(n, 3), np.zeros(n)]).astype(float)
    y = (X[:, 0] + X[:, 12] + rng.rand(n) > 1.2).astype(int)
    if case == "forest_missing":
        X[rng.rand(*X.shape) < 0.1] = np.nan
    make = {"boosting_colsample": lambda: gputree.GradientBoostingClassifier(
                n_estimators=8, max_depth=4, colsample_bytree=0.5, random_state=0),
            "extra_trees": lambda: gputree.ExtraTreesClassifier(n_estimators=4, random_state=0),
            "forest_missing": lambda: gputree.RandomForestClassifier(n_estimators=4,
                                                                     random_state=0)}[case]
    fitted = {}
    for flag in (True, False):
        monkeypatch.setattr(type(backend), "uses_feature_bins", flag)
        fitted[flag] = make().fit(X, y)
    trees = [list(m._trees) for m in (fitted[True], fitted[False])]
    assert any(t.node_count > 1 for t in trees[0])
    for a, b in zip(*trees):
        for field in dataclasses.fields(a):
            assert np.array_equal(getattr(a, field.name), getattr(b, field.name),
                                  equal_nan=True), field.name


@pytest.mark.parametrize("kind", ["depthwise", "lossguide", "forest", "missing"])
def test_derives_in_scan_grows_the_trees_of_the_separate_subtraction(monkeypatch, kind):
    """The CPU scan's own derive of the larger siblings (each (node,
    feature) subtracted in place just before the scan reads it,
    Backend.derives_in_scan) grows every tree field for field as the
    subtraction pass before the scan: boosting level-wise and best-first
    (whose derived parents hold rows the next level's derive reads), a
    forest drawing features per node (it derives before choosing), missing
    values."""
    import dataclasses

    import gputree
    from gputree.backends.cpu.backend import CPUBackend

    rng = np.random.RandomState(7)
    n = 3000
    X = np.column_stack([rng.randint(0, k, n) for k in (1, 3, 40, 255, 2)]
                        + [rng.randn(n, 3)]).astype(np.float64)
    y = X[:, 2] * 0.1 + X[:, 5] + rng.randn(n) * 0.3
    if kind == "missing":
        X[rng.rand(*X.shape) < 0.1] = np.nan
    if kind == "forest":
        make = functools.partial(gputree.RandomForestRegressor, n_estimators=3, max_depth=6,
                                 max_features=0.5, random_state=0)
    else:
        extra = ({"grow_policy": "lossguide", "max_depth": None, "max_leaf_nodes": 31}
                 if kind == "lossguide" else {"max_depth": 6})
        make = functools.partial(gputree.GradientBoostingRegressor, n_estimators=5,
                                 random_state=0, **extra)
    models = {}
    for fused in (False, True):
        monkeypatch.setattr(CPUBackend, "derives_in_scan", fused)
        models[fused] = make(device="cpu").fit(X, y)
    trees = [m._trees if hasattr(m, "_trees") else [e.tree_.arrays for e in m.estimators_]
             for m in (models[False], models[True])]
    assert len(trees[0]) == len(trees[1]) > 0
    for a, b in zip(*trees):
        assert a.feature.size > 1          # the trees split: levels were derived
        for field in dataclasses.fields(a):
            x, y_ = getattr(a, field.name), getattr(b, field.name)
            if isinstance(x, np.ndarray):
                assert x.dtype == y_.dtype and np.array_equal(x, y_, equal_nan=x.dtype.kind == "f")
