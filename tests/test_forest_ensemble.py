"""Forests as scikit-learn ensembles: a fitted forest is the sequence of its
trees, each tree is what its template grows on the rows it drew
(``estimators_samples_``), OOB estimates are on ``score``'s scale and equal a
brute-force OOB computed from those rows and trees, the criteria
absolute_error and friedman_mse, ``max_samples`` beyond n, and the errors
scikit-learn's forests raise."""
import numpy as np
import pytest
import scipy.sparse
from sklearn.base import clone
from sklearn.datasets import make_classification, make_multilabel_classification
from sklearn.exceptions import NotFittedError
from sklearn.metrics import accuracy_score, f1_score, mean_absolute_error, r2_score
from sklearn.model_selection import train_test_split

from gputree import (DecisionTreeClassifier, DecisionTreeRegressor, RandomForestClassifier,
                     RandomForestRegressor)

FAST = dict(device="cpu", random_state=0)
#: small forests leave a few rows in every bag; the OOB tests check n_trees > 0
pytestmark = pytest.mark.filterwarnings("ignore:Some inputs do not have OOB scores")


def _integer_features(n, n_features=6, seed=0):
    """Features with few distinct values, so that the bins of any subset
    of the rows split the rows as the bins of all of them do."""
    rng = np.random.RandomState(seed)
    X = rng.randint(0, 12, size=(n, n_features)).astype(float)
    signal = X[:, 0] - 0.7 * X[:, 1] + 0.4 * X[:, 2] * (X[:, 3] > 5)
    return X, signal + rng.normal(0, 1.0, n)


def _same_tree(a, b):
    """Every node of sklearn-shaped trees a and b: structure, splits, weights,
    values (not n_node_samples: a forest's tree counts each drawn row once,
    as scikit-learn's forests do, a tree fitted on the drawn rows counts
    repetitions)."""
    for name in ("children_left", "children_right", "feature", "threshold",
                 "weighted_n_node_samples", "value", "impurity"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)


def _brute_force_oob(forest, X, predict):
    """Per row: the mean over the trees whose drawn rows leave it out of
    ``predict(tree, rows)`` (each tree's own prediction), and how many did."""
    total, n_trees = 0.0, np.zeros(len(X))
    for tree, drawn in zip(forest.estimators_, forest.estimators_samples_):
        out = np.ones(len(X), dtype=bool)
        out[drawn] = False
        part = np.zeros((len(X),) + predict(tree, X[:1]).shape[1:])
        part[out] = predict(tree, X[out])
        total = total + part
        n_trees += out
    return total / np.maximum(n_trees, 1).reshape((-1,) + (1,) * (np.ndim(total) - 1)), n_trees


# ----------------------------------------------------------- the protocol
def test_a_fitted_forest_is_the_sequence_of_its_trees():
    X, y = _integer_features(200)
    forest = RandomForestRegressor(n_estimators=4, max_depth=4, **FAST).fit(X, y)
    assert len(forest) == 4
    trees = list(forest)
    assert len(trees) == 4 and all(isinstance(t, DecisionTreeRegressor) for t in trees)
    each = np.array([t.predict(X) for t in trees])
    np.testing.assert_array_equal(each, [t.predict(X) for t in forest.estimators_])
    np.testing.assert_array_equal(forest[-1].predict(X), each[3])
    np.testing.assert_array_equal([t.predict(X) for t in forest[1:3]], each[1:3])
    np.testing.assert_allclose(each.mean(axis=0), forest.predict(X), rtol=1e-12)
    assert len({t.random_state for t in forest}) == 4     # every tree its own seed
    with pytest.raises(IndexError):
        forest[4]
    with pytest.raises(NotFittedError):
        len(RandomForestRegressor())


def test_estimator_is_the_unfitted_tree_with_the_forests_parameters():
    forest = RandomForestClassifier(criterion="entropy", max_depth=3, max_features=0.5,
                                    min_samples_leaf=4, max_bins=40, **FAST)
    template = forest.estimator
    assert isinstance(template, DecisionTreeClassifier) and not hasattr(template, "tree_")
    expected = dict(criterion="entropy", max_depth=3, max_features=0.5, min_samples_leaf=4,
                    max_bins=40, device="cpu", random_state=None)
    assert {k: template.get_params()[k] for k in expected} == expected
    with pytest.raises(NotFittedError):
        forest.estimator_
    X, y = make_classification(n_samples=60, random_state=0)
    assert forest.fit(X, y).estimator_.get_params() == template.get_params()


@pytest.mark.parametrize("forest", [
    RandomForestClassifier(n_estimators=5, max_features=0.5, max_samples=0.6, **FAST),
    RandomForestClassifier(n_estimators=3, max_features=2, bootstrap=False, **FAST),
    RandomForestRegressor(n_estimators=5, max_features=0.5, **FAST),
    RandomForestRegressor(n_estimators=4, criterion="absolute_error", max_features=3,
                          max_samples=250, **FAST),
], ids=["classifier", "classifier-no-bootstrap", "regressor", "absolute-error"])
def test_each_tree_regrows_from_its_drawn_rows(forest):
    """clone(estimators_[i]).fit(X[rows], y[rows]) with rows =
    estimators_samples_[i] is tree i (features with fewer distinct values than
    bins: the bins of the drawn rows split them as the forest's bins do).
    Regression targets are whole numbers: their statistics are exact in fixed
    point, so a row weighing its count and the row repeated sum alike (with
    real targets the fixed-point grid follows the largest |weight x y|, and
    near-ties between splits may break differently)."""
    X, y = _integer_features(200)
    if isinstance(forest, RandomForestClassifier):
        y = (y > np.median(y)).astype(int) + (y > np.quantile(y, 0.8))
    else:
        y = np.round(3 * y)
    forest.fit(X, y)
    drawn = forest.estimators_samples_
    expected = 200 if not forest.bootstrap else (
        int(0.6 * 200) if forest.max_samples == 0.6 else forest.max_samples or 200)
    for rows, tree in zip(drawn, forest.estimators_):
        assert rows.dtype == np.int32 and rows.shape == (expected,)
        if forest.bootstrap:
            assert len(np.unique(rows)) < len(rows)             # with replacement
        else:
            np.testing.assert_array_equal(rows, np.arange(200))
        again = clone(tree).fit(X[rows], y[rows])
        assert again.tree_.node_count > 3
        _same_tree(again.tree_, tree.tree_)
        np.testing.assert_array_equal(again.predict(X), tree.predict(X))


def test_decision_path_lays_the_trees_side_by_side():
    X, y = make_classification(n_samples=120, random_state=1)
    forest = RandomForestClassifier(n_estimators=3, max_depth=3, **FAST).fit(X, y)
    indicator, n_nodes_ptr = forest.decision_path(X)
    trees = forest.estimators_
    np.testing.assert_array_equal(np.diff(n_nodes_ptr), [t.tree_.node_count for t in trees])
    assert indicator.shape == (120, n_nodes_ptr[-1]) and scipy.sparse.isspmatrix_csr(indicator)
    for i, tree in enumerate(trees):
        block = indicator[:, n_nodes_ptr[i]:n_nodes_ptr[i + 1]].toarray()
        np.testing.assert_array_equal(block, tree.decision_path(X).toarray())
        assert np.all(block[np.arange(120), forest.apply(X)[:, i]] == 1)


# ------------------------------------------------------ out-of-bag scores
def test_multi_output_classification_oob_score_is_scores_accuracy():
    """A row counts only when all its outputs are right, as in ``score``:
    the OOB estimate is near the held-out score, and is the brute-force
    OOB accuracy of the trees on the rows they left out."""
    X, Y = make_multilabel_classification(n_samples=600, random_state=0)
    X_train, X_test, Y_train, Y_test = train_test_split(X, Y, test_size=0.5, random_state=0)
    forest = RandomForestClassifier(n_estimators=40, oob_score=True, **FAST).fit(X_train,
                                                                               Y_train)
    held_out = forest.score(X_test, Y_test)
    assert held_out == accuracy_score(Y_test, forest.predict(X_test))
    assert abs(forest.oob_score_ - held_out) < 0.06
    per_output = np.mean(forest.predict(X_test) == Y_test)
    assert per_output - held_out > 0.3                 # the two scales differ a lot here
    mean, n_trees = _brute_force_oob(forest, X_train,
                                     lambda tree, rows: np.stack(tree.predict_proba(rows), -1))
    assert np.all(n_trees > 0)
    np.testing.assert_array_equal(forest.oob_decision_function_, mean)
    brute = np.mean(np.all(mean.argmax(axis=1) == Y_train, axis=1))
    assert forest.oob_score_ == brute


def test_multi_output_regression_oob_score_is_scores_mean_r2():
    rng = np.random.RandomState(0)
    X = rng.uniform(size=(800, 5))
    Y = np.c_[10 * X[:, 0] + rng.normal(size=800), np.sin(6 * X[:, 1]) + 0.3 * rng.normal(size=800)]
    forest = RandomForestRegressor(n_estimators=30, oob_score=True, max_features=0.6,
                                   **FAST).fit(X[:400], Y[:400])
    assert abs(forest.oob_score_ - forest.score(X[400:], Y[400:])) < 0.05
    mean, n_trees = _brute_force_oob(forest, X[:400], lambda tree, rows: tree.predict(rows))
    assert np.all(n_trees > 0)
    np.testing.assert_array_equal(forest.oob_prediction_, mean)
    assert forest.oob_score_ == pytest.approx(r2_score(Y[:400], mean), rel=1e-12)


def test_absolute_error_oob_is_the_brute_force_oob():
    X, y = _integer_features(300, seed=3)
    forest = RandomForestRegressor(n_estimators=15, criterion="absolute_error", max_depth=6,
                                   oob_score=True, **FAST).fit(X, y)
    mean, n_trees = _brute_force_oob(forest, X, lambda tree, rows: tree.predict(rows))
    assert np.all(n_trees > 0)
    np.testing.assert_array_equal(forest.oob_prediction_, mean)
    assert forest.oob_score_ == pytest.approx(r2_score(y, mean), rel=1e-12)


def test_oob_score_may_be_a_metric():
    X, y = make_classification(n_samples=300, n_classes=3, n_informative=5, random_state=0)
    labels = np.array(["a", "b", "c"])[y]
    metric = lambda truth, predicted: f1_score(truth, predicted, average="macro")  # noqa: E731
    forest = RandomForestClassifier(n_estimators=20, oob_score=metric, **FAST).fit(X, labels)
    predicted = forest.classes_[forest.oob_decision_function_.argmax(axis=1)]
    assert forest.oob_score_ == metric(labels, predicted)
    default = RandomForestClassifier(n_estimators=20, oob_score=True, **FAST).fit(X, labels)
    np.testing.assert_array_equal(default.oob_decision_function_,
                                  forest.oob_decision_function_)
    assert default.oob_score_ == np.mean(predicted == labels)
    reg = RandomForestRegressor(n_estimators=10, oob_score=mean_absolute_error,
                                **FAST).fit(X, y.astype(float))
    assert reg.oob_score_ == mean_absolute_error(y, reg.oob_prediction_)
    with pytest.raises(TypeError, match="oob_score must be a bool or a callable"):
        RandomForestClassifier(oob_score="accuracy", **FAST).fit(X, y)


def test_multiclass_multioutput_oob_needs_a_metric():
    """score (accuracy) is undefined for multiclass multi-output targets:
    oob_score=True is refused before any tree grows; a metric is used."""
    X, y = make_classification(n_samples=200, n_classes=3, n_informative=5, random_state=0)
    Y = np.c_[y, (X[:, 0] > 0).astype(int)]
    with pytest.raises(ValueError, match="cannot be used to compute OOB estimates.*metric"):
        RandomForestClassifier(n_estimators=5, oob_score=True, **FAST).fit(X, Y)
    exact = lambda truth, predicted: np.mean(np.all(truth == predicted, axis=1))  # noqa: E731
    forest = RandomForestClassifier(n_estimators=30, oob_score=exact, **FAST).fit(X, Y)
    assert 0.3 < forest.oob_score_ < 1.0
    # a multilabel indicator (two values over every output) is scored
    binary = np.c_[(y > 0).astype(int), (X[:, 0] > 0).astype(int)]
    RandomForestClassifier(n_estimators=5, oob_score=True, **FAST).fit(X, binary)


def test_a_fit_without_oob_drops_the_previous_oob_estimate():
    X, y = make_classification(n_samples=100, random_state=0)
    forest = RandomForestClassifier(n_estimators=10, oob_score=True, **FAST).fit(X, y)
    forest.set_params(oob_score=False).fit(X, y)
    assert not hasattr(forest, "oob_score_") and not hasattr(forest, "oob_decision_function_")


# ------------------------------------------------------------ warm start
def test_warm_start_without_new_trees_fits_nothing():
    X, y = make_classification(n_samples=150, random_state=0)
    forest = RandomForestClassifier(n_estimators=5, warm_start=True, **FAST).fit(X, y)
    before = forest.predict_proba(X)
    with pytest.warns(UserWarning, match="does not fit new trees"):
        forest.fit(X, np.c_[y, y])          # another y: nothing is fitted, nothing checked
    np.testing.assert_array_equal(forest.predict_proba(X), before)
    # ... except a missing OOB estimate, that of one long fit
    with pytest.warns(UserWarning, match="does not fit new trees"):
        forest.set_params(oob_score=True).fit(X, y)
    fresh = RandomForestClassifier(n_estimators=5, oob_score=True, **FAST).fit(X, y)
    assert forest.oob_score_ == fresh.oob_score_


# -------------------------------------------------------------- criteria
def test_friedman_mse_is_squared_error_and_deprecated():
    X, y = _integer_features(200)
    with pytest.warns(FutureWarning, match="friedman_mse.*squared_error"):
        friedman = RandomForestRegressor(n_estimators=3, criterion="friedman_mse", **FAST)
    assert friedman.get_params()["criterion"] == "squared_error"
    squared = RandomForestRegressor(n_estimators=3, **FAST).fit(X, y)
    np.testing.assert_array_equal(friedman.fit(X, y).predict(X), squared.predict(X))
    # set_params skips __init__: the alias still fits the same forest
    aliased = RandomForestRegressor(n_estimators=3, **FAST).set_params(criterion="friedman_mse")
    np.testing.assert_array_equal(aliased.fit(X, y).predict(X), squared.predict(X))
    assert aliased.estimator.criterion == "squared_error"


def test_absolute_error_forest_fits_medians():
    """Heavy-tailed noise: the absolute-error forest's leaves are medians,
    so it errs less in absolute terms than the squared-error forest."""
    rng = np.random.RandomState(0)
    X = rng.uniform(size=(600, 3))
    y = 5 * X[:, 0] + rng.standard_cauchy(600)
    fit = dict(n_estimators=10, min_samples_leaf=10, **FAST)
    absolute = RandomForestRegressor(criterion="absolute_error", **fit).fit(X[:400], y[:400])
    squared = RandomForestRegressor(**fit).fit(X[:400], y[:400])
    truth = 5 * X[400:, 0]
    assert (mean_absolute_error(truth, absolute.predict(X[400:]))
            < 0.7 * mean_absolute_error(truth, squared.predict(X[400:])))
    with pytest.raises(ValueError, match="numerical features only"):
        RandomForestRegressor(criterion="absolute_error", categorical_features=[0],
                              **FAST).fit(np.round(X * 3), y)


# ----------------------------------------------------------- max_samples
def test_max_samples_may_exceed_the_rows():
    X, y = _integer_features(40)
    as_fraction = RandomForestRegressor(n_estimators=3, max_samples=1.5, **FAST).fit(X, y)
    as_count = RandomForestRegressor(n_estimators=3, max_samples=60, **FAST).fit(X, y)
    assert [len(r) for r in as_fraction.estimators_samples_] == [60] * 3
    np.testing.assert_array_equal(as_fraction.predict(X), as_count.predict(X))
    # a fraction is rounded down, as scikit-learn does
    assert len(RandomForestRegressor(n_estimators=1, max_samples=0.99, **FAST)
               .fit(X, y).estimators_samples_[0]) == 39
    for bad, error in ((0, ValueError), (0.0, ValueError), (-0.5, ValueError), ("half", TypeError)):
        with pytest.raises(error, match="max_samples"):
            RandomForestRegressor(n_estimators=1, max_samples=bad, **FAST).fit(X, y)


def test_sparse_y_gets_scikit_learns_error():
    X, y = make_classification(n_samples=30, random_state=0)
    for forest in (RandomForestClassifier(**FAST), RandomForestRegressor(**FAST)):
        with pytest.raises(ValueError, match="sparse multilabel-indicator for y is not "
                                             r"supported.*y.toarray\(\)"):
            forest.fit(X, scipy.sparse.csr_matrix(np.c_[y, y]))


def test_without_scikit_learn_score_counts_a_row_when_all_outputs_are_right():
    """gputree's stand-in ``score`` (no scikit-learn installed) is on the OOB
    estimate's scale too."""
    code = """
import sys
sys.modules["sklearn"] = None                 # as if scikit-learn were not installed
import numpy as np
from gputree import RandomForestClassifier
rng = np.random.RandomState(0)
X = rng.normal(size=(200, 4))
Y = np.c_[X[:, 0] > 0, X[:, 1] + rng.normal(size=200) > 0].astype(int)
forest = RandomForestClassifier(n_estimators=5, max_depth=2, device="cpu").fit(X, Y)
rows = np.all(forest.predict(X) == Y, axis=1).mean()
assert forest.score(X, Y) == rows < np.mean(forest.predict(X) == Y), forest.score(X, Y)
print("ok")
"""
    import subprocess
    import sys
    from pathlib import Path
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            cwd=Path(__file__).parents[1], timeout=300)
    assert result.stdout.strip() == "ok", result.stderr[-3000:]


def test_a_saved_forest_keeps_its_drawn_rows_and_tree_seeds(tmp_path):
    import gputree
    X, y = make_classification(n_samples=100, random_state=0)
    forest = RandomForestClassifier(n_estimators=3, max_samples=0.5, **FAST).fit(X, y)
    forest.save_model(tmp_path / "forest.json")
    loaded = gputree.load_model(tmp_path / "forest.json")
    for a, b in zip(forest.estimators_samples_, loaded.estimators_samples_):
        np.testing.assert_array_equal(a, b)
    assert [t.random_state for t in loaded] == [t.random_state for t in forest]
    # a file written before the bootstrap size was saved: a clear error
    from pathlib import Path
    old = gputree.load_model(Path(__file__).parent / "data" / "model_v1_forest_regressor.json")
    with pytest.raises(AttributeError, match="does not record the bootstrap size"):
        old.estimators_samples_
