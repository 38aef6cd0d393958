"""Run scikit-learn's own forest tests (``sklearn/ensemble/tests/test_forest.py``
of the installed scikit-learn) against gputree's forests, and print how many
pass and which fail.

The names in ``SUBSTITUTES`` are rebound in ``sklearn.ensemble`` before the
test module is imported, so the module's ``from sklearn.ensemble import
RandomForestClassifier`` gets gputree's class. Tests of scikit-learn's
forests that gputree does not provide (``NOT_PROVIDED``) are deselected: a
test whose id names one of them, or an unparametrised test whose source
names one of them and none of the substituted ones. Adding a forest to
gputree means moving its name from ``NOT_PROVIDED`` to ``SUBSTITUTES``.

    python benchmarks/sklearn_forest_suite.py            # counts and failing ids
    python benchmarks/sklearn_forest_suite.py -x -k oob  # extra pytest arguments

The deselection also drops the unparametrised tests that use only
RandomTreesEmbedding (they would pass with scikit-learn's own class, testing
nothing of gputree's): 308 of the 332 tests remain, ExtraTrees* substituted.

``KNOWN_FAILURES`` lists the tests expected to fail, with why (all but one
use scikit-learn's private helpers); the script exits 1 when any other test
fails, so it can serve as a check. It takes minutes (one absolute-error test
grows 200 deep trees level by level).
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sklearn_suite import Suite, run_suite  # noqa: E402

#: scikit-learn name -> gputree attribute that replaces it
SUBSTITUTES = {
    "RandomForestClassifier": "RandomForestClassifier",
    "RandomForestRegressor": "RandomForestRegressor",
    "ExtraTreesClassifier": "ExtraTreesClassifier",
    "ExtraTreesRegressor": "ExtraTreesRegressor",
}

#: scikit-learn forests without a gputree counterpart: their tests are deselected
NOT_PROVIDED = ("RandomTreesEmbedding",)

#: test-id prefixes expected to fail, and why (see the README)
KNOWN_FAILURES = {
    "test_validate_y_class_weight": "calls scikit-learn's private "
                                    "BaseForest._validate_y_class_weight",
    "test_class_weights_forest": "reads scikit-learn's private _sample_weight attribute",
    "test_oob_not_computed_twice": "patches scikit-learn's private "
                                   "_set_oob_score_and_attributes",
    "test_forest_multioutput_integral_regression_target":
        "redraws the OOB rows with scikit-learn's private _generate_unsampled_indices "
        "(its bootstrap stream)",
    "test_backend_respected": "counts joblib backend calls; gputree fits with numba threads",
    "test_mse_criterion_object_segfault_smoke_test":
        "passes scikit-learn's private Cython criterion sklearn.tree._criterion.MSE",
    "test_importances_asymptotic": "calls compute_feature_importances, a method of "
                                   "scikit-learn's Cython Tree",
    "test_distribution": "the 5 tree shapes come with scikit-learn's frequencies, but the "
                         "test spells the commonest with depth-first node ids; gputree "
                         "numbers nodes breadth-first (README)",
    "test_estimators_samples[ExtraTrees": (
        "bootstrap=True: a tree refitted on its drawn rows bins those rows alone; on "
        "continuous features its bins differ, and a random threshold is uniform over the "
        "node's bins (README; with at most max_bins distinct values it is the same tree)"),
    "test_forest_regressor_oob[True-X0-y0-0.7-":
        "OOB R^2 0.683 < 0.7 on 250 rows: histogram thresholds sit at the low end of a "
        "node's gap between values, scikit-learn's at its middle (README)",
}


SUITE = Suite("sklearn.ensemble", "test_forest.py", SUBSTITUTES, NOT_PROVIDED, KNOWN_FAILURES)


if __name__ == "__main__":
    sys.exit(run_suite(SUITE, sys.argv[1:]))
