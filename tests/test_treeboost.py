"""Friedman's TreeBoost (criterion="friedman_mse", gputree.estimators.treeboost): the
leaves are Newton steps sum(y - p) / sum(p (1 - p)) computed by hand on a
3-row example (also the default criterion's leaves with reg_lambda=0), and
the model equals scikit-learn's GradientBoostingClassifier where the two
search the same splits (few distinct values per feature, so gputree's bins
are exact; no tied gains)."""
import numpy as np
import pytest
from sklearn.ensemble import GradientBoostingClassifier as SklearnGBC

from gputree import GradientBoostingClassifier

_ONE_STUMP = dict(n_estimators=1, max_depth=1, learning_rate=1.0, min_samples_leaf=1,
                  reg_lambda=0.0, early_stopping=False, device="cpu")


@pytest.mark.parametrize("criterion", ["newton", "friedman_mse"])
def test_three_rows_leaves_are_the_newton_step(criterion):
    X, y = np.array([[0.0], [1.0], [2.0]]), np.array([0, 1, 1])
    model = GradientBoostingClassifier(criterion=criterion, **_ONE_STUMP).fit(X, y)
    # by hand: p = 2/3 everywhere (raw log 2); both criteria split {x0} | {x1, x2}
    # (Newton gain 3 against 3/4, least squares 2/3 against 2/9);
    # left leaf (0 - 2/3) / (2/3 * 1/3) = -3, right leaf (2 * 1/3) / (2 * 2/9) = 1.5
    expected = np.log(2.0) + np.array([-3.0, 1.5, 1.5])
    np.testing.assert_allclose(model.decision_function(X), expected, rtol=1e-14)


def _data(n_classes, n=300, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.randint(0, 40, size=(n, 4)).astype(float)
    score = X[:, 0] / 10 - X[:, 1] * X[:, 2] / 400 + rng.normal(scale=0.7, size=n)
    y = np.digitize(score, np.quantile(score, np.linspace(0, 1, n_classes + 1)[1:-1]))
    return X, y


@pytest.mark.parametrize("n_classes", [2, 3])
def test_treeboost_equals_scikit_learn_gradient_boosting(n_classes):
    X, y = _data(n_classes)
    params = dict(n_estimators=8, max_depth=3, learning_rate=0.3, min_samples_leaf=5)
    ours = GradientBoostingClassifier(criterion="squared_error", reg_lambda=0.0,
                                      early_stopping=False, device="cpu", **params).fit(X, y)
    theirs = SklearnGBC(random_state=0, **params).fit(X, y)   # its criterion: friedman_mse
    np.testing.assert_allclose(ours.decision_function(X), theirs.decision_function(X),
                               rtol=1e-9, atol=1e-9)
    # the default (Newton-gain) splits differ: the agreement is the criterion's doing
    newton = GradientBoostingClassifier(reg_lambda=0.0, early_stopping=False, device="cpu",
                                        **params).fit(X, y)
    assert np.max(np.abs(newton.decision_function(X) - theirs.decision_function(X))) > 1e-3


def test_friedman_mse_and_squared_error_are_the_same_criterion():
    X, y = _data(2, seed=1)
    fits = [GradientBoostingClassifier(criterion=c, n_estimators=5, early_stopping=False,
                                       device="cpu").fit(X, y).decision_function(X)
            for c in ("friedman_mse", "squared_error")]
    np.testing.assert_array_equal(*fits)


def test_bad_criterion_and_monotonic_treeboost_are_refused():
    X, y = _data(2, n=60)
    with pytest.raises(ValueError, match="criterion"):
        GradientBoostingClassifier(criterion="gini", device="cpu").fit(X, y)
    with pytest.raises(ValueError, match="monotonic_cst needs criterion='newton'"):
        GradientBoostingClassifier(criterion="friedman_mse", monotonic_cst=[1, 0, 0, 0],
                                   device="cpu").fit(X, y)
