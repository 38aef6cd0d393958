"""The single-tree estimators run end to end through the CUDA code path
(simulated device) on small data and learn what they should."""
import numpy as np
from sklearn.datasets import load_iris, load_diabetes
from sklearn.model_selection import train_test_split

from gputree import DecisionTreeClassifier, DecisionTreeRegressor, export_text


def test_iris_classifier_on_simulated_device():
    X, y = load_iris(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0, stratify=y)
    model = DecisionTreeClassifier(device="cuda-sim", max_depth=3).fit(X_train, y_train)
    assert model.score(X_test, y_test) > 0.85
    proba = model.predict_proba(X_test)
    assert np.allclose(proba.sum(axis=1), 1.0)
    assert "class:" in export_text(model)


def test_diabetes_regressor_matches_cpu_on_simulated_device():
    X, y = load_diabetes(return_X_y=True)
    X, y = X[:150], y[:150]
    sim = DecisionTreeRegressor(device="cuda-sim", max_depth=3, max_bins=16).fit(X, y)
    cpu = DecisionTreeRegressor(device="cpu", max_depth=3, max_bins=16).fit(X, y)
    assert np.array_equal(sim.predict(X), cpu.predict(X))
    assert sim.score(X, y) > 0.3


def test_pruning_path_on_simulated_device():
    X, y = load_iris(return_X_y=True)
    sim = DecisionTreeClassifier(device="cuda-sim", max_depth=4).cost_complexity_pruning_path(X, y)
    cpu = DecisionTreeClassifier(device="cpu", max_depth=4).cost_complexity_pruning_path(X, y)
    assert np.array_equal(sim.ccp_alphas, cpu.ccp_alphas)
