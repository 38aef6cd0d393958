"""scikit-learn's Tree interface on gputree trees (tree_ and forests'
estimators_), scikit-learn's exporters reading it, and gputree's own
export_graphviz / plot_tree for every estimator."""
import numpy as np
import pytest
from sklearn import tree as sktree

import gputree
import reference
from model_cases import cases, fitted, mixed_data


def _binary_data(rng, n=300):
    X = rng.randint(0, 2, (n, 4)).astype(float)
    y = np.digitize(X @ np.array([3.0, -2.0, 1.5, 1.0]) + rng.normal(0, 0.5, n), [0.5, 2.5])
    return X, y


@pytest.mark.parametrize("kind", ["classifier", "regressor"])
def test_tree_attributes_equal_scikit_learns_where_trees_coincide(kind):
    rng = np.random.RandomState(0)
    X, y = _binary_data(rng)
    ours = getattr(gputree, f"DecisionTree{kind.title()}")(device="cpu", max_depth=3).fit(X, y)
    theirs = getattr(sktree, f"DecisionTree{kind.title()}")(max_depth=3, random_state=0).fit(X, y)
    reference.assert_same_tree(ours, theirs, X)
    a, b = ours.tree_, theirs.tree_
    # node numbering differs (breadth-first vs depth-first): compare per training row
    path_a, path_b = a.decision_path(X).toarray(), b.decision_path(X.astype(np.float32)).toarray()
    assert path_a.sum() == path_b.sum()
    la, lb = a.apply(X), b.apply(X.astype(np.float32))
    np.testing.assert_array_equal(la, ours.apply(X))
    for name in ("value", "impurity", "weighted_n_node_samples", "n_node_samples"):
        np.testing.assert_allclose(getattr(a, name)[la], getattr(b, name)[lb], atol=1e-12,
                                   err_msg=name)
    np.testing.assert_allclose(a.predict(X), b.predict(X.astype(np.float32)), atol=1e-12)
    for name in ("node_count", "max_depth", "n_outputs", "n_features", "n_leaves",
                 "max_n_classes"):
        assert getattr(a, name) == getattr(b, name), name
    np.testing.assert_array_equal(a.n_classes, b.n_classes)
    # scikit-learn's conventions: -1 children and -2 feature/threshold at leaves
    for t in (a, b):
        leaf = t.children_left == -1
        assert np.array_equal(leaf, t.children_right == -1)
        assert np.all(t.feature[leaf] == -2) and np.all(t.threshold[leaf] == -2.0)
        assert np.all(t.feature[~leaf] >= 0)
    # sorted multisets of split thresholds agree
    np.testing.assert_allclose(np.sort(a.threshold[a.feature >= 0]),
                               np.sort(b.threshold[b.feature >= 0]))


def _labels(dot):
    import re
    return sorted(re.findall(r'label="([^"]*)"', dot))


def test_scikit_learns_export_graphviz_draws_the_same_nodes_where_trees_coincide():
    rng = np.random.RandomState(1)
    X, _ = _binary_data(rng)
    y = X @ np.array([3.0, -2.0, 1.5, 1.0]) + rng.normal(0, 0.5, X.shape[0])
    ours = gputree.DecisionTreeRegressor(device="cpu", max_depth=3).fit(X, y)
    theirs = sktree.DecisionTreeRegressor(max_depth=3, random_state=0).fit(X, y)
    reference.assert_same_tree(ours, theirs, X)
    # scikit-learn numbers nodes depth-first, gputree breadth-first: same boxes
    for options in (dict(), dict(proportion=True, precision=5), dict(max_depth=1)):
        assert _labels(sktree.export_graphviz(ours, **options)) == \
            _labels(sktree.export_graphviz(theirs, **options))


def test_scikit_learns_export_graphviz_reads_gputree_trees_and_forest_trees():
    model, X = fitted("forest_classifier")
    for estimator in model.estimators_:
        dot = sktree.export_graphviz(estimator, feature_names=list(X.columns))
        n_nodes = estimator.tree_.node_count
        assert dot.count(" [label=") == n_nodes and dot.count("->") == n_nodes - 1
    tree_model, _ = fitted("tree_classifier")
    assert sktree.export_graphviz(tree_model).count(" [label=") == tree_model.tree_.node_count


def test_forest_estimators_predict_the_forest_mean():
    model, X = fitted("forest_regressor")
    mean = np.mean([t.predict(X) for t in model.estimators_], axis=0)
    np.testing.assert_allclose(mean, model.predict(X), rtol=1e-12)


def test_categorical_split_representation():
    model, X = fitted("tree_classifier")
    t = model.tree_
    nodes = np.flatnonzero(t.is_categorical)
    assert nodes.size and np.all(np.isnan(t.threshold[nodes]))
    codes = X["b"].cat.codes.to_numpy().astype(float)
    Xc = X.assign(b=np.where(codes < 0, np.nan, codes)).to_numpy(dtype=float)
    np.testing.assert_array_equal(t.apply(Xc), model.apply(X))
    for node in nodes:
        left = t.left_categories(node)
        # rows reaching the node go left exactly when their code is listed
        at = t.decision_path(Xc).toarray()[:, node] == 1
        went_left = t.decision_path(Xc).toarray()[:, t.children_left[node]] == 1
        has_code = ~np.isnan(Xc[:, t.feature[node]])
        rows = at & has_code
        np.testing.assert_array_equal(went_left[rows], np.isin(Xc[rows, t.feature[node]], left))


@pytest.mark.parametrize("name", sorted(cases()))
def test_graphviz_has_one_box_per_node_with_splits_from_the_tree(name):
    model, X = fitted(name)
    trees = model.model_.trees
    index = len(trees) - 1
    t = trees[index]
    dot = gputree.export_graphviz(model, tree_index=index, node_ids=True)
    assert dot.count(" [label=") == t.node_count and dot.count("->") == t.node_count - 1
    for node in np.flatnonzero(t.feature >= 0):
        label = dot.split(f'node #{node}\\n')[1].split("\\n")[0]
        assert label.startswith(str(X.columns[t.feature[node]]))
        assert ("(missing)" in label) == bool(t.missing_left[node])
        assert (" in {" in label) == bool(t.is_categorical[node])
    assert gputree.export_graphviz(model, tree_index=index, max_depth=1).count(" [label=") == \
        np.sum(t.depth <= 1)
    with pytest.raises(ValueError, match="tree_index"):
        gputree.export_graphviz(model, tree_index=len(trees))


def test_plot_tree_draws_one_box_per_node():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    model, X = fitted("boosting_multiclass")
    fig, ax = plt.subplots()
    boxes = gputree.plot_tree(model, tree_index=2, ax=ax, filled=True)
    t = model.model_.trees[2]
    assert len(boxes) == t.node_count
    assert sum(" in {" in b.get_text() for b in boxes) == int(t.is_categorical.sum())
    fig.canvas.draw()
    plt.close(fig)
