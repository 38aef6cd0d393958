"""Multiway splits (ID3 / C4.5, gputree.growth.multiway) against a plain-numpy ID3 /
C4.5 on small categorical data, the textbook case of a many-valued ID-like
feature, and the invariants of prediction, pruning and model files."""
import numpy as np
import pytest

from gputree import DecisionTreeClassifier
from gputree.io.json import load_model, save_model
from gputree.growth.multiway import AVERAGE_TOLERANCE

# ------------------------------------------ reference: plain-numpy ID3 / C4.5


def _entropy(w):
    total = w.sum()
    p = w[w > 0] / total
    return float(-(p * np.log2(p)).sum())


def c45_reference(X, y, weight, n_classes, ratio, max_depth=np.inf):
    """Nested dict tree: ``{"proba"}`` for leaves, plus ``feature``,
    ``children`` (code -> node) and ``default`` (the heaviest code, where
    missing (-1) and unknown codes go) for splits. X int (n, d) codes >= 0 or
    -1 for missing; every feature categorical."""

    def grow(rows, used, depth):
        counts = np.bincount(y[rows], weights=weight[rows], minlength=n_classes)
        node = {"proba": counts / counts.sum()}
        parent = _entropy(counts)
        if parent <= 0.0 or rows.size < 2 or depth >= max_depth:
            return node
        candidates = []
        for f in range(X.shape[1]):
            if f in used:
                continue
            codes = X[rows, f]
            present = np.unique(codes[codes >= 0])
            if present.size < 2:
                continue
            code_weight = np.array([weight[rows][codes == c].sum() for c in present])
            heaviest = int(present[np.argmax(code_weight)])
            groups = {int(c): rows[(codes == c) | ((codes < 0) & (c == heaviest))]
                      for c in present}
            shares = np.array([weight[g].sum() for g in groups.values()]) / weight[rows].sum()
            children = sum(s * _entropy(np.bincount(y[g], weights=weight[g],
                                                    minlength=n_classes))
                           for s, g in zip(shares, groups.values()))
            gain = parent - children
            split_info = -(shares * np.log2(shares)).sum()
            candidates.append((f, gain, gain / split_info, groups, heaviest))
        if ratio:
            positive = [c for c in candidates if c[1] > 0]
            if not positive:
                return node
            average = np.mean([c[1] for c in positive])
            eligible = [c for c in positive if c[1] >= average - AVERAGE_TOLERANCE * abs(average)]
            best = max(eligible, key=lambda c: (c[2], -c[0]))
        else:
            if not candidates:
                return node
            best = max(candidates, key=lambda c: (c[1], -c[0]))
        f, _, _, groups, heaviest = best
        node.update(feature=f, default=heaviest,
                    children={c: grow(g, used | {f}, depth + 1) for c, g in groups.items()})
        return node

    return grow(np.arange(X.shape[0]), frozenset(), 0)


def reference_proba(tree, X):
    out = []
    for row in X:
        node = tree
        while "feature" in node:
            node = node["children"].get(int(row[node["feature"]]),
                                        node["children"][node["default"]])
        out.append(node["proba"])
    return np.array(out)


def reference_leaves(tree):
    if "feature" not in tree:
        return 1
    return sum(reference_leaves(c) for c in tree["children"].values())


def as_float(codes):
    """The reference's codes as gputree's input: -1 -> NaN."""
    return np.where(codes < 0, np.nan, codes).astype(float)


def fit(X, y, weight=None, **params):
    model = DecisionTreeClassifier(multiway=True, device="cpu", random_state=0,
                                   categorical_features=list(range(X.shape[1])), **params)
    return model.fit(as_float(X), y, sample_weight=weight)


# ------------------------------------------ tests


@pytest.mark.parametrize("criterion", ["entropy", "gain_ratio"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_multiway_tree_equals_the_reference(criterion, seed):
    rng = np.random.RandomState(seed)
    n, n_values = 120, [2, 3, 4, 6]
    X = np.stack([rng.randint(0, v, n) for v in n_values], axis=1)
    X[rng.rand(n, X.shape[1]) < 0.05] = -1
    signal = (X[:, 0] == 1) + (X[:, 1] == 2) + 0.8 * (X[:, 2] % 2) + rng.rand(n)
    y = np.digitize(signal, [0.9, 1.8])
    weight = rng.randint(1, 4, n).astype(float)
    model = fit(X, y, weight, criterion=criterion, max_depth=3)
    reference = c45_reference(X, y, weight, 3, criterion == "gain_ratio", max_depth=3)
    # rows seen at fit, and unknown categories / missing values at predict
    X_new = np.stack([rng.randint(-1, v + 2, 200) for v in n_values], axis=1)
    for data in (X, X_new):
        np.testing.assert_allclose(model.predict_proba(as_float(data)),
                                   reference_proba(reference, data), rtol=0, atol=1e-12)
    assert model.get_n_leaves() == reference_leaves(reference)
    assert model.get_n_leaves() > 4, "a weak test: the tree barely split"


def _textbook(with_noise):
    """20 rows, two classes: "id" has 10 values (pure pairs: the largest
    information gain, 1 bit, but a split entropy of log2(10)); "good" has
    2 values and one row off (gain 0.76, split entropy ~1); "noise" a small
    positive gain that lowers the average gain below "good"'s."""
    y = np.repeat([0, 1], 10)
    identifier = np.arange(20) // 2
    good = y.copy()
    good[0] = 1
    columns = [identifier, good]
    if with_noise:
        columns.append(np.isin(np.arange(20), [0, 1, 2, 3, 4, 5, 10, 11, 12, 13]).astype(int))
    return np.stack(columns, axis=1), y


def test_id_like_feature_wins_on_information_gain_and_loses_on_gain_ratio():
    X, y = _textbook(with_noise=True)
    id3 = fit(X, y, criterion="entropy", max_depth=1)
    c45 = fit(X, y, criterion="gain_ratio", max_depth=1)
    assert id3.tree_.feature[0] == 0 and id3.get_n_leaves() == 10
    assert c45.tree_.feature[0] == 1 and c45.get_n_leaves() == 2
    for model, ratio in ((id3, False), (c45, True)):
        reference = c45_reference(X, y, np.ones(20), 2, ratio, max_depth=1)
        assert reference["feature"] == model.tree_.feature[0]


def test_c45_considers_only_candidates_with_at_least_average_gain():
    """Without the weak feature the average gain (0.88) exceeds "good"'s
    (0.76): C4.5 may not pick it despite its larger gain ratio."""
    X, y = _textbook(with_noise=False)
    c45 = fit(X, y, criterion="gain_ratio", max_depth=1)
    assert c45.tree_.feature[0] == 0
    assert c45_reference(X, y, np.ones(20), 2, True, max_depth=1)["feature"] == 0


def test_a_feature_is_not_reused_below_its_multiway_split_and_numerics_stay_binary():
    rng = np.random.RandomState(3)
    n = 200
    colour = rng.randint(0, 4, n)
    x = rng.normal(size=n)
    y = ((colour == 1) | ((colour == 2) & (x > 0.3))).astype(int)
    X = np.stack([colour, x], axis=1).astype(float)
    model = DecisionTreeClassifier(criterion="gain_ratio", multiway=True, device="cpu",
                                   categorical_features=[0]).fit(X, y)
    tree = model.tree_.arrays
    assert (model.predict(X) == y).all()
    # each categorical split node sends one category left (a chain link)
    categorical = np.flatnonzero((tree.feature == 0))
    bits = np.unpackbits(tree.bitset[categorical].view(np.uint8), axis=1, bitorder="little")
    assert (bits.sum(axis=1) == 1).all()
    # the chain of the root's split: the categories split off are distinct, and
    # no node below a chain's children splits on the categorical feature again
    depth_of_chain_end = tree.depth[categorical].max()
    assert not np.any((tree.feature == 0) & (tree.depth > depth_of_chain_end))
    assert np.unique(np.argmax(bits, axis=1)).size == categorical.size
    numeric = np.flatnonzero(tree.feature == 1)
    assert numeric.size and not tree.chain_link[numeric].any()


def test_pruning_collapses_a_multiway_split_as_a_unit():
    rng = np.random.RandomState(4)
    n = 300
    X = np.stack([rng.randint(0, 5, n), rng.randint(0, 3, n)], axis=1)
    y = ((X[:, 0] >= 2) ^ (rng.rand(n) < 0.2)).astype(int)
    model = fit(X, y, criterion="entropy")
    path = model.cost_complexity_pruning_path(as_float(X), y)
    assert path.ccp_alphas.size > 2
    previous = np.inf
    for alpha in path.ccp_alphas:
        pruned = fit(X, y, criterion="entropy", ccp_alpha=alpha).tree_.arrays
        # a chain link is never a leaf: its split is pruned with its head only
        assert (pruned.feature[pruned.chain_link == 1] >= 0).all()
        links = np.flatnonzero(pruned.chain_link == 1)
        assert (pruned.feature[pruned.parent[links]] == pruned.feature[links]).all()
        assert pruned.n_leaves <= previous
        previous = pruned.n_leaves


def test_multiway_model_file_round_trip(tmp_path):
    X, y = _textbook(with_noise=True)
    model = fit(X, y, criterion="gain_ratio")
    save_model(model, tmp_path / "m.json")
    loaded = load_model(tmp_path / "m.json")
    np.testing.assert_array_equal(loaded.tree_.arrays.chain_link, model.tree_.arrays.chain_link)
    X_new = np.array([[0, 0, 0], [9, 1, 1], [np.nan, np.nan, 0], [42, 0, 1]], dtype=float)
    np.testing.assert_array_equal(loaded.predict_proba(X_new), model.predict_proba(X_new))
    import json
    data = json.loads((tmp_path / "m.json").read_text())
    # the lowest version that describes it: chain_link needs 3, digests 5
    assert data["schema_version"] == 5 and "chain_link" in data["trees"][0]
    binary = DecisionTreeClassifier(device="cpu", max_depth=2).fit(X, y)
    save_model(binary, tmp_path / "b.json")
    data = json.loads((tmp_path / "b.json").read_text())
    assert "chain_link" not in data["trees"][0]       # written only for multiway splits


@pytest.mark.parametrize("params, match", [
    (dict(criterion="gini"), "criterion='entropy'"),
    (dict(criterion="entropy", max_leaf_nodes=4), "max_leaf_nodes"),
    (dict(criterion="entropy", missing_strategy="surrogate"), "missing_strategy"),
])
def test_unsupported_multiway_options_say_what_to_change(params, match):
    X, y = _textbook(with_noise=True)
    with pytest.raises(ValueError, match=match):
        DecisionTreeClassifier(multiway=True, **params).fit(X, y)


def test_export_text_lists_a_multiway_split_child_by_child():
    X, y = _textbook(with_noise=True)
    model = fit(X, y, criterion="entropy", max_depth=1)
    lines = model_text(model).splitlines()
    # one line per category at the top level (the 10 ids): 9 "= c" and the rest
    assert [line.startswith("|--- feature_0 = ") for line in lines[::2]].count(True) == 9
    assert lines[-2].startswith("|--- feature_0 not in {") and lines[-2].endswith("(missing)")


def model_text(model):
    from gputree.io.text import export_text
    return export_text(model)
