"""DecisionTreeClassifier / DecisionTreeRegressor behaviour: criteria against
hand formulas, categorical features (pandas and categorical_features=),
missing values, multi-output, weights, randomness, stopping rules,
decision paths, pickling and labels."""
import pickle

import numpy as np
import pandas as pd
import pytest

import reference
from gputree.backends import devmath
from gputree import DecisionTreeClassifier, DecisionTreeRegressor


def _rows_per_node(model, X):
    return model.decision_path(X).toarray().astype(bool).T     # (n_nodes, n_samples)


def _assert_same_trees(a, b):
    for name in ("feature", "bitset", "left_child", "missing_left", "n_node_samples"):
        np.testing.assert_array_equal(getattr(a.tree_, name), getattr(b.tree_, name), err_msg=name)
    np.testing.assert_allclose(a.tree_.value, b.tree_.value, rtol=1e-12, atol=1e-15)


def _mixed_data(rng, n=300):
    """A numerical column with NaNs, a categorical one (codes 0..5) and noise."""
    X = np.column_stack([rng.normal(size=n), rng.randint(0, 6, n), rng.normal(size=n)])
    y = ((X[:, 0] > 0.3) ^ np.isin(X[:, 1], [0, 2, 5])).astype(int)
    X[rng.rand(n) < 0.15, 0] = np.nan
    return X, y


@pytest.mark.parametrize("criterion", ["gini", "entropy", "gain_ratio", "misclassification",
                                       "squared_error", "poisson"])
def test_node_impurity_value_and_gain_follow_the_hand_formulas(criterion):
    rng = np.random.RandomState(0)
    n = 200
    X = rng.randint(0, 5, (n, 3)).astype(float)
    w = rng.uniform(0.5, 2.0, n)
    if criterion in reference.CLASSIFICATION:
        y = (X[:, 0] + rng.randint(0, 3, n)) % 3
        model = DecisionTreeClassifier(criterion=criterion, max_depth=3, device="cpu")
    else:
        y = rng.poisson(1 + X[:, 0]).astype(float) + rng.uniform(0, 0.5, n)
        model = DecisionTreeRegressor(criterion=criterion, max_depth=3, device="cpu")
    model.fit(X, y, sample_weight=w)
    n_classes = 3 if criterion in reference.CLASSIFICATION else None
    tree = model.tree_
    rows = _rows_per_node(model, X)
    for node in range(tree.node_count):
        r = rows[node]
        assert tree.impurity[node] == pytest.approx(
            reference.impurity(criterion, y[r], w[r], n_classes), rel=1e-9, abs=1e-12)
        assert tree.weighted_n_node_samples[node] == pytest.approx(w[r].sum(), rel=1e-12)
        if n_classes:
            fractions = [w[r & (y == k)].sum() / w[r].sum() for k in range(3)]
            np.testing.assert_allclose(tree.value[node, 0], fractions, rtol=1e-9)
        else:
            assert tree.value[node, 0, 0] == pytest.approx(np.average(y[r], weights=w[r]), rel=1e-9)
        if tree.left_child[node] >= 0:
            go_left = rows[tree.left_child[node]][r]
            assert tree.gain[node] == pytest.approx(reference.split_gain(
                criterion, y[r], w[r], go_left, 1, n_classes), rel=1e-7, abs=1e-12)


def test_categorical_features_by_dtype_index_name_and_mask_give_one_tree():
    rng = np.random.RandomState(1)
    X, y = _mixed_data(rng)
    frame = pd.DataFrame({"num": X[:, 0], "cat": X[:, 1], "noise": X[:, 2]})
    as_category = frame.assign(cat=frame["cat"].astype(int).astype("category"))
    models = [DecisionTreeClassifier(device="cpu", max_depth=4, categorical_features=spec).fit(data, y)
              for spec, data in [([1], X), (["cat"], frame), ([False, True, False], X),
                                 (None, as_category), ([-2], X)]]
    for other in models[1:]:
        _assert_same_trees(models[0], other)
    assert models[0].tree_.is_categorical.any()
    # a subset split separates categories {0, 2, 5} from {1, 3, 4} at once
    cat_nodes = np.flatnonzero(models[0].tree_.is_categorical)
    subsets = {frozenset(reference.bins_of(models[0].tree_.bitset[i]) - {255}) for i in cat_nodes}
    assert {frozenset({0, 2, 5}), frozenset({1, 3, 4})} & subsets
    assert models[0].score(X, y) > 0.95


def test_string_categories_and_unseen_categories_go_to_the_missing_bin():
    rng = np.random.RandomState(2)
    n = 400
    colour = rng.choice(["red", "green", "blue", "grey"], n)
    frame = pd.DataFrame({"colour": pd.Categorical(colour), "x": rng.normal(size=n)})
    frame.loc[rng.rand(n) < 0.1, "colour"] = np.nan
    y = np.where(frame["colour"].isin(["red", "blue"]), 5.0, 0.0) + frame["x"]
    y = np.where(frame["colour"].isna(), 9.0, y)
    model = DecisionTreeRegressor(device="cpu", max_depth=4).fit(frame, y)
    test = pd.DataFrame({"colour": pd.Categorical(["purple", None, "red"]), "x": [0.2, 0.2, 0.2]})
    pred = model.predict(test)
    assert pred[0] == pred[1]                  # unseen category == missing
    assert pred[1] > 7 and 3 < pred[2] < 7     # missing rows learned their own side
    # categories matched by value, whatever their order or dtype at predict time
    shuffled = frame.assign(colour=frame["colour"].cat.reorder_categories(["grey", "red", "blue", "green"]))
    np.testing.assert_array_equal(model.predict(shuffled), model.predict(frame))
    as_text = frame.assign(colour=frame["colour"].astype(object))
    np.testing.assert_array_equal(model.predict(as_text), model.predict(frame))


@pytest.mark.parametrize("nan_like_high", [True, False])
def test_missing_direction_is_learned(nan_like_high):
    rng = np.random.RandomState(3)
    n = 500
    x = rng.uniform(0, 10, n)
    y = (x > 5).astype(int)
    nan_rows = rng.rand(n) < 0.2
    x[nan_rows] = np.nan
    y[nan_rows] = int(nan_like_high)
    model = DecisionTreeClassifier(device="cpu", max_depth=1).fit(x[:, None], y)
    assert model.tree_.missing_left[0] == (not nan_like_high)
    assert model.predict([[np.nan]])[0] == int(nan_like_high)
    assert model.score(x[:, None], y) == 1.0


def test_missing_values_unseen_at_fit_follow_the_larger_child():
    rng = np.random.RandomState(4)
    x = rng.uniform(0, 10, 300)
    y = x + rng.normal(0, 0.1, 300)
    model = DecisionTreeRegressor(device="cpu", max_depth=1).fit(x[:, None], y)
    leaves = model.apply(x[:, None])
    larger = np.bincount(leaves).argmax()
    assert model.apply([[np.nan]])[0] == larger


def test_multi_output_classification_and_regression():
    rng = np.random.RandomState(5)
    X = rng.normal(size=(200, 3))
    Y = np.column_stack([X[:, 0] > 0, (X[:, 1] > 0).astype(int) + (X[:, 2] > 1)]).astype(int)
    clf = DecisionTreeClassifier(device="cpu").fit(X, Y)
    assert clf.n_outputs_ == 2 and clf.n_classes_ == [2, 3]
    assert clf.predict(X).shape == (200, 2) and np.array_equal(clf.predict(X), Y)
    proba = clf.predict_proba(X[:10])
    assert [p.shape for p in proba] == [(10, 2), (10, 3)]
    for o, p in enumerate(proba):
        np.testing.assert_allclose(p.sum(axis=1), 1.0)
        np.testing.assert_array_equal(clf.classes_[o][p.argmax(axis=1)], clf.predict(X[:10])[:, o])
    reg = DecisionTreeRegressor(device="cpu", max_depth=3).fit(X, Y * 1.5)
    pred = reg.predict(X)
    assert pred.shape == (200, 2)
    leaves = reg.apply(X)
    for leaf in np.unique(leaves):
        np.testing.assert_allclose(pred[leaves == leaf][0], (Y * 1.5)[leaves == leaf].mean(axis=0))
    # a column vector is single-output, as in scikit-learn
    single = DecisionTreeRegressor(device="cpu", max_depth=3).fit(X, Y[:, :1] * 1.5)
    assert single.predict(X).shape == (200,)


def test_class_weight_equals_the_matching_sample_weight():
    rng = np.random.RandomState(6)
    X, y = _mixed_data(rng)
    labels = np.array(["a", "b"])[y]
    w = rng.uniform(0.5, 1.5, len(y))
    weighted = DecisionTreeClassifier(device="cpu", class_weight={"b": 3.0}, max_depth=5)
    plain = DecisionTreeClassifier(device="cpu", max_depth=5)
    _assert_same_trees(weighted.fit(X, labels, w), plain.fit(X, labels, w * np.where(y == 1, 3.0, 1.0)))
    balanced = DecisionTreeClassifier(device="cpu", class_weight="balanced", max_depth=5).fit(X, labels)
    counts = np.bincount(y)
    _assert_same_trees(balanced, plain.fit(X, labels, len(y) / (2 * counts[y])))
    # multi-output: one dict per output
    Y = np.column_stack([y, 1 - y])
    per_output = DecisionTreeClassifier(device="cpu", max_depth=3,
                                        class_weight=[{1: 2.0}, {0: 3.0}]).fit(X, Y)
    factor = np.where(y == 1, 2.0, 1.0) * np.where(1 - y == 0, 3.0, 1.0)
    _assert_same_trees(per_output, DecisionTreeClassifier(device="cpu", max_depth=3).fit(X, Y, factor))


def test_zero_weights_mean_removed_rows_and_integer_weights_mean_repeats():
    rng = np.random.RandomState(7)
    X, y = _mixed_data(rng)
    w = rng.randint(0, 3, len(y)).astype(float)
    weighted = DecisionTreeClassifier(device="cpu", categorical_features=[1], random_state=0)
    weighted.fit(X, y, sample_weight=w)
    keep = w > 0
    dropped = DecisionTreeClassifier(device="cpu", categorical_features=[1], random_state=0)
    dropped.fit(X[keep], y[keep], sample_weight=w[keep])
    repeated = DecisionTreeClassifier(device="cpu", categorical_features=[1], random_state=0)
    repeated.fit(np.repeat(X, w.astype(int), axis=0), np.repeat(y, w.astype(int)))
    for other in (dropped, repeated):
        np.testing.assert_array_equal(weighted.predict_proba(X), other.predict_proba(X))
        assert weighted.tree_.node_count == other.tree_.node_count


def test_max_features_is_deterministic_given_random_state():
    rng = np.random.RandomState(8)
    X = rng.normal(size=(300, 8))
    y = X @ rng.normal(size=8) + rng.normal(0, 0.1, 300)
    fit = lambda seed: DecisionTreeRegressor(device="cpu", max_features=3, max_depth=6,
                                             random_state=seed).fit(X, y)
    _assert_same_trees(fit(0), fit(0))
    _assert_same_trees(fit(np.random.RandomState(5)), fit(np.random.RandomState(5)))
    trees = [fit(seed) for seed in range(4)]
    assert len({t.tree_.feature.tobytes() for t in trees}) > 1
    assert trees[0].max_features_ == 3
    assert DecisionTreeRegressor(device="cpu", max_features="sqrt").fit(X, y).max_features_ == 2
    assert DecisionTreeRegressor(device="cpu", max_features=0.5).fit(X, y).max_features_ == 4


@pytest.mark.parametrize("max_leaf_nodes", [2, 3, 7, 20])
def test_max_leaf_nodes_is_respected(max_leaf_nodes):
    rng = np.random.RandomState(9)
    X = rng.normal(size=(300, 4))
    y = (X[:, 0] * X[:, 1] > 0).astype(int) ^ (rng.rand(300) < 0.1)
    model = DecisionTreeClassifier(device="cpu", max_leaf_nodes=max_leaf_nodes).fit(X, y)
    full = DecisionTreeClassifier(device="cpu").fit(X, y)
    assert model.get_n_leaves() == min(max_leaf_nodes, full.get_n_leaves())


@pytest.mark.parametrize("min_samples_leaf", [1, 4, 13, 0.05])
def test_every_leaf_has_min_samples_leaf_rows(min_samples_leaf):
    rng = np.random.RandomState(10)
    X, y = _mixed_data(rng)
    model = DecisionTreeClassifier(device="cpu", min_samples_leaf=min_samples_leaf,
                                   categorical_features=[1]).fit(X, y)
    needed = min_samples_leaf if isinstance(min_samples_leaf, int) else np.ceil(min_samples_leaf * len(y))
    counts = np.bincount(model.apply(X), minlength=model.tree_.node_count)
    leaves = model.tree_.feature < 0
    assert np.all(counts[leaves] >= needed) and counts[leaves].sum() == len(y)
    assert model.get_n_leaves() > 1


def test_min_impurity_decrease_holds_at_every_split():
    rng = np.random.RandomState(11)
    X = rng.normal(size=(400, 3))
    y = X[:, 0] + rng.normal(0, 0.5, 400)
    model = DecisionTreeRegressor(device="cpu", min_impurity_decrease=0.01).fit(X, y)
    t = model.tree_
    internal = np.flatnonzero(t.left_child >= 0)
    left = t.left_child[internal]
    w = t.weighted_n_node_samples
    decrease = (w[internal] * t.impurity[internal] - w[left] * t.impurity[left]
                - w[left + 1] * t.impurity[left + 1]) / w[0]
    assert np.all(decrease >= 0.01 - 1e-12) and 3 < t.node_count < 200


def test_decision_path_and_apply_agree():
    rng = np.random.RandomState(12)
    X, y = _mixed_data(rng)
    model = DecisionTreeClassifier(device="cpu", max_depth=6, categorical_features=[1]).fit(X, y)
    leaves = model.apply(X)
    path = model.decision_path(X).toarray().astype(bool)
    t = model.tree_
    assert np.all(path[:, 0])                                   # every path starts at the root
    np.testing.assert_array_equal(path.sum(axis=1), t.depth[leaves] + 1)
    np.testing.assert_array_equal(path[np.arange(len(y)), leaves], True)
    visited_leaves = path & (t.feature < 0)[None, :]
    assert np.all(visited_leaves.sum(axis=1) == 1)
    # every visited node's parent is visited: the path is a root-to-leaf chain
    rows, nodes = np.nonzero(path[:, 1:])
    assert np.all(path[rows, t.parent[nodes + 1]])
    # apply agrees with the numpy reference walk over the binned rows
    X_binned = model._bin_mapper.transform(model._encoder.transform(X))
    np.testing.assert_array_equal(leaves, reference.predict_leaves(t, X_binned))


def test_predict_proba_predict_and_log_proba_agree():
    rng = np.random.RandomState(13)
    X, y = _mixed_data(rng)
    model = DecisionTreeClassifier(device="cpu", max_depth=3).fit(X, y)
    proba = model.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_array_equal(model.classes_[proba.argmax(axis=1)], model.predict(X))
    # gputree's own log (the same bits on every device), within 3 ulps of libm's
    log_proba = model.predict_log_proba(X)
    np.testing.assert_array_equal(log_proba, devmath.apply("log", proba))
    with np.errstate(divide="ignore"):
        reference = np.log(proba)
    finite = np.isfinite(reference)
    assert np.array_equal(np.isfinite(log_proba), finite)
    assert np.all(np.abs(log_proba - reference)[finite] <= 3 * np.spacing(np.abs(reference))[finite])
    assert model.score(X, y) == np.mean(model.predict(X) == y)


def test_pickle_round_trip():
    rng = np.random.RandomState(14)
    X, y = _mixed_data(rng)
    labels = np.array(["no", "yes"])[y]
    for model in (DecisionTreeClassifier(device="cpu", categorical_features=[1]).fit(X, labels),
                  DecisionTreeRegressor(device="cpu", max_depth=5).fit(X, y * 2.5)):
        clone = pickle.loads(pickle.dumps(model))
        np.testing.assert_array_equal(clone.predict(X), model.predict(X))
        np.testing.assert_array_equal(clone.apply(X), model.apply(X))
        _assert_same_trees(clone, model)
        assert clone.get_params() == model.get_params()


def test_string_and_mixed_labels():
    rng = np.random.RandomState(15)
    X = rng.normal(size=(120, 2))
    y = np.where(X[:, 0] > 0.5, "cat", np.where(X[:, 1] > 0, "dog", "eel"))
    model = DecisionTreeClassifier(device="cpu").fit(X, y)
    np.testing.assert_array_equal(model.classes_, ["cat", "dog", "eel"])
    assert model.predict(X).dtype.kind == "U" and np.array_equal(model.predict(X), y)
    as_object = DecisionTreeClassifier(device="cpu").fit(X, y.astype(object))
    np.testing.assert_array_equal(as_object.predict(X), y)
    ints = DecisionTreeClassifier(device="cpu").fit(X, np.array([3, 7, 11])[np.searchsorted(["cat", "dog", "eel"], y)])
    np.testing.assert_array_equal(ints.classes_, [3, 7, 11])


def test_feature_importances_sum_to_one_and_ignore_unused_features():
    rng = np.random.RandomState(16)
    X = rng.normal(size=(300, 5))
    y = 3 * X[:, 1] + X[:, 3]
    model = DecisionTreeRegressor(device="cpu", max_depth=4).fit(X, y)
    importances = model.feature_importances_
    assert importances.sum() == pytest.approx(1.0) and np.all(importances >= 0)
    used = np.unique(model.tree_.feature[model.tree_.feature >= 0])
    assert np.all(importances[np.setdiff1d(np.arange(5), used)] == 0)
    assert importances.argmax() == 1


def test_float32_input_gives_the_float64_tree():
    rng = np.random.RandomState(17)
    X = rng.normal(size=(200, 3)).astype(np.float32)
    y = (X[:, 0] > 0).astype(int)
    a = DecisionTreeClassifier(device="cpu").fit(X, y)
    b = DecisionTreeClassifier(device="cpu").fit(X.astype(np.float64), y)
    _assert_same_trees(a, b)
    np.testing.assert_array_equal(a.predict(X), b.predict(X.astype(np.float64)))


def test_a_categorical_feature_may_use_every_bin():
    rng = np.random.RandomState(18)
    X = rng.randint(0, 8, (200, 1)).astype(float)
    y = np.isin(X[:, 0], [1, 2, 6]).astype(int)
    model = DecisionTreeClassifier(device="cpu", max_bins=8, categorical_features=[0]).fit(X, y)
    assert model.score(X, y) == 1.0 and model.get_depth() == 1


def test_depth_and_leaves_accessors_and_device_auto():
    rng = np.random.RandomState(19)
    X, y = _mixed_data(rng)
    model = DecisionTreeClassifier(device="auto", max_depth=4).fit(X, y)
    assert model.get_depth() == model.tree_.depth.max() <= 4
    assert model.get_n_leaves() == np.sum(model.tree_.feature < 0)
    _assert_same_trees(model, DecisionTreeClassifier(device="cpu", max_depth=4).fit(X, y))
