"""export_text: scikit-learn's text where the trees coincide, real thresholds
between training values, category names, and the missing-value side."""
import copy
import re

import numpy as np
import pandas as pd
import pytest
from sklearn import tree as sktree

import reference
from gputree import DecisionTreeClassifier, DecisionTreeRegressor, export_graphviz, export_text
from model_cases import surrogate_data, surrogate_tree


def _binary_data(rng, n=400):
    """0/1 features: no gaps between values, so thresholds coincide (0.5)."""
    X = rng.randint(0, 2, (n, 5)).astype(float)
    signal = X @ np.array([3.0, -2.0, 1.5, 1.0, 0.0]) + rng.normal(0, 0.5, n)
    return X, signal


@pytest.mark.parametrize("options", [dict(), dict(show_weights=True), dict(max_depth=1),
                                     dict(decimals=4, spacing=2),
                                     dict(feature_names=list("abcde"),
                                          class_names=["lo", "mid", "hi"])])
def test_text_equals_scikit_learns_where_trees_coincide(options):
    rng = np.random.RandomState(0)
    X, signal = _binary_data(rng)
    y = np.digitize(signal, [0.5, 2.5])
    w = reference.dyadic_weights(rng, len(y))
    ours = DecisionTreeClassifier(device="cpu", min_samples_leaf=5).fit(X, y, sample_weight=w)
    theirs = sktree.DecisionTreeClassifier(min_samples_leaf=5, random_state=0).fit(X, y, sample_weight=w)
    reference.assert_same_tree(ours, theirs, X)
    text = export_text(ours, **options)
    assert text.replace(" (missing)", "") == sktree.export_text(theirs, **options)
    assert "truncated branch of depth" in text or options.get("max_depth", 10) > ours.get_depth()


def test_regression_text_equals_scikit_learns_where_trees_coincide():
    rng = np.random.RandomState(1)
    X, y = _binary_data(rng)
    ours = DecisionTreeRegressor(device="cpu", max_depth=4).fit(X, y)
    theirs = sktree.DecisionTreeRegressor(max_depth=4, random_state=0).fit(X, y)
    reference.assert_same_tree(ours, theirs, X)
    for options in (dict(), dict(max_depth=2, decimals=3)):
        assert export_text(ours, **options).replace(" (missing)", "") == \
            sktree.export_text(theirs, **options)


def test_thresholds_are_real_values_between_training_values():
    rng = np.random.RandomState(2)
    values = np.sort(rng.uniform(-50, 50, 12)).round(3)
    X = rng.choice(values, (300, 2))
    y = X[:, 0] ** 2 + X[:, 1] + rng.normal(0, 1, 300)
    model = DecisionTreeRegressor(device="cpu", max_depth=4).fit(X, y)
    text = export_text(model, decimals=6)
    found = re.findall(r"(feature_\d) <= (-?\d+\.\d+)", text)
    assert len(found) == np.sum(model.tree_.feature >= 0)
    for name, t in found:
        column = np.unique(X[:, int(name[-1])])
        t = float(t)
        below, above = column[column <= t], column[column > t]
        assert below.size and above.size and below.max() < t < above.min()


def test_category_names_and_missing_side():
    rng = np.random.RandomState(3)
    n = 400
    colour = pd.Categorical(rng.choice(["red", "green", "blue", "grey"], n))
    frame = pd.DataFrame({"colour": colour, "size": rng.normal(size=n)})
    frame.loc[rng.rand(n) < 0.1, "size"] = np.nan
    y = np.isin(colour, ["red", "blue"]).astype(int) ^ (frame["size"].fillna(5) > 1).to_numpy()
    model = DecisionTreeClassifier(device="cpu", max_depth=3).fit(frame, y)
    text = export_text(model)
    match = re.search(r"colour in \{([a-z, ]+)\}", text)
    assert match and set(match.group(1).split(", ")) in ({"red", "blue"}, {"green", "grey"})
    assert re.search(r"colour not in \{[a-z, ]+\}", text)
    assert re.search(r"size <= -?\d+\.\d+", text)
    # every split line pair marks the missing side exactly once
    split_lines = [line for line in text.splitlines() if "class:" not in line]
    assert sum("(missing)" in line for line in split_lines) == len(split_lines) // 2
    nan_goes_left = model.tree_.missing_left[0] == 1
    first, second = split_lines[0], [l for l in split_lines if l.startswith("|--- ")][1]
    assert ("(missing)" in first) == nan_goes_left and ("(missing)" in second) != nan_goes_left


def test_codes_are_printed_for_numpy_categorical_features():
    rng = np.random.RandomState(4)
    X = np.column_stack([rng.randint(0, 6, 300), rng.normal(size=300)]).astype(float)
    y = np.isin(X[:, 0], [1, 4]).astype(int)
    model = DecisionTreeClassifier(device="cpu", categorical_features=[0], max_depth=1).fit(X, y)
    text = export_text(model, feature_names=["code", "x"])
    assert re.search(r"\|--- code in \{(1, 4|0, 2, 3, 5)\}", text)


def test_feature_names_length_is_checked():
    model = DecisionTreeRegressor(device="cpu", max_depth=1).fit(np.eye(3), [0.0, 1.0, 2.0])
    with pytest.raises(ValueError, match="feature_names has 2 names but the tree has 3 features"):
        export_text(model, feature_names=["a", "b"])


def _splits_depth_first(tree, node=0):
    """Split nodes in export_text's order (node, then its left and right subtrees)."""
    if tree.children_left[node] < 0:
        return []
    return ([node] + _splits_depth_first(tree, tree.children_left[node])
            + _splits_depth_first(tree, tree.children_right[node]))


def _rule_sends_left(X, feature, op, operand):
    """bool (n,) and present (n,): the printed rule evaluated on the raw column."""
    column = X[feature]
    if op == "in":
        return column.isin(operand.strip("{}").split(", ")).to_numpy(), column.notna().to_numpy()
    values = column.to_numpy(dtype=float)
    return (values <= float(operand)) == (op == "<="), ~np.isnan(values)


def test_surrogates_are_shown_under_each_split_with_their_agreement():
    model, _ = surrogate_tree()
    X, _ = surrogate_data()
    text = export_text(model, decimals=6)
    assert "(missing)" not in text          # surrogates, not the default side, decide
    shown = re.findall(r"\(surrogates: (.*); majority: (left|right)\)", text)
    tree, sur = model.tree_, model.surrogates_
    splits = _splits_depth_first(tree)
    assert len(shown) == len(splits)
    assert " in {" in text.split("(surrogates: ", 1)[1] and " <= " in text.split("surrogates")[1]
    as_grown = copy.copy(model)          # training rows went the default way when missing
    as_grown.surrogates_ = None
    path = as_grown.decision_path(X).toarray().astype(bool)
    for (rules, side), node in zip(shown, splits):
        left, right = tree.children_left[node], tree.children_right[node]
        w = tree.weighted_n_node_samples
        assert side == ("left" if w[left] >= w[right] else "right")
        parsed = re.findall(r"(\w+) (<=|>|in) +(\{[^}]*\}|-?[\d.]+) \(agree ([\d.]+)\)", rules)
        features = sur.feature[node][sur.feature[node] >= 0]
        assert [p[0] for p in parsed] == [X.columns[f] for f in features]
        assert (rules == "none") == (features.size == 0)
        # each printed rule, applied to the raw training values, agrees with
        # the split on the printed share of the node's rows with both present
        primary = X.iloc[:, tree.feature[node]].notna().to_numpy()
        for feature, op, operand, agree in parsed:
            sends_left, present = _rule_sends_left(X, feature, op, operand)
            both = path[:, node] & primary & present
            share = np.mean(sends_left[both] == path[both, left])
            assert abs(share - float(agree)) <= 1e-6


def test_graphviz_labels_show_surrogates():
    model, _ = surrogate_tree()
    dot = export_graphviz(model)
    n_splits = int((model.tree_.children_left >= 0).sum())
    assert dot.count("surrogates: ") == n_splits and "(missing)" not in dot
