"""Small fitted models of every estimator type on data with missing values
and a pandas category column, shared by the model-format tests (and by
tests/data/write_model_fixtures.py, which wrote the kept files)."""
import numpy as np
import pandas as pd

import gputree


def mixed_data(seed=0, n=240):
    """(X DataFrame with NaNs and a 'category' column, binary y, 3-class y, float y)."""
    rng = np.random.RandomState(seed)
    X = pd.DataFrame({"a": rng.normal(size=n),
                      "b": pd.Categorical(rng.choice(["red", "green", "blue", "grey"], n)),
                      "c": rng.randint(0, 5, n).astype(float)})
    X.loc[rng.rand(n) < 0.15, "a"] = np.nan
    signal = X["a"].fillna(-1).to_numpy() + 1.5 * (X["b"] == "red").to_numpy() - 0.3 * X["c"]
    y_binary = (signal > 0).astype(int)
    y_three = np.digitize(signal, [-0.8, 0.4])
    y_float = signal + rng.normal(0, 0.1, n)
    return X, y_binary, y_three, y_float


def cases():
    """name -> (estimator, which y) for every estimator type and task."""
    small = dict(device="cpu", random_state=0)
    boost = dict(n_estimators=4, max_depth=3, min_samples_leaf=5, **small)
    return {
        "tree_classifier": (gputree.DecisionTreeClassifier(max_depth=4, **small), 2),
        "tree_regressor": (gputree.DecisionTreeRegressor(max_depth=4, **small), 3),
        "forest_classifier": (gputree.RandomForestClassifier(n_estimators=3, max_depth=3,
                                                             **small), 2),
        "forest_regressor": (gputree.RandomForestRegressor(n_estimators=3, max_depth=3,
                                                           **small), 3),
        "boosting_binary": (gputree.GradientBoostingClassifier(**boost), 1),
        "boosting_multiclass": (gputree.GradientBoostingClassifier(**boost), 2),
        "boosting_regressor": (gputree.GradientBoostingRegressor(**boost), 3),
        "boosting_quantile": (gputree.GradientBoostingRegressor(loss="quantile", alpha=0.3,
                                                                **boost), 3),
        # relevance labels 0..2, in queries of 12 rows
        "boosting_ranker": (gputree.GradientBoostingRanker(**boost), 2),
    }


#: rows of each query of the ranking case
RANKING_QUERY_ROWS = 12


def fitted(name):
    estimator, column = cases()[name]
    data = mixed_data()
    if isinstance(estimator, gputree.GradientBoostingRanker):
        group = [RANKING_QUERY_ROWS] * (len(data[0]) // RANKING_QUERY_ROWS)
        return estimator.fit(data[0], data[column], group=group), data[0]
    return estimator.fit(data[0], data[column]), data[0]


def predictions(model, X):
    """Every prediction output of a model, as a list of arrays."""
    outputs = [model.predict(X)]
    if hasattr(model, "predict_proba"):
        outputs.append(model.predict_proba(X))
    return outputs


def surrogate_data(seed=0, n=300):
    """(X DataFrame, binary y) for surrogate splits: "a" decides y with "c",
    "a_copy" is a noisy copy of "a" and the category column "colour" mostly
    tells a's sign; "a" has NaNs."""
    rng = np.random.RandomState(seed)
    a = rng.normal(size=n)
    colour = np.where(a > 0, rng.choice(["red", "blue"], n), rng.choice(["green", "grey"], n))
    flip = rng.rand(n) < 0.1
    colour[flip] = rng.choice(["red", "blue", "green", "grey"], flip.sum())
    X = pd.DataFrame({"a": a, "a_copy": a + rng.normal(0, 0.3, n),
                      "colour": pd.Categorical(colour), "c": rng.randint(0, 5, n).astype(float)})
    y = ((a > 0) ^ (X["c"] > 3)).astype(int).to_numpy()
    X.loc[rng.rand(n) < 0.1, "a"] = np.nan
    return X, y


def surrogate_tree(**params):
    """A DecisionTreeClassifier with surrogate splits fitted on surrogate_data,
    and test rows where the split features are often missing."""
    X, y = surrogate_data()
    model = gputree.DecisionTreeClassifier(max_depth=3, missing_strategy="surrogate",
                                           n_surrogates=2, device="cpu", random_state=0,
                                           **params).fit(X, y)
    X_test, _ = surrogate_data(seed=1)
    X_test.loc[::2, "a"] = np.nan
    X_test.loc[::3, "a_copy"] = np.nan
    X_test.loc[::5, "c"] = np.nan
    return model, X_test
