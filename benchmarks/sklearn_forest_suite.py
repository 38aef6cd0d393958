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

The deselection also drops the 7 unparametrised tests that use only
ExtraTrees* or RandomTreesEmbedding (they would pass with scikit-learn's own
classes, testing nothing of gputree's): 162 of the 332 tests remain.

``KNOWN_FAILURES`` lists the tests expected to fail, with why (all but one
use scikit-learn's private helpers); the script exits 1 when any other test
fails, so it can serve as a check. It takes minutes (one absolute-error test
grows 200 deep trees level by level).
"""
import inspect
import os
import sys
import tempfile
from pathlib import Path

import pytest

# the gputree of this checkout, not an installed one
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

#: scikit-learn name -> gputree attribute that replaces it
SUBSTITUTES = {
    "RandomForestClassifier": "RandomForestClassifier",
    "RandomForestRegressor": "RandomForestRegressor",
}

#: scikit-learn forests without a gputree counterpart: their tests are deselected
NOT_PROVIDED = ("ExtraTreesClassifier", "ExtraTreesRegressor", "RandomTreesEmbedding")

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
    "test_forest_regressor_oob[True-X0-y0-0.7-":
        "OOB R^2 0.683 < 0.7 on 250 rows: histogram thresholds sit at the low end of a "
        "node's gap between values, scikit-learn's at its middle (README)",
}


def substitute():
    """Rebind ``sklearn.ensemble.<name>`` to gputree's classes."""
    import sklearn.ensemble

    import gputree
    for sklearn_name, gputree_name in SUBSTITUTES.items():
        setattr(sklearn.ensemble, sklearn_name, getattr(gputree, gputree_name))


def test_file():
    import sklearn.ensemble.tests
    return os.path.join(os.path.dirname(sklearn.ensemble.tests.__file__), "test_forest.py")


def _names_missing_forest(item):
    """Whether ``item`` tests a forest gputree does not provide."""
    if any(name in item.nodeid for name in NOT_PROVIDED):
        return True
    if any(name in item.nodeid for name in SUBSTITUTES):
        return False
    try:
        source = inspect.getsource(item.function)
    except (OSError, TypeError, AttributeError):
        return False
    return (any(name in source for name in NOT_PROVIDED)
            and not any(name in source for name in SUBSTITUTES))


class ForestSuitePlugin:
    """Deselects the tests of forests gputree lacks; records the outcomes."""

    def __init__(self):
        self.passed, self.failed, self.skipped = [], [], []

    def pytest_collection_modifyitems(self, config, items):
        keep = [item for item in items if not _names_missing_forest(item)]
        dropped = [item for item in items if _names_missing_forest(item)]
        items[:] = keep
        config.hook.pytest_deselected(items=dropped)

    def pytest_runtest_logreport(self, report):
        name = report.nodeid.split("::", 1)[-1]
        if report.when == "call" or report.outcome != "passed":
            if report.outcome == "failed" and name not in self.failed:
                self.failed.append(name)
            elif report.when == "call" and report.outcome == "passed":
                self.passed.append(name)
            elif report.outcome == "skipped":
                self.skipped.append(name)


def known_reason(test_id):
    for prefix, reason in KNOWN_FAILURES.items():
        if test_id.startswith(prefix):
            return reason
    return None


def main(argv):
    substitute()
    plugin = ForestSuitePlugin()
    with tempfile.TemporaryDirectory() as cache:
        pytest.main([test_file(), "-q", "-p", "no:cacheprovider", "--no-header",
                     "-o", f"cache_dir={cache}", "-W", "ignore"] + list(argv),
                    plugins=[plugin])
    total = len(plugin.passed) + len(plugin.failed)
    print(f"\nscikit-learn {__import__('sklearn').__version__} test_forest.py with gputree's "
          f"{', '.join(SUBSTITUTES)}: {len(plugin.passed)} of {total} passed, "
          f"{len(plugin.failed)} failed, {len(plugin.skipped)} skipped")
    unexpected = []
    for name in plugin.failed:
        reason = known_reason(name)
        print(f"  FAILED {name}" + (f"  (expected: {reason})" if reason else ""))
        if reason is None:
            unexpected.append(name)
    return 1 if unexpected else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
