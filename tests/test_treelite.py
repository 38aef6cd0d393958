"""to_treelite: treelite's own predictor (gtil) gives gputree's predictions
on data with missing values and categorical features, for trees, forests and
boosting (binary, multiclass, regression)."""
import numpy as np
import pytest

import gputree

treelite = pytest.importorskip("treelite")


def _data(seed=0, n=300):
    """Numeric X with NaNs; column 2 holds category codes 0..5 (NaN missing)."""
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n, 4))
    X[:, 2] = rng.randint(0, 6, n)
    X[rng.rand(n, 4) < 0.1] = np.nan
    signal = np.nan_to_num(X[:, 0]) + np.isin(X[:, 2], [1, 4]) - 0.5 * np.nan_to_num(X[:, 3])
    return X, signal


def _models():
    common = dict(device="cpu", random_state=0, categorical_features=[2])
    boost = dict(n_estimators=4, max_depth=3, **common)
    return {
        "tree_binary": (gputree.DecisionTreeClassifier(max_depth=5, **common), "binary"),
        "tree_regressor": (gputree.DecisionTreeRegressor(max_depth=5, **common), "float"),
        "forest_multiclass": (gputree.RandomForestClassifier(n_estimators=3, max_depth=4,
                                                             **common), "three"),
        "forest_regressor": (gputree.RandomForestRegressor(n_estimators=3, max_depth=4,
                                                           **common), "float"),
        "boosting_binary": (gputree.GradientBoostingClassifier(**boost), "binary"),
        "boosting_multiclass": (gputree.GradientBoostingClassifier(**boost), "three"),
        "boosting_multi_output_tree": (gputree.GradientBoostingClassifier(
            multi_strategy="multi_output_tree", **boost), "three"),
        "boosting_regressor": (gputree.GradientBoostingRegressor(**boost), "float"),
        "boosting_poisson": (gputree.GradientBoostingRegressor(loss="poisson", **boost),
                             "count"),
    }


@pytest.mark.parametrize("name", sorted(_models()))
def test_gtil_predicts_as_gputree(name):
    X, signal = _data()
    estimator, target = _models()[name]
    y = {"binary": signal > 0.3, "three": np.digitize(signal, [-0.3, 0.7]),
         "float": signal, "count": np.round(np.exp(signal / 2))}[target]
    model = estimator.fit(X, y)
    X_test, _ = _data(seed=1)
    X_test[:5, 2] = 9.0          # categories unseen at fit go the missing side
    assert any(t.is_categorical.any() for t in model.model_.trees)
    exported = model.to_treelite()
    theirs = np.asarray(treelite.gtil.predict(exported, X_test)).reshape(X_test.shape[0], -1)
    ours = model.predict_proba(X_test) if hasattr(model, "predict_proba") else \
        model.predict(X_test)[:, None]
    if theirs.shape[1] == 1 and ours.shape[1] == 2:   # binary: P(class 1)
        ours = ours[:, 1:]
    # treelite's softmax works in float32; the raw margins are compared exactly below
    np.testing.assert_allclose(theirs, ours, rtol=1e-6, atol=1e-12)
    if hasattr(model, "_raw_predict"):
        margin = treelite.gtil.predict(exported, X_test, pred_margin=True)
        np.testing.assert_allclose(np.asarray(margin).reshape(X_test.shape[0], -1),
                                   model._raw_predict(X_test), rtol=1e-12, atol=1e-14)
    else:
        np.testing.assert_allclose(theirs, ours, rtol=1e-12, atol=1e-14)


def test_multi_output_models_are_refused_with_the_fix():
    X, signal = _data()
    model = gputree.DecisionTreeRegressor(device="cpu", max_depth=2).fit(
        X, np.column_stack([signal, -signal]))
    with pytest.raises(ValueError, match="one model per output"):
        model.to_treelite()
