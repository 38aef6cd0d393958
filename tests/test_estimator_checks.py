"""scikit-learn's estimator contract (``parametrize_with_checks``) for the
single-tree estimators (the extremely randomized ones included). No check is
expected to fail; if one ever must, list it in ``EXPECTED_FAILED`` with the
reason."""
from sklearn.utils.estimator_checks import parametrize_with_checks

from gputree import (DecisionTreeClassifier, DecisionTreeRegressor, ExtraTreeClassifier,
                     ExtraTreeRegressor)

#: check name -> reason, per estimator class (empty: every check passes)
EXPECTED_FAILED = {DecisionTreeClassifier: {}, DecisionTreeRegressor: {},
                   ExtraTreeClassifier: {}, ExtraTreeRegressor: {}}


@parametrize_with_checks(
    [DecisionTreeClassifier(device="cpu", random_state=0),
     DecisionTreeRegressor(device="cpu", random_state=0),
     ExtraTreeClassifier(device="cpu", random_state=0),
     ExtraTreeRegressor(device="cpu", random_state=0)],
    expected_failed_checks=lambda estimator: EXPECTED_FAILED[type(estimator)])
def test_scikit_learn_estimator_contract(estimator, check):
    check(estimator)
