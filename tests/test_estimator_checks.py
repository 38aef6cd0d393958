"""scikit-learn's estimator contract (``parametrize_with_checks``) for both
single-tree estimators. No check is expected to fail; if one ever must, list
it in ``EXPECTED_FAILED`` with the reason."""
from sklearn.utils.estimator_checks import parametrize_with_checks

from gputree import DecisionTreeClassifier, DecisionTreeRegressor

#: check name -> reason, per estimator class (empty: every check passes)
EXPECTED_FAILED = {DecisionTreeClassifier: {}, DecisionTreeRegressor: {}}


@parametrize_with_checks(
    [DecisionTreeClassifier(device="cpu", random_state=0),
     DecisionTreeRegressor(device="cpu", random_state=0)],
    expected_failed_checks=lambda estimator: EXPECTED_FAILED[type(estimator)])
def test_scikit_learn_estimator_contract(estimator, check):
    check(estimator)
