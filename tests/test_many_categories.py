"""Categorical features with more categories than the 256-bin bitmap: the
split scan against brute force (CART's exact search over every subset) and
against a plain-numpy LightGBM search (every prefix its rules allow), the
splits' words beyond the bitset in partitioning, prediction, model files,
exports and TreeSHAP."""
import json

import numpy as np
import pytest

import reference
from gputree import (DecisionTreeRegressor,
                     GradientBoostingClassifier, GradientBoostingRegressor, load_model)
from gputree.criteria import (CLASSIFICATION_CRITERIA, REGRESSION_CRITERIA,
                              classification_statistics,
                              newton_statistics, regression_statistics)
from gputree.data.binning import BinMapper
from gputree.growth.params import CategoricalSearch, GrowthParams

#: categories of the wide feature: bins 0 .. 299, so 44 of them in words
N_CATEGORIES = 300


def _node(backend, codes, extra, stats, n_categories=N_CATEGORIES):
    """(mapper, X_binned, root histogram of the rows ``codes`` only): every
    category is seen at fit (bins 0 .. n_categories - 1, the missing bin
    after), the histogram holds only the rows of ``codes`` (the rows that
    make the bins sit in a node that is not built). ``extra``: a numerical
    column of the node's rows."""
    n = codes.shape[0]
    filler = np.arange(n_categories, dtype=float)
    X = np.column_stack([np.concatenate([codes, filler]),
                         np.concatenate([extra, np.zeros(n_categories)])])
    mapper = BinMapper(255, [True, False]).fit(X)
    X_binned = mapper.transform(X, backend)
    positions = np.concatenate([np.zeros(n, np.int32), np.ones(n_categories, np.int32)])
    padded = np.concatenate([stats, np.zeros((n_categories, stats.shape[1]), stats.dtype)])
    hist = backend.build_histograms(X_binned, padded, positions, 0, np.array([0, -1], np.int32),
                                    1, mapper.n_bins_)
    return mapper, np.asarray(X_binned)[:n], hist


def _scan(backend, mapper, hist, stats, params):
    allowed = np.ones((1, 2), dtype=np.uint8)
    return backend.find_best_splits(hist, mapper.n_bins_non_missing_,
                                    mapper.is_categorical_.astype(np.uint8), allowed,
                                    mapper.missing_bin_, stats.layout, stats.inv_scale, params)


def _left(split, X_binned):
    """bool (n,): rows the best split sends left (bitset and words)."""
    bins = reference.bins_of(split.bitset[0], split.words[0])
    return np.isin(X_binned[:, split.feature[0]], list(bins))


@pytest.mark.parametrize("criterion", ["squared_error", "gini"])
@pytest.mark.parametrize("seed", range(4))
def test_exact_search_beyond_the_bitmap_equals_brute_force(backend, criterion, seed):
    """Seven categories present in the node, most of them from bin 256 on:
    the best of every subset (both sides of missing), which the sorted scan
    finds for squared error and two classes (Breiman)."""
    rng = np.random.RandomState(seed)
    present = np.concatenate([rng.choice(256, 2, replace=False),
                              256 + rng.choice(N_CATEGORIES - 256, 5, replace=False)])
    n = 160
    codes = rng.choice(present, n).astype(float)
    codes[rng.rand(n) < 0.1] = np.nan
    effect = dict(zip(present, rng.normal(size=present.size)))
    signal = np.array([effect.get(c, 0.3) for c in codes]) + rng.normal(0, 0.5, n)
    w = reference.dyadic_weights(rng, n)
    if criterion == "gini":
        y, n_classes = (signal > 0).astype(int), 2
        stats = classification_statistics(y[:, None], n_classes, w,
                                          CLASSIFICATION_CRITERIA[criterion])
    else:
        y, n_classes = signal, None
        stats = regression_statistics(y[:, None], w, REGRESSION_CRITERIA[criterion])
    mapper, X_binned, hist = _node(backend, codes, np.zeros(n), stats.stats)
    split = _scan(backend, mapper, hist, stats, GrowthParams().criterion_params())
    assert split.feature[0] == 0 and np.isfinite(split.gain[0])
    go_left = _left(split, X_binned)
    candidates = [(reference.split_gain(criterion, y, w, left, 1, n_classes), 0, bins, left)
                  for bins, left in reference.candidate_partitions(
                      X_binned[:, 0], mapper.n_bins_non_missing_[0], True, mapper.missing_bin_)]
    best, margin = reference.best_gain_margin(
        [c for c in candidates if np.isfinite(c[0])], w > 0)
    assert np.isclose(split.gain[0], reference.split_gain(criterion, y, w, go_left, 1, n_classes),
                      rtol=1e-9)
    assert np.isclose(split.gain[0], best[0], rtol=1e-9)
    if margin > 1e-6 * (1 + abs(best[0])):
        np.testing.assert_array_equal(go_left, best[3])
    np.testing.assert_array_equal(split.left_sums[0], stats.stats[go_left].sum(axis=0))


def lightgbm_reference(hist, n_non_missing, missing_bin, inv, layout_count, search, msl, mcw,
                       reg_lambda):
    """LightGBM's categorical search of one feature's histogram (int64
    (n_bins, 3): G, H, count) in plain numpy: (gain, left category bins as a
    set, missing_left) of the strictly best candidate, or (-inf, None, 0)."""
    def score(S, lam):
        g, h = S[0] * inv[0], S[1] * inv[1]
        return g * g / (h + lam) if h + lam > 0.0 else 0.0

    total, missing = hist.sum(axis=0), hist[missing_bin]
    has_missing = missing[layout_count] > 0
    parent = score(total, reg_lambda)
    count = hist[:, layout_count].astype(float)
    best = (-np.inf, None, 0)

    def consider(left_bins, lam):
        nonlocal best
        A = hist[sorted(left_bins)].sum(axis=0)
        for ml in ((0, 1) if has_missing else (0,)):
            L = A + missing * ml
            R = total - L
            if (L[layout_count] < msl or R[layout_count] < msl or L[1] * inv[1] < mcw
                    or R[1] * inv[1] < mcw):
                continue
            gain = 0.5 * (score(L, lam) + score(R, lam) - parent)
            if gain > best[0]:
                best = (gain, set(left_bins), ml)

    if n_non_missing <= search.max_cat_to_onehot:
        for b in range(n_non_missing):
            if count[b] > 0:
                consider({b}, reg_lambda)
        return best
    least = max(search.cat_smooth, 1.0)
    used = [b for b in range(n_non_missing) if count[b] >= least]
    key = {b: (hist[b, 0] * inv[0]) / (hist[b, 1] * inv[1] + search.cat_smooth) for b in used}
    order = sorted(used, key=lambda b: (key[b], b))
    n_steps = min(len(order), search.max_cat_threshold, (len(order) + 1) // 2)
    total_count = total[layout_count]
    for ordered in (order, order[::-1]):
        group = 0.0
        for i in range(n_steps):
            left = ordered[:i + 1]
            n_left = count[left].sum()
            group += count[ordered[i]]
            h_left = hist[left, 1].sum() * inv[1]
            if n_left < msl or h_left < mcw:
                continue
            rest = total_count - n_left
            h_rest = (total[1] - hist[left, 1].sum()) * inv[1]
            if rest < msl or rest < search.min_data_per_group or h_rest < mcw:
                break
            if group < search.min_data_per_group:
                continue
            group = 0.0
            consider(set(left), reg_lambda + search.cat_l2)
    return best


SEARCHES = [CategoricalSearch(),
            CategoricalSearch(cat_smooth=0.0, cat_l2=1.0, min_data_per_group=1,
                              max_cat_threshold=64),
            CategoricalSearch(cat_smooth=3.0, cat_l2=0.0, min_data_per_group=20,
                              max_cat_threshold=5),
            CategoricalSearch(max_cat_to_onehot=400)]


@pytest.mark.parametrize("n_categories", [40, N_CATEGORIES])
@pytest.mark.parametrize("search", range(len(SEARCHES)))
@pytest.mark.parametrize("seed", range(2))
def test_lightgbm_search_equals_its_plain_reference(backend, n_categories, search, seed):
    """The scan's LightGBM search against the plain-numpy one on random
    gradients: the same categories left, the same missing side and gain."""
    search = SEARCHES[search]
    rng = np.random.RandomState(seed)
    n = 3000
    codes = rng.randint(0, n_categories, n).astype(float)
    codes[rng.rand(n) < 0.05] = np.nan
    effect = rng.normal(size=n_categories)
    g = np.where(np.isnan(codes), 0.2, effect[np.nan_to_num(codes).astype(int)])
    g = g + rng.normal(0, 1, n)
    h = rng.uniform(0.2, 1.0, n)
    stats = newton_statistics(g[:, None], h[:, None], np.ones(n))
    mapper, X_binned, hist = _node(backend, codes, np.zeros(n), stats.stats, n_categories)
    growth = GrowthParams(min_samples_leaf=5, min_weight_leaf=1e-3, reg_lambda=1.0,
                          categorical=search)
    split = _scan(backend, mapper, hist, stats, growth.criterion_params())
    count_channel = 2
    assert stats.stats.shape[1] == 3 and np.all(stats.stats[:, count_channel] == 1)
    expected = lightgbm_reference(np.asarray(hist)[0, 0], mapper.n_bins_non_missing_[0],
                                  mapper.missing_bin_, stats.inv_scale, count_channel, search,
                                  5, 1e-3, 1.0)
    assert np.isfinite(expected[0]), "no valid split: a weak case"
    assert split.feature[0] == 0
    assert np.isclose(split.gain[0], expected[0], rtol=1e-12)
    bins = reference.bins_of(split.bitset[0], split.words[0])
    assert bins - {mapper.missing_bin_} == expected[1]
    assert (mapper.missing_bin_ in bins) == bool(expected[2])
    np.testing.assert_array_equal(split.left_sums[0],
                                  stats.stats[_left(split, X_binned)].sum(axis=0))


# ------------------------------------------------------------- estimators
def _wide_data(seed, n=3000, n_categories=700):
    rng = np.random.RandomState(seed)
    codes = rng.randint(0, n_categories, n).astype(float)
    codes[rng.rand(n) < 0.03] = np.nan
    effect = np.random.RandomState(99).normal(size=n_categories)
    x1 = rng.normal(size=n)
    signal = np.where(np.isnan(codes), 0.0, effect[np.nan_to_num(codes).astype(int)]) + 0.5 * x1
    return np.column_stack([codes, x1]), signal + rng.normal(0, 0.5, n)


MODELS = {
    "tree": lambda: DecisionTreeRegressor(max_depth=6, categorical_features=[0], device="cpu"),
    "boosting": lambda: GradientBoostingClassifier(
        n_estimators=5, categorical_features=[0], device="cpu", early_stopping=False,
        min_data_per_group=20, cat_smooth=2.0),
}


def _fit(kind, seed=0):
    X, signal = _wide_data(seed)
    y = signal if kind == "tree" else (signal > 0).astype(int)
    return MODELS[kind]().fit(X, y), X


def _trees(model):
    return list(model.model_.trees)


@pytest.mark.parametrize("kind", sorted(MODELS))
def test_predictions_walk_the_words_as_the_reference_does(kind):
    """Trees with splits whose left sets reach past bin 255: every row's leaf
    (the backend's walk) is the reference walk's, and the rows that reach a
    node during fit (its count) are those the reference sends there."""
    model, X = _fit(kind)
    trees = _trees(model)
    assert any(t.has_cat_words for t in trees), "no split used the words: a weak test"
    X_binned = np.asarray(model.model_._bin_mapper().transform(X, None))
    leaves = model._leaves(X, trees)
    for t, tree in enumerate(trees):
        expected = reference.predict_leaves(tree, X_binned)
        np.testing.assert_array_equal(leaves[:, t], expected)
    if kind == "tree":
        tree = trees[0]
        reached = np.bincount(reference.predict_leaves(tree, X_binned),
                              minlength=tree.node_count)
        leaf = tree.feature < 0
        np.testing.assert_array_equal(reached[leaf], tree.n_node_samples[leaf])


@pytest.mark.parametrize("kind", sorted(MODELS))
def test_model_file_round_trip_with_words(kind, tmp_path):
    model, X = _fit(kind)
    model.save_model(tmp_path / "m.json")
    data = json.loads((tmp_path / "m.json").read_text())
    assert data["schema_version"] == 6
    assert any("cat_words" in t for t in data["trees"])
    loaded = load_model(tmp_path / "m.json")
    for a, b in zip(_trees(model), _trees(loaded)):
        for name in ("cat_words", "cat_start", "cat_n_words", "bitset", "feature"):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    X_new = X.copy()
    X_new[:5, 0] = [np.nan, 10_000, -0.0, 699, 650]      # missing, unseen, seen categories
    predict = "predict_proba" if kind == "boosting" else "predict"
    np.testing.assert_array_equal(getattr(loaded, predict)(X_new),
                                  getattr(model, predict)(X_new))


@pytest.mark.parametrize("damage", ["too_many", "bin_of_no_category", "start"])
def test_damaged_words_are_refused(damage):
    from gputree.model import FittedModel, ModelFormatError
    model, _ = _fit("tree")
    data = model.model_.to_dict()
    tree = model.model_.trees[0]
    node = int(np.flatnonzero(tree.cat_n_words)[0])
    if damage == "too_many":        # more words than 700 categories need (14)
        tree.cat_n_words[node] += 20
    elif damage == "bin_of_no_category":    # bin 701: no category
        last = int(np.flatnonzero(tree.cat_n_words)[-1])
        tree.cat_words[int(tree.cat_start[last] + tree.cat_n_words[last]) - 1] |= 1 << 31
        tree.cat_n_words[last] = 14
    else:
        tree.cat_start[node] += 1
    with pytest.raises(ModelFormatError, match="cat_"):
        FittedModel.from_dict(data)


def test_export_text_lists_categories_from_the_words():
    from gputree import export_text
    model, X = _fit("tree")
    tree = _trees(model)[0]
    node = int(np.flatnonzero(tree.cat_n_words)[0])
    mapper = model.model_._bin_mapper()
    bins = sorted(reference.bins_of(tree.bitset[node], tree.node_words(node)))
    codes = [int(mapper.bin_thresholds_[0, b]) for b in bins if b < 700]
    assert any(c >= 256 for c in codes)
    text = export_text(model)
    assert any(all(f"{c}" in line for c in codes) for line in text.splitlines())


def test_tree_shap_contributions_add_up_with_words():
    model, X = _fit("boosting")
    contrib = model.predict(X[:200], pred_contrib=True)
    np.testing.assert_allclose(contrib.sum(axis=1), model.decision_function(X[:200]),
                               rtol=1e-9, atol=1e-9)


def test_treelite_export_predicts_as_the_model():
    tl = pytest.importorskip("treelite")
    model, X = _fit("boosting")
    exported = model.to_treelite()
    margin = tl.gtil.predict(exported, X, pred_margin=True)
    np.testing.assert_allclose(np.asarray(margin).reshape(-1), model._raw_predict(X)[:, 0],
                               rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("bad", [{"categorical_search": "fisher"}, {"cat_smooth": -1.0},
                                 {"min_data_per_group": 0}, {"max_cat_threshold": 0},
                                 {"max_cat_to_onehot": 1.5}])
def test_bad_categorical_search_parameters_name_the_argument(bad):
    name = next(iter(bad))
    with pytest.raises((ValueError, TypeError), match=name):
        GradientBoostingRegressor(n_estimators=2, device="cpu", **bad).fit(
            np.arange(40.0)[:, None], np.arange(40.0))


def test_auto_search_keeps_small_category_models_and_regularises_wide_ones():
    """'auto' grows the exact search's trees where every categorical
    feature has at most 255 categories, LightGBM's where one has more."""
    rng = np.random.RandomState(3)
    n = 2000
    small = np.column_stack([rng.randint(0, 50, n), rng.normal(size=n)]).astype(float)
    y = rng.normal(size=n) + (small[:, 0] % 3)
    kwargs = dict(n_estimators=3, categorical_features=[0], device="cpu", early_stopping=False)
    auto = GradientBoostingRegressor(**kwargs).fit(small, y)
    exact = GradientBoostingRegressor(categorical_search="exact", **kwargs).fit(small, y)
    np.testing.assert_array_equal(auto.predict(small), exact.predict(small))
    X, signal = _wide_data(1)
    auto = GradientBoostingRegressor(**kwargs).fit(X, signal)
    lgb = GradientBoostingRegressor(categorical_search="lightgbm", **kwargs).fit(X, signal)
    np.testing.assert_array_equal(auto.predict(X), lgb.predict(X))
    # LightGBM's search sends at most max_cat_threshold categories left
    for tree in _trees(auto):
        for node in np.flatnonzero((tree.feature == 0) & (tree.left_child >= 0)):
            bins = reference.bins_of(tree.bitset[node], tree.node_words(node))
            assert len(bins - {auto.model_.thresholds.shape[1]}) <= 32


@pytest.fixture(scope="module")
def compiled_scan_parts():
    """make_scan_parts(njit) once per module (each call makes new dispatchers,
    which compile again)."""
    from numba import njit

    from gputree.backends.scan import make_scan_parts
    return make_scan_parts(njit)


@pytest.mark.parametrize("n", [0, 1, 2, 15, 16, 17, 33, 100, 2000])
def test_category_sorts_order_by_key_then_bin_like_numpy(n, compiled_scan_parts):
    """The CPU's merge sort and the device's heapsort of (key, bin) entries
    give numpy's stable order by key (NaN last), ties by bin: so every
    device's scan sees the categories in one order, whichever sort runs."""
    parts = compiled_scan_parts
    rng = np.random.default_rng(n)
    keys = rng.choice([-1.5, 0.0, -0.0, 0.25, 2.0, np.inf, -np.inf, np.nan], size=n)
    keys[: n // 3] = rng.normal(size=n // 3)
    bins = rng.permutation(3 * n)[:n].astype(np.int32)
    expected = np.lexsort((bins, keys))
    for sort, width in ((parts.heap_sort, n), (parts.merge_sort, 2 * n)):
        k, b = np.zeros(max(width, 2)), np.zeros(max(width, 2), dtype=np.int32)
        k[:n], b[:n] = keys, bins
        sort(k, b, n)
        np.testing.assert_array_equal(b[:n], bins[expected])
        np.testing.assert_array_equal(k[:n], keys[expected])


@pytest.mark.parametrize("n, k", [(3, 1), (17, 8), (100, 1), (100, 32), (2000, 32), (2000, 5)])
def test_category_selection_of_the_ends_matches_a_full_sort(n, k, compiled_scan_parts):
    """The CPU's selection of the k entries that sort first and the k that
    sort last (what LightGBM's search of sorted categories reads) gives
    exactly the ends of numpy's stable order by key (NaN last), ties by
    bin, on keys with ties, signed zeros, infinities and NaN, in random,
    ascending and descending input order."""
    rng = np.random.default_rng(n + k)
    keys = rng.choice([-1.5, 0.0, -0.0, 0.25, 2.0, np.inf, -np.inf, np.nan], size=n)
    keys[: n // 3] = rng.normal(size=n // 3)
    bins = rng.permutation(3 * n)[:n].astype(np.int32)
    expected = np.lexsort((bins, keys))
    for permutation in (np.arange(n), expected, expected[::-1]):
        k_in, b_in = np.zeros(2 * n), np.zeros(2 * n, dtype=np.int32)
        k_in[:n], b_in[:n] = keys[permutation], bins[permutation]
        compiled_scan_parts.select_ends(k_in, b_in, n, k)
        ends = np.concatenate([expected[:k], expected[n - k:]])
        np.testing.assert_array_equal(np.concatenate([b_in[:k], b_in[n - k:n]]), bins[ends])
        np.testing.assert_array_equal(np.concatenate([k_in[:k], k_in[n - k:n]]), keys[ends])
