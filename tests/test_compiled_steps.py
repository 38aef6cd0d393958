"""Cases both compiled growth steps (best-first: test_bestfirst_step;
level-wise: test_level_step) must grow as their general steps do, field
for field: 700 categories with missing values (subsets past bin 255),
three classes, and a histogram pool grown during the tree."""
import pytest

import test_bestfirst_step
import test_level_step
from compiled_steps import (check_categorical_subsets, check_multiclass,
                            check_pool_grown_during_the_tree)

#: per compiled step: (the tests' module, {case: the estimator and its size limits})
_STEPS = {
    "best_first": (test_bestfirst_step, {
        "categorical": ("GradientBoostingClassifier", dict(max_leaf_nodes=31)),
        "multiclass": ("GradientBoostingClassifier", dict(max_leaf_nodes=9)),
        "pool": ("GradientBoostingRegressor", dict(max_leaf_nodes=60, min_samples_leaf=1))}),
    "levels": (test_level_step, {
        "categorical": ("GradientBoostingClassifier", dict(max_depth=5)),
        "multiclass": ("GradientBoostingClassifier", dict(max_depth=4)),
        "pool": ("GradientBoostingRegressor", dict(max_depth=9, min_samples_leaf=1))}),
}


@pytest.mark.parametrize("kind", sorted(_STEPS))
@pytest.mark.parametrize("case", ["categorical", "multiclass", "pool"])
def test_compiled_steps_grow_the_general_trees(monkeypatch, kind, case):
    steps, cases = _STEPS[kind]
    estimator, params = cases[case]

    def fit_both_steps(make, X, y):
        return steps._fit_both(monkeypatch, make, X, y)
    if case == "categorical":
        params = dict(params, min_data_per_group=5, cat_smooth=2.0)
        check_categorical_subsets(fit_both_steps, steps._boost(estimator, **params))
    elif case == "multiclass":
        check_multiclass(fit_both_steps, steps._boost(estimator, **params))
    else:
        check_pool_grown_during_the_tree(fit_both_steps, steps._boost(estimator, **params),
                                         monkeypatch)
