"""choose_ccp_alpha (gputree.model_selection): the alpha equals a brute-force
search that refits the estimator at every candidate alpha with scikit-learn's
cross-validation on the same folds, scored with CART's standard error; the
one-standard-error rule never picks a smaller alpha than the minimum."""
import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import KFold, StratifiedKFold, cross_val_predict

from gputree import (DecisionTreeClassifier, DecisionTreeRegressor, GradientBoostingClassifier,
                     choose_ccp_alpha)
from gputree.model_selection import _folds


def _classification(n=160, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.uniform(size=(n, 4))
    y = ((X[:, 0] + 0.3 * X[:, 1] > 0.7) ^ (rng.rand(n) < 0.2)).astype(int)
    return X, y


def _regression(n=160, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.uniform(size=(n, 3))
    return X, np.where(X[:, 0] > 0.5, 2.0, 0.0) + X[:, 1] + rng.normal(scale=0.8, size=n)


def _brute_force(estimator, X, y, folds, one_se, classification):
    """Refit at the geometric midpoints of the full tree's path alphas."""
    alphas = np.unique(estimator.cost_complexity_pruning_path(X, y).ccp_alphas)
    midpoints = [np.sqrt(a * b) for a, b in zip(alphas[:-1], alphas[1:])] + [1e300]
    risks, errors = [], []
    for beta in midpoints:
        predicted = cross_val_predict(clone(estimator).set_params(ccp_alpha=beta), X, y,
                                      cv=folds)
        loss = (predicted != y) * 1.0 if classification else (predicted - y) ** 2
        risk = loss.mean()
        risks.append(risk)
        # Breiman et al. (1984) 3.4.3 (0/1 loss) and 8.5.2 (squared error)
        spread = risk * (1 - risk) if classification else np.mean((loss - risk) ** 2)
        errors.append(np.sqrt(spread / len(y)))
    risks = np.array(risks)
    best = max(k for k in range(len(risks)) if risks[k] == risks.min())
    if one_se:
        best = max(k for k in range(len(risks)) if risks[k] <= risks[best] + errors[best])
    return alphas[best]


@pytest.mark.parametrize("one_se", [False, True])
def test_classifier_alpha_equals_brute_force_cross_validation(one_se):
    X, y = _classification()
    model = DecisionTreeClassifier(ccp_risk="misclassification", device="cpu", random_state=0)
    folds = list(StratifiedKFold(5, shuffle=True, random_state=0).split(X, y))
    expected = _brute_force(model, X, y, folds, one_se, classification=True)
    assert choose_ccp_alpha(model, X, y, cv=folds, one_se=one_se) == expected


@pytest.mark.parametrize("one_se", [False, True])
def test_regressor_alpha_equals_brute_force_cross_validation(one_se):
    X, y = _regression()
    model = DecisionTreeRegressor(max_depth=5, min_samples_leaf=3, device="cpu")
    folds = list(KFold(4, shuffle=True, random_state=1).split(X, y))
    expected = _brute_force(model, X, y, folds, one_se, classification=False)
    assert choose_ccp_alpha(model, X, y, cv=folds, one_se=one_se) == expected


def test_one_standard_error_rule_prunes_at_least_as_much():
    X, y = _classification(seed=1)
    model = DecisionTreeClassifier(ccp_risk="misclassification", device="cpu", random_state=0)
    at_minimum = choose_ccp_alpha(model, X, y, one_se=False)
    one_se = choose_ccp_alpha(model, X, y, one_se=True)
    path = model.cost_complexity_pruning_path(X, y).ccp_alphas
    assert at_minimum in path and one_se in path
    assert one_se > at_minimum   # strictly, on this noisy data: the rule did something
    pruned = clone(model).set_params(ccp_alpha=one_se).fit(X, y)
    assert pruned.get_n_leaves() < clone(model).set_params(ccp_alpha=at_minimum).fit(
        X, y).get_n_leaves()


def test_integer_cv_folds_are_stratified_and_reproducible():
    X, y = _classification(n=103)
    model = DecisionTreeClassifier(random_state=7)
    folds = _folds(model, y, 5, None)
    assert sorted(np.concatenate([test for _, test in folds]).tolist()) == list(range(103))
    per_fold = np.array([np.bincount(y[test], minlength=2) for _, test in folds])
    assert np.all(per_fold.max(axis=0) - per_fold.min(axis=0) <= 1)
    again = _folds(model, y, 5, None)
    assert all(np.array_equal(a[1], b[1]) for a, b in zip(folds, again))
    other = _folds(model, y, 5, 8)
    assert not all(np.array_equal(a[1], b[1]) for a, b in zip(folds, other))


def test_bad_arguments_are_refused():
    X, y = _classification(n=40)
    model = DecisionTreeClassifier(device="cpu")
    with pytest.raises(ValueError, match="cv must be"):
        choose_ccp_alpha(model, X, y, cv=1)
    with pytest.raises(ValueError, match="risk must be"):
        choose_ccp_alpha(model, X, y, risk="hinge")
    with pytest.raises(TypeError, match="needs a DecisionTreeClassifier"):
        choose_ccp_alpha(GradientBoostingClassifier(device="cpu"), X, y)
