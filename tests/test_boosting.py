"""Gradient boosting (gputree.estimators.boosting): the Newton step by hand, monotone
training loss, agreement with scikit-learn where the algorithms coincide
(integer features with fewer values than bins, so binning is exact), the
sampling and regularisation parameters, early stopping's rule, warm start,
and backend independence."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.ensemble import (GradientBoostingRegressor as SkGBR,
                              HistGradientBoostingClassifier, HistGradientBoostingRegressor)
from sklearn.metrics import accuracy_score, log_loss

from gputree import GradientBoostingClassifier, GradientBoostingRegressor
from gputree.backends import get_backend

FAST = dict(device="cpu", early_stopping=False, random_state=0)


def _integer_data(n=300, seed=0, n_features=4):
    """Integer features (12 values each) and a noisy latent score."""
    rng = np.random.RandomState(seed)
    X = rng.randint(0, 12, size=(n, n_features)).astype(float)
    latent = X[:, 0] - 5 + 0.5 * (X[:, 1] - 6) + rng.normal(size=n)
    return X, latent, rng


def _trees(model):
    return model._trees


def test_one_round_stump_is_the_hand_computed_newton_step():
    """3 rows, y = (0, 1, 1): init = log(2); p = 2/3, g = p - y = (2/3, -1/3,
    -1/3), h = 2/9. With lambda = 1 the best split is {0} | {1, 2}:
    left leaf -(2/3)/(2/9 + 1) = -6/11, right (2/3)/(4/9 + 1) = 6/13."""
    X = np.array([[0.0], [1.0], [2.0]])
    y = np.array([0, 1, 1])
    for lr in (1.0, 0.5):
        model = GradientBoostingClassifier(n_estimators=1, max_depth=1, learning_rate=lr,
                                           reg_lambda=1.0, min_samples_leaf=1, **FAST).fit(X, y)
        expected = np.log(2.0) + lr * np.array([-6 / 11, 6 / 13, 6 / 13])
        np.testing.assert_allclose(model.decision_function(X), expected, rtol=1e-12)
        tree = _trees(model)[0]
        assert tree.threshold[0] == 0.5
        gain = 0.5 * ((2 / 3) ** 2 / (2 / 9 + 1) + (2 / 3) ** 2 / (4 / 9 + 1))
        assert tree.gain[0] == pytest.approx(gain, rel=1e-12)


CASES = {
    "binary": (GradientBoostingClassifier, {}, "binary"),
    "softmax": (GradientBoostingClassifier, {}, "multiclass"),
    "softmax-multi-output-tree": (GradientBoostingClassifier,
                                  {"multi_strategy": "multi_output_tree"}, "multiclass"),
    "squared_error": (GradientBoostingRegressor, {"loss": "squared_error"}, "real"),
    "absolute_error": (GradientBoostingRegressor, {"loss": "absolute_error"}, "real"),
    "poisson": (GradientBoostingRegressor, {"loss": "poisson"}, "counts"),
}


def _target(kind, latent, rng):
    if kind == "binary":
        return (latent > 0).astype(int)
    if kind == "multiclass":
        return np.digitize(latent, [-2.0, 2.0])
    if kind == "counts":
        return rng.poisson(np.exp(latent / 4))
    return latent + rng.standard_t(3, size=latent.shape[0])


@pytest.mark.parametrize("case", sorted(CASES))
def test_train_loss_decreases_monotonically(case):
    cls, params, kind = CASES[case]
    X, latent, rng = _integer_data()
    y = _target(kind, latent, rng)
    model = cls(n_estimators=12, max_depth=3, learning_rate=0.3, **params, **FAST).fit(X, y)
    scores = model.train_score_            # -loss, before round 1 and after each
    assert scores.shape == (model.n_iter_ + 1,) and model.n_iter_ == 12
    assert np.all(np.diff(scores) >= -1e-12)
    assert scores[-1] > scores[0]


@pytest.mark.parametrize("verbose", [0, 1])
def test_every_train_score_is_the_log_loss_of_the_staged_predictions(verbose, capsys):
    """Scores come with the next round's gradients (or at once when shown):
    both must equal the loss of the model after that many rounds."""
    X, latent, rng = _integer_data()
    y = (latent + rng.normal(size=latent.shape[0]) > 1).astype(int)
    model = GradientBoostingClassifier(n_estimators=6, max_depth=2, subsample=0.7,
                                       verbose=verbose, **FAST).fit(X, y)
    prior = np.full(y.shape[0], y.mean())
    staged = [prior] + [p[:, 1] for p in model.staged_predict_proba(X)]
    expected = [-log_loss(y, p) for p in staged]
    np.testing.assert_allclose(model.train_score_, expected, rtol=1e-10)


def test_initial_train_score_is_the_prior_log_loss():
    X, latent, _ = _integer_data()
    y = (latent > 1).astype(int)
    model = GradientBoostingClassifier(n_estimators=1, **FAST).fit(X, y)
    prior = np.full(y.shape[0], y.mean())
    assert -model.train_score_[0] == pytest.approx(log_loss(y, prior), rel=1e-12)


HGB_CASES = {
    "binary": (GradientBoostingClassifier, HistGradientBoostingClassifier, {}, "binary"),
    "softmax": (GradientBoostingClassifier, HistGradientBoostingClassifier, {}, "multiclass"),
    "squared_error": (GradientBoostingRegressor, HistGradientBoostingRegressor,
                      {"loss": "squared_error"}, "real"),
    "absolute_error": (GradientBoostingRegressor, HistGradientBoostingRegressor,
                       {"loss": "absolute_error"}, "real"),
    "poisson": (GradientBoostingRegressor, HistGradientBoostingRegressor,
                {"loss": "poisson"}, "counts"),
}


@pytest.mark.parametrize("case", sorted(HGB_CASES))
def test_matches_sklearn_hist_gradient_boosting(case):
    """Leaf-wise growth without a leaf budget grows the same depth-limited
    trees as level-wise growth; the Newton gain, leaf values, baselines and
    one-tree-per-class softmax are the same. scikit-learn keeps gradients in
    float32, hence the tolerance."""
    ours_cls, sk_cls, params, kind = HGB_CASES[case]
    X, latent, rng = _integer_data()
    y = _target(kind, latent, rng)
    ours = ours_cls(n_estimators=8, learning_rate=0.3, max_depth=3, min_samples_leaf=1,
                    reg_lambda=1.0, **params, **FAST).fit(X, y)
    sk = sk_cls(max_iter=8, learning_rate=0.3, max_depth=3, max_leaf_nodes=None,
                min_samples_leaf=1, l2_regularization=1.0, early_stopping=False,
                **params).fit(X, y)
    if ours_cls is GradientBoostingClassifier:
        np.testing.assert_allclose(ours.predict_proba(X), sk.predict_proba(X), atol=1e-6)
    else:
        np.testing.assert_allclose(ours.predict(X), sk.predict(X), rtol=1e-6, atol=1e-6)


def test_squared_error_matches_sklearn_gradient_boosting():
    """With lambda = 0 the Newton step is the mean residual, and the squared
    error gain orders splits as scikit-learn's friedman_mse does."""
    X, latent, rng = _integer_data()
    y = latent + rng.normal(size=latent.shape[0])
    ours = GradientBoostingRegressor(n_estimators=10, learning_rate=0.3, max_depth=3,
                                     min_samples_leaf=1, reg_lambda=0.0, **FAST).fit(X, y)
    sk = SkGBR(n_estimators=10, learning_rate=0.3, max_depth=3, random_state=0).fit(X, y)
    np.testing.assert_allclose(ours.predict(X), sk.predict(X), atol=1e-10)


def test_staged_predictions_end_at_the_final_ones():
    X, latent, _ = _integer_data()
    y = np.digitize(latent, [-2.0, 2.0])
    model = GradientBoostingClassifier(n_estimators=5, max_depth=2, **FAST).fit(X, y)
    staged = list(model.staged_predict_proba(X))
    assert len(staged) == model.n_iter_ == 5
    np.testing.assert_allclose(staged[-1], model.predict_proba(X))
    assert not np.allclose(staged[0], staged[-1])
    np.testing.assert_array_equal(list(model.staged_predict(X))[-1], model.predict(X))
    np.testing.assert_allclose(list(model.staged_decision_function(X))[-1],
                               model.decision_function(X))
    assert model.decision_function(X).shape == (X.shape[0], 3)
    reg = GradientBoostingRegressor(n_estimators=4, max_depth=2, **FAST).fit(X, latent)
    np.testing.assert_allclose(list(reg.staged_predict(X))[-1], reg.predict(X))


def _stops(scores, n_iter_no_change, tol):
    return max(scores[-n_iter_no_change:]) <= scores[-n_iter_no_change - 1] + tol


def test_early_stopping_stops_at_the_first_round_without_improvement():
    X, latent, rng = _integer_data(n=400)
    y = (latent > 0).astype(int)
    X_val, latent_val, _ = _integer_data(n=200, seed=1)
    y_val = rng.randint(0, 2, 200)                      # labels unrelated to X
    model = GradientBoostingClassifier(n_estimators=200, max_depth=3, learning_rate=0.5,
                                       early_stopping=True, n_iter_no_change=3, tol=0.0,
                                       device="cpu", random_state=0)
    model.fit(X, y, eval_set=(X_val, y_val))
    scores = list(model.validation_score_)
    assert model.n_iter_ < 200 and len(scores) == model.n_iter_ + 1
    assert _stops(scores, 3, 0.0)
    assert not any(_stops(scores[:k], 3, 0.0) for k in range(4, len(scores)))
    # the validation raw scores were updated tree by tree, never re-predicted
    assert -scores[-1] == pytest.approx(log_loss(y_val, model.predict_proba(X_val)), rel=1e-10)


def test_validation_scorer_is_applied_to_the_eval_set():
    X, latent, _ = _integer_data(n=300)
    y = (latent > 0).astype(int)
    X_val, latent_val, _ = _integer_data(n=150, seed=2)
    y_val = (latent_val > 0).astype(int)
    model = GradientBoostingClassifier(n_estimators=6, max_depth=2, scoring="accuracy",
                                       **FAST).fit(X, y, eval_set=[(X_val, y_val)])
    assert len(model.validation_score_) == 7 and model.n_iter_ == 6
    assert model.validation_score_[-1] == pytest.approx(
        accuracy_score(y_val, model.predict(X_val)))


def test_validation_fraction_holds_out_a_stratified_share():
    X, latent, _ = _integer_data(n=301)
    y = (latent > 0).astype(int)
    model = GradientBoostingClassifier(n_estimators=2, max_depth=1, min_samples_leaf=1,
                                       early_stopping=True, validation_fraction=0.5,
                                       device="cpu", random_state=0).fit(X, y)
    held_out = sum(int(np.floor(0.5 * c)) for c in np.bincount(y))
    assert _trees(model)[0].n_node_samples[0] == 301 - held_out
    assert len(model.validation_score_) == model.n_iter_ + 1


def test_subsample_draws_an_exact_share_of_rows_per_round():
    X, latent, _ = _integer_data(n=201)
    model = GradientBoostingRegressor(n_estimators=4, max_depth=2, subsample=0.5,
                                      **FAST).fit(X, latent)
    assert all(tree.n_node_samples[0] == 100 for tree in _trees(model))


def test_colsample_bytree_limits_the_features_of_each_tree():
    X, latent, _ = _integer_data(n=200, n_features=6)
    y = latent + X[:, 2:].sum(axis=1)
    model = GradientBoostingRegressor(n_estimators=8, max_depth=3, colsample_bytree=0.5,
                                      min_samples_leaf=1, **FAST).fit(X, y)
    used = [set(t.feature[t.feature >= 0]) for t in _trees(model)]
    assert all(len(u) <= 3 for u in used)
    assert len(set().union(*used)) > 3


@pytest.mark.parametrize("params", [{"gamma": 1e6}, {"min_child_weight": 1e6},
                                    {"min_samples_leaf": 200}])
def test_regularisation_can_forbid_every_split(params):
    X, latent, _ = _integer_data(n=300)
    y = (latent > 0).astype(int)
    model = GradientBoostingClassifier(n_estimators=3, **params, **FAST).fit(X, y)
    assert all(t.node_count == 1 for t in _trees(model))
    np.testing.assert_allclose(model.predict_proba(X)[:, 1], y.mean(), rtol=1e-12)


def test_max_leaf_nodes_bounds_every_tree():
    X, latent, _ = _integer_data(n=300)
    model = GradientBoostingRegressor(n_estimators=3, max_depth=6, max_leaf_nodes=5,
                                      min_samples_leaf=1, **FAST).fit(X, latent)
    assert all(t.n_leaves <= 5 for t in _trees(model))


def test_warm_start_equals_one_long_fit():
    X, latent, _ = _integer_data(n=250, n_features=5)
    y = np.digitize(latent, [-2.0, 2.0])
    params = dict(max_depth=3, subsample=0.7, colsample_bytree=0.6, **FAST)
    long = GradientBoostingClassifier(n_estimators=6, **params).fit(X, y)
    warm = GradientBoostingClassifier(n_estimators=3, warm_start=True, **params).fit(X, y)
    warm.set_params(n_estimators=6).fit(X, y)
    assert warm.n_iter_ == 6
    np.testing.assert_array_equal(warm.predict_proba(X), long.predict_proba(X))
    np.testing.assert_array_equal(warm.train_score_, long.train_score_)
    with pytest.raises(ValueError, match="n_estimators"):
        warm.set_params(n_estimators=2).fit(X, y)


def test_integer_weights_equal_repeating_rows_and_zero_weights_dropping_them():
    """min_samples_leaf=1 so that counting distinct rows (weighted fit) and
    counting repeated rows (repeated fit) cannot differ."""
    X, latent, rng = _integer_data(n=300)
    y = (latent > 0).astype(int)
    weight = rng.randint(0, 3, 300).astype(float)
    keep = weight > 0
    params = dict(n_estimators=5, max_depth=3, min_samples_leaf=1, **FAST)
    weighted = GradientBoostingClassifier(**params).fit(X, y, sample_weight=weight)
    repeated = GradientBoostingClassifier(**params).fit(
        np.repeat(X[keep], weight[keep].astype(int), axis=0),
        np.repeat(y[keep], weight[keep].astype(int)))
    # thresholds are midpoints between the same 12 values, so trees agree
    assert np.all([np.unique(X[keep][:, f]).size == 12 for f in range(4)])
    grown = [t.feature for t in _trees(weighted)], [t.feature for t in _trees(repeated)]
    assert all(np.array_equal(a, b) for a, b in zip(*grown))
    np.testing.assert_allclose(weighted.predict_proba(X), repeated.predict_proba(X),
                               rtol=1e-9)


def test_gain_importances_single_out_the_informative_feature():
    rng = np.random.RandomState(0)
    X = rng.randint(0, 10, size=(300, 4)).astype(float)
    y = (X[:, 2] > 4).astype(int)
    model = GradientBoostingClassifier(n_estimators=5, max_depth=2, **FAST).fit(X, y)
    importances = model.feature_importances_
    assert importances.sum() == pytest.approx(1.0)
    assert np.argmax(importances) == 2 and importances[2] > 0.9


def test_categorical_splits_separate_a_set_of_categories_in_one_stump():
    rng = np.random.RandomState(0)
    codes = rng.randint(0, 8, 400)
    X = np.c_[codes, rng.normal(size=400)].astype(float)
    y = np.isin(codes, [1, 4, 6]).astype(int)
    params = dict(n_estimators=1, max_depth=1, learning_rate=1.0, min_samples_leaf=1, **FAST)
    categorical = GradientBoostingClassifier(categorical_features=[0], **params).fit(X, y)
    numerical = GradientBoostingClassifier(**params).fit(X, y)
    assert categorical.score(X, y) == 1.0
    assert numerical.score(X, y) < 1.0
    assert _trees(categorical)[0].is_categorical[0] == 1


def test_missing_values_learn_their_side():
    rng = np.random.RandomState(0)
    X = rng.randint(0, 5, size=(300, 2)).astype(float)
    missing = rng.rand(300) < 0.3
    X[missing, 0] = np.nan
    model = GradientBoostingClassifier(n_estimators=3, max_depth=1, learning_rate=1.0,
                                       min_samples_leaf=1, **FAST).fit(X, missing.astype(int))
    assert model.score(X, missing.astype(int)) == 1.0


def test_poisson_predictions_are_positive_means():
    X, latent, rng = _integer_data()
    y = rng.poisson(np.exp(latent / 4))
    model = GradientBoostingRegressor(loss="poisson", n_estimators=10, max_depth=3,
                                      **FAST).fit(X, y)
    assert np.all(model.predict(X) > 0)
    assert np.corrcoef(model.predict(X), np.exp(latent / 4))[0, 1] > 0.8


def test_string_labels_and_binary_decision_shape():
    X, latent, _ = _integer_data()
    y = np.where(latent > 0, "yes", "no")
    model = GradientBoostingClassifier(n_estimators=3, max_depth=2, **FAST).fit(X, y)
    assert list(model.classes_) == ["no", "yes"]
    assert model.decision_function(X).shape == (X.shape[0],)
    np.testing.assert_array_equal(model.predict(X),
                                  np.where(model.decision_function(X) > 0, "yes", "no"))
    with pytest.raises(ValueError, match="class"):
        model.fit(X, np.full(X.shape[0], "yes"))


def test_multi_output_tree_grows_one_tree_per_round():
    X, latent, _ = _integer_data()
    y = np.digitize(latent, [-2.0, 2.0])
    per_class = GradientBoostingClassifier(n_estimators=4, max_depth=3, **FAST).fit(X, y)
    shared = GradientBoostingClassifier(n_estimators=4, max_depth=3,
                                        multi_strategy="multi_output_tree", **FAST).fit(X, y)
    assert len(_trees(per_class)) == 12 and len(_trees(shared)) == 4
    assert _trees(shared)[0].value.shape[1] == 3
    assert shared.score(X, y) > 0.8 and per_class.score(X, y) > 0.8


@pytest.mark.parametrize("params", [{"learning_rate": 0.0}, {"subsample": 1.5},
                                    {"loss": "hinge"}, {"early_stopping": "yes"},
                                    {"multi_strategy": "both"}, {"n_estimators": 0}])
def test_invalid_parameters_are_rejected(params):
    X, latent, _ = _integer_data(n=50)
    with pytest.raises((ValueError, TypeError)):
        GradientBoostingClassifier(**{**FAST, **params}).fit(X, (latent > 0).astype(int))


def test_verbose_reports_train_and_validation_loss(capsys, monkeypatch):
    X, latent, _ = _integer_data(n=200)
    y = (latent > 0).astype(int)
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)        # plain lines, no bar
    GradientBoostingClassifier(n_estimators=10, max_depth=2, verbose=1, **FAST).fit(
        X, y, eval_set=(X, y))
    err = capsys.readouterr().err
    assert "10/10" in err and "train loss" in err and "validation loss" in err


def _devices():
    devices = []
    for device in ("cuda-sim", "cuda"):
        try:
            get_backend(device)
            devices.append(device)
        except Exception:  # backend not built or no GPU here
            pass
    return devices


@pytest.mark.parametrize("device", ["cuda-sim", "cuda"])
def test_backends_grow_the_same_ensemble(device):
    if device not in _devices():
        pytest.skip(f"backend {device!r} is not available here")
    X, latent, _ = _integer_data(n=120)
    y = np.digitize(latent, [-2.0, 2.0])
    params = dict(n_estimators=3, max_depth=2, subsample=0.8, early_stopping=False,
                  random_state=0)
    cpu = GradientBoostingClassifier(device="cpu", **params).fit(X, y)
    other = GradientBoostingClassifier(device=device, **params).fit(X, y)
    for a, b in zip(_trees(cpu), _trees(other)):
        np.testing.assert_array_equal(a.feature, b.feature)
        np.testing.assert_array_equal(a.bitset, b.bitset)
    np.testing.assert_allclose(cpu.predict_proba(X), other.predict_proba(X), rtol=1e-12)


def test_simulated_device_grows_the_same_ensembles():
    """Run the backend tests of boosting and forests in a process with numba's
    CUDA simulator on (it must be on before numba is imported), so that
    device="cuda-sim" runs the CUDA backend end to end."""
    from numba import config
    if config.ENABLE_CUDASIM:
        pytest.skip("this process already runs the simulator")
    here = Path(__file__).parent
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
         "-k", "backends_grow and cuda-sim", str(here / "test_boosting.py"),
         str(here / "test_forest.py")],
        env=dict(os.environ, NUMBA_ENABLE_CUDASIM="1"), capture_output=True, text=True,
        timeout=600)
    print(result.stdout[-5000:], result.stderr[-3000:])
    assert result.returncode == 0 and "2 passed" in result.stdout
