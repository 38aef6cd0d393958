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

``KNOWN_FAILURES`` lists the tests expected to fail, with why (they test
scikit-learn's private helpers); the script exits 1 when any other test
fails, so it can serve as a check.
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

#: test-id prefixes that fail by design, and why (see the README)
KNOWN_FAILURES = {}


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
