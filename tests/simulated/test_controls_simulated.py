"""The boosting controls and surrogate splits run through the CUDA code path
(simulated device) and give what the CPU gives: the scan's constraint tail
travels with the level plan, surrogates are fitted from the device's bins."""
import numpy as np

from gputree import DecisionTreeRegressor, GradientBoostingRegressor


def _data(n=150, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.randint(0, 10, size=(n, 4)).astype(float)
    y = X[:, 0] - 0.5 * X[:, 1] + X[:, 2] * X[:, 3] * 0.1 + rng.normal(size=n)
    X[rng.rand(n) < 0.1, 1] = np.nan
    return X, y


def test_constrained_boosting_matches_cpu_on_simulated_device():
    X, y = _data()
    params = dict(n_estimators=3, max_depth=3, min_samples_leaf=5, early_stopping=False,
                  random_state=0, reg_alpha=2.0, monotonic_cst=[1, -1, 0, 0],
                  interaction_cst=[{0, 1}, {2, 3}], loss="huber")
    sim = GradientBoostingRegressor(device="cuda-sim", **params).fit(X, y)
    cpu = GradientBoostingRegressor(device="cpu", **params).fit(X, y)
    assert np.array_equal(sim.predict(X), cpu.predict(X))


def test_surrogate_tree_matches_cpu_on_simulated_device():
    X, y = _data()
    blanked = X.copy()
    blanked[::3, 0] = np.nan
    params = dict(max_depth=3, missing_strategy="surrogate", random_state=0)
    sim = DecisionTreeRegressor(device="cuda-sim", **params).fit(X, y)
    cpu = DecisionTreeRegressor(device="cpu", **params).fit(X, y)
    assert np.array_equal(sim.predict(blanked), cpu.predict(blanked))


def test_categorical_surrogates_match_cpu_on_simulated_device():
    """A categorical primary split and categorical surrogates (feature 2 holds
    category codes; feature 3 is a categorical near-copy of feature 0)."""
    X, y = _data()
    X[:, 2] = X[:, 2] % 4
    X[:, 3] = np.where(np.isnan(X[:, 0]), 0, X[:, 0] > 4) + 2 * (np.arange(len(y)) % 2)
    y = y + 3.0 * np.isin(X[:, 2], [1, 2])
    blanked = X.copy()
    blanked[::3, [0, 2]] = np.nan
    params = dict(max_depth=3, missing_strategy="surrogate", random_state=0, max_bins=16,
                  categorical_features=[2, 3])
    sim = DecisionTreeRegressor(device="cuda-sim", **params).fit(X, y)
    cpu = DecisionTreeRegressor(device="cpu", **params).fit(X, y)
    assert np.any(cpu.tree_.is_categorical[cpu.tree_.feature >= 0])
    assert np.isin(3, cpu.surrogates_.feature)
    for name in ("feature", "agreement", "sides"):
        assert np.array_equal(getattr(sim.surrogates_, name), getattr(cpu.surrogates_, name))
    assert np.array_equal(sim.predict(blanked), cpu.predict(blanked))


def test_treeboost_matches_cpu_on_simulated_device():
    from gputree import GradientBoostingClassifier
    X, y = _data()
    labels = np.digitize(y, np.quantile(y, [0.33, 0.66]))
    params = dict(n_estimators=3, max_depth=3, min_samples_leaf=5, early_stopping=False,
                  random_state=0, criterion="friedman_mse", reg_lambda=0.0, subsample=0.8,
                  max_bins=16)
    sim = GradientBoostingClassifier(device="cuda-sim", **params).fit(X, labels)
    cpu = GradientBoostingClassifier(device="cpu", **params).fit(X, labels)
    assert np.array_equal(sim.decision_function(X), cpu.decision_function(X))
